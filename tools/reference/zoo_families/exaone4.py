"""EXAONE 4.0 (Exaone4ForCausalLM; GGUF `exaone4`), 4 layers: 3 windowed + 1 global.

Beyond a plain Llama: NO pre-norms, only post-norms (x += post_attention_norm(attn(x));
x += post_ffw_norm(mlp(x))); a per-head RMSNorm on q and k (attn_q_norm / attn_k_norm, [head_dim])
BEFORE RoPE; a sliding window on the layers marked true in attention.sliding_window_pattern
(transformers layer_types: (il + 1) % 4 != 0 -> "sliding_attention"); and the hybrid rule "global
NoPE": the windowed layers apply RoPE, the global (full-attention) layers apply NONE (transformers
Exaone4Attention: RoPE iff config.sliding_window is None or the layer is sliding).
llama.cpp (src/models/exaone4.cpp) builds the window and the NoPE layers only when n_layer == 64 (the
32B); for any other depth it runs every layer with full causal attention AND RoPE, ignoring the
GGUF's window and pattern, so it does not reproduce this file at either prompt length.
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config

WINDOW = 8
LAYER_TYPES = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "neox"
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    assert m.int("attention.value_length") == hd
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    pattern = [bool(b) for b in m["attention.sliding_window_pattern"]]     # True = windowed layer
    assert len(pattern) == n_layer
    has_window = "attention.sliding_window" in m
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base")))
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        mask = npf.causal_mask(n, sliding_window if pattern[il] else None)
        q, k, v = npf.qkv(W, x, p, n_head, n_kv, bias=False)             # no pre-norm
        q = npf.rms_norm(q, W(p + "attn_q_norm.weight"), eps)
        k = npf.rms_norm(k, W(p + "attn_k_norm.weight"), eps)
        use_rope = pattern[il] or not has_window or "global_nope" in ablate
        if use_rope:
            q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
        a = npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + npf.rms_norm(a, W(p + "post_attention_norm.weight"), eps)
        x = x + npf.rms_norm(npf.swiglu(W, x, p), W(p + "post_ffw_norm.weight"), eps)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def _family_checks(model, config, meta, tensors):
    pat = [bool(b) for b in meta["exaone4.attention.sliding_window_pattern"]]
    assert pat == [t == "sliding_attention" for t in config.layer_types] == [True, True, True, False], pat
    rope_layers = [layer.self_attn.sliding_window is None or layer.self_attn.is_sliding for layer in model.model.layers]
    assert rope_layers == pat, rope_layers
    return {"layer_pattern": {
        "transformers_layer_types": list(config.layer_types),
        "gguf_sliding_window_pattern": pat,
        "rule": "layer il: sliding_window_pattern[il] true -> window (key k visible to query q iff k <= q and "
                "q - k < sliding_window) AND RoPE; false -> full causal attention and NO RoPE",
        "llama_cpp": "src/models/exaone4.cpp sets swa_type STANDARD (and reads the pattern) only when n_layer == 64; "
                     "otherwise every layer is full attention with RoPE (a 4-layer file is computed as a plain "
                     "post-norm QK-norm model)"}}


def families(zoo):
    return {"exaone4": zoo.Family(
        config_cls=zoo._transformers_class("Exaone4Config"),
        model_cls=zoo._transformers_class("Exaone4ForCausalLM"),
        config_kwargs=base_config(num_hidden_layers=4, hidden_act="silu", rms_norm_eps=1e-5,
                                  tie_word_embeddings=False, sliding_window=WINDOW, sliding_window_pattern=4,
                                  layer_types=list(LAYER_TYPES)),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.exaone", "Exaone4Model"),
        gguf_arch="exaone4",
        llama_arch_enum="LLM_ARCH_EXAONE4",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.post_attention_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
            "blk.{bid}.post_ffw_norm.weight",
        ],
        numpy_forward=forward,
        sliding_window=WINDOW,
        float64_check=True,
        ablations=("global_nope",),
        family_checks=_family_checks,
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only); POST-norms only: x += post_attention_norm(attn(x)); "
                    "x += post_ffw_norm(ffn(x)); no attn_norm / ffn_norm tensors; final output_norm",
            "qk_norm": "per-head RMSNorm of q and k over head_dim (attn_q_norm / attn_k_norm, [head_dim]) BEFORE RoPE",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim)",
            "window": "attention.sliding_window = 8 and attention.sliding_window_pattern = [true, true, true, false] "
                      "(bool array, true = windowed); key k visible to query q iff k <= q and q - k < 8",
            "rope": "NEOX on all head_dim dims in the windowed layers; the global layers (pattern false) apply NO "
                    "RoPE (when the file has a window; without attention.sliding_window every layer has RoPE)",
            "ffn": "SwiGLU, no biases",
            "head": "untied output.weight",
            "llama_cpp_difference": "llama.cpp applies the window and the NoPE layers only for n_layer == 64; this "
                                    "4-layer file runs there with full attention and RoPE in every layer",
        },
    )}
