"""Ministral 3 (Ministral3ForCausalLM; GGUF `mistral3`).

A Llama (the converter's Ministral3Model is a LlamaModel: q/k rows permuted, NORM RoPE) with YaRN
RoPE scaling and the Llama-4 attention temperature: after RoPE the query of position p is multiplied
by 1 + beta * ln(1 + floor(p / L)), beta = mistral3.attention.temperature_scale (transformers
rope_parameters.llama_4_scaling_beta), L = mistral3.rope.scaling.original_context_length
(original_max_position_embeddings). The sizes are chosen so that both matter on 40 tokens:
original context 32 (the temperature steps up at p = 32), YaRN factor 8, beta 0.5 (real: 0.1),
mscale 1 and mscale_all_dim 0.5 (real: 1 and 1; the GGUF's yarn_log_multiplier carries mscale_all_dim,
and llama.cpp assumes mscale = 1), base 10000 so that the YaRN ramp (pairs 0..2) falls inside head_dim 16.
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config

ROPE = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0, "original_max_position_embeddings": 32,
        "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 0.5, "llama_4_scaling_beta": 0.5}


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "norm" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    base = m.float("rope.freq_base")
    assert m["rope.scaling.type"] == "yarn"
    factor, orig = m.float("rope.scaling.factor"), m.int("rope.scaling.original_context_length")
    n = len(ids)
    pos = np.arange(n, dtype=np.float64)
    if "yarn" in ablate:
        cos, sin = npf.rope_cos_sin(pos, npf.rope_inv_freq(n_rot, base))
    else:
        inv = npf.yarn_inv_freq(n_rot, base, factor, orig, m.float("rope.scaling.yarn_beta_fast", 32.0),
                                m.float("rope.scaling.yarn_beta_slow", 1.0))
        mscale = npf.yarn_mscale(factor, m.get("rope.scaling.yarn_log_multiplier"))
        cos, sin = npf.rope_cos_sin(pos, inv, 1.0 if "yarn_mscale" in ablate else mscale)
    beta = m.float("attention.temperature_scale", 0.0)
    temp = 1.0 + beta * np.log(1.0 + np.floor(pos / orig))                  # [n]
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=False)
        q, k = npf.rope(q, cos, sin, "norm"), npf.rope(k, cos, sin, "norm")
        if "attn_temperature" not in ablate:
            q = q * temp[:, None, None]
        x = x + npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + npf.swiglu(W, npf.rms_norm(x, W(p + "ffn_norm.weight"), eps), p)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def _family_checks(model, config, meta, tensors):
    """the GGUF's YaRN frequencies and attention factor against transformers' own"""
    m = npf.Meta(meta, "mistral3")
    hd = int(m["attention.key_length"])
    rot = model.model.rotary_emb
    inv = npf.yarn_inv_freq(hd, m.float("rope.freq_base"), m.float("rope.scaling.factor"),
                            m.int("rope.scaling.original_context_length"),
                            m.float("rope.scaling.yarn_beta_fast"), m.float("rope.scaling.yarn_beta_slow"))
    ms = npf.yarn_mscale(m.float("rope.scaling.factor"), m.get("rope.scaling.yarn_log_multiplier"))
    inv_tf = rot.inv_freq.double().numpy()
    print(f"YaRN inv_freq: from the GGUF {inv.tolist()}\n  transformers {inv_tf.tolist()}\n"
          f"  attention factor: from the GGUF {ms!r}, transformers {rot.attention_scaling!r}")
    assert np.allclose(inv, inv_tf, rtol=1e-6, atol=0) and abs(ms - rot.attention_scaling) < 1e-6
    base = npf.rope_inv_freq(hd, m.float("rope.freq_base"))
    assert len({round(float(r), 6) for r in base / inv}) >= 3, "the ramp is not inside head_dim"
    return {"yarn": {"inv_freq_divisors": (base / inv).tolist(), "attention_factor": ms,
                     "matches_transformers": True}}


def families(zoo):
    return {"mistral3": zoo.Family(
        config_cls=zoo._transformers_class("Ministral3Config"),
        model_cls=zoo._transformers_class("Ministral3ForCausalLM"),
        config_kwargs=base_config(hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=False,
                                  rope_parameters=dict(ROPE), sliding_window=None, pad_token_id=None),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.mistral3", "Mistral3Model.Ministral3Model"),   # the outer class delegates to it
        gguf_arch="mistral3",
        llama_arch_enum="LLM_ARCH_MISTRAL3",
        rope_style="norm",
        required_tensors=["token_embd.weight", "output_norm.weight", "output.weight",
                          "blk.{bid}.attn_norm.weight",
                          "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
                          "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
                          "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight"],
        numpy_forward=forward,
        gguf_qk_permuted=True,
        float64_check=True,
        ablations=("yarn", "yarn_mscale", "attn_temperature"),
        family_checks=_family_checks,
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only); pre-norm; final output_norm",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim)",
            "rope": "q/k rows permuted by the converter (LlamaModel.permute) -> NORM (adjacent-pair) RoPE; YaRN "
                    "(rope.scaling.type 'yarn'): theta_i = extrap_i (1 - ramp_i) + (extrap_i / factor) ramp_i, "
                    "extrap_i = base^(-2i/n_rot), ramp_i = clamp((i - low) / max(0.001, high - low), 0, 1), "
                    "low = max(0, floor(c(beta_fast))), high = min(n_rot - 1, ceil(c(beta_slow))), c(r) = n_rot "
                    "ln(orig_ctx / (2 pi r)) / (2 ln base); cos/sin times m(factor, 1) / m(factor, yarn_log_multiplier), "
                    "m(s, k) = 1 + 0.1 k ln s",
            "attn_temperature": "after RoPE, q at position p *= 1 + attention.temperature_scale * ln(1 + floor(p / "
                                "rope.scaling.original_context_length)) (Llama-4 scaling; llama.cpp's floor scale "
                                "is n_ctx_orig_yarn, the same key)",
            "ffn": "SwiGLU, no biases",
            "head": "untied output.weight",
        },
    )}
