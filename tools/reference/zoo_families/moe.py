"""Shared pieces of the issue-39 families (MoE routers, shared experts, attention sinks, YaRN,
multi-head latent attention): the perturbation rule, the float64 numpy router / expert / shared-expert
blocks in llama.cpp's order, and a Llama-shaped decoder forward for the MoE families that use plain
(GQA/MHA) attention. No torch/transformers at import time.

The router (`route`) follows llama.cpp's llm_graph_context::build_moe_ffn (src/llama-graph.cpp):
  logits = ffn_gate_inp . h (+ ffn_gate_inp.bias when present)
  probs  = softmax(logits) | sigmoid(logits) | logits ("softmax_weight": gpt-oss)
  selection score = probs + exp_probs_b (when the GGUF has blk.N.exp_probs_b.bias)
  with expert_group_count G > 1: a group's score is the sum of its top-2 selection scores, the top
      expert_group_used_count groups are kept, the other experts' selection scores set to -inf
  top-k (expert_used_count) on the selection score
  weights = probs at the chosen experts (unbiased); softmax over the k chosen ("softmax_weight");
      divided by their sum (clamped >= 6.103515625e-5) when the family normalises;
      times expert_weights_scale when it is present and not 0 or 1
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from . import npf

SINK_STD = 1.0          # gpt-oss attention sinks (one logit per head) ~ N(0, 1)
SCORE_BIAS_STD = 0.05   # e_score_correction_bias (a buffer) ~ N(0, 0.05): on the sigmoid scale, enough to
#                         change some choices, small enough that the probabilities still matter
WEIGHTS_NORM_CLAMP = 6.103515625e-5


# ---------------------------------------------------------------------------------------------
# initialisation


def perturb(model, zoo, *, expert_std: float | None = None, score_bias_std: float = SCORE_BIAS_STD,
            sink_std: float = SINK_STD, layer_std: float | None = None,
            router_std: float | None = None) -> list[str]:
    """The zoo's rule (make_zoo_fixture._perturb_biases_and_norms: Linear weights N(0, INIT_STD),
    embeddings N(0, EMBED_STD), biases BIAS_SCALE randn, norm weights 1 + NORM_SCALE randn) extended to
    what the MoE/MLA/gpt-oss checkpoints add, in named_parameters() order, then the buffers:
      2-D weights inside the layers                  N(0, layer_std or INIT_STD)
      the router mlp.gate.weight                     N(0, router_std or the above)
      stacked 3-D expert weights ("...experts...")  N(0, expert_std or INIT_STD)
      gpt-oss expert biases ("..._bias", [E, n])    BIAS_SCALE randn
      gpt-oss attention sinks ("...sinks", [n_head]) N(0, sink_std)
      e_score_correction_bias (a BUFFER, missed by named_parameters())  N(0, score_bias_std)
    Uses the global torch RNG (seeded by the caller). Returns what it touched."""
    import torch
    touched = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias") or (name.endswith("_bias") and ".experts." in name):
                p.copy_(zoo.BIAS_SCALE * torch.randn_like(p))
                kind = "bias"
            elif name.endswith(".sinks"):
                p.copy_(sink_std * torch.randn_like(p))
                kind = f"attention sink logits N(0, {sink_std})"
            elif p.ndim == 1 and "norm" in name:
                p.copy_(1.0 + zoo.NORM_SCALE * torch.randn_like(p))
                kind = "norm"
            elif "embed_tokens" in name:
                p.copy_(zoo.EMBED_STD * torch.randn_like(p))
                kind = "embedding"
            elif p.ndim == 2 and router_std is not None and name.endswith("mlp.gate.weight"):
                p.copy_(router_std * torch.randn_like(p))
                kind = f"router weight N(0, {router_std})"
            elif p.ndim == 2:
                std = layer_std if layer_std is not None and ".layers." in name else zoo.INIT_STD
                p.copy_(std * torch.randn_like(p))
                kind = "weight" if std == zoo.INIT_STD else f"weight N(0, {std})"
            elif p.ndim == 3 and ".experts." in name:
                std = expert_std if expert_std is not None else zoo.INIT_STD
                p.copy_(std * torch.randn_like(p))
                kind = f"expert weights N(0, {std})"
            else:
                raise RuntimeError(f"no perturbation rule for parameter {name} {tuple(p.shape)}")
            touched.append(f"{name} ({kind})")
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(score_bias_std * torch.randn_like(b))
                touched.append(f"{name} (BUFFER: selection bias N(0, {score_bias_std}))")
    return touched


# ---------------------------------------------------------------------------------------------
# checkpoint -> GGUF tensor edits, written independently of the converter (for the bit-exact check)


def split_fused_gate_up(sd: dict, suffix: str) -> list[str]:
    """transformers 5 keeps a layer's experts as experts.gate_up_proj [E, 2ff, embd] (gate rows first,
    `linear(x, gate_up_proj[e]).chunk(2, dim=-1)`); the GGUF has ffn_gate_exps / ffn_up_exps [E, ff, embd]."""
    n = 0
    for k in [k for k in sd if k.endswith(suffix)]:
        w = sd.pop(k)
        ff = w.shape[1] // 2
        sd[k + ":gate"], sd[k + ":up"] = w[:, :ff, :], w[:, ff:, :]
        n += 1
    assert n > 0, suffix
    return [f"{n} x {suffix} [E, 2ff, embd] split into ffn_gate_exps (rows :ff) and ffn_up_exps (rows ff:)"]


# ---------------------------------------------------------------------------------------------
# router and experts


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def route(W: npf.Weights, m: npf.Meta, h: np.ndarray, p: str, *, gating: str, norm: bool,
          ablate=frozenset(), stats: dict | None = None):
    """(selected [n, k] expert ids, weights [n, k]) for the tokens h [n, embd] (see the module docstring).
    gating "softmax" | "sigmoid" | "softmax_weight"; norm: divide the k weights by their sum.
    Ablations: "selection_bias" (no exp_probs_b), "groups" (no group limit), "renorm" (flip norm),
    "weights_scale" (no expert_weights_scale), "softmax_before_topk" (softmax_weight -> softmax)."""
    n_expert, k = m.int("expert_count"), m.int("expert_used_count")
    assert 0 < k < n_expert
    logits = npf.linear(W, h, p + "ffn_gate_inp")                     # (+ ffn_gate_inp.bias when present)
    assert logits.shape[1] == n_expert, logits.shape
    if gating == "softmax_weight" and "softmax_before_topk" in ablate:
        gating = "softmax"
    if gating == "softmax":
        probs = softmax(logits)
    elif gating == "sigmoid":
        probs = sigmoid(logits)
    elif gating == "softmax_weight":
        probs = logits
    else:
        raise ValueError(gating)
    sel = probs
    if p + "exp_probs_b.bias" in W:
        b = W(p + "exp_probs_b.bias")
        if "selection_bias" not in ablate:
            sel = probs + b
    margins = []
    n_groups = m.int("expert_group_count", 0)
    if n_groups > 1 and "groups" not in ablate:
        n_used_groups = m.int("expert_group_used_count")
        per = n_expert // n_groups
        assert per * n_groups == n_expert and 0 < n_used_groups < n_groups
        gs = np.sort(sel.reshape(-1, n_groups, per), axis=-1)[..., ::-1][..., :2].sum(axis=-1)   # [n, G]
        gorder = np.argsort(-gs, axis=-1, kind="stable")
        gsrt = np.take_along_axis(gs, gorder, axis=-1)
        margins.append(float((gsrt[:, n_used_groups - 1] - gsrt[:, n_used_groups]).min()))
        keep = np.zeros_like(gs, dtype=bool)
        np.put_along_axis(keep, gorder[:, :n_used_groups], True, axis=-1)
        sel = np.where(np.repeat(keep, per, axis=-1), sel, -np.inf)
    order = np.argsort(-sel, axis=-1, kind="stable")
    srt = np.take_along_axis(sel, order, axis=-1)
    margins.append(float((srt[:, k - 1] - srt[:, k]).min()))
    chosen = order[:, :k]
    w = np.take_along_axis(probs, chosen, axis=-1)
    if gating == "softmax_weight":
        w = softmax(w)
    if norm != ("renorm" in ablate):
        w = w / np.maximum(w.sum(axis=-1, keepdims=True), WEIGHTS_NORM_CLAMP)
    scale = m.float("expert_weights_scale", 0.0)
    if scale not in (0.0, 1.0) and "weights_scale" not in ablate:
        w = w * scale
    if stats is not None:
        stats.setdefault("margins", []).extend(margins)
        if "chosen" in stats:                       # (routing_record asks for the choices)
            stats["chosen"].append(chosen.copy())
    return chosen, w


def swiglu_oai(g: np.ndarray, u: np.ndarray, alpha: float = 1.702, limit: float = 7.0,
               stats: dict | None = None, clamp: bool = True) -> np.ndarray:
    """gpt-oss: (clamp(u, -limit, limit) + 1) * g' * sigmoid(alpha g'), g' = min(g, limit)."""
    if stats is not None:
        stats["clamped_gate"] = stats.get("clamped_gate", 0) + int((g > limit).sum())
        stats["clamped_up"] = stats.get("clamped_up", 0) + int((np.abs(u) > limit).sum())
        stats["activations"] = stats.get("activations", 0) + int(g.size)
    if clamp:
        g = np.minimum(g, limit)
        u = np.clip(u, -limit, limit)
    return (u + 1.0) * g * sigmoid(alpha * g)


def experts(W: npf.Weights, h: np.ndarray, p: str, chosen: np.ndarray, w: np.ndarray, *,
            act: str = "silu", stats: dict | None = None, ablate=frozenset()) -> np.ndarray:
    """sum_j w[t, j] * down_e(act(gate_e h, up_e h)) over the chosen experts e = chosen[t, j]; expert
    biases ffn_{gate,up,down}_exps.bias ([E, n]) added when the GGUF has them."""
    gate_e, up_e, down_e = W(p + "ffn_gate_exps.weight"), W(p + "ffn_up_exps.weight"), W(p + "ffn_down_exps.weight")
    bias = {nm: (W(p + f"ffn_{nm}_exps.bias") if p + f"ffn_{nm}_exps.bias" in W else None)
            for nm in ("gate", "up", "down")}
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        for j in range(chosen.shape[1]):
            e = chosen[t, j]
            g, u = gate_e[e] @ h[t], up_e[e] @ h[t]
            if bias["gate"] is not None:
                g = g + bias["gate"][e]
            if bias["up"] is not None:
                u = u + bias["up"][e]
            if act == "silu":
                a = npf.silu(g) * u
            elif act == "swiglu_oai":
                a = swiglu_oai(g, u, stats=stats, clamp="swiglu_clamp" not in ablate)
            else:
                raise ValueError(act)
            y = down_e[e] @ a
            if bias["down"] is not None:
                y = y + bias["down"][e]
            out[t] += w[t, j] * y
    return out


def shared_expert(W: npf.Weights, h: np.ndarray, p: str, ablate=frozenset()) -> np.ndarray | None:
    """ffn_down_shexp(silu(ffn_gate_shexp h) * ffn_up_shexp h), times sigmoid(ffn_gate_inp_shexp . h)
    when the GGUF has that gate (Qwen2-MoE); None when the block has no shared expert."""
    if p + "ffn_up_shexp.weight" not in W:
        assert p + "ffn_gate_inp_shexp.weight" not in W
        return None
    s = npf.linear(W, npf.silu(npf.linear(W, h, p + "ffn_gate_shexp", bias=False))
                   * npf.linear(W, h, p + "ffn_up_shexp", bias=False), p + "ffn_down_shexp", bias=False)
    if p + "ffn_gate_inp_shexp.weight" in W:
        g = npf.linear(W, h, p + "ffn_gate_inp_shexp", bias=False)          # [n, 1]
        if "shared_gate" not in ablate:
            s = s * sigmoid(g)
    if "shared_expert" in ablate:
        return np.zeros_like(s)
    return s


def moe_ffn(W, m, h, p, *, gating, norm, act="silu", ablate=frozenset(), stats=None):
    chosen, w = route(W, m, h, p, gating=gating, norm=norm, ablate=ablate, stats=stats)
    out = experts(W, h, p, chosen, w, act=act, stats=stats, ablate=ablate)
    s = shared_expert(W, h, p, ablate)
    return out if s is None else out + s


def router_margin(stats: dict | None) -> None:
    """Collapses the per-layer margins into stats["router_min_margin"] (read by make_zoo_fixture: the
    smallest gap between the k-th and (k+1)-th selection score, and between the last kept and the
    first dropped group score, over all tokens and MoE layers; must be > 1e-4)."""
    if stats is not None and stats.get("margins"):
        stats["router_min_margin"] = min(stats["margins"])


# ---------------------------------------------------------------------------------------------
# RoPE with YaRN


def yarn_inv_freq(n_rot: int, base: float, factor: float, orig_ctx: int, beta_fast: float, beta_slow: float,
                  truncate: bool) -> np.ndarray:
    """transformers _compute_yarn_parameters' frequencies: corr_dim(r) = n_rot ln(orig / (2 pi r)) / (2 ln base);
    low = corr_dim(beta_fast), high = corr_dim(beta_slow), floored / ceiled when truncate (llama.cpp's
    ggml_rope_yarn_corr_dims always rounds), then low = max(low, 0), high = min(high, n_rot - 1);
    ramp_i = clamp((i - low) / (high - low), 0, 1) (high - low = 0.001 when equal);
    theta_i = base^(-2i/n_rot) * (1 - ramp_i) + base^(-2i/n_rot) / factor * ramp_i."""
    def corr_dim(r):
        return n_rot * math.log(orig_ctx / (r * 2.0 * math.pi)) / (2.0 * math.log(base))
    low, high = corr_dim(beta_fast), corr_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0.0), min(high, n_rot - 1.0)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(n_rot // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrap = npf.rope_inv_freq(n_rot, base)
    return extrap * (1.0 - ramp) + (extrap / factor) * ramp


def yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1.0 else 0.1 * mscale * math.log(scale) + 1.0


# ---------------------------------------------------------------------------------------------
# a Llama-shaped decoder with MoE FFNs (Mixtral, Qwen2-MoE, OLMoE, Granite-MoE, GLM-4.5, gpt-oss)


def decoder_forward(tensors, meta, arch, ids, rope_style, *, gating: str, norm, act: str = "silu",
                    qkn: str | None = None, window_period: int | None = None, sliding_window=None,
                    multipliers: bool = False, yarn_truncate: bool = True, ablate=frozenset(),
                    stats: dict | None = None, **_) -> np.ndarray:
    """float64 forward of a pre-norm decoder whose FFN is dense in the first leading_dense_block_count
    layers and MoE (`moe_ffn`) in the others, read from the GGUF:
      attention  q/k/v(/o) biases when present; qkn (QK norm) None | "head" (RMSNorm over head_dim, weights [hd]) |
                 "whole" (RMSNorm over the whole projection, OLMoE: [n_head*hd] / [n_head_kv*hd]); RoPE on the
                 first rope.dimension_count dims (rope_style), YaRN when rope.scaling.type == "yarn"
                 (cos/sin times 1 + 0.1 ln factor; yarn_truncate: transformers' `truncate`); scale
                 1/sqrt(head_dim) or Granite's attention.scale; attention sinks (attn_sinks.weight) as one more
                 logit per head in the softmax denominator; window on layers il % period < period - 1
      ffn pre-norm ffn_norm, or post_attention_norm (gpt-oss / GLM-4.5 name for the same norm)
      Granite multipliers when `multipliers` (embedding_scale, residual_scale, attention.scale, logit_scale)
    `norm`: True / False (the family's fixed rule) or "gguf" (expert_weights_norm, default false)."""
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, n_embd = m.int("block_count"), m.int("embedding_length")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length", n_embd // n_head)
    assert m.int("attention.value_length", hd) == hd
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    base = m.float("rope.freq_base", 10000.0)
    n_dense = m.int("leading_dense_block_count", 0)
    if norm == "gguf":
        norm = bool(m.get("expert_weights_norm", False))
    n = len(ids)
    pos = np.arange(n)
    if m.get("rope.scaling.type", "none") == "yarn" and "yarn" not in ablate:
        factor = m.float("rope.scaling.factor")
        inv = yarn_inv_freq(n_rot, base, factor, m.int("rope.scaling.original_context_length"),
                            m.float("rope.scaling.yarn_beta_fast", 32.0), m.float("rope.scaling.yarn_beta_slow", 1.0),
                            truncate=yarn_truncate != ("yarn_truncate" in ablate))
        assert "rope.scaling.yarn_log_multiplier" not in m and "rope.scaling.attn_factor" not in m
        cos, sin = npf.rope_cos_sin(pos, inv, yarn_get_mscale(factor))
    else:
        cos, sin = npf.rope_cos_sin(pos, npf.rope_inv_freq(n_rot, base))
    style = {"neox": "norm", "norm": "neox"}[rope_style] if "rope_style" in ablate else rope_style
    emb_mul = m.float("embedding_scale") if multipliers and "multipliers" not in ablate else 1.0
    res_mul = m.float("residual_scale") if multipliers and "multipliers" not in ablate else 1.0
    scale = (m.float("attention.scale") if multipliers and "multipliers" not in ablate else 1.0 / math.sqrt(hd))
    x = W("token_embd.weight")[np.asarray(ids)] * emb_mul
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q = npf.linear(W, h, p + "attn_q")
        k = npf.linear(W, h, p + "attn_k")
        v = npf.heads(npf.linear(W, h, p + "attn_v"), n_kv)
        if qkn == "whole" and "qk_norm" not in ablate:
            q = npf.rms_norm(q, W(p + "attn_q_norm.weight"), eps)
            k = npf.rms_norm(k, W(p + "attn_k_norm.weight"), eps)
        q, k = npf.heads(q, n_head), npf.heads(k, n_kv)
        if qkn == "head" and "qk_norm" not in ablate:
            q = npf.rms_norm(q, W(p + "attn_q_norm.weight"), eps)
            k = npf.rms_norm(k, W(p + "attn_k_norm.weight"), eps)
        if qkn is not None and "qk_norm" in ablate:
            W.mark_used(p + "attn_q_norm.weight")
            W.mark_used(p + "attn_k_norm.weight")
        q, k = npf.rope(q, cos, sin, style), npf.rope(k, cos, sin, style)
        windowed = sliding_window is not None and (window_period is None or il % window_period < window_period - 1)
        mask = npf.causal_mask(n, sliding_window if windowed else None)
        if p + "attn_sinks.weight" in W:
            sinks = W(p + "attn_sinks.weight")
            a = attention_with_sinks(q, k, v, mask, scale, None if "sinks" in ablate else sinks)
        else:
            a = npf.attention(q, k, v, mask, scale)
        x = x + npf.linear(W, a, p + "attn_output") * res_mul
        pre = p + ("ffn_norm.weight" if p + "ffn_norm.weight" in W else "post_attention_norm.weight")
        h = npf.rms_norm(x, W(pre), eps)
        if il < n_dense:
            assert p + "ffn_gate_inp.weight" not in W
            y = npf.swiglu(W, h, p)
        else:
            y = moe_ffn(W, m, h, p, gating=gating, norm=norm, act=act, ablate=ablate, stats=stats)
        x = x + y * res_mul
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    if multipliers and "multipliers" not in ablate:
        logits = logits / m.float("logit_scale")
    W.check_all_used()
    router_margin(stats)
    return logits


def attention_with_sinks(q, k, v, mask, scale, sinks):
    """npf.attention with one extra logit s_h per head in the softmax denominator (no value row):
    p_j = exp(l_j) / (sum_i exp(l_i) + exp(s_h)); sinks None: plain attention."""
    if sinks is None:
        return npf.attention(q, k, v, mask, scale)
    n, n_head, _ = q.shape
    g = n_head // k.shape[1]
    o = np.empty((n, n_head, v.shape[-1]))
    for hh in range(n_head):
        s = q[:, hh, :] @ k[:, hh // g, :].T * scale + mask
        mx = np.maximum(s.max(axis=-1, keepdims=True), sinks[hh])
        e = np.exp(s - mx)
        o[:, hh, :] = (e / (e.sum(axis=-1, keepdims=True) + np.exp(sinks[hh] - mx))) @ v[:, hh // g, :]
    return o.reshape(n, -1)


# ---------------------------------------------------------------------------------------------
# family checks shared by the routing families


def routing_record(forward, tensors, meta, arch, rope_style, prompts, **opts) -> dict[str, Any]:
    """Runs the numpy pass on every prompt, asserts that routing differs between tokens (in every MoE
    layer more than k distinct experts are chosen over the 40-token prompt) and returns the expert
    usage per layer."""
    rec = {}
    for n, ids in prompts.items():
        st: dict = {"chosen": []}
        forward(tensors, meta, arch, ids, rope_style, stats=st, **opts)
        chosen = st["chosen"]
        rec[str(n)] = {"distinct_experts_per_moe_layer": [int(len(np.unique(c))) for c in chosen],
                       "router_min_gap": st["router_min_margin"]}
        if n == max(prompts):
            k = chosen[0].shape[1]
            assert all(len(np.unique(c)) > k for c in chosen), rec
            assert all(len({tuple(sorted(r)) for r in c.tolist()}) > 1 for c in chosen), "same experts for every token"
    return rec


def gguf_keys(meta: dict, arch: str) -> list[str]:
    return sorted(k for k in meta if k.startswith(arch + "."))


def block_tensor_table(tensors: dict, il: int = 0) -> dict[str, list[int]]:
    """{name: numpy shape} of one block's tensors (numpy shape = ggml ne reversed)."""
    pre = f"blk.{il}."
    return {k: list(v.shape) for k, v in tensors.items() if k.startswith(pre)}


def strip_block(name: str) -> str:
    return re.sub(r"^blk\.\d+\.", "blk.N.", name)
