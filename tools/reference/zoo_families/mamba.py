"""Mamba-1 (MambaForCausalLM; GGUF `mamba`), 2 layers, mixer-only blocks: x = x + mixer(rms(x, attn_norm));
then output_norm and the tied head.

Sizes: hidden 64, expand 2 -> d_inner 128 (llama.cpp and the converter require d_inner = 2 n_embd), state 16,
conv kernel 4 (with bias), time_step_rank 8 (dt projected down to 8 by x_proj, back up to 128 by dt_proj).
The mixer's math: zoo_families/ssm.py (mamba1_mixer: a per-channel decay exp(dt_c A_c,n) over a [d_inner, N]
state). No shim: the converter reads config.json itself; it turns A_log [d_inner, N] into A = -exp(A_log),
squeezes the conv weight and drops the tied lm_head (equal to the embedding). ssm.dt_b_c_rms is written
false (FalconMamba's flag; this model has no dt/B/C norms).
"""
from __future__ import annotations

import numpy as np

from . import npf, ssm

N_LAYER = 2


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), split=None,
            carry_conv_state=True, **_):
    assert sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, eps = m.int("block_count"), m.float("attention.layer_norm_rms_epsilon")

    def layer(il, x, p0, cache):
        p = f"blk.{il}."
        return x + ssm.mamba1_mixer(W, m, npf.rms_norm(x, W(p + "attn_norm.weight"), eps), p, ablate=ablate,
                                    state=cache)
    return ssm.run_chunks(W, ids, lambda c: W("token_embd.weight")[np.asarray(c)], layer,
                          lambda x: npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps)), n_layer,
                          split=split, carry_conv_state=carry_conv_state)


def families(zoo):
    def checkpoint_map(sd, config, meta):
        return ssm.map_ssm_tensors(sd, a_column=False, d_column=False)

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "mamba")
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                                     "block_count", "embedding_length")}
        want = {"ssm.conv_kernel": config.conv_kernel, "ssm.inner_size": config.intermediate_size,
                "ssm.state_size": config.state_size, "ssm.time_step_rank": config.time_step_rank,
                "block_count": config.num_hidden_layers, "embedding_length": config.hidden_size}
        assert got == want and config.intermediate_size == 2 * config.hidden_size, (got, want)
        assert m.get("ssm.dt_b_c_rms") is False and "output.weight" not in tensors
        return {"ssm_init": ssm.softplus_dt_range(model), "gguf_ssm_keys": got,
                "layer_pattern": "every layer a Mamba-1 mixer-only block (no attention, no FFN)"}

    return {"mamba": zoo.Family(
        config_cls=zoo._transformers_class("MambaConfig"),
        model_cls=zoo._transformers_class("MambaForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, num_hidden_layers=N_LAYER, expand=2, state_size=16, conv_kernel=4,
            time_step_rank=8, use_bias=False, use_conv_bias=True, hidden_act="silu", layer_norm_epsilon=1e-5,
            residual_in_fp32=True, tie_word_embeddings=True, use_mambapy=False, use_associative_scan=False,
            bos_token_id=1, eos_token_id=2, pad_token_id=None, dtype="float32"),
        perturb=lambda model: ssm.perturb(model, zoo),
        converter_class=("conversion.mamba", "MambaModel"),
        gguf_arch="mamba",
        llama_arch_enum="LLM_ARCH_MAMBA",
        rope_style="none",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "blk.{bid}.attn_norm.weight",
            "blk.{bid}.ssm_in.weight", "blk.{bid}.ssm_conv1d.weight", "blk.{bid}.ssm_conv1d.bias",
            "blk.{bid}.ssm_x.weight", "blk.{bid}.ssm_dt.weight", "blk.{bid}.ssm_dt.bias",
            "blk.{bid}.ssm_a", "blk.{bid}.ssm_d", "blk.{bid}.ssm_out.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=lambda model64, meta, tensors: ssm.float64_a_log_from_gguf(
            model64, tensors, [(f"backbone.layers.{il}.mixer.A_log", f"blk.{il}.ssm_a") for il in range(N_LAYER)], meta=meta),
        ablations=("scan", "D"),
        conv_state_split=20,
        record_gguf=True,
        mechanisms={
            "block": "x = x + mamba1_mixer(rms(x, attn_norm)); final output_norm; tied head (token_embd)",
            "mamba1_mixer": "xz = ssm_in(h) [2 d_inner]: x = xz[:d_inner], z = xz[d_inner:]; x = silu(conv(x) + "
                            "ssm_conv1d.bias) (depthwise causal, kernel 4, state = last 3 inputs); x_db = ssm_x(x) = "
                            "[dt (time_step_rank) | B (N) | C (N)]; dt = softplus(ssm_dt(dt) + ssm_dt.bias) [d_inner]; "
                            "A = ssm_a [d_inner, N] (-exp(A_log), converter); S[c, n] = exp(dt_c A_cn) S[c, n] + "
                            "dt_c B_n x_c; y_c = sum_n S[c, n] C_n + D_c x_c; out = ssm_out(y * silu(z))",
            "sizes": "ssm.inner_size = d_inner (= 2 n_embd); ssm.state_size = N; ssm.time_step_rank = dt rank; "
                     "ssm.conv_kernel = K; ssm.dt_b_c_rms false",
            "llama_cpp": "src/models/mamba.cpp + mamba-base.cpp build_mamba_layer (ggml_ssm_scan with softplus inside, "
                         "ggml_swiglu_split(z, y))",
        },
    )}
