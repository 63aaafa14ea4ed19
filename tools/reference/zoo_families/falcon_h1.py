"""Falcon-H1 (FalconH1ForCausalLM; GGUF `falcon-h1`), 2 layers. No layer pattern: EVERY layer runs the Mamba-2
mixer and attention side by side on the same input_layernorm output and adds both to the residual, then a
pre-FFN RMSNorm and a SwiGLU MLP:
    h = rms(x, attn_norm); x = x + ssm_out_mult * mamba2(ssm_in_mult * h) + attn_out_mult * attn(attn_in_mult * h)
    x = x + mlp(rms(x, ffn_norm)), mlp(h) = down_mult * down(up(h) * silu(gate_mult * gate(h)))
with Falcon-H1's muP multipliers (all set away from 1 here), a per-row multiplier vector on the Mamba in_proj
output (ssm_multipliers: z, x, B, C, dt blocks), key_multiplier on k, embedding_multiplier and lm_head_multiplier.
The converter FOLDS every multiplier into the weights (FalconH1Model.modify_tensors, float32 products), so the
GGUF describes a plain model: the numpy pass reads no multiplier, and the bit-exact check folds them the same
way (float32, same order) independently. The float64 transformers model is given the GGUF's folded weights
with its multipliers set to 1 (so both sides use the converter's float32 products).

Mamba-2 here: mamba_d_ssm 96 (NOT 2 x hidden: ssm.inner_size must be read, not derived), 6 heads of 16, 2 groups,
state 16, conv 4 with bias; mamba_rms_norm False, the real Falcon-H1 models' setting: no ssm_norm, the mixer
output is y * silu(z) (llama.cpp: ssm_norm optional). Surprise (not exercised by this file): with
mamba_rms_norm True transformers' default mamba_norm_before_gate=True normalises BEFORE the gate, while llama.cpp
always gates first. Attention: GQA 4 / 2 heads of 16, NEOX RoPE (theta 10000), scale 1/sqrt(16). Untied head.
No shim: the converter reads config.json itself (Mamba2Model).
"""
from __future__ import annotations

import numpy as np

from . import npf, ssm
from .common import base_config

N_LAYER, D_SSM = 2, 96
MULT = dict(embedding_multiplier=1.3, lm_head_multiplier=0.7, mlp_multipliers=[1.2, 0.8], key_multiplier=0.9,
            attention_in_multiplier=1.1, attention_out_multiplier=0.85, ssm_in_multiplier=1.15,
            ssm_out_multiplier=0.75, ssm_multipliers=[0.9, 1.1, 1.2, 0.8, 1.05])


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), split=None,
            carry_conv_state=True, **_):
    assert sliding_window is None and rope_style == "neox"
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, eps = m.int("block_count"), m.float("attention.layer_norm_rms_epsilon")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    n_rot = m.int("rope.dimension_count", hd)
    inv = npf.rope_inv_freq(n_rot, m.float("rope.freq_base"))

    def layer(il, x, p0, cache):
        # cache holds the mixer's "conv" / "ssm" states and the attention's "k" / "v"
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        s = ssm.mamba2_mixer(W, m, h, p, ablate=ablate, state=cache)
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=False)
        cos, sin = npf.rope_cos_sin(p0 + np.arange(len(h)), inv)
        q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
        a = npf.linear(W, ssm.attention_cached(q, k, v, p0, cache, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + s + (0.0 if "attention" in ablate else a)
        # the converter names the FFN norm "blk.N.ffn_norm" WITHOUT ".weight" (llama.cpp: tn(LLM_TENSOR_FFN_NORM, i))
        return x + npf.swiglu(W, npf.rms_norm(x, W(p + "ffn_norm"), eps), p)

    return ssm.run_chunks(W, ids, lambda c: W("token_embd.weight")[np.asarray(c)], layer,
                          lambda x: npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps)), n_layer,
                          split=split, carry_conv_state=carry_conv_state)


def _fold(sd: dict, config) -> list[str]:
    """The converter's multiplier folding, written independently in numpy float32 (one rounding per product, in
    the converter's order: in_proj times ssm_in_multiplier, then each row block times its ssm_multipliers entry)."""
    f32 = np.float32
    d, gn = config.mamba_d_ssm, config.mamba_n_groups * config.mamba_d_state
    done = []
    for k in list(sd):
        w = sd[k].astype(np.float32)
        if k.endswith("feed_forward.down_proj.weight"):
            w = w * f32(config.mlp_multipliers[1])
        elif k.endswith("feed_forward.gate_proj.weight"):
            w = w * f32(config.mlp_multipliers[0])
        elif k.endswith("self_attn.k_proj.weight"):
            w = (w * f32(config.key_multiplier)) * f32(config.attention_in_multiplier)
        elif k.endswith(("self_attn.q_proj.weight", "self_attn.v_proj.weight")):
            w = w * f32(config.attention_in_multiplier)
        elif k.endswith("self_attn.o_proj.weight"):
            w = w * f32(config.attention_out_multiplier)
        elif k.endswith("mamba.out_proj.weight"):
            w = w * f32(config.ssm_out_multiplier)
        elif k.endswith("mamba.in_proj.weight"):
            w = w * f32(config.ssm_in_multiplier)
            zm = config.ssm_multipliers
            for i, (a, b) in enumerate([(0, d), (d, 2 * d), (2 * d, 2 * d + gn), (2 * d + gn, 2 * d + 2 * gn),
                                        (2 * d + 2 * gn, w.shape[0])]):
                w[a:b] = w[a:b] * f32(zm[i])
        elif k == "lm_head.weight":
            w = w * f32(config.lm_head_multiplier)
        elif k.endswith("embed_tokens.weight"):
            w = w * f32(config.embedding_multiplier)
        else:
            continue
        sd[k] = w
        done.append(k.split(".", 3)[-1] if k.startswith("model.layers.") else k)
    return [f"multipliers folded (float32) into {len(done)} weights: " + ", ".join(sorted(set(done)))]


GGUF_OF = {"input_layernorm.weight": "attn_norm.weight", "pre_ff_layernorm.weight": "ffn_norm",
           "mamba.in_proj.weight": "ssm_in.weight", "mamba.conv1d.weight": "ssm_conv1d.weight",
           "mamba.conv1d.bias": "ssm_conv1d.bias", "mamba.dt_bias": "ssm_dt.bias", "mamba.D": "ssm_d",
           "mamba.out_proj.weight": "ssm_out.weight", "self_attn.q_proj.weight": "attn_q.weight",
           "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
           "self_attn.o_proj.weight": "attn_output.weight", "feed_forward.gate_proj.weight": "ffn_gate.weight",
           "feed_forward.up_proj.weight": "ffn_up.weight", "feed_forward.down_proj.weight": "ffn_down.weight"}


def float64_from_gguf(model64, meta, tensors):
    """Every weight of the float64 model set to the GGUF's (the folded float32 products), A_log = log(-A), and
    every multiplier set to 1 (mup_vector to ones), so that both sides compute the same model."""
    import torch
    params = dict(model64.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            if name == "model.embed_tokens.weight":
                g = "token_embd.weight"
            elif name == "lm_head.weight":
                g = "output.weight"
            elif name == "model.final_layernorm.weight":
                g = "output_norm.weight"
            elif name.endswith("mamba.A_log"):
                il = int(name.split(".")[2])
                p.copy_(torch.from_numpy(np.log(-tensors[f"blk.{il}.ssm_a"].astype(np.float64)).reshape(p.shape)))
                continue
            else:
                _, _, il, rest = name.split(".", 3)
                g = f"blk.{il}.{GGUF_OF[rest]}"
            p.copy_(torch.from_numpy(tensors[g].astype(np.float64).reshape(p.shape)))
    model64.model.embedding_multiplier = 1.0
    model64.model.lm_head_multiplier = 1.0
    for lay in model64.model.layers:
        lay.mamba.mup_vector.fill_(1.0)
        lay.mamba.ssm_in_multiplier = 1.0
        lay.ssm_out_multiplier = lay.attention_in_multiplier = lay.attn_out_multiplier = 1.0
        lay.self_attn.key_multiplier = 1.0
        lay.feed_forward.gate_multiplier = lay.feed_forward.down_multiplier = 1.0
    return ssm.float64_eps_as_gguf(model64, float(meta["falcon-h1.attention.layer_norm_rms_epsilon"])) + [
        f"all {len(params)} parameters set to the GGUF's tensors (multipliers folded in float32 by the "
            f"converter; A_log = log(-A)), every multiplier (and mup_vector) set to 1"]


def families(zoo):
    def checkpoint_map(sd, config, meta):
        return _fold(sd, config) + ssm.map_ssm_tensors(sd, a_column=True, d_column=True)

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "falcon-h1")
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                                     "ssm.group_count", "attention.head_count", "attention.head_count_kv",
                                     "attention.key_length", "attention.value_length", "feed_forward_length")}
        assert got == {"ssm.conv_kernel": 4, "ssm.inner_size": D_SSM, "ssm.state_size": config.mamba_d_state,
                       "ssm.time_step_rank": config.mamba_n_heads, "ssm.group_count": config.mamba_n_groups,
                       "attention.head_count": 4, "attention.head_count_kv": 2, "attention.key_length": 16,
                       "attention.value_length": 16, "feed_forward_length": config.intermediate_size}, got
        assert D_SSM != 2 * config.hidden_size and config.mamba_rms_norm is False
        assert not any(k.endswith("ssm_norm.weight") for k in tensors), "mamba_rms_norm False: no ssm_norm"
        assert not any("multiplier" in k for k in meta), [k for k in meta if "multiplier" in k]
        return {"ssm_init": ssm.softplus_dt_range(model), "gguf_ssm_keys": got,
                "layer_pattern": "no pattern: every layer runs Mamba-2 and attention in parallel on attn_norm(x), "
                                 "both added to the residual, then ffn_norm + SwiGLU",
                "multipliers": dict(MULT)}

    cfg = base_config(
        num_hidden_layers=N_LAYER, vocab_size=128, intermediate_size=96, rms_norm_eps=1e-5,
        mamba_d_ssm=D_SSM, mamba_n_heads=6, mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16, mamba_d_conv=4,
        mamba_expand=2, mamba_chunk_size=16, mamba_conv_bias=True, mamba_proj_bias=False,
        mamba_norm_before_gate=False, mamba_rms_norm=False, projectors_bias=False, attention_bias=False,
        mlp_bias=False, tie_word_embeddings=False, hidden_act="silu", **MULT)
    return {"falcon-h1": zoo.Family(
        config_cls=zoo._transformers_class("FalconH1Config"),
        model_cls=zoo._transformers_class("FalconH1ForCausalLM"),
        config_kwargs=cfg,
        perturb=lambda model: ssm.perturb(model, zoo),
        converter_class=("conversion.falcon_h1", "FalconH1Model"),
        gguf_arch="falcon-h1",
        llama_arch_enum="LLM_ARCH_FALCON_H1",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight", "blk.{bid}.attn_norm.weight",
            "blk.{bid}.ssm_in.weight", "blk.{bid}.ssm_conv1d.weight", "blk.{bid}.ssm_conv1d.bias",
            "blk.{bid}.ssm_dt.bias", "blk.{bid}.ssm_a", "blk.{bid}.ssm_d", "blk.{bid}.ssm_out.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm", "blk.{bid}.ffn_gate.weight",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=float64_from_gguf,
        ablations=("scan", "D", "attention"),
        conv_state_split=20,
        record_gguf=True,
        mechanisms={
            "block": "h = rms(x, attn_norm); x = x + mamba2(h) + attn(h) (parallel, one norm, both on the same h); "
                     "x = x + ffn_down(silu(ffn_gate(g)) * ffn_up(g)), g = rms(x, ffn_norm); final output_norm; untied "
                     "output.weight. NAME TRAP: the FFN norm tensor is 'blk.N.ffn_norm' (no '.weight' suffix; "
                     "llama.cpp creates it as tn(LLM_TENSOR_FFN_NORM, i))",
            "multipliers": "all folded into the weights by the converter (float32): token_embd *= embedding_multiplier; "
                           "output *= lm_head_multiplier; attn_q, attn_v *= attention_in_multiplier; attn_k *= "
                           "key_multiplier then attention_in_multiplier; attn_output *= attention_out_multiplier; "
                           "ssm_in *= ssm_in_multiplier then its row blocks z | x | B | C | dt *= ssm_multipliers[0..4]; "
                           "ssm_out *= ssm_out_multiplier; ffn_gate *= mlp_multipliers[0]; ffn_down *= "
                           "mlp_multipliers[1]. The GGUF has no multiplier key.",
            "mamba2_mixer": "zoo_families/ssm.py mamba2_mixer: ssm.inner_size 96 (mamba_d_ssm, not 2 n_embd), 6 heads "
                            "of 16, 2 groups, state 16, conv 4 with bias; NO ssm_norm (mamba_rms_norm false): "
                            "out = ssm_out(y * silu(z))",
            "attention": "GQA 4 / 2 heads of 16 (attention.key_length), NEOX RoPE on all 16 dims, rope.freq_base "
                         "10000, scale 1/sqrt(16), causal, no biases",
            "norm_before_gate": "not used here (no ssm_norm); with mamba_rms_norm true transformers' default "
                                "mamba_norm_before_gate=True normalises before the gate, llama.cpp gates first",
        },
    )}
