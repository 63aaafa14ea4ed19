"""GLM-4.5 (Glm4MoeForCausalLM; GGUF `glm4moe`), 2 layers: layer 0 dense, layer 1 MoE.

Beyond a plain Llama: q/k/v biases (no o bias), per-head RMSNorm of q and k (use_qk_norm, GLM-4.5 355B;
attn_q_norm / attn_k_norm [head_dim]) before PARTIAL NEOX RoPE (partial_rotary_factor 0.5: the first 8 of
16 dims; rope.dimension_count = 8); the first first_k_dense_replace = 1 layers have a dense SwiGLU FFN (ff 96
= feed_forward_length), the others a MoE FFN: router p = sigmoid(ffn_gate_inp . h), selection score
p + e_score_correction_bias (GGUF blk.N.exp_probs_b.bias; a transformers BUFFER, perturbed here), top-2 on the
selection score, weights = the UNBIASED p of the chosen, divided by their sum (norm_topk_prob; GGUF
expert_weights_norm), times routed_scaling_factor 2.5 (GGUF expert_weights_scale); n_group = topk_group = 1 (no
group limit, GLM-4.5's value); plus one shared SwiGLU expert (ff = moe_intermediate_size * n_shared_experts =
32; ffn_*_shexp), added UNGATED. The FFN pre-norm is called post_attention_norm in this GGUF (llama.cpp
LLM_TENSOR_ATTN_POST_NORM). num_nextn_predict_layers = 0: no MTP block (the converter appends
num_nextn_predict_layers blocks to block_count; transformers has no MTP weights).
"""
from __future__ import annotations

import functools

from . import moe, npf
from .common import base_config

N_EXPERT, TOP_K, FF_EXP, FF_DENSE, SCALE = 8, 2, 32, 96, 2.5

forward = functools.partial(moe.decoder_forward, gating="sigmoid", norm="gguf", qkn="head")


def _checkpoint_map(sd, config, meta):
    return moe.split_fused_gate_up(sd, "mlp.experts.gate_up_proj")


def families(zoo):
    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "glm4moe")
        assert (m.int("expert_count"), m.int("expert_used_count")) == (N_EXPERT, TOP_K)
        assert m.int("expert_gating_func") == 2                       # gguf ExpertGatingFuncType.SIGMOID
        assert m.get("expert_weights_norm") is True and abs(m.float("expert_weights_scale") - SCALE) < 1e-6
        assert m.int("leading_dense_block_count") == 1 and m.int("expert_shared_count") == 1
        assert m.int("nextn_predict_layers") == 0 and m.int("block_count") == config.num_hidden_layers == 2
        assert m.int("rope.dimension_count") == 8 and m.int("expert_feed_forward_length") == FF_EXP
        assert m.int("feed_forward_length") == FF_DENSE
        assert "blk.0.ffn_gate_inp.weight" not in tensors and "blk.1.ffn_up.weight" not in tensors
        bias = model.model.layers[1].mlp.gate.e_score_correction_bias.detach().numpy()
        assert (bias != 0).all() and (tensors["blk.1.exp_probs_b.bias"] == bias).all()
        return {"routing": moe.routing_record(forward, tensors, meta, "glm4moe", "neox", zoo.PROMPTS),
                "init_extra": "expert weights ~ N(0, 0.2); router mlp.gate.weight ~ N(0, 0.2); "
                              f"mlp.gate.e_score_correction_bias (buffer) ~ N(0, {moe.SCORE_BIAS_STD})"}

    return {"glm4moe": zoo.Family(
        config_cls=zoo._transformers_class("Glm4MoeConfig"),
        model_cls=zoo._transformers_class("Glm4MoeForCausalLM"),
        config_kwargs=base_config(
            experts_implementation="eager", intermediate_size=FF_DENSE, moe_intermediate_size=FF_EXP,
            n_routed_experts=N_EXPERT, num_experts_per_tok=TOP_K, n_shared_experts=1, first_k_dense_replace=1,
            n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=SCALE, use_qk_norm=True,
            attention_bias=True, num_nextn_predict_layers=0, num_mtp_layers=0,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
            hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=False, output_router_logits=False),
        perturb=lambda model: moe.perturb(model, zoo),
        converter_class=("conversion.glm", "Glm4MoeModel"),
        gguf_arch="glm4moe",
        llama_arch_enum="LLM_ARCH_GLM4_MOE",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias", "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.post_attention_norm.weight",
            "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight",
            "blk.1.ffn_gate_inp.weight", "blk.1.exp_probs_b.bias", "blk.1.ffn_gate_exps.weight",
            "blk.1.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight", "blk.1.ffn_gate_shexp.weight",
            "blk.1.ffn_up_shexp.weight", "blk.1.ffn_down_shexp.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=_checkpoint_map,
        family_checks=family_checks,
        float64_check=True,
        ablations=("selection_bias", "renorm", "weights_scale", "shared_expert", "qk_norm"),
        record_gguf=True,
        mechanisms={
            "router": "p = sigmoid(ffn_gate_inp . h) (expert_gating_func = 2 = sigmoid); selection score s = p + "
                      "exp_probs_b (blk.N.exp_probs_b.bias [8], HF mlp.gate.e_score_correction_bias); top-2 on s; "
                      "weights = p (UNBIASED) at the chosen, divided by their sum (expert_weights_norm = true; "
                      "llama.cpp clamps the sum >= 6.1e-5, transformers adds 1e-20), times expert_weights_scale = 2.5 "
                      "(routed_scaling_factor); n_group = topk_group = 1 -> expert_group_count = expert_group_used_count = 1: no group limit (llama.cpp groups only when expert_group_count > 1)",
            "experts": "SwiGLU per expert, ff = glm4moe.expert_feed_forward_length = 32",
            "shared_experts": "expert_shared_count = 1: one SwiGLU expert of ff 32 * 1 (ffn_{gate,up,down}_shexp), "
                              "added UNGATED to the routed sum",
            "dense_layers": "layers il < leading_dense_block_count (= 1): dense SwiGLU ffn_{gate,up,down} with "
                            "ff = feed_forward_length = 96; the others MoE",
            "attention": "GQA 4/2 heads of 16; q/k/v biases, no o bias; per-head RMSNorm of q and k (attn_q_norm / "
                         "attn_k_norm [16], eps = rms eps) BEFORE RoPE; partial NEOX RoPE on the first "
                         "rope.dimension_count = 8 dims (theta 10000), dims 8..15 pass; scale 1/sqrt(16)",
            "norm": "RMSNorm eps 1e-5: attn_norm, then the FFN pre-norm named post_attention_norm (not ffn_norm), "
                    "final output_norm; untied output.weight",
            "mtp": "num_nextn_predict_layers = 0 -> glm4moe.nextn_predict_layers = 0, block_count = 2 (no nextn block)",
        },
    )}
