"""Small float64 numpy building blocks for the zoo's independent forward passes.

Each family module (tools/reference/zoo_families/<family>.py) writes its own forward pass out of
these pieces, reading every size and constant from the GGUF (never from transformers), so that
the pass is a second, independent reading of what the converted file describes. `Weights`
records which tensors were read; a pass ends with `w.check_all_used()`, so a GGUF tensor that the
pass forgot (a bias, a norm) is an error, not a silent difference.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np


class Weights:
    """The GGUF's tensors as float64 (numpy layout: a Linear weight is [out, in]) with a record
    of which were read."""

    def __init__(self, tensors: dict[str, np.ndarray]):
        self.tensors = tensors
        self.used: set[str] = set()

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def __call__(self, name: str) -> np.ndarray:
        self.used.add(name)
        return self.tensors[name].astype(np.float64)

    def mark_used(self, name: str) -> None:
        assert name in self.tensors, name
        self.used.add(name)

    def check_all_used(self) -> None:
        unused = sorted(set(self.tensors) - self.used)
        assert not unused, f"GGUF tensors not used by the numpy forward: {unused}"


class Meta:
    """The GGUF's metadata under one architecture prefix: m["block_count"] is
    meta["<arch>.block_count"] (KeyError when absent), m.get(key, default)."""

    def __init__(self, meta: dict[str, Any], arch: str):
        self.meta, self.arch = meta, arch

    def key(self, k: str) -> str:
        return f"{self.arch}.{k}"

    def __contains__(self, k: str) -> bool:
        return self.key(k) in self.meta

    def __getitem__(self, k: str) -> Any:
        return self.meta[self.key(k)]

    def get(self, k: str, default: Any = None) -> Any:
        return self.meta.get(self.key(k), default)

    def int(self, k: str, default: int | None = None) -> int:
        v = self.meta.get(self.key(k), default)
        assert v is not None, f"{self.key(k)} absent"
        return int(v)

    def float(self, k: str, default: float | None = None) -> float:
        v = self.meta.get(self.key(k), default)
        assert v is not None, f"{self.key(k)} absent"
        return float(v)

    def per_layer(self, k: str, n_layer: int, default: Any = None) -> list:
        """A key that is a scalar or a per-layer array, as a list of n_layer values."""
        v = self.meta.get(self.key(k), default)
        assert v is not None, f"{self.key(k)} absent"
        if isinstance(v, list):
            assert len(v) == n_layer, (k, v)
            return list(v)
        return [v] * n_layer


# ---------------------------------------------------------------------------------------------
# norms


def rms_norm(x: np.ndarray, w: np.ndarray | float, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * w over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def layer_norm(x: np.ndarray, w: np.ndarray | float, b: np.ndarray | float, eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * w + b over the last axis (biased variance)."""
    xc = x - np.mean(x, axis=-1, keepdims=True)
    return xc / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + eps) * w + b


# ---------------------------------------------------------------------------------------------
# linear layers and activations


def linear(W: Weights, x: np.ndarray, name: str, *, bias: bool | None = None) -> np.ndarray:
    """x @ name.weight^T (+ name.bias). bias None: add it when the GGUF has it; True: it must be
    there; False: it must not be (so a bias cannot be dropped silently)."""
    y = x @ W(name + ".weight").T
    has = (name + ".bias") in W
    if bias is not None:
        assert has == bias, f"{name}.bias present={has}, expected {bias}"
    if has:
        y = y + W(name + ".bias")
    return y


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (transformers gelu_pytorch_tanh / gelu_new)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + erf(x / sqrt 2)) (transformers "gelu")."""
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def relu2(x: np.ndarray) -> np.ndarray:
    """relu(x)^2 (transformers "relu2")."""
    return np.maximum(x, 0.0) ** 2


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


# ---------------------------------------------------------------------------------------------
# RoPE


def rope_inv_freq(n_rot: int, base: float, freq_factors: np.ndarray | None = None) -> np.ndarray:
    """theta_i / p = base^(-2i/n_rot) (i < n_rot/2), divided by freq_factors[i] when given."""
    inv = base ** (-np.arange(0, n_rot, 2, dtype=np.float64) / n_rot)
    if freq_factors is not None:
        assert freq_factors.shape == inv.shape, (freq_factors.shape, inv.shape)
        inv = inv / freq_factors
    return inv


def rope_cos_sin(pos: np.ndarray, inv_freq: np.ndarray, mscale: float = 1.0):
    """cos, sin of pos * inv_freq, shaped [n, 1, n_rot/2] (broadcast over heads), times mscale."""
    ang = pos.astype(np.float64)[:, None] * inv_freq[None, :]
    return (np.cos(ang) * mscale)[:, None, :], (np.sin(ang) * mscale)[:, None, :]


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, style: str) -> np.ndarray:
    """Rotates the first n_rot = 2 * cos.shape[-1] dims of each head of x [n, heads, hd]; the
    others pass through. style "neox": pairs (i, i + n_rot/2) (HF rotate_half; llama.cpp
    LLAMA_ROPE_TYPE_NEOX); "norm": adjacent pairs (2i, 2i + 1) (llama.cpp LLAMA_ROPE_TYPE_NORM,
    HF's rotate_half_interleaved / GLM's and Cohere's interleaved RoPE)."""
    n_rot = 2 * cos.shape[-1]
    r, rest = x[..., :n_rot], x[..., n_rot:]
    if style == "neox":
        a, b = r[..., : n_rot // 2], r[..., n_rot // 2:]
        out = np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    elif style == "norm":
        a, b = r[..., 0::2], r[..., 1::2]
        out = np.empty_like(r)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = b * cos + a * sin
    else:
        raise ValueError(style)
    return np.concatenate([out, rest], axis=-1) if rest.shape[-1] else out


# ---------------------------------------------------------------------------------------------
# attention


def causal_mask(n: int, window: int | None = None, p0: int = 0) -> np.ndarray:
    """[n, p0 + n] additive mask for queries at positions p0..p0+n-1 over keys 0..p0+n-1: key k
    is visible to query q iff k <= q and (window None or q - k < window) (transformers'
    sliding_window_overlay; llama.cpp LLAMA_SWA_TYPE_STANDARD)."""
    q = p0 + np.arange(n)[:, None]
    k = np.arange(p0 + n)[None, :]
    ok = k <= q
    if window is not None:
        ok &= (q - k) < window
    return np.where(ok, 0.0, -np.inf)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray, scale: float,
              softcap: float | None = None) -> np.ndarray:
    """Causal GQA attention: q [n, n_head, hd], k/v [m, n_head_kv, hd(v)], mask [n, m];
    score = q.k * scale (then softcap tanh(s / c) * c when given), + mask, softmax, @ v.
    Returns [n, n_head * hd_v]. Query head h uses KV head h // (n_head / n_head_kv)."""
    n, n_head, _ = q.shape
    n_kv = k.shape[1]
    assert n_head % n_kv == 0, (n_head, n_kv)
    g = n_head // n_kv
    o = np.empty((n, n_head, v.shape[-1]))
    for h in range(n_head):
        s = q[:, h, :] @ k[:, h // g, :].T * scale
        if softcap is not None:
            s = softcap * np.tanh(s / softcap)
        s = s + mask
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        o[:, h, :] = s @ v[:, h // g, :]
    return o.reshape(n, n_head * v.shape[-1])


def heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """[n, n_heads * hd] -> [n, n_heads, hd]."""
    return x.reshape(x.shape[0], n_heads, -1)


def qkv(W: Weights, h: np.ndarray, p: str, n_head: int, n_kv: int, *, bias: bool | None = False):
    """q [n, n_head, hd], k, v [n, n_kv, hd] from blk.N.attn_{q,k,v} (biases as `linear`)."""
    return (heads(linear(W, h, p + "attn_q", bias=bias), n_head),
            heads(linear(W, h, p + "attn_k", bias=bias), n_kv),
            heads(linear(W, h, p + "attn_v", bias=bias), n_kv))


def swiglu(W: Weights, h: np.ndarray, p: str, *, bias: bool | None = False) -> np.ndarray:
    """ffn_down(silu(ffn_gate(h)) * ffn_up(h))."""
    return linear(W, silu(linear(W, h, p + "ffn_gate", bias=bias)) * linear(W, h, p + "ffn_up", bias=bias),
                  p + "ffn_down", bias=bias)


def head(W: Weights, x: np.ndarray) -> np.ndarray:
    """output.weight, or the token embedding when the head is tied (no output.weight)."""
    return x @ (W("output.weight") if "output.weight" in W else W("token_embd.weight")).T


def yarn_inv_freq(n_rot: int, base: float, factor: float, orig_ctx: int, beta_fast: float = 32.0,
                  beta_slow: float = 1.0) -> np.ndarray:
    """YaRN's per-pair frequencies (ggml rope_yarn with ext_factor 1 = transformers
    _compute_yarn_parameters with truncate): extrapolated theta_i = base^(-2i/n_rot), interpolated
    theta_i / factor; corr_dim(r) = n_rot ln(orig_ctx / (2 pi r)) / (2 ln base); low = max(0,
    floor(corr_dim(beta_fast))), high = min(n_rot - 1, ceil(corr_dim(beta_slow))); ramp_i =
    clamp((i - low) / max(0.001, high - low), 0, 1); theta_i = extrap (1 - ramp_i) + interp ramp_i."""
    def corr_dim(r):
        return n_rot * math.log(orig_ctx / (r * 2.0 * math.pi)) / (2.0 * math.log(base))
    low = max(0.0, math.floor(corr_dim(beta_fast)))
    high = min(n_rot - 1.0, math.ceil(corr_dim(beta_slow)))
    extrap = rope_inv_freq(n_rot, base)
    ramp = np.clip((np.arange(n_rot // 2, dtype=np.float64) - low) / max(0.001, high - low), 0.0, 1.0)
    return extrap * (1.0 - ramp) + (extrap / factor) * ramp


def yarn_mscale(factor: float, log_mul: float | None) -> float:
    """The cos/sin multiplier of YaRN from the GGUF's keys (llama.cpp llama-context.cpp; transformers
    get_mscale with mscale = 1): m(s, k) = 1 + 0.1 k ln s (1 when s <= 1); with
    rope.scaling.yarn_log_multiplier = k (transformers' mscale_all_dim) it is m(factor, 1) / m(factor, k),
    without it m(factor, 1)."""
    def m(s, k):
        return 1.0 if s <= 1.0 else 0.1 * k * math.log(s) + 1.0
    if log_mul:
        return m(factor, 1.0) / m(factor, log_mul)
    return m(factor, 1.0)
