"""Mamba-2 (Mamba2ForCausalLM; GGUF `mamba2`), 2 layers, no attention and no FFN: each block is
x = x + mixer(rms(x, attn_norm)); then output_norm and the tied head (token_embd).

Sizes: hidden 64, expand 2 -> d_inner 128, head_dim 16 -> 8 heads (ssm.time_step_rank = d_inner / head_dim),
n_groups 2 (B and C per group; head h uses group h // 4; the gated RMSNorm normalises each group of 64
channels separately), state 16, conv kernel 4 (conv over x|B|C, 192 channels, with bias), chunk_size 16
(so transformers' chunked scan crosses chunks on the 40-token prompt; the GGUF has no chunk key).
The mixer's math: zoo_families/ssm.py (mamba2_mixer). No shim: the converter reads config.json
itself (Mamba2Model avoids AutoConfig); it turns A_log into A = -exp(A_log) [H, 1], D into [H, 1], the
gated norm into [G, d_inner / G], renames dt_bias to ssm_dt.bias and squeezes the conv weight.
"""
from __future__ import annotations

import numpy as np

from . import npf, ssm

N_LAYER, HIDDEN, HEAD_DIM, N_GROUPS, STATE, CONV = 2, 64, 16, 2, 16, 4


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), split=None,
            carry_conv_state=True, **_):
    assert sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, eps = m.int("block_count"), m.float("attention.layer_norm_rms_epsilon")

    def layer(il, x, p0, cache):
        p = f"blk.{il}."
        return x + ssm.mamba2_mixer(W, m, npf.rms_norm(x, W(p + "attn_norm.weight"), eps), p, ablate=ablate,
                                    state=cache)
    return ssm.run_chunks(W, ids, lambda c: W("token_embd.weight")[np.asarray(c)], layer,
                          lambda x: npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps)), n_layer,
                          split=split, carry_conv_state=carry_conv_state)


def families(zoo):
    def checkpoint_map(sd, config, meta):
        return ssm.map_ssm_tensors(sd, n_group=config.n_groups, a_column=True, d_column=True,
                                   norm_suffix="mixer.norm.weight")

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "mamba2")
        d_inner = int(config.expand * config.hidden_size)
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                                     "ssm.group_count", "block_count", "embedding_length")}
        want = {"ssm.conv_kernel": config.conv_kernel, "ssm.inner_size": d_inner, "ssm.state_size": config.state_size,
                "ssm.time_step_rank": config.num_heads, "ssm.group_count": config.n_groups,
                "block_count": config.num_hidden_layers, "embedding_length": config.hidden_size}
        assert got == want, (got, want)
        assert d_inner == config.num_heads * config.head_dim
        assert abs(m.float("attention.layer_norm_rms_epsilon") - config.layer_norm_epsilon) < 1e-12
        assert "output.weight" not in tensors, "tied head expected"
        for il in range(N_LAYER):
            assert tensors[f"blk.{il}.ssm_norm.weight"].shape == (N_GROUPS, d_inner // N_GROUPS)
        return {"ssm_init": ssm.softplus_dt_range(model),
                "gguf_ssm_keys": got,
                "layer_pattern": "every layer a Mamba-2 mixer-only block (no attention, no FFN)"}

    return {"mamba2": zoo.Family(
        config_cls=zoo._transformers_class("Mamba2Config"),
        model_cls=zoo._transformers_class("Mamba2ForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=HIDDEN, num_hidden_layers=N_LAYER, expand=2, head_dim=HEAD_DIM,
            num_heads=2 * HIDDEN // HEAD_DIM, n_groups=N_GROUPS, state_size=STATE, conv_kernel=CONV,
            use_bias=False, use_conv_bias=True, hidden_act="silu", layer_norm_epsilon=1e-5,
            residual_in_fp32=True, chunk_size=16, time_step_limit=(0.0, float("inf")),
            tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=None,
            dtype="float32"),
        perturb=lambda model: ssm.perturb(model, zoo),
        converter_class=("conversion.mamba", "Mamba2Model"),
        gguf_arch="mamba2",
        llama_arch_enum="LLM_ARCH_MAMBA2",
        rope_style="none",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "blk.{bid}.attn_norm.weight",
            "blk.{bid}.ssm_in.weight", "blk.{bid}.ssm_conv1d.weight", "blk.{bid}.ssm_conv1d.bias",
            "blk.{bid}.ssm_dt.bias", "blk.{bid}.ssm_a", "blk.{bid}.ssm_d", "blk.{bid}.ssm_norm.weight",
            "blk.{bid}.ssm_out.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=lambda model64, meta, tensors: ssm.float64_a_log_from_gguf(
            model64, tensors, [(f"backbone.layers.{il}.mixer.A_log", f"blk.{il}.ssm_a") for il in range(N_LAYER)], meta=meta),
        ablations=("scan", "grouped_norm", "norm_before_gate", "D"),
        conv_state_split=20,
        record_gguf=True,
        mechanisms={
            "block": "x = x + mamba2_mixer(rms(x, attn_norm)) (mixer-only block; HF Mamba2Block.norm = attn_norm); "
                     "final output_norm; tied head (token_embd)",
            "mamba2_mixer": "zxbcdt = ssm_in(h) = [z (d_inner) | xBC (d_inner + 2 G N) | dt (H)]; xBC = silu(conv(xBC) "
                            "+ ssm_conv1d.bias) (depthwise causal, kernel ssm.conv_kernel, state = last K-1 inputs); "
                            "x = xBC[:d_inner] as [H, P = d_inner / H]; B, C = next G*N, G*N as [G, N]; head h uses "
                            "group h // (H / G); dt = softplus(dt + ssm_dt.bias) [H]; A = ssm_a [H, 1] (= -exp(A_log), "
                            "converter); S_h = exp(dt_h A_h) S_h + dt_h x_h B_g^T [P, N]; y_h = S_h C_g + D_h x_h "
                            "(ssm_d [H, 1]); y = y * silu(z); THEN RMSNorm per group of d_inner / G channels "
                            "(ssm_norm [G, d_inner / G], eps = attention.layer_norm_rms_epsilon); out = ssm_out(y)",
            "sizes": "ssm.inner_size = d_inner; ssm.time_step_rank = number of heads H; ssm.group_count = G; "
                     "ssm.state_size = N; ssm.conv_kernel = K; head_dim = d_inner / H",
            "llama_cpp": "src/models/mamba2.cpp + mamba-base.cpp build_mamba2_layer (ggml_ssm_conv, ggml_ssm_scan "
                         "with softplus inside, ggml_swiglu_split(z, y), grouped build_norm)",
        },
    )}
