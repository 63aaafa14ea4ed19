"""Qwen1.5-MoE / Qwen2-MoE (Qwen2MoeForCausalLM; GGUF `qwen2moe`).

Beyond a plain Llama (Qwen2: q/k/v biases, NEOX RoPE): every layer is MoE (decoder_sparse_step 1, no
mlp_only_layers): 8 routed SwiGLU experts (ff 32), top-2, router softmax over all experts WITHOUT
renormalisation of the two chosen probabilities (config norm_topk_prob = false, Qwen1.5-MoE's value; llama.cpp's
qwen2moe hard-codes norm_w = false and the converter writes no expert_weights_norm key), plus ONE
shared SwiGLU expert (ff 48 = expert_shared_feed_forward_length) whose output is multiplied by
sigmoid(ffn_gate_inp_shexp . h) (a [1, embd] gate) and added to the routed sum.
"""
from __future__ import annotations

import functools

from . import moe, npf
from .common import base_config

N_EXPERT, TOP_K, FF_EXP, FF_SHEXP, FF_DENSE = 8, 2, 32, 48, 96

forward = functools.partial(moe.decoder_forward, gating="softmax", norm=False)


def _checkpoint_map(sd, config, meta):
    return moe.split_fused_gate_up(sd, "mlp.experts.gate_up_proj")


def families(zoo):
    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "qwen2moe")
        assert (m.int("expert_count"), m.int("expert_used_count")) == (N_EXPERT, TOP_K)
        assert m.int("expert_feed_forward_length") == FF_EXP and m.int("expert_shared_feed_forward_length") == FF_SHEXP
        for key in ("expert_gating_func", "expert_weights_norm", "expert_weights_scale", "leading_dense_block_count"):
            assert key not in m, key
        assert config.norm_topk_prob is False and all(
            type(layer.mlp).__name__ == "Qwen2MoeSparseMoeBlock" for layer in model.model.layers)
        assert tensors["blk.0.ffn_gate_inp_shexp.weight"].shape == (1, 64), tensors["blk.0.ffn_gate_inp_shexp.weight"].shape
        return {"routing": moe.routing_record(forward, tensors, meta, "qwen2moe", "neox", zoo.PROMPTS),
                "init_extra": "expert weights ~ N(0, 0.2); router mlp.gate.weight, shared_expert.* and "
                              "shared_expert_gate.weight ~ N(0, 0.2); q/k/v biases 0.5 randn"}

    return {"qwen2moe": zoo.Family(
        config_cls=zoo._transformers_class("Qwen2MoeConfig"),
        model_cls=zoo._transformers_class("Qwen2MoeForCausalLM"),
        config_kwargs=base_config(experts_implementation="eager", intermediate_size=FF_DENSE,
                                  moe_intermediate_size=FF_EXP, shared_expert_intermediate_size=FF_SHEXP,
                                  num_experts=N_EXPERT, num_experts_per_tok=TOP_K, norm_topk_prob=False,
                                  decoder_sparse_step=1, mlp_only_layers=[], qkv_bias=True,
                                  use_sliding_window=False, sliding_window=None, hidden_act="silu",
                                  rms_norm_eps=1e-6, tie_word_embeddings=False, output_router_logits=False),
        perturb=lambda model: moe.perturb(model, zoo),
        converter_class=("conversion.qwen", "Qwen2MoeModel"),
        gguf_arch="qwen2moe",
        llama_arch_enum="LLM_ARCH_QWEN2MOE",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias", "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_exps.weight", "blk.{bid}.ffn_up_exps.weight",
            "blk.{bid}.ffn_down_exps.weight", "blk.{bid}.ffn_gate_inp_shexp.weight",
            "blk.{bid}.ffn_gate_shexp.weight", "blk.{bid}.ffn_up_shexp.weight", "blk.{bid}.ffn_down_shexp.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=_checkpoint_map,
        family_checks=family_checks,
        float64_check=True,
        ablations=("renorm", "shared_gate", "shared_expert"),
        record_gguf=True,
        mechanisms={
            "router": "probs = softmax(ffn_gate_inp . h) over all 8 experts; top-2 by probs; weights = the two probs "
                      "AS IS (no renormalisation: norm_topk_prob = false; llama.cpp qwen2moe hard-codes norm_w = false, "
                      "no GGUF key); no bias, no scale, no groups",
            "experts": "SwiGLU per expert (ff = qwen2moe.expert_feed_forward_length = 32): "
                       "down_e(silu(gate_e h) * up_e h), weighted sum over the 2 chosen",
            "shared_expert": "one SwiGLU expert, ff = qwen2moe.expert_shared_feed_forward_length = 48 "
                             "(ffn_{gate,up,down}_shexp), output times sigmoid(ffn_gate_inp_shexp . h) "
                             "(ffn_gate_inp_shexp.weight ggml ne [64, 1]: one output row; llama.cpp computes the sigmoid as "
                             "silu(z)/z), added to the routed sum",
            "dense_layers": "none (every layer MoE); qwen2moe.feed_forward_length = 96 (the config's intermediate_size) "
                            "is written but unused",
            "attention": "GQA 4/2 heads of 16, q/k/v biases, no o bias, scale 1/sqrt(16); NEOX RoPE theta 10000 on "
                         "all 16 dims",
            "norm": "RMSNorm eps 1e-6, pre-norm, final output_norm; untied output.weight",
            "hf_checkpoint": "saved per expert: mlp.experts.E.{gate,up,down}_proj.weight, mlp.gate.weight, "
                             "mlp.shared_expert.{gate,up,down}_proj.weight, mlp.shared_expert_gate.weight [1, 64]",
        },
    )}
