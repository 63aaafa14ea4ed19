"""OLMoE (OlmoeForCausalLM; GGUF `olmoe`), multi-head attention (llama.cpp cannot load a GQA olmoe: its
attn_k_norm is created as [n_embd], i.e. it assumes n_head_kv == n_head).

Beyond a plain Llama: RMSNorm of the WHOLE q and k projections (attn_q_norm / attn_k_norm [n_embd], as
OLMo 2) before NEOX RoPE; every layer MoE: 8 SwiGLU experts (ff 32 = feed_forward_length), top-2, router
softmax over all experts WITHOUT renormalisation (config norm_topk_prob = false, OLMoE's value;
llama.cpp's olmoe hard-codes norm_w = false, the GGUF has no key). No shared expert, no biases.
The converter writes olmoe.attention.layer_norm_rms_epsilon = 1e-5 regardless of the config
(OlmoeModel.set_gguf_parameters), so the config uses 1e-5 (OLMoE's own value).
Generated with --seed 20240609 (SEED_OLMOE): the default seed gives a router near tie (gap 1.1e-5 < 1e-4
between the 2nd and 3rd expert for one token).
"""
from __future__ import annotations

import functools

from . import moe, npf
from .common import base_config

N_EXPERT, TOP_K, FF = 8, 2, 32
SEED_OLMOE = 20240609   # pass --seed 20240609 (see the docstring)

forward = functools.partial(moe.decoder_forward, gating="softmax", norm=False, qkn="whole")


def _checkpoint_map(sd, config, meta):
    return moe.split_fused_gate_up(sd, "mlp.experts.gate_up_proj")


def families(zoo):
    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "olmoe")
        assert (m.int("expert_count"), m.int("expert_used_count")) == (N_EXPERT, TOP_K)
        assert m.int("attention.head_count_kv") == m.int("attention.head_count") == 4
        for key in ("expert_gating_func", "expert_weights_norm", "expert_weights_scale", "expert_feed_forward_length"):
            assert key not in m, key
        assert abs(m.float("attention.layer_norm_rms_epsilon") - config.rms_norm_eps) < 1e-12
        assert config.norm_topk_prob is False and config.clip_qkv is None
        assert tensors["blk.0.attn_k_norm.weight"].shape == (64,)
        return {"routing": moe.routing_record(forward, tensors, meta, "olmoe", "neox", zoo.PROMPTS),
                "init_extra": "expert weights ~ N(0, 0.2); router mlp.gate.weight ~ N(0, 0.2); q_norm/k_norm 1 + 0.3 randn"}

    return {"olmoe": zoo.Family(
        config_cls=zoo._transformers_class("OlmoeConfig"),
        model_cls=zoo._transformers_class("OlmoeForCausalLM"),
        config_kwargs=base_config(experts_implementation="eager", num_key_value_heads=4, intermediate_size=FF,
                                  num_experts=N_EXPERT, num_experts_per_tok=TOP_K, norm_topk_prob=False,
                                  clip_qkv=None, attention_bias=False, hidden_act="silu", rms_norm_eps=1e-5,
                                  tie_word_embeddings=False, output_router_logits=False),
        perturb=lambda model: moe.perturb(model, zoo),
        converter_class=("conversion.olmo", "OlmoeModel"),
        gguf_arch="olmoe",
        llama_arch_enum="LLM_ARCH_OLMOE",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_output.weight", "blk.{bid}.attn_q_norm.weight",
            "blk.{bid}.attn_k_norm.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_exps.weight", "blk.{bid}.ffn_up_exps.weight",
            "blk.{bid}.ffn_down_exps.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=_checkpoint_map,
        family_checks=family_checks,
        float64_check=True,
        ablations=("renorm", "qk_norm"),
        record_gguf=True,
        mechanisms={
            "router": "probs = softmax(ffn_gate_inp . h) over all 8 experts; top-2; weights = the two probs AS IS "
                      "(no renormalisation: norm_topk_prob false; llama.cpp olmoe hard-codes norm_w = false, no GGUF key); "
                      "no bias, no scale, no groups",
            "experts": "SwiGLU per expert, ff = olmoe.feed_forward_length = 32 (no expert_feed_forward_length key); "
                       "every layer MoE, no shared expert",
            "attention": "MHA 4 heads of 16 (head_count_kv = 4), no biases; q = RMSNorm(W_q h) over all 64 q dims with "
                         "attn_q_norm [64], k = RMSNorm(W_k h) over all 64 k dims with attn_k_norm [64] (eps = rms eps), "
                         "then split into heads, NEOX RoPE theta 10000 on all 16 dims; scale 1/sqrt(16); no clip_qkv",
            "norm": "RMSNorm eps 1e-5 (the converter always writes 1e-5), pre-norm, final output_norm; untied output",
        },
    )}
