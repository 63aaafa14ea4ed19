"""Nemotron-H (NemotronHForCausalLM; GGUF `nemotron_h`), 6 layers "M*-M*-": Mamba-2, attention, MLP, Mamba-2,
attention, MLP (transformers 5 layers_block_type ["linear_attention", "full_attention", "mlp", ...]). Each layer
is ONE sublayer with its own RMSNorm and residual: x = x + f(rms(x, attn_norm)); f is the Mamba-2 mixer
(zoo_families/ssm.py, 8 heads of 16, 2 groups, state 16), NoPE GQA attention (4 / 2 heads of 16, scale
1/sqrt(16)), or the NON-gated MLP ffn_down(relu(ffn_up(h))^2); then output_norm and an untied head.
Surprise vs llama.cpp: transformers' NemotronHMamba2Mixer clamps dt = max(softplus(dt + dt_bias), time_step_min)
(time_step_limit = (time_step_min, inf); the real models' 1e-3, kept here), llama.cpp does not, and the GGUF has
no key for it: the numpy pass applies the clamp (DT_MIN), and without it differs from transformers by > 1e-2.

llama.cpp's layer rule (src/models/nemotron-h.cpp): Mamba-2 iff head_count_kv[i] == 0 and
feed_forward_length[i] == 0; attention iff feed_forward_length[i] == 0 and head_count_kv[i] > 0; otherwise MLP.

Shims (recorded in versions.json; transformers 5.24 vs this converter, which reads the Hub's config.json): transformers 5 saves neither
num_hidden_layers (a property) nor hybrid_override_pattern, only layers_block_type with its own names
("linear_attention" / "full_attention" / "mlp"), which NemotronHModel does not recognise (it reads the
pattern string, or a list of "mamba" / "attention" / "moe"); and it always saves the MoE defaults
(num_experts_per_tok, n_routed_experts, ...), from which NemotronHModel.__init__ concludes the model is
nemotron_h_moe. The converter is therefore given config.json with num_hidden_layers = 6, hybrid_override_pattern
"M*-M*-" (from layers_block_type), layers_block_type removed and the MoE keys removed (this model has no MoE
layer). Also rms_norm_eps = layer_norm_epsilon: transformers 5 saves the RMSNorm's eps only as layer_norm_epsilon,
which the converter files as attention.layer_norm_epsilon, while llama.cpp's nemotron_h requires
attention.layer_norm_rms_epsilon (the GGUF then carries both keys, equal). The script asserts the GGUF's two
per-layer arrays against the config's layer types.
"""
from __future__ import annotations

import json

import numpy as np

from . import npf, ssm
from .common import base_config

PATTERN = "M*-M*-"
DT_MIN = 1e-3     # transformers' NemotronHMamba2Mixer: dt clamped to >= config.time_step_min (no GGUF key)
TO_TYPE = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
LAYER_TYPES = [TO_TYPE[c] for c in PATTERN]
MOE_KEYS = ("num_experts_per_tok", "n_routed_experts", "n_shared_experts", "moe_intermediate_size",
            "moe_shared_expert_intermediate_size", "moe_latent_size", "moe_shared_expert_overlap",
            "routed_scaling_factor", "n_group", "topk_group", "norm_topk_prob", "output_router_logits",
            "num_local_experts")


def converter_hparams(hf_dir):
    """config.json as NemotronHModel (a Mamba2Model) reads it, with the pattern string and layer count the
    converter expects and the MoE keys dropped."""
    hp = json.loads((hf_dir / "config.json").read_text())
    types = hp.pop("layers_block_type")
    code = {v: k for k, v in TO_TYPE.items()}
    assert "moe" not in types, types
    pattern = "".join(code[t] for t in types)
    dropped = [k for k in MOE_KEYS if k in hp]
    for k in dropped:
        del hp[k]
    assert "num_hidden_layers" not in hp and "hybrid_override_pattern" not in hp
    hp["num_hidden_layers"] = len(types)
    hp["hybrid_override_pattern"] = pattern
    assert "rms_norm_eps" not in hp
    hp["rms_norm_eps"] = hp["layer_norm_epsilon"]
    return hp, [f"conversion.nemotron.NemotronHModel.__init__ (and its ModelBase.load_hparams call) given config.json "
                f"with num_hidden_layers = {len(types)} and hybrid_override_pattern = {pattern!r} added (transformers 5 "
                f"saves neither; its layers_block_type {types} uses names the converter does not read, so it is "
                f"removed), and the MoE keys {dropped} removed (transformers 5 always saves them; with them the "
                f"converter writes nemotron_h_moe)",
                f"rms_norm_eps = layer_norm_epsilon ({hp['rms_norm_eps']}) added for the converter: transformers 5 saves "
                f"the RMSNorm eps only as layer_norm_epsilon, which the converter writes as attention.layer_norm_epsilon, "
                f"while llama.cpp's nemotron_h requires attention.layer_norm_rms_epsilon (without it the file does not "
                f"load); NemotronHRMSNorm is an RMSNorm with that eps"]


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), split=None,
            carry_conv_state=True, **_):
    assert sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, eps = m.int("block_count"), m.float("attention.layer_norm_rms_epsilon")
    n_head = m.int("attention.head_count")
    hkv = m.per_layer("attention.head_count_kv", n_layer)
    n_ff = m.per_layer("feed_forward_length", n_layer)
    hd = m.int("attention.key_length")
    assert m.int("attention.value_length") == hd

    def layer(il, x, p0, cache):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        if hkv[il] == 0 and n_ff[il] == 0:
            y = ssm.mamba2_mixer(W, m, h, p, ablate=ablate, state=cache,
                                 dt_min=0.0 if "dt_clamp" in ablate else DT_MIN)
        elif n_ff[il] == 0:
            q, k, v = npf.qkv(W, h, p, n_head, int(hkv[il]), bias=False)
            if "nope" in ablate:       # the ablation: RoPE although the model has none
                cos, sin = npf.rope_cos_sin(p0 + np.arange(len(h)), npf.rope_inv_freq(hd, 10000.0))
                q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
            y = npf.linear(W, ssm.attention_cached(q, k, v, p0, cache, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        else:
            u = npf.linear(W, h, p + "ffn_up", bias=False)
            assert u.shape[1] == n_ff[il], (u.shape, n_ff[il])
            act = npf.silu(u) if "relu2" in ablate else npf.relu2(u)
            y = npf.linear(W, act, p + "ffn_down", bias=False)
        return x + y

    return ssm.run_chunks(W, ids, lambda c: W("token_embd.weight")[np.asarray(c)], layer,
                          lambda x: npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps)), n_layer,
                          split=split, carry_conv_state=carry_conv_state)


def families(zoo):
    def checkpoint_map(sd, config, meta):
        return ssm.map_ssm_tensors(sd, n_group=config.n_groups, a_column=True, d_column=True,
                                   norm_suffix="mixer.norm.weight") + ssm.permute_qk_rows(
            sd, zoo, config.num_attention_heads, config.num_key_value_heads)

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "nemotron_h")
        n_layer = m.int("block_count")
        hkv = m.per_layer("attention.head_count_kv", n_layer)
        n_ff = m.per_layer("feed_forward_length", n_layer)
        print(f"layers_block_type {config.layers_block_type}; GGUF head_count_kv {hkv}, feed_forward_length {n_ff}")
        assert list(config.layers_block_type) == LAYER_TYPES and n_layer == len(PATTERN)
        assert hkv == [config.num_key_value_heads if t == "full_attention" else 0 for t in LAYER_TYPES], hkv
        assert n_ff == [config.intermediate_size if t == "mlp" else 0 for t in LAYER_TYPES], n_ff
        rule = ["M" if h == 0 and f == 0 else "*" if f == 0 else "-" for h, f in zip(hkv, n_ff)]
        assert "".join(rule) == PATTERN, rule
        assert [b.block_type for b in model.model.layers] == LAYER_TYPES
        assert "expert_count" not in m and meta["general.architecture"] == "nemotron_h"
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                                     "ssm.group_count", "attention.key_length", "attention.value_length")}
        assert got == {"ssm.conv_kernel": config.conv_kernel,
                       "ssm.inner_size": config.mamba_num_heads * config.mamba_head_dim,
                       "ssm.state_size": config.ssm_state_size, "ssm.time_step_rank": config.mamba_num_heads,
                       "ssm.group_count": config.n_groups, "attention.key_length": config.head_dim,
                       "attention.value_length": config.head_dim}, got
        return {"ssm_init": ssm.softplus_dt_range(model),
                "layer_pattern": {"hybrid_override_pattern": PATTERN, "transformers_layers_block_type": LAYER_TYPES,
                                  "gguf_head_count_kv": hkv, "gguf_feed_forward_length": n_ff,
                                  "rule": "Mamba-2 iff head_count_kv[i] == 0 and feed_forward_length[i] == 0; attention "
                                          "iff feed_forward_length[i] == 0 and head_count_kv[i] > 0; else MLP "
                                          "(llama.cpp nemotron-h.cpp)"},
                "gguf_ssm_keys": got}

    cfg = base_config(
        layers_block_type=list(LAYER_TYPES), vocab_size=128, intermediate_size=128, mlp_hidden_act="relu2",
        mlp_bias=False, attention_bias=False, ssm_state_size=16, mamba_num_heads=8, mamba_head_dim=16, n_groups=2,
        conv_kernel=4, expand=2, use_conv_bias=True, mamba_proj_bias=False, use_bias=False, chunk_size=16,
        layer_norm_epsilon=1e-5, residual_in_fp32=False, tie_word_embeddings=False, num_nextn_predict_layers=0,
        use_mamba_kernels=False, mamba_hidden_act="silu", time_step_min=DT_MIN)
    for k in ("num_hidden_layers", "intermediate_size", "rope_parameters"):
        cfg.pop(k, None)
    cfg["intermediate_size"] = 128
    return {"nemotron_h": zoo.Family(
        config_cls=zoo._transformers_class("NemotronHConfig"),
        model_cls=zoo._transformers_class("NemotronHForCausalLM"),
        config_kwargs=cfg,
        perturb=lambda model: ssm.perturb(model, zoo),
        converter_class=("conversion.nemotron", "NemotronHModel"),
        gguf_arch="nemotron_h",
        llama_arch_enum="LLM_ARCH_NEMOTRON_H",
        rope_style="none",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight", "blk.{bid}.attn_norm.weight",
            "blk.0.ssm_in.weight", "blk.0.ssm_conv1d.weight", "blk.0.ssm_conv1d.bias", "blk.0.ssm_dt.bias",
            "blk.0.ssm_a", "blk.0.ssm_d", "blk.0.ssm_norm.weight", "blk.0.ssm_out.weight", "blk.3.ssm_in.weight",
            "blk.1.attn_q.weight", "blk.1.attn_k.weight", "blk.1.attn_v.weight", "blk.1.attn_output.weight",
            "blk.4.attn_q.weight", "blk.2.ffn_up.weight", "blk.2.ffn_down.weight", "blk.5.ffn_up.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=lambda model64, meta, tensors: ssm.float64_a_log_from_gguf(
            model64, tensors, [(f"model.layers.{il}.mixer.A_log", f"blk.{il}.ssm_a")
                               for il, c in enumerate(PATTERN) if c == "M"], meta=meta),
        ablations=("scan", "grouped_norm", "nope", "relu2", "dt_clamp"),
        conv_state_split=20,
        converter_hparams=converter_hparams,
        record_gguf=True,
        mechanisms={
            "layer_pattern": f"{PATTERN!r}: head_count_kv {[2 if c == '*' else 0 for c in PATTERN]}, feed_forward_length "
                             f"{[128 if c == '-' else 0 for c in PATTERN]}",
            "block": "each layer ONE sublayer: x = x + f(rms(x, attn_norm)) (HF NemotronHBlock.norm = attn_norm for "
                     "every kind); final output_norm; untied output.weight",
            "mamba2_mixer": "zoo_families/ssm.py mamba2_mixer: 8 heads of 16 (ssm.inner_size 128 = mamba_num_heads * "
                            "mamba_head_dim), 2 groups, state 16, conv 4 with bias; y * silu(z) then RMSNorm per group "
                            "of 64 (ssm_norm [2, 64])",
            "attention": "GQA 4 / 2 heads, head_dim 16 (attention.key_length / value_length), no biases, NO RoPE, "
                         "scale 1/sqrt(16), causal",
            "dt_clamp": f"transformers' NemotronHMamba2Mixer sets time_step_limit = (config.time_step_min, inf): dt = "
                        f"max(softplus(dt + dt_bias), time_step_min) with time_step_min = {DT_MIN} (the real models' "
                        f"mamba_dt_min); the GGUF has no key for it and llama.cpp does not clamp (hard-code it for "
                        f"nemotron_h; mamba2 / granitehybrid in transformers clamp at time_step_limit[0] = 0, i.e. not)",
            "mlp": "non-gated: ffn_down(relu(ffn_up(h))^2) (mlp_hidden_act relu2), no biases; n_ff per layer",
        },
    )}
