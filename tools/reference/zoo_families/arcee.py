"""Arcee AFM (ArceeForCausalLM; GGUF `arcee`).

A Llama whose MLP is NOT gated: down(relu(up(h))^2) (transformers ACT2FN["relu2"]; llama.cpp
LLM_FFN_RELU_SQR, LLM_FFN_SEQ), no ffn_gate tensor. The converter is LlamaModel's: q/k rows
permuted per head to adjacent-pair (NORM) RoPE order, as for `llama`.
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "norm" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base")))
    mask = npf.causal_mask(n)
    act = (lambda u: np.maximum(u, 0.0)) if "relu_squared" in ablate else npf.relu2
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=False)
        q, k = npf.rope(q, cos, sin, "norm"), npf.rope(k, cos, sin, "norm")
        x = x + npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        h = npf.rms_norm(x, W(p + "ffn_norm.weight"), eps)
        assert p + "ffn_gate.weight" not in W, "arcee's MLP has no gate"
        x = x + npf.linear(W, act(npf.linear(W, h, p + "ffn_up", bias=False)), p + "ffn_down", bias=False)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def families(zoo):
    return {"arcee": zoo.Family(
        config_cls=zoo._transformers_class("ArceeConfig"),
        model_cls=zoo._transformers_class("ArceeForCausalLM"),
        config_kwargs=base_config(hidden_act="relu2", rms_norm_eps=1e-5, tie_word_embeddings=False,
                                  attention_bias=False, mlp_bias=False),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.llama", "ArceeModel"),
        gguf_arch="arcee",
        llama_arch_enum="LLM_ARCH_ARCEE",
        rope_style="norm",                         # LlamaModel.permute: q/k rows in adjacent-pair order
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=forward,
        gguf_qk_permuted=True,
        float64_check=True,
        ablations=("relu_squared",),
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only); pre-norm; final output_norm",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim)",
            "rope": "the converter permutes q/k rows per head (LlamaModel.permute: HF rotate-halves -> adjacent "
                    "pairs), so the GGUF is run with NORM RoPE (adjacent pairs), as for `llama`",
            "ffn": "NOT gated: ffn_down(relu(ffn_up(h))^2); no ffn_gate tensor (llama.cpp LLM_FFN_RELU_SQR, LLM_FFN_SEQ)",
            "head": "untied output.weight",
            "block": "sequential pre-norm",
        },
    )}
