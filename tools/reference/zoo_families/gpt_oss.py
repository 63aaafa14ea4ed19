"""gpt-oss (GptOssForCausalLM; GGUF `gpt-oss`; llama.cpp LLM_ARCH_OPENAI_MOE, src/models/openai-moe.cpp).

Beyond a plain Llama: q/k/v/o biases; attention SINKS (blk.N.attn_sinks.weight [n_head]: one extra logit per
head in the softmax denominator, no value row); even layers windowed (attention.sliding_window = 8; no pattern
key: llama.cpp's openai-moe default period 2, il % 2 < 1 windowed = transformers' layer_types
["sliding_attention", "full_attention"]); YaRN RoPE (NEOX) with transformers' `truncate: false` (the released
gpt-oss configs; the correction range is NOT rounded; llama.cpp always rounds it and the GGUF has no key for it);
the FFN pre-norm is named post_attention_norm; every layer MoE: router logits = ffn_gate_inp . h +
ffn_gate_inp.bias, top-2 on the LOGITS, weights = softmax over the two chosen logits (llama.cpp
SOFTMAX_WEIGHT); experts with biases (ffn_{gate,up,down}_exps.bias [E, n]) and swiglu_oai:
out = (clamp(up, -7, 7) + 1) * g * sigmoid(1.702 g), g = min(gate, 7). The fixture is F32 (real files are
MXFP4); the expert weights are scaled (N(0, 0.5) for gate_up, then down_proj times 0.1) so that the clamp
triggers (counted and asserted).

YaRN: rope_parameters = the gpt-oss default {yarn, factor 32, original_max_position_embeddings 4096, beta_fast 32,
beta_slow 1, truncate false, rope_theta 150000}; head_dim 16: corr_dim(32) = 2.02, corr_dim(1) = 4.35 (truncated: 2
and 5), cos/sin times 1 + 0.1 ln 32.
"""
from __future__ import annotations

import functools

import numpy as np

from . import moe, npf
from .common import base_config

N_EXPERT, TOP_K, FF, WINDOW = 8, 2, 32, 8
EXPERT_STD, DOWN_SCALE = 0.5, 0.1
ROPE = {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "original_max_position_embeddings": 4096,
        "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False}

forward = functools.partial(moe.decoder_forward, gating="softmax_weight", norm=False, act="swiglu_oai",
                            window_period=2, yarn_truncate=False)


def _perturb(zoo):
    def perturb(model):
        import torch
        touched = moe.perturb(model, zoo, expert_std=EXPERT_STD)
        with torch.no_grad():
            for layer in model.model.layers:
                layer.mlp.experts.down_proj.mul_(DOWN_SCALE)
        return touched + [f"then every mlp.experts.down_proj times {DOWN_SCALE} (N(0, {EXPERT_STD * DOWN_SCALE}))"]
    return perturb


def _checkpoint_map(sd, config, meta):
    n = 0
    for k in [k for k in sd if k.endswith("mlp.experts.gate_up_proj")]:
        w = np.ascontiguousarray(sd.pop(k).transpose(0, 2, 1))          # [E, embd, 2ff] -> [E, 2ff, embd]
        sd[k + ":gate"], sd[k + ":up"] = np.ascontiguousarray(w[:, 0::2, :]), np.ascontiguousarray(w[:, 1::2, :])
        b = sd.pop(k + "_bias")                                          # [E, 2ff]
        sd[k + "_bias:gate"], sd[k + "_bias:up"] = np.ascontiguousarray(b[:, 0::2]), np.ascontiguousarray(b[:, 1::2])
        d = k.replace("gate_up_proj", "down_proj")
        sd[d] = np.ascontiguousarray(sd[d].transpose(0, 2, 1))          # [E, ff, embd] -> [E, embd, ff]
        n += 1
    return [f"{n} x experts.gate_up_proj [E, embd, 2ff] transposed to [E, 2ff, embd], INTERLEAVED: gate = rows 0::2, "
            f"up = rows 1::2 (gate_up_proj_bias [E, 2ff] likewise); experts.down_proj [E, ff, embd] transposed to "
            f"[E, embd, ff]; self_attn.sinks -> attn_sinks.weight"]


def families(zoo):
    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "gpt-oss")
        assert (m.int("expert_count"), m.int("expert_used_count")) == (N_EXPERT, TOP_K)
        assert m.int("attention.sliding_window") == WINDOW and "attention.sliding_window_pattern" not in m
        assert list(config.layer_types) == ["sliding_attention", "full_attention"]
        assert m.get("rope.scaling.type") == "yarn" and m.float("rope.scaling.factor") == 32.0
        assert config.rope_parameters["truncate"] is False
        assert m.int("expert_feed_forward_length") == FF
        for key in ("expert_gating_func", "expert_weights_norm", "expert_weights_scale"):
            assert key not in m, key
        # transformers' own inverse frequencies (truncate false) vs the numpy YaRN of both forms
        inv_tf = model.model.rotary_emb.inv_freq.detach().double().numpy()
        args = (16, ROPE["rope_theta"], ROPE["factor"], ROPE["original_max_position_embeddings"], 32.0, 1.0)
        inv_nt, inv_t = moe.yarn_inv_freq(*args, truncate=False), moe.yarn_inv_freq(*args, truncate=True)
        assert np.allclose(inv_tf, inv_nt, rtol=1e-6, atol=0) and not np.allclose(inv_tf, inv_t, rtol=1e-3, atol=0)
        scaling = model.model.rotary_emb.attention_scaling
        assert abs(scaling - moe.yarn_get_mscale(32.0)) < 1e-12, scaling
        clamp = {}
        for n, ids in zoo.PROMPTS.items():
            st: dict = {}
            forward(tensors, meta, "gpt-oss", ids, "neox", sliding_window=WINDOW, stats=st)
            clamp[str(n)] = {k: st[k] for k in ("clamped_gate", "clamped_up", "activations")}
        assert all(c["clamped_gate"] > 0 and c["clamped_up"] > 0 for c in clamp.values()), clamp
        angle = float(np.abs((inv_nt - inv_t) * 40).max())
        return {"swiglu_clamp_triggered": clamp,
                "yarn": {"transformers_inv_freq": inv_tf.tolist(), "truncated_inv_freq_llama_cpp": inv_t.tolist(),
                         "attention_scaling_cos_sin": scaling,
                         "max_angle_difference_at_position_40_rad": angle,
                         "rule": "follow transformers (truncate false); llama.cpp rounds the correction range "
                                 "(floor(corr_dim(beta_fast)), ceil(corr_dim(beta_slow))), the GGUF has no key for it"},
                "routing": moe.routing_record(forward, tensors, meta, "gpt-oss", "neox", zoo.PROMPTS,
                                              sliding_window=WINDOW)}

    return {"gpt-oss": zoo.Family(
        config_cls=zoo._transformers_class("GptOssConfig"),
        model_cls=zoo._transformers_class("GptOssForCausalLM"),
        config_kwargs=base_config(experts_implementation="eager", intermediate_size=FF, num_local_experts=N_EXPERT,
                                  num_experts_per_tok=TOP_K, sliding_window=WINDOW, layer_types=None,
                                  rope_parameters=dict(ROPE), attention_bias=True, swiglu_limit=7.0,
                                  swiglu_alpha=1.702, hidden_act="silu", rms_norm_eps=1e-5,
                                  tie_word_embeddings=False, output_router_logits=False),
        perturb=_perturb(zoo),
        converter_class=("conversion.gpt_oss", "GptOssModel"),
        gguf_arch="gpt-oss",
        llama_arch_enum="LLM_ARCH_OPENAI_MOE",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias", "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.attn_output.bias", "blk.{bid}.attn_sinks.weight",
            "blk.{bid}.post_attention_norm.weight", "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_inp.bias",
            "blk.{bid}.ffn_gate_exps.weight", "blk.{bid}.ffn_gate_exps.bias", "blk.{bid}.ffn_up_exps.weight",
            "blk.{bid}.ffn_up_exps.bias", "blk.{bid}.ffn_down_exps.weight", "blk.{bid}.ffn_down_exps.bias",
        ],
        numpy_forward=forward,
        sliding_window=WINDOW,
        checkpoint_map=_checkpoint_map,
        family_checks=family_checks,
        float64_check=True,
        ablations=("sinks", "swiglu_clamp", "yarn_truncate", "yarn", "softmax_before_topk"),
        record_gguf=True,
        mechanisms={
            "attention": "GQA 4/2 heads of 16; q/k/v/o biases; scale 1/sqrt(16); SINKS: per head h one extra logit "
                         "s_h = attn_sinks[h] in the softmax denominator: p_j = exp(l_j) / (sum_i exp(l_i) + exp(s_h)), "
                         "no value row (transformers concatenates the sink column and drops it after the softmax)",
            "window": "attention.sliding_window = 8 on layers il % 2 == 0 (no pattern key; llama.cpp openai-moe period 2); "
                      "key k visible to query q iff k <= q and q - k < 8; odd layers full causal",
            "rope": "NEOX on all 16 dims, YaRN: theta_i = b_i (1 - ramp_i) + b_i / 32 ramp_i, b_i = 150000^(-2i/16), "
                    "ramp_i = clamp((i - low) / (high - low), 0, 1) with low = corr_dim(32) = 2.02, high = corr_dim(1) = "
                    "4.35 NOT rounded (transformers truncate false; llama.cpp rounds to 2 and 5), corr_dim(r) = 16 "
                    "ln(4096 / (2 pi r)) / (2 ln 150000); cos and sin times 1 + 0.1 ln 32 = 1.3466 (no attn_factor key; "
                    "llama.cpp's YaRN default mscale); GGUF keys rope.scaling.{type, factor, original_context_length, "
                    "yarn_beta_fast, yarn_beta_slow}, rope.freq_base",
            "router": "logits = ffn_gate_inp . h + ffn_gate_inp.bias; top-2 on the logits; weights = softmax over the "
                      "two chosen logits (no softmax over all experts; llama.cpp SOFTMAX_WEIGHT, hard-coded, no GGUF key); "
                      "no renormalisation beyond that, no scale, no groups",
            "experts": "gate = ffn_gate_exps[e] . h + ffn_gate_exps.bias[e], up likewise, "
                       "act = (clamp(up, -7, 7) + 1) * g * sigmoid(1.702 g) with g = min(gate, 7) (swiglu_oai; alpha and "
                       "limit not in the GGUF), out = ffn_down_exps[e] . act + ffn_down_exps.bias[e]; ff = "
                       "expert_feed_forward_length = 32 (feed_forward_length too)",
            "norm": "RMSNorm eps 1e-5: attn_norm, the FFN pre-norm named post_attention_norm, output_norm; untied",
            "hf_checkpoint": "gate_up_proj [E, embd, 2ff] (gate/up INTERLEAVED on the last dim: gate = 0::2), "
                             "gate_up_proj_bias [E, 2ff], down_proj [E, ff, embd], down_proj_bias, router.weight/bias, "
                             "self_attn.sinks (not saved here: hf/ only for mixtral, qwen2moe, deepseek2-lite)",
        },
    )}
