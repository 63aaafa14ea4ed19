"""ERNIE 4.5 dense (Ernie4_5ForCausalLM; GGUF `ernie4_5`).

A Llama whose RoPE rotates ADJACENT pairs (2i, 2i + 1) with frequency i (transformers'
Ernie4_5 rotate_half on x[0::2] / x[1::2] with cos/sin repeat_interleave'd): llama.cpp's NORM
RoPE, and the converter does not permute q/k (the checkpoint's rows are already in that order).
Tied head by default (ERNIE-4.5-0.3B). No biases (use_bias False).
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import LLAMA_BLOCK_TENSORS, base_config


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "norm" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    assert m.int("attention.value_length") == hd
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base")))
    style = "neox" if "interleaved_rope" in ablate else "norm"
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=False)
        q, k = npf.rope(q, cos, sin, style), npf.rope(k, cos, sin, style)
        x = x + npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + npf.swiglu(W, npf.rms_norm(x, W(p + "ffn_norm.weight"), eps), p)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def families(zoo):
    return {"ernie4_5": zoo.Family(
        config_cls=zoo._transformers_class("Ernie4_5Config"),
        model_cls=zoo._transformers_class("Ernie4_5ForCausalLM"),
        config_kwargs=base_config(hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=True,
                                  use_bias=False),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.ernie", "Ernie4_5Model"),
        gguf_arch="ernie4_5",
        llama_arch_enum="LLM_ARCH_ERNIE4_5",
        rope_style="norm",
        required_tensors=["token_embd.weight", "output_norm.weight"] + LLAMA_BLOCK_TENSORS,
        numpy_forward=forward,
        float64_check=True,
        ablations=("interleaved_rope",),
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only), eps attention.layer_norm_rms_epsilon; pre-norm; final output_norm",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim)",
            "rope": "adjacent pairs (2i, 2i+1) rotated by p * base^(-2i/n_rot) (llama.cpp NORM; transformers "
                    "Ernie4_5 rotate_half x[0::2]/x[1::2] with repeat_interleave'd cos/sin); q/k rows NOT "
                    "permuted by the converter (unlike `llama`, whose permutation turns HF rotate-halves into "
                    "adjacent pairs): the GGUF's rows are the checkpoint's",
            "ffn": "SwiGLU, no biases",
            "head": "tied (no output.weight): logits = output_norm(x) @ token_embd^T",
            "block": "sequential pre-norm",
        },
    )}
