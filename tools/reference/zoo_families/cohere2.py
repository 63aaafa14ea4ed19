"""Command R7B / Command A (Cohere2ForCausalLM; GGUF `cohere2`), 4 layers: 3 windowed + 1 global.

Beyond a plain Llama: a PARALLEL block on ONE bias-free LayerNorm (h = LN(x); x = x + attn(h) + mlp(h);
Cohere2LayerNorm: mean-centred, weight only, eps layer_norm_eps), INTERLEAVED RoPE (adjacent pairs,
llama.cpp NORM; no q/k permutation) applied only in the windowed layers, the global layers without
RoPE (NoPE), a sliding window on layers with (il + 1) % 4 != 0, a tied head and logits MULTIPLIED by
logit_scale. The converter writes attention.sliding_window but NO pattern key: llama.cpp's cohere2
uses the period 4 (il % 4 < 3 windowed) unless attention.sliding_window_pattern is present.
Converter shim: Cohere2Model.set_gguf_parameters reads hparams["rotary_pct"], which transformers 5's
Cohere2Config does not write (Cohere2 rotates the whole head): set to
rope_parameters.partial_rotary_factor, or 1.0 when absent.
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config

WINDOW = 8
LOGIT_SCALE = 0.25       # multiplies the logits (as command-r's); away from 1 and from 1/4's inverse
SWA_PERIOD_DEFAULT = 4   # llama.cpp cohere2: swa_period 4 unless the GGUF has sliding_window_pattern


def _rotary_pct(hparams):
    if "rotary_pct" in hparams:
        return None
    prf = (hparams.get("rope_parameters") or {}).get("partial_rotary_factor", 1.0)
    hparams["rotary_pct"] = prf
    return (f"conversion.command_r.Cohere2Model.set_gguf_parameters wrapped: hparams['rotary_pct'] = {prf} "
            f"(rope_parameters.partial_rotary_factor, 1.0 when absent: transformers 5's Cohere2Config writes no "
            f"rotary_pct; the converter reads it for rope.dimension_count = int(rotary_pct * head_dim))")


def swa_pattern(m: npf.Meta, n_layer: int) -> list[bool]:
    """True = windowed layer: the GGUF's sliding_window_pattern (bool array, or an int period), else
    llama.cpp's cohere2 default period 4 (set_swa_pattern(4): il % 4 < 3)."""
    pat = m.get("attention.sliding_window_pattern")
    if isinstance(pat, list):
        return [bool(b) for b in pat]
    period = int(pat) if pat is not None else SWA_PERIOD_DEFAULT
    return [il % period < period - 1 for il in range(n_layer)]


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "norm"
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, n_embd = m.int("block_count"), m.int("embedding_length")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length", n_embd // n_head)
    eps = m.float("attention.layer_norm_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    assert m.get("rope.scaling.type", "none") == "none"
    pattern = swa_pattern(m, n_layer)
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base")))
    style = "neox" if "interleaved_rope" in ablate else "norm"

    def ln(x, name):
        assert name + ".bias" not in W, f"{name}.bias present"
        return npf.layer_norm(x, W(name + ".weight"), 0.0, eps)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        assert p + "ffn_norm.weight" not in W, "one norm per block"
        h = ln(x, p + "attn_norm")
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=False)
        if pattern[il] or "global_nope" in ablate:
            q, k = npf.rope(q, cos, sin, style), npf.rope(k, cos, sin, style)
        mask = npf.causal_mask(n, sliding_window if pattern[il] else None)
        a = npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + a + npf.swiglu(W, h, p)
    x = ln(x, "output_norm")
    assert "output.weight" not in W, "cohere2's head is tied"
    logits = x @ W("token_embd.weight").T
    if "logit_scale" not in ablate:
        logits = logits * m.float("logit_scale")
    W.check_all_used()
    return logits


def _family_checks(model, config, meta, tensors):
    m = npf.Meta(meta, "cohere2")
    pat = swa_pattern(m, config.num_hidden_layers)
    assert "cohere2.attention.sliding_window_pattern" not in meta
    assert pat == [t == "sliding_attention" for t in config.layer_types] == [True, True, True, False], pat
    assert [layer.self_attn.sliding_window is not None for layer in model.model.layers] == pat
    assert float(meta["cohere2.logit_scale"]) == LOGIT_SCALE
    return {"layer_pattern": {
        "transformers_layer_types": list(config.layer_types),
        "gguf": "no attention.sliding_window_pattern key: llama.cpp's cohere2 default period 4 (il % 4 < 3 windowed) "
                "gives the same layers",
        "rule": "windowed layers: window AND interleaved RoPE; global layers: full causal attention, NO RoPE"}}


def families(zoo):
    return {"cohere2": zoo.Family(
        config_cls=zoo._transformers_class("Cohere2Config"),
        model_cls=zoo._transformers_class("Cohere2ForCausalLM"),
        config_kwargs=base_config(num_hidden_layers=4, hidden_act="silu", layer_norm_eps=1e-5,
                                  logit_scale=LOGIT_SCALE, tie_word_embeddings=True, attention_bias=False,
                                  sliding_window=WINDOW, layer_types=None, sliding_window_pattern=4),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.command_r", "Cohere2Model"),
        gguf_arch="cohere2",
        llama_arch_enum="LLM_ARCH_COHERE2",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=forward,
        sliding_window=WINDOW,
        converter_shims=(_rotary_pct,),
        float64_check=True,
        ablations=("global_nope", "interleaved_rope", "logit_scale"),
        family_checks=_family_checks,
        record_gguf=True,
        mechanisms={
            "norm": "LayerNorm WITHOUT bias: (x - mean) / sqrt(var + eps) * w, eps attention.layer_norm_epsilon; "
                    "one per block (attn_norm, no ffn_norm) and the final output_norm",
            "block": "parallel: h = attn_norm(x); x = x + attn(h) + ffn(h)",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim); no QK norm",
            "window": "attention.sliding_window = 8; NO pattern key: windowed iff il % 4 < 3 (llama.cpp's cohere2 "
                      "default period 4; transformers layer_types from sliding_window_pattern 4)",
            "rope": "adjacent pairs (llama.cpp NORM; Cohere's repeat_interleave'd cos/sin), all head_dim dims "
                    "(rope.dimension_count = 16), only in the windowed layers; global layers NoPE; "
                    "rope.scaling.type 'none'",
            "ffn": "SwiGLU, no biases",
            "head": "tied: logits = (output_norm(x) @ token_embd^T) * logit_scale (cohere2.logit_scale = 0.25, MULTIPLIES)",
        },
    )}
