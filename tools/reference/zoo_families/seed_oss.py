"""Seed-OSS (SeedOssForCausalLM; GGUF `seed_oss`).

A Llama with q/k/v biases (attention_bias; no o_proj bias, attention_out_bias False) and NEOX RoPE.
GGUF naming quirk: the FFN's pre-norm (HF post_attention_layernorm) is written as
blk.N.post_attention_norm.weight (llama.cpp LLM_TENSOR_ATTN_POST_NORM), not ffn_norm, although it
is applied BEFORE the MLP exactly like Llama's ffn_norm.
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "neox" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    assert m.int("attention.value_length") == hd
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base")))
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        qkv = []
        for t, nh in (("attn_q", n_head), ("attn_k", n_kv), ("attn_v", n_kv)):
            y = npf.linear(W, h, p + t, bias=True)
            if "qkv_bias" in ablate:
                y = y - W(p + t + ".bias")
            qkv.append(npf.heads(y, nh))
        q, k, v = qkv
        q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
        x = x + npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        h = npf.rms_norm(x, W(p + "post_attention_norm.weight"), eps)     # the pre-FFN norm
        x = x + npf.linear(W, npf.silu(npf.linear(W, h, p + "ffn_gate", bias=False))
                           * npf.linear(W, h, p + "ffn_up", bias=False), p + "ffn_down", bias=False)
    x = npf.rms_norm(x, W("output_norm.weight"), eps)
    logits = npf.linear(W, x, "output", bias=False)
    W.check_all_used()
    return logits


def families(zoo):
    return {"seed_oss": zoo.Family(
        config_cls=zoo._transformers_class("SeedOssConfig"),
        model_cls=zoo._transformers_class("SeedOssForCausalLM"),
        config_kwargs=base_config(hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=False,
                                  attention_bias=True, attention_out_bias=False, mlp_bias=False,
                                  residual_dropout=0.0),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.olmo", "SeedOssModel"),
        gguf_arch="seed_oss",
        llama_arch_enum="LLM_ARCH_SEED_OSS",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.post_attention_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=forward,
        float64_check=True,
        ablations=("qkv_bias",),
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only), eps attention.layer_norm_rms_epsilon; pre-norm; final output_norm",
            "attention": "GQA; q/k/v projections WITH biases (attn_q/k/v.bias), attn_output without bias; "
                         "scale 1/sqrt(head_dim) (head_dim = attention.key_length)",
            "rope": "NEOX (rotate halves) on all head_dim dims, rope.freq_base",
            "ffn": "SwiGLU down(silu(gate(h)) * up(h)), no biases",
            "ffn_norm_tensor_name": "blk.N.post_attention_norm.weight is the norm applied BEFORE the MLP "
                                    "(HF post_attention_layernorm; llama.cpp LLM_TENSOR_ATTN_POST_NORM, used "
                                    "as the FFN input norm in src/models/seed-oss.cpp): there is no ffn_norm",
            "head": "untied output.weight",
            "block": "sequential pre-norm",
        },
    )}
