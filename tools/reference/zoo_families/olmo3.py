"""OLMo 3 (Olmo3ForCausalLM; the converter writes GGUF `olmo2`), 4 layers: 3 windowed + 1 global.

OLMo 2's block (post-norms only: x += post_attention_norm(attn(x)); x += post_ffw_norm(mlp(x)); RMSNorm
of the WHOLE q and k projections (attn_q_norm [n_head * hd], attn_k_norm [n_head_kv * hd]) before
RoPE; NEOX RoPE) plus a sliding window on the layers marked true in attention.sliding_window_pattern
(transformers layer_types: (il + 1) % 4 != 0 -> sliding) and a per-layer-type RoPE base: the windowed
layers use rope.freq_base_swa (transformers rope_parameters["sliding_attention"]["rope_theta"]), the
global ones rope.freq_base (["full_attention"]). Here they differ (10000 / 500000) so that the key
matters. A loader tells OLMo 3 from OLMo 2 by olmo2.attention.sliding_window being present.
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config

WINDOW = 8
THETA_SWA, THETA_FULL = 10000.0, 500000.0
LAYER_TYPES = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "neox"
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, n_embd = m.int("block_count"), m.int("embedding_length")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length", n_embd // n_head)
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    pattern = [bool(b) for b in m["attention.sliding_window_pattern"]]
    assert len(pattern) == n_layer
    base_full = m.float("rope.freq_base")
    base_swa = base_full if "freq_base_swa" in ablate else m.float("rope.freq_base_swa", base_full)
    n = len(ids)
    rope_of = {swa: npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, base_swa if swa else base_full))
               for swa in (False, True)}
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        assert p + "attn_norm.weight" not in W and p + "ffn_norm.weight" not in W, "post-norms only"
        q = npf.rms_norm(npf.linear(W, x, p + "attn_q", bias=False), W(p + "attn_q_norm.weight"), eps)
        k = npf.rms_norm(npf.linear(W, x, p + "attn_k", bias=False), W(p + "attn_k_norm.weight"), eps)
        v = npf.heads(npf.linear(W, x, p + "attn_v", bias=False), n_kv)
        cos, sin = rope_of[pattern[il]]
        q = npf.rope(npf.heads(q, n_head), cos, sin, "neox")
        k = npf.rope(npf.heads(k, n_kv), cos, sin, "neox")
        mask = npf.causal_mask(n, sliding_window if pattern[il] else None)
        a = npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + npf.rms_norm(a, W(p + "post_attention_norm.weight"), eps)
        x = x + npf.rms_norm(npf.swiglu(W, x, p), W(p + "post_ffw_norm.weight"), eps)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def _family_checks(model, config, meta, tensors):
    pat = [bool(b) for b in meta["olmo2.attention.sliding_window_pattern"]]
    assert pat == [t == "sliding_attention" for t in config.layer_types] == [True, True, True, False], pat
    assert float(meta["olmo2.rope.freq_base"]) == THETA_FULL and float(meta["olmo2.rope.freq_base_swa"]) == THETA_SWA
    rp = config.rope_parameters
    assert rp["sliding_attention"]["rope_theta"] == THETA_SWA and rp["full_attention"]["rope_theta"] == THETA_FULL, rp
    return {"layer_pattern": {
        "transformers_layer_types": list(config.layer_types),
        "gguf_sliding_window_pattern": pat,
        "rule": "pattern true: window (k <= q and q - k < sliding_window) and RoPE base rope.freq_base_swa; "
                "false: full causal attention and RoPE base rope.freq_base (RoPE in every layer)"}}


def families(zoo):
    return {"olmo3": zoo.Family(
        config_cls=zoo._transformers_class("Olmo3Config"),
        model_cls=zoo._transformers_class("Olmo3ForCausalLM"),
        config_kwargs=base_config(
            num_hidden_layers=4, hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=False,
            attention_bias=False, sliding_window=WINDOW, layer_types=list(LAYER_TYPES),
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": THETA_SWA},
                             "full_attention": {"rope_type": "default", "rope_theta": THETA_FULL}}),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.olmo", "Olmo2Model"),
        gguf_arch="olmo2",
        llama_arch_enum="LLM_ARCH_OLMO2",
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
        ablations=("freq_base_swa",),
        family_checks=_family_checks,
        record_gguf=True,
        mechanisms={
            "gguf_arch": "general.architecture 'olmo2' (Olmo3ForCausalLM is registered under the converter's "
                         "Olmo2Model); OLMo 3 = olmo2 + olmo2.attention.sliding_window (+ pattern, + rope.freq_base_swa)",
            "norm": "RMSNorm (weight only); POST-norms only (post_attention_norm, post_ffw_norm); final output_norm",
            "qk_norm": "RMSNorm over the WHOLE q projection (attn_q_norm [n_head*hd] = [64]) and k projection "
                       "(attn_k_norm [n_head_kv*hd] = [32]) before splitting into heads and before RoPE (as olmo2)",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim)",
            "window": "olmo2.attention.sliding_window = 8; olmo2.attention.sliding_window_pattern = [true, true, true, "
                      "false] (bool array, true = windowed)",
            "rope": "NEOX, all head_dim dims, in EVERY layer; base rope.freq_base_swa (10000) in windowed layers, "
                    "rope.freq_base (500000) in global layers",
            "ffn": "SwiGLU, no biases",
            "head": "untied output.weight",
        },
    )}
