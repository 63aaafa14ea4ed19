"""Hunyuan dense (HunYuanDenseV1ForCausalLM; GGUF `hunyuan-dense`).

Beyond a plain Llama: a per-head RMSNorm on q and on k (query_layernorm / key_layernorm, weight
[head_dim], eps rms_norm_eps) applied AFTER RoPE (Qwen3 applies it before); NEOX RoPE whose base is
stretched by the NTK "alpha" (the real checkpoints' rope_scaling {type "dynamic", alpha}: transformers
computes base = rope_theta * alpha^(hd / (hd - 2)) once (its "ntk_alpha"), and the converter writes
that scaled base as rope.freq_base, with rope.scaling.type "none", factor 1 and context 256Ki);
tied head (Hunyuan dense checkpoints tie it; the converter drops lm_head).
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config

ALPHA = 1000.0          # the real checkpoints' alpha
ROPE_THETA = 10000.0    # the converter asserts base 10000 for rope_type "dynamic"


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "neox" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    assert m.int("attention.value_length") == hd
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    base = ROPE_THETA if "ntk_alpha_base" in ablate else m.float("rope.freq_base")
    assert m.get("rope.scaling.type", "none") == "none" and m.float("rope.scaling.factor", 1.0) == 1.0
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, base))
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=False)
        qn, kn = W(p + "attn_q_norm.weight"), W(p + "attn_k_norm.weight")
        if "qk_norm_after_rope" in ablate:        # Qwen3's order: norm, then RoPE
            q, k = npf.rms_norm(q, qn, eps), npf.rms_norm(k, kn, eps)
            q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
        else:
            q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
            q, k = npf.rms_norm(q, qn, eps), npf.rms_norm(k, kn, eps)
        x = x + npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + npf.swiglu(W, npf.rms_norm(x, W(p + "ffn_norm.weight"), eps), p)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def _float64_base(model64, meta, tensors):
    """the GGUF holds the scaled base as float32 (26826958.0; transformers' float64 value 26826957.95):
    give the float64 model inv_freq from the GGUF's base"""
    import torch
    rot = model64.model.rotary_emb
    hd = int(meta["hunyuan-dense.attention.key_length"])
    inv = npf.rope_inv_freq(hd, float(meta["hunyuan-dense.rope.freq_base"]))
    assert np.allclose(rot.inv_freq.numpy(), inv, rtol=1e-6, atol=0)
    rot.inv_freq.copy_(torch.from_numpy(inv))
    rot.original_inv_freq.copy_(torch.from_numpy(inv))
    return ["rotary inv_freq -> rope.freq_base^(-2i/d) with the GGUF's float32 base"]


def _family_checks(model, config, meta, tensors):
    """the converter's base = transformers' ntk-alpha base (computed here from the config)"""
    hd = config.head_dim
    expect = ROPE_THETA * ALPHA ** (hd / (hd - 2))
    got = float(meta["hunyuan-dense.rope.freq_base"])
    rot = model.model.rotary_emb
    assert rot.rope_type == "ntk_alpha", rot.rope_type
    inv_tf = rot.inv_freq.double().numpy()
    inv_gguf = npf.rope_inv_freq(hd, got)
    print(f"rope.freq_base {got!r} = rope_theta * alpha^(hd/(hd-2)) = {expect!r}; transformers inv_freq "
          f"vs base^(-2i/hd) max rel diff {float(np.abs(inv_tf / inv_gguf - 1).max()):.2e}")
    assert abs(got / expect - 1) < 1e-6 and np.allclose(inv_tf, inv_gguf, rtol=1e-6, atol=0)
    return {"ntk_alpha": {"alpha": ALPHA, "rope_theta": ROPE_THETA, "gguf_rope_freq_base": got,
                          "rule": "rope.freq_base = rope_theta * alpha^(head_dim / (head_dim - 2)) (written by the "
                                  "converter; transformers HunYuanDenseV1RotaryEmbedding ntk_alpha); llama.cpp and "
                                  "archetype use rope.freq_base as is"}}


def families(zoo):
    return {"hunyuan-dense": zoo.Family(
        config_cls=zoo._transformers_class("HunYuanDenseV1Config"),
        model_cls=zoo._transformers_class("HunYuanDenseV1ForCausalLM"),
        config_kwargs=base_config(
            max_position_embeddings=32768,          # the converter asserts 32Ki or 256Ki for "dynamic"
            rope_parameters={"rope_type": "dynamic", "rope_theta": ROPE_THETA, "alpha": ALPHA, "factor": 1.0},
            hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=True, attention_bias=False,
            eod_token_id=3),
        perturb=zoo._perturb_biases_and_norms,     # query_layernorm / key_layernorm: "norm" rule
        converter_class=("conversion.hunyuan", "HunYuanModel"),
        gguf_arch="hunyuan-dense",
        llama_arch_enum="LLM_ARCH_HUNYUAN_DENSE",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=forward,
        float64_check=_float64_base,
        ablations=("qk_norm_after_rope", "ntk_alpha_base"),
        family_checks=_family_checks,
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only); pre-norm; final output_norm",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim)",
            "qk_norm": "per-head RMSNorm of q and of k over head_dim (attn_q_norm / attn_k_norm, [head_dim], eps = the "
                       "block eps) applied AFTER RoPE (transformers: apply_rotary_pos_emb, then query_layernorm / "
                       "key_layernorm; llama.cpp hunyuan-vl graph: rope then build_norm)",
            "rope": "NEOX (rotate halves), all head_dim dims, base = rope.freq_base as written (already scaled by "
                    "the NTK alpha: 10000 * 1000^(16/14) here); rope.scaling.type 'none', factor 1: no other scaling",
            "ffn": "SwiGLU, no biases",
            "head": "tied (no output.weight)",
            "context": "the converter writes context_length = rope.scaling.original_context_length = 262144 for "
                       "rope_type 'dynamic' (real checkpoints' 256Ki context)",
        },
    )}
