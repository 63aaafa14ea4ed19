"""The float64 numpy mechanisms of the state-space families (issue 38), written once and reused by
every preset: the causal depthwise convolution, Mamba-1's selective scan (with Jamba's dt/B/C
RMSNorms), Mamba-2's SSD (scalar decay per head, grouped B/C, D skip, gate then GROUPED RMSNorm) and
the gated DeltaNet of Qwen3-Next / Qwen3.5 (with the attention output gate). Each reads every size
from the GGUF (npf.Meta) and every weight from its dequantised tensors (npf.Weights), and runs the
plain token recurrence (the definition; no chunked form), so that it is an independent second
reading of what the converted file describes. Also the perturbation rule of the SSM parameters and
the converter's tensor edits written independently (for the bit-exact check). No torch /
transformers at import time.

Mechanisms as transformers 5.24 computes them (the numpy pass follows these; llama.cpp agrees where
not said otherwise):

causal conv (all three): s = [K-1 previous input rows (zeros at the start); this chunk's rows];
    conv[t, c] = sum_{i<K} s[t+i, c] * w[c, i] + b[c] (w = ssm_conv1d.weight, ggml ne [K, C]; b absent
    when the model has no conv bias); then silu.
Mamba-1 (MambaMixer.slow_forward): xz = ssm_in(h); x, z = xz[:d_inner], xz[d_inner:]; x = silu(conv(x));
    x_db = ssm_x(x) = [dt (dt_rank) | B (d_state) | C (d_state)]; (Jamba: dt, B, C each RMSNormed with
    ssm_dt_norm / ssm_b_norm / ssm_c_norm, eps = the rms eps); dt = softplus(ssm_dt(dt) + ssm_dt.bias)
    [d_inner]; A = ssm_a [d_inner, d_state] (= -exp(A_log), done by the converter);
    S[c, :] = exp(dt[c] A[c, :]) S[c, :] + dt[c] B x[c]; y[c] = S[c, :] . C + D[c] x[c];
    out = ssm_out(y * silu(z)).
Mamba-2 (Mamba2Mixer.torch_forward): zxbcdt = ssm_in(h) = [z (d_inner) | xBC (d_inner + 2 G N) | dt (H)];
    xBC = silu(conv(xBC)); x = xBC[:d_inner] as [H, P]; B, C = the next G*N, G*N as [G, N];
    head h uses group h // (H / G); dt = softplus(dt + ssm_dt.bias) [H]; A = ssm_a [H] (scalar per head);
    S_h = exp(dt_h A_h) S_h + dt_h x_h B_g^T ([P, N]); y_h = S_h C_g + D_h x_h;
    y = y * silu(z), THEN RMSNorm over each group of d_inner / G channels (weight ssm_norm, eps = the
    rms eps; MambaRMSNormGated with norm_before_gate=False; llama.cpp mamba-base.cpp:269-276; a file without
    ssm_norm, Falcon-H1's mamba_rms_norm false, has no norm: y * silu(z));
    out = ssm_out(y).
gated DeltaNet and the gated attention (Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet, Qwen3NextAttention): see
    gated_deltanet and gated_attention below.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import npf

A_RANGE = (1.0, 16.0)          # Mamba-2 / DeltaNet: A = -exp(A_log), A_log = log(U(1, 16)) (real init: log(1..H))
DT_RANGE = (1e-3, 0.1)         # softplus(dt_bias) log-uniform in [1e-3, 0.1] (the models' time_step_min/max)


# ---------------------------------------------------------------------------------------------
# initialisation


def perturb(model, zoo, *, zero_centered_norms: tuple[str, ...] = ()) -> list[str]:
    """The zoo's rule (make_zoo_fixture._perturb_biases_and_norms / moe.perturb) extended to the SSM
    parameters, in named_parameters() order (uses the global torch RNG, seeded by the caller):
      A_log [H] (Mamba-2, DeltaNet)     log(U(1, 16))            (A = -exp(A_log) in [-16, -1])
      A_log [d_inner, N] (Mamba-1)      log((1..N) * U(0.5, 1.5)) (the real S4D-real init log(1..N), perturbed)
      dt_bias / dt_proj.bias            softplus^-1(exp(U(ln 1e-3, ln 0.1)))  (softplus(dt_bias) in [1e-3, 0.1])
      D                                 1 + NORM_SCALE randn     (default ones)
      conv1d.weight [C, 1, K]           N(0, CONV_STD)
      norm weights named in zero_centered_norms (the model multiplies by 1 + w)   NORM_SCALE randn
      everything else                   moe.perturb's rule (Linear N(0, INIT_STD), embeddings N(0, EMBED_STD),
                                        biases BIAS_SCALE randn, norms 1 + NORM_SCALE randn, experts)
    Returns what it touched."""
    import types

    import torch

    from . import moe
    touched = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "A_log" and p.ndim == 1:
                p.copy_(torch.log(torch.empty_like(p).uniform_(*A_RANGE)))
                kind = f"A_log = log(U{A_RANGE})"
            elif leaf == "A_log" and p.ndim == 2:
                n = p.shape[1]
                base = torch.arange(1, n + 1, dtype=p.dtype).expand_as(p)
                p.copy_(torch.log(base * torch.empty_like(p).uniform_(0.5, 1.5)))
                kind = "A_log = log((1..N) * U(0.5, 1.5))"
            elif leaf == "dt_bias" or name.endswith("dt_proj.bias"):
                lo, hi = math.log(DT_RANGE[0]), math.log(DT_RANGE[1])
                dt = torch.exp(torch.empty_like(p).uniform_(lo, hi))
                p.copy_(dt + torch.log(-torch.expm1(-dt)))          # softplus^-1
                kind = f"dt bias: softplus(b) log-uniform in {DT_RANGE}"
            elif leaf == "D":
                p.copy_(1.0 + zoo.NORM_SCALE * torch.randn_like(p))
                kind = "D = 1 + 0.3 randn"
            elif p.ndim == 3 and name.endswith("conv1d.weight"):
                p.copy_(zoo.CONV_STD * torch.randn_like(p))
                kind = f"conv weight N(0, {zoo.CONV_STD})"
            elif p.ndim == 1 and name.endswith(zero_centered_norms) and zero_centered_norms:
                p.copy_(zoo.NORM_SCALE * torch.randn_like(p))
                kind = "zero-centred norm (1 + w): 0.3 randn"
            else:
                touched += moe.perturb(types.SimpleNamespace(named_parameters=lambda: [(name, p)],
                                                             named_buffers=lambda: []), zoo)
                continue
            touched.append(f"{name} ({kind})")
    return touched


def softplus_dt_range(model) -> dict[str, Any]:
    """min / max of softplus(dt bias) over the model (asserted in [1e-3, 0.1]) and of A (< 0)."""
    import torch
    sp, a = [], []
    for name, p in model.named_parameters():
        if name.endswith(("dt_bias", "dt_proj.bias")):
            sp.append(torch.nn.functional.softplus(p.detach().double()))
        if name.endswith("A_log"):
            a.append(-torch.exp(p.detach().double()).flatten())
    sp, a = torch.cat(sp), torch.cat(a)
    assert DT_RANGE[0] * 0.999 <= float(sp.min()) and float(sp.max()) <= DT_RANGE[1] * 1.001, (sp.min(), sp.max())
    assert float(a.max()) < 0, a.max()
    return {"softplus_dt_bias_min": float(sp.min()), "softplus_dt_bias_max": float(sp.max()),
            "A_min": float(a.min()), "A_max": float(a.max())}


# ---------------------------------------------------------------------------------------------
# checkpoint -> GGUF tensor edits (independent of the converter; for the bit-exact check)


def map_ssm_tensors(sd: dict, *, n_group: int | None = None, a_suffix: str = "A_log", a_column: bool,
                    d_column: bool, norm_suffix: str | None = None, conv_suffix: str = "conv1d.weight") -> list[str]:
    """The converter's SSM edits: conv1d.weight [C, 1, K] -> [C, K]; A_log -> A = -exp(A_log) (computed as
    transformers computes A, `-torch.exp(A_log.float())`, so the GGUF's A equals transformers' own float32 A),
    reshaped to [H, 1] for Mamba-2 (a_column); D [H] -> [H, 1] (d_column); the Mamba-2 gated norm
    [d_inner] -> [G, d_inner / G] (norm_suffix, n_group)."""
    import torch
    notes = []
    n_conv = n_a = n_d = n_norm = 0
    for k in list(sd):
        v = sd[k]
        if k.endswith(conv_suffix) and v.ndim == 3:
            assert v.shape[1] == 1, v.shape
            sd[k] = np.ascontiguousarray(v[:, 0, :])
            n_conv += 1
        elif k.endswith(a_suffix):
            a = (-torch.exp(torch.from_numpy(v).float())).numpy()
            sd[k] = np.ascontiguousarray(a.reshape(*a.shape, 1) if a_column else a)
            n_a += 1
        elif k.endswith(".D") and d_column:
            sd[k] = np.ascontiguousarray(v.reshape(*v.shape, 1))
            n_d += 1
        elif norm_suffix is not None and k.endswith(norm_suffix):
            sd[k] = np.ascontiguousarray(v.reshape(n_group, v.shape[0] // n_group))
            n_norm += 1
    notes.append(f"{n_conv} conv1d.weight [C, 1, K] squeezed to [C, K] (ggml ne [K, C])")
    notes.append(f"{n_a} A_log -> A = -exp(A_log) (float32, as transformers computes A)"
                 + (", reshaped [H] -> [H, 1]" if a_column else ""))
    if d_column:
        notes.append(f"{n_d} D [H] -> [H, 1]")
    if norm_suffix is not None:
        notes.append(f"{n_norm} gated norm {norm_suffix} [d_inner] -> [G = {n_group}, d_inner / G]")
    return notes


def permute_qk_rows(sd: dict, zoo, n_head: int, n_kv: int) -> list[str]:
    """q_proj / k_proj rows reordered per head to llama.cpp's adjacent-pair order (what LlamaModel.permute does
    for the converter classes with undo_permute; zoo.interleave_rope_rows is the independent version). Under
    NoPE this changes nothing in the model: q and k rows of a head move alike, so q.k is unchanged."""
    n = 0
    for k in list(sd):
        if k.endswith("q_proj.weight"):
            sd[k] = zoo.interleave_rope_rows(sd[k], n_head)
            n += 1
        elif k.endswith("k_proj.weight"):
            sd[k] = zoo.interleave_rope_rows(sd[k], n_kv)
            n += 1
    assert n > 0
    return [f"{n} q_proj / k_proj weights with rows in adjacent-pair order per head (LlamaModel.permute)"]


def float64_eps_as_gguf(model64, eps_gguf: float) -> list[str]:
    """Every norm eps of the float64 model equal to the GGUF's eps up to float32 rounding (1e-5 is stored as
    9.99999975e-06) set to the GGUF's value, so that the end-to-end comparison is not limited by that rounding."""
    n = 0
    for mod in model64.modules():
        for attr in ("variance_epsilon", "eps"):
            v = getattr(mod, attr, None)
            if isinstance(v, float) and v > 0 and float(np.float32(v)) == eps_gguf and v != eps_gguf:
                setattr(mod, attr, eps_gguf)
                n += 1
    return [f"{n} norm eps set to the GGUF's float32 value {eps_gguf!r}"] if n else []


def float64_a_log_from_gguf(model64, tensors: dict, pairs: list[tuple[str, str]], meta: dict | None = None) -> list[str]:
    """The converter stores A = -exp(A_log) rounded to float32; the float64 transformers model gets
    A_log = log(-A_gguf) (float64), so that both sides use the GGUF's A (and, given the GGUF's metadata, its
    float32 rms eps: float64_eps_as_gguf)."""
    import torch
    notes = []
    if meta is not None:
        arch = meta["general.architecture"]
        notes = float64_eps_as_gguf(model64, float(meta[f"{arch}.attention.layer_norm_rms_epsilon"]))
    params = dict(model64.named_parameters())
    for hf, gg in pairs:
        a = tensors[gg].astype(np.float64).reshape(params[hf].shape)
        assert (a < 0).all(), gg
        with torch.no_grad():
            params[hf].copy_(torch.from_numpy(np.log(-a)))
    return notes + [f"{len(pairs)} A_log set to log(-A) of the GGUF's float32 A (the converter's -exp rounding)"]


# ---------------------------------------------------------------------------------------------
# the mechanisms


def causal_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, state: np.ndarray | None = None):
    """Depthwise causal conv: x [n, C], w [C, K], b [C] or None, state [K-1, C] (the previous inputs;
    None = zeros). Returns (y [n, C] before the activation, the new state [K-1, C])."""
    n, c = x.shape
    k = w.shape[1]
    assert w.shape[0] == c, (w.shape, x.shape)
    s = np.concatenate([np.zeros((k - 1, c)) if state is None else state, x], axis=0)
    y = np.zeros((n, c))
    for i in range(k):
        y += s[i:i + n] * w[:, i]
    if b is not None:
        y = y + b
    return y, s[n:]


def mamba2_mixer(W: npf.Weights, m: npf.Meta, h: np.ndarray, p: str, *, ablate=frozenset(),
                 state: dict | None = None, dt_min: float = 0.0) -> np.ndarray:
    """One Mamba-2 mixer (see the module docstring) on h [n, n_embd]. `state`: a dict carrying
    "conv" and "ssm" across calls (filled in). dt_min: dt = max(softplus(.), dt_min) (transformers' Nemotron-H
    clamps at config.time_step_min; no GGUF key, llama.cpp does not clamp). ablate: "scan" (no state: y = D x), "grouped_norm" (one
    RMSNorm over all d_inner), "norm_before_gate" (RMSNorm, then the gate), "D" (no skip)."""
    d_conv, d_inner, n_state = m.int("ssm.conv_kernel"), m.int("ssm.inner_size"), m.int("ssm.state_size")
    n_head, n_group = m.int("ssm.time_step_rank"), m.int("ssm.group_count")
    eps = m.float("attention.layer_norm_rms_epsilon")
    hd = d_inner // n_head
    assert d_inner % n_head == 0 and n_head % n_group == 0 and d_inner % n_group == 0
    n = h.shape[0]
    zxbcdt = npf.linear(W, h, p + "ssm_in", bias=False)
    d_xbc = d_inner + 2 * n_group * n_state
    assert zxbcdt.shape[1] == d_inner + d_xbc + n_head, zxbcdt.shape
    z, xbc, dt = zxbcdt[:, :d_inner], zxbcdt[:, d_inner:d_inner + d_xbc], zxbcdt[:, d_inner + d_xbc:]
    st = state if state is not None else {}
    w_conv = W(p + "ssm_conv1d.weight")
    assert w_conv.shape == (d_xbc, d_conv), w_conv.shape
    xbc, st["conv"] = causal_conv(xbc, w_conv, W(p + "ssm_conv1d.bias") if p + "ssm_conv1d.bias" in W else None,
                                  st.get("conv"))
    xbc = npf.silu(xbc)
    x = xbc[:, :d_inner].reshape(n, n_head, hd)
    B = xbc[:, d_inner:d_inner + n_group * n_state].reshape(n, n_group, n_state)
    C = xbc[:, d_inner + n_group * n_state:].reshape(n, n_group, n_state)
    dt = np.maximum(npf.softplus(dt + W(p + "ssm_dt.bias")), dt_min)  # [n, H]
    A = W(p + "ssm_a").reshape(n_head)
    D = W(p + "ssm_d").reshape(n_head)
    assert (A < 0).all(), "ssm_a must be negative (-exp(A_log))"
    grp = np.arange(n_head) // (n_head // n_group)                    # head h -> group h // (H / G)
    S = st.get("ssm", np.zeros((n_head, hd, n_state)))
    y = np.empty((n, n_head, hd))
    for t in range(n):
        if "scan" in ablate:
            y[t] = 0.0
            continue
        dA = np.exp(dt[t] * A)                                        # [H]
        S = S * dA[:, None, None] + (dt[t][:, None, None] * x[t][:, :, None]) * B[t][grp][:, None, :]
        y[t] = np.einsum("hpn,hn->hp", S, C[t][grp])
    st["ssm"] = S
    if "D" not in ablate:
        y = y + D[None, :, None] * x
    y = y.reshape(n, d_inner)
    if p + "ssm_norm.weight" not in W:           # optional (Falcon-H1 with mamba_rms_norm false): y * silu(z)
        return npf.linear(W, y * npf.silu(z), p + "ssm_out", bias=False)
    wn = W(p + "ssm_norm.weight").reshape(-1)
    assert wn.shape == (d_inner,), wn.shape
    groups = 1 if "grouped_norm" in ablate else n_group
    if "norm_before_gate" in ablate:
        y = npf.rms_norm(y.reshape(n, groups, -1), 1.0, eps).reshape(n, d_inner) * wn * npf.silu(z)
    else:
        y = y * npf.silu(z)
        y = npf.rms_norm(y.reshape(n, groups, -1), 1.0, eps).reshape(n, d_inner) * wn
    return npf.linear(W, y, p + "ssm_out", bias=False)


def mamba1_mixer(W: npf.Weights, m: npf.Meta, h: np.ndarray, p: str, *, ablate=frozenset(),
                 state: dict | None = None) -> np.ndarray:
    """One Mamba-1 mixer (see the module docstring) on h [n, n_embd]; Jamba's dt/B/C RMSNorms when the
    GGUF has ssm_dt_norm / ssm_b_norm / ssm_c_norm (or ssm.dt_b_c_rms is true: weightless RMSNorms,
    FalconMamba). ablate: "scan", "dt_b_c_norm", "D"."""
    d_conv, d_inner, n_state = m.int("ssm.conv_kernel"), m.int("ssm.inner_size"), m.int("ssm.state_size")
    dt_rank = m.int("ssm.time_step_rank")
    eps = m.float("attention.layer_norm_rms_epsilon")
    n = h.shape[0]
    xz = npf.linear(W, h, p + "ssm_in", bias=False)
    assert xz.shape[1] == 2 * d_inner, xz.shape
    x, z = xz[:, :d_inner], xz[:, d_inner:]
    st = state if state is not None else {}
    w_conv = W(p + "ssm_conv1d.weight")
    assert w_conv.shape == (d_inner, d_conv), w_conv.shape
    x, st["conv"] = causal_conv(x, w_conv, W(p + "ssm_conv1d.bias") if p + "ssm_conv1d.bias" in W else None,
                                st.get("conv"))
    x = npf.silu(x)
    x_db = npf.linear(W, x, p + "ssm_x", bias=False)
    assert x_db.shape[1] == dt_rank + 2 * n_state, x_db.shape
    dt, B, C = x_db[:, :dt_rank], x_db[:, dt_rank:dt_rank + n_state], x_db[:, dt_rank + n_state:]
    has_norms = p + "ssm_dt_norm.weight" in W
    if has_norms or bool(m.get("ssm.dt_b_c_rms", False)):
        if "dt_b_c_norm" in ablate:
            for t in ("dt", "b", "c"):
                if p + f"ssm_{t}_norm.weight" in W:
                    W.mark_used(p + f"ssm_{t}_norm.weight")
        else:
            def nw(t):
                return W(p + f"ssm_{t}_norm.weight") if has_norms else 1.0
            dt, B, C = npf.rms_norm(dt, nw("dt"), eps), npf.rms_norm(B, nw("b"), eps), npf.rms_norm(C, nw("c"), eps)
    dt = npf.softplus(npf.linear(W, dt, p + "ssm_dt", bias=True))     # [n, d_inner]
    A = W(p + "ssm_a")
    assert A.shape == (d_inner, n_state) and (A < 0).all(), A.shape
    D = W(p + "ssm_d")
    S = st.get("ssm", np.zeros((d_inner, n_state)))
    y = np.empty((n, d_inner))
    for t in range(n):
        if "scan" in ablate:
            y[t] = 0.0
            continue
        S = np.exp(dt[t][:, None] * A) * S + (dt[t] * x[t])[:, None] * B[t][None, :]
        y[t] = S @ C[t]
    st["ssm"] = S
    if "D" not in ablate:
        y = y + D * x
    return npf.linear(W, y * npf.silu(z), p + "ssm_out", bias=False)


# ---------------------------------------------------------------------------------------------
# the decoder driver (prompt in one chunk, or in two carrying every layer's state)


def run_chunks(W: npf.Weights, ids: list[int], embed, layer, final, n_layer: int, *, split: int | None = None,
               carry_conv_state: bool = True) -> np.ndarray:
    """embed(ids) -> x; layer(il, x, p0, cache) -> x (cache: the layer's dict of states, kept across
    chunks); final(x) -> logits. split: run ids[:split] then ids[split:] carrying every cache (conv
    and SSM states, K/V); carry_conv_state=False drops the conv states at the split (to show that
    they matter)."""
    chunks = [ids] if split is None else [ids[:split], ids[split:]]
    caches: list[dict] = [{} for _ in range(n_layer)]
    out, p0 = [], 0
    for ci, chunk in enumerate(chunks):
        if ci > 0 and not carry_conv_state:
            for c in caches:
                c.pop("conv", None)
        x = embed(chunk)
        for il in range(n_layer):
            x = layer(il, x, p0, caches[il])
        out.append(final(x))
        p0 += len(chunk)
    W.check_all_used()
    return np.concatenate(out, axis=0)


def attention_cached(q: np.ndarray, k: np.ndarray, v: np.ndarray, p0: int, cache: dict, scale: float) -> np.ndarray:
    """Causal GQA attention of this chunk's q [n, H, hd] over the cached and this chunk's k/v."""
    if "k" in cache:
        k, v = np.concatenate([cache["k"], k]), np.concatenate([cache["v"], v])
    cache["k"], cache["v"] = k, v
    return npf.attention(q, k, v, npf.causal_mask(q.shape[0], p0=p0), scale)


# ---------------------------------------------------------------------------------------------
# gated DeltaNet (Qwen3-Next, Qwen3.5) and the gated attention of their full-attention layers


def l2norm(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """x * rsqrt(sum x^2 + eps) over the last axis (transformers' l2norm, the FLA library's; ggml_l2_norm divides
    by max(sqrt(sum x^2), eps) instead: the same unless |x| ~ sqrt(eps))."""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def gated_deltanet(W: npf.Weights, m: npf.Meta, h: np.ndarray, p: str, *, v_order: str, ablate=frozenset(),
                   state: dict | None = None) -> np.ndarray:
    """One gated DeltaNet mixer on h [n, n_embd] (transformers Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet with
    torch_recurrent_gated_delta_rule, read from the GGUF):
      sizes   dk = ssm.state_size, nk = ssm.group_count (key heads), nv = ssm.time_step_rank (value heads),
              dv = ssm.inner_size / nv, K = ssm.conv_kernel, r = nv / nk
      qkv = attn_qkv(h) = [q (nk dk) | k (nk dk) | v (nv dv)]; z = attn_gate(h) [nv dv]
      b, a per value head: from ssm_ba (Qwen3-Next: rows per key head g [b_(g,0..r-1) | a_(g,0..r-1)]) or
              ssm_beta / ssm_alpha (Qwen3.5)
      qkv = silu(conv(qkv)) (depthwise causal, NO bias, state = last K-1 inputs)
      q, k = l2norm per head (x rsqrt(sum x^2 + 1e-6)); q = q / sqrt(dk)
      value head j uses key head j // r (v_order "grouped": HF's order, Qwen3-Next's GGUF) or j % nk ("tiled":
              Qwen3.5's GGUF, whose V heads the converter reorders from grouped to tiled)
      beta = sigmoid(b); g = A * softplus(a + ssm_dt.bias) (A = ssm_a = -exp(A_log) < 0)
      S_j [dk, dv] (zeros at the start): S_j = exp(g_j) S_j; delta = (v_j - S_j^T k) beta_j;
              S_j = S_j + k delta^T; o_j = S_j^T q
      o_j = rms(o_j) * ssm_norm (per head over dv, eps = the rms eps, NORM THEN GATE) * silu(z_j)
      out = ssm_out(o)
    ablate: "delta" (no delta correction: S += k v^T beta), "decay" (g = 0), "l2norm", "gate" (no silu(z))."""
    K, dk, nk = m.int("ssm.conv_kernel"), m.int("ssm.state_size"), m.int("ssm.group_count")
    nv = m.int("ssm.time_step_rank")
    dv = m.int("ssm.inner_size") // nv
    assert dv * nv == m.int("ssm.inner_size") and nv % nk == 0
    r = nv // nk
    eps = m.float("attention.layer_norm_rms_epsilon")
    n = h.shape[0]
    qkv = npf.linear(W, h, p + "attn_qkv", bias=False)
    assert qkv.shape[1] == 2 * nk * dk + nv * dv, qkv.shape
    z = npf.linear(W, h, p + "attn_gate", bias=False).reshape(n, nv, dv)
    if p + "ssm_ba.weight" in W:
        ba = npf.linear(W, h, p + "ssm_ba", bias=False).reshape(n, nk, 2 * r)
        b, a = ba[:, :, :r].reshape(n, nv), ba[:, :, r:].reshape(n, nv)
    else:
        b, a = npf.linear(W, h, p + "ssm_beta", bias=False), npf.linear(W, h, p + "ssm_alpha", bias=False)
    st = state if state is not None else {}
    w_conv = W(p + "ssm_conv1d.weight")
    assert w_conv.shape == (qkv.shape[1], K), w_conv.shape
    assert p + "ssm_conv1d.bias" not in W
    qkv, st["conv"] = causal_conv(qkv, w_conv, None, st.get("conv"))
    qkv = npf.silu(qkv)
    q = qkv[:, :nk * dk].reshape(n, nk, dk)
    k = qkv[:, nk * dk:2 * nk * dk].reshape(n, nk, dk)
    v = qkv[:, 2 * nk * dk:].reshape(n, nv, dv)
    if "l2norm" not in ablate:
        q, k = l2norm(q), l2norm(k)
    q = q / math.sqrt(dk)
    assert v_order in ("grouped", "tiled"), v_order
    kh = np.arange(nv) // r if v_order == "grouped" else np.arange(nv) % nk
    A = W(p + "ssm_a").reshape(nv)
    assert (A < 0).all()
    beta = 1.0 / (1.0 + np.exp(-b))
    g = A * npf.softplus(a + W(p + "ssm_dt.bias"))                   # [n, nv], < 0
    if "decay" in ablate:
        g = np.zeros_like(g)
    S = st.get("ssm", np.zeros((nv, dk, dv)))
    o = np.empty((n, nv, dv))
    for t in range(n):
        kt, qt = k[t][kh], q[t][kh]                                   # [nv, dk]
        S = S * np.exp(g[t])[:, None, None]
        if "delta" in ablate:
            delta = v[t] * beta[t][:, None]
        else:
            delta = (v[t] - np.einsum("jkd,jk->jd", S, kt)) * beta[t][:, None]
        S = S + kt[:, :, None] * delta[:, None, :]
        o[t] = np.einsum("jkd,jk->jd", S, qt)
    st["ssm"] = S
    o = npf.rms_norm(o, W(p + "ssm_norm.weight"), eps)
    if "gate" not in ablate:
        o = o * npf.silu(z)
    return npf.linear(W, o.reshape(n, nv * dv), p + "ssm_out", bias=False)


def gated_attention(W: npf.Weights, m: npf.Meta, h: np.ndarray, p: str, p0: int, cache: dict, *, ablate=frozenset(),
                    rope_style: str = "neox") -> np.ndarray:
    """Qwen3-Next / Qwen3.5 full attention (transformers Qwen3NextAttention): attn_q rows per head [q_h (hd) |
    g_h (hd)] (interleaved per head, 2 n_head hd rows); q and k per-head RMSNorm (attn_q_norm / attn_k_norm
    [hd], the file's weights, eps = the rms eps) BEFORE partial RoPE on the first rope.dimension_count dims
    (NEOX pairs (i, i + n_rot/2)); causal GQA, scale 1/sqrt(hd); o = o * sigmoid(g) (the output gate, per
    element, before attn_output); out = attn_output(o). ablate: "output_gate" (no gate)."""
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    n = h.shape[0]
    qg = npf.linear(W, h, p + "attn_q", bias=False).reshape(n, n_head, 2 * hd)
    q, gate = qg[..., :hd], qg[..., hd:].reshape(n, n_head * hd)
    k = npf.heads(npf.linear(W, h, p + "attn_k", bias=False), n_kv)
    v = npf.heads(npf.linear(W, h, p + "attn_v", bias=False), n_kv)
    q = npf.rms_norm(q, W(p + "attn_q_norm.weight"), eps)
    k = npf.rms_norm(k, W(p + "attn_k_norm.weight"), eps)
    cos, sin = npf.rope_cos_sin(p0 + np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base")))
    q, k = npf.rope(q, cos, sin, rope_style), npf.rope(k, cos, sin, rope_style)
    o = attention_cached(q, k, v, p0, cache, 1.0 / math.sqrt(hd))
    if "output_gate" not in ablate:
        o = o / (1.0 + np.exp(-gate))
    return npf.linear(W, o, p + "attn_output", bias=False)
