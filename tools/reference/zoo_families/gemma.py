"""Gemma 1 (GemmaForCausalLM; GGUF `gemma`; also CodeGemma).

Beyond a plain Llama: RMSNorm scaled by (1 + w) (the converter stores 1 + w, so the GGUF's norm
weights are used as plain RMSNorm weights), the embedding rows times sqrt(n_embd), a tanh-GELU
gated MLP (GeGLU: down(gelu_tanh(gate(h)) * up(h))), tied head (no output.weight), NEOX RoPE on the
whole head. The gemma converter writes no rope.freq_base (llama.cpp then uses 10000, the config's).
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import LLAMA_BLOCK_TENSORS, base_config


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "neox" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, n_embd = m.int("block_count"), m.int("embedding_length")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    assert m.int("attention.value_length") == hd
    eps = m.float("attention.layer_norm_rms_epsilon")
    base = m.float("rope.freq_base", 10000.0)          # absent: llama.cpp's default
    n_rot = m.int("rope.dimension_count", hd)
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, base))
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    if "embedding_scale" not in ablate:
        x = x * np.sqrt(n_embd)
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q = npf.heads(npf.linear(W, h, p + "attn_q", bias=False), n_head)
        k = npf.heads(npf.linear(W, h, p + "attn_k", bias=False), n_kv)
        v = npf.heads(npf.linear(W, h, p + "attn_v", bias=False), n_kv)
        q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
        x = x + npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        h = npf.rms_norm(x, W(p + "ffn_norm.weight"), eps)
        act = npf.silu if "geglu" in ablate else npf.gelu_tanh
        x = x + npf.linear(W, act(npf.linear(W, h, p + "ffn_gate")) * npf.linear(W, h, p + "ffn_up"), p + "ffn_down")
    x = npf.rms_norm(x, W("output_norm.weight"), eps)
    assert "output.weight" not in W, "gemma's head is tied"
    logits = x @ W("token_embd.weight").T
    W.check_all_used()
    return logits


def _norm_plus_one(sd, config, meta):
    shifted = [k for k in sd if k.endswith("norm.weight")]
    for k in shifted:
        sd[k] = sd[k] + np.float32(1.0)
    return [f"{len(shifted)} RMSNorm weights w stored as 1 + w (float32 add; GemmaModel.modify_tensors)"]


def _float64_weights(model64, meta, tensors):
    """transformers computes 1 + w in float64 while the GGUF holds float32(1 + w): give the float64
    model w' = float32(1 + w) - 1 (exact in float64), i.e. the GGUF's values."""
    import torch
    edited = 0
    with torch.no_grad():
        for name, p in model64.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_((p + 1.0).to(torch.float32).to(torch.float64) - 1.0)
                edited += 1
    return [f"{edited} norm weights w -> float32(1 + w) - 1 (the GGUF's rounding of 1 + w)"]


def families(zoo):
    return {"gemma": zoo.Family(
        config_cls=zoo._transformers_class("GemmaConfig"),
        model_cls=zoo._transformers_class("GemmaForCausalLM"),
        config_kwargs=base_config(hidden_act="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                                  tie_word_embeddings=True, attention_bias=False),
        perturb=zoo._perturb_biases_and_norms,      # Gemma's w (used as 1 + w): 1 + 0.3 randn
        converter_class=("conversion.gemma", "GemmaModel"),
        gguf_arch="gemma",
        llama_arch_enum="LLM_ARCH_GEMMA",
        rope_style="neox",
        required_tensors=["token_embd.weight", "output_norm.weight"] + LLAMA_BLOCK_TENSORS,
        numpy_forward=forward,
        checkpoint_map=_norm_plus_one,
        float64_check=_float64_weights,
        ablations=("embedding_scale", "geglu"),
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm x / sqrt(mean(x^2) + eps) * (1 + w), eps rms_norm_eps; the GGUF stores 1 + w "
                    "(use as a plain RMSNorm weight); pre-norm (attn_norm, ffn_norm), final output_norm",
            "embedding": "token rows times sqrt(n_embd) (= 8 here; transformers: the scale as a tensor of the "
                         "model dtype; llama.cpp: ggml_scale(sqrtf(n_embd)))",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim) (head_dim from attention.key_length)",
            "rope": "NEOX (rotate halves) on all head_dim dims; the converter writes no rope.freq_base: "
                    "10000 (llama.cpp's default, = the config's rope_theta)",
            "ffn": "GeGLU: ffn_down(gelu_tanh(ffn_gate(h)) * ffn_up(h)), gelu_tanh = 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))",
            "head": "tied: logits = output_norm(x) @ token_embd^T (no output.weight); no soft cap, no logit scale",
            "block": "sequential pre-norm: x += attn(attn_norm(x)); x += ffn(ffn_norm(x))",
        },
    )}
