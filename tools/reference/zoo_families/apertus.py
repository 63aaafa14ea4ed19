"""Apertus (ApertusForCausalLM; GGUF `apertus`).

Beyond a plain Llama: a NON-gated MLP with the xIELU activation (down(xielu(up(h))), no ffn_gate),
whose per-layer parameters are GGUF metadata arrays OUTSIDE the architecture prefix:
xielu.alpha_p / xielu.alpha_n / xielu.beta / xielu.eps ([n_layer] float32 each; alpha_p and alpha_n
are the RAW parameters, before softplus); a per-head RMSNorm of q and k (attn_q_norm / attn_k_norm,
[head_dim]) BEFORE RoPE; NEOX RoPE (ApertusModel sets undo_permute = False: no q/k permutation) with
Llama-3 frequency scaling through the generated rope_freqs.weight; renamed norms (HF
attention_layernorm -> attn_norm, feedforward_layernorm -> ffn_norm).
xIELU (transformers XIELUActivation._xielu_python; ggml op_xielu):
    a_p = softplus(alpha_p); a_n = beta + softplus(alpha_n)
    x > 0:  a_p x^2 + beta x;   x <= 0:  (expm1(min(x, eps)) - x) a_n + beta x
"""
from __future__ import annotations

import types

import numpy as np

from . import npf
from .common import base_config


def xielu(x, alpha_p, alpha_n, beta, eps):
    a_p = npf.softplus(alpha_p)
    a_n = beta + npf.softplus(alpha_n)
    return np.where(x > 0, a_p * x * x + beta * x, (np.expm1(np.minimum(x, eps)) - x) * a_n + beta * x)


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(),
            rope_freq_factors=True, **_):
    assert rope_style == "neox" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    xp = {k: [float(v) for v in meta[f"xielu.{k}"]] for k in ("alpha_p", "alpha_n", "beta", "eps")}
    assert all(len(v) == n_layer for v in xp.values()), xp
    ff = W("rope_freqs.weight") if rope_freq_factors else (W.mark_used("rope_freqs.weight") or None)
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base"), ff))
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=False)
        q = npf.rms_norm(q, W(p + "attn_q_norm.weight"), eps)
        k = npf.rms_norm(k, W(p + "attn_k_norm.weight"), eps)
        q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
        x = x + npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        h = npf.rms_norm(x, W(p + "ffn_norm.weight"), eps)
        assert p + "ffn_gate.weight" not in W, "apertus' MLP has no gate"
        u = npf.linear(W, h, p + "ffn_up", bias=False)
        if "xielu_per_layer" in ablate:            # layer 0's parameters everywhere
            a = xielu(u, xp["alpha_p"][0], xp["alpha_n"][0], xp["beta"][0], xp["eps"][0])
        else:
            a = xielu(u, xp["alpha_p"][il], xp["alpha_n"][il], xp["beta"][il], xp["eps"][il])
        x = x + npf.linear(W, a, p + "ffn_down", bias=False)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def _perturb(zoo):
    def perturb(model):
        """the zoo's rule for every parameter but xIELU's; then alpha_p / alpha_n (raw, [1] per layer)
        += 0.3 randn and the beta buffer ([] per layer, 0.5 by default) = 0.5 + 0.2 randn, so that the four
        per-layer values differ between layers and from the defaults"""
        import torch
        rest = [(n, p) for n, p in model.named_parameters() if ".act_fn." not in n]
        touched = zoo._perturb_biases_and_norms(types.SimpleNamespace(named_parameters=lambda: rest))
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith((".act_fn.alpha_p", ".act_fn.alpha_n")):
                    p.add_(0.3 * torch.randn_like(p))
                    touched.append(f"{name} (xIELU raw alpha: init + 0.3 randn)")
            for name, b in model.named_buffers():
                if name.endswith(".act_fn.beta"):
                    b.copy_(0.5 + 0.2 * torch.randn_like(b))
                    touched.append(f"{name} (xIELU beta buffer: 0.5 + 0.2 randn)")
        return touched
    return perturb


def _float64_rope_freqs(model64, meta, tensors):
    """transformers computes the Llama-3 factors in float64; the GGUF holds them as float32
    (rope_freqs.weight): give the float64 model inv_freq = base^(-2i/d) / rope_freqs (float64)."""
    import torch
    rot = model64.model.rotary_emb
    inv = npf.rope_inv_freq(int(meta["apertus.rope.dimension_count"]), float(meta["apertus.rope.freq_base"]),
                            tensors["rope_freqs.weight"].astype(np.float64))
    assert np.allclose(rot.inv_freq.numpy(), inv, rtol=1e-6, atol=0)
    rot.inv_freq.copy_(torch.from_numpy(inv))
    rot.original_inv_freq.copy_(torch.from_numpy(inv))
    return ["rotary inv_freq -> rope.freq_base^(-2i/d) / rope_freqs.weight (the GGUF's float32 factors)"]


def _family_checks(model, config, meta, tensors):
    rec = {}
    for il, layer in enumerate(model.model.layers):
        act = layer.mlp.act_fn
        for k, t in (("alpha_p", act.alpha_p), ("alpha_n", act.alpha_n), ("beta", act.beta), ("eps", act.eps)):
            got = float(meta[f"xielu.{k}"][il])
            assert got == float(t.detach().float().reshape(-1)[0]), (il, k, got, t)
            rec.setdefault(k, []).append(got)
    assert len(set(rec["beta"])) == len(rec["beta"]) and len(set(rec["alpha_p"])) == len(rec["alpha_p"]), rec
    print(f"xielu.* per layer (raw, as in the GGUF): {rec}")
    return {"xielu": {"gguf_values": rec,
                      "rule": "a_p = softplus(alpha_p); a_n = beta + softplus(alpha_n); x > 0: a_p x^2 + beta x; "
                              "else (expm1(min(x, eps)) - x) a_n + beta x (keys xielu.*, no arch prefix, "
                              "float32 arrays of n_layer values, equal to the checkpoint's act_fn parameters/buffers)"}}


def families(zoo):
    return {"apertus": zoo.Family(
        config_cls=zoo._transformers_class("ApertusConfig"),
        model_cls=zoo._transformers_class("ApertusForCausalLM"),
        config_kwargs=base_config(hidden_act="xielu", rms_norm_eps=1e-5, tie_word_embeddings=False,
                                  attention_bias=False, rope_parameters=dict(zoo.LLAMA3_ROPE), pad_token_id=None),
        perturb=_perturb(zoo),
        converter_class=("conversion.llama", "ApertusModel"),
        gguf_arch="apertus",
        llama_arch_enum="LLM_ARCH_APERTUS",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight", "rope_freqs.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=forward,
        gguf_generated_tensors=["rope_freqs.weight"],
        llama3_rope=True,
        float64_check=_float64_rope_freqs,
        ablations=("xielu_per_layer",),
        family_checks=_family_checks,
        checkpoint_map=lambda sd, config, meta: _drop_act(sd),
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only); pre-norm (HF attention_layernorm -> attn_norm, feedforward_layernorm -> "
                    "ffn_norm); final output_norm",
            "qk_norm": "per-head RMSNorm of q and k over head_dim (attn_q_norm / attn_k_norm, [head_dim]) BEFORE RoPE",
            "attention": "GQA, no biases, scale 1/sqrt(head_dim)",
            "rope": "NEOX (no q/k permutation: ApertusModel.undo_permute = False), all head_dim dims, base "
                    "rope.freq_base, theta_i divided by rope_freqs.weight[i] (Llama-3 scaling, tensor generated by "
                    "the converter; no rope.scaling.* keys)",
            "ffn": "NOT gated: ffn_down(xielu(ffn_up(h))); no ffn_gate",
            "xielu": "per layer il: a_p = softplus(xielu.alpha_p[il]); a_n = xielu.beta[il] + softplus(xielu.alpha_n[il]); "
                     "x > 0: a_p x^2 + beta x; x <= 0: (expm1(min(x, xielu.eps[il])) - x) a_n + beta x",
            "head": "untied output.weight",
        },
    )}


def _drop_act(sd):
    """xIELU's per-layer scalars become metadata (xielu.*), not tensors (checked in _family_checks)"""
    dropped = [k for k in list(sd) if ".act_fn." in k]
    for k in dropped:
        del sd[k]
    return [f"{len(dropped)} xIELU scalars (mlp.act_fn.alpha_p / alpha_n / beta / eps) written as the metadata arrays "
            f"xielu.alpha_p / alpha_n / beta / eps instead of tensors"]
