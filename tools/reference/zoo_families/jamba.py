"""Jamba (JambaForCausalLM; GGUF `jamba`), 4 layers: 0 Mamba + dense FFN, 1 Mamba + MoE, 2 attention + dense FFN,
3 Mamba + MoE (attn_layer_period 4 / offset 2, expert_layer_period 2 / offset 1). Every layer:
x = x + mixer(rms(x, attn_norm)); x = x + ffn(rms(x, ffn_norm)); final output_norm, untied head. Hidden 32.

The Mamba mixer is Mamba-1 with Jamba's RMSNorms on dt, B and C (dt_layernorm / b_layernorm / c_layernorm ->
ssm_dt_norm / ssm_b_norm / ssm_c_norm, eps = the rms eps) after x_proj and before dt_proj (zoo_families/ssm.py
mamba1_mixer); d_inner = 2 n_embd (llama.cpp requires it), state 16, dt rank 4, conv 4 with bias. Attention: GQA
4 / 2 heads of 8, NO positional encoding (NoPE), scale 1/sqrt(8). MoE layers (those with ffn_gate_inp): softmax
over 4 experts, top-2, the two probabilities used AS IS (no renormalisation; llama.cpp jamba.cpp norm_w false),
SwiGLU experts (ff 32); dense layers: SwiGLU ff 32.

Shim (transformers 5.24 vs this converter): JambaModel.modify_tensors collects the experts one tensor per expert
("feed_forward.experts.<e>.{gate,up,down}_proj.weight", transformers 4's layout) and fails on transformers 5's
fused experts.gate_up_proj [E, 2 ff, embd] / experts.down_proj [E, embd, ff]. The converter therefore reads a copy
of the checkpoint with the experts split per expert (gate = rows :ff of gate_up_proj[e], up = rows ff:, down =
down_proj[e]; the same values); the GGUF is compared bit for bit with transformers' own state_dict.
"""
from __future__ import annotations

import json
import shutil

import numpy as np

from . import moe, npf, ssm
from .common import base_config

N_LAYER = 4
ATTN = (4, 2)        # attn_layer_period, attn_layer_offset
EXPERT = (2, 1)      # expert_layer_period, expert_layer_offset


def converter_checkpoint(hf_dir, out_dir):
    from safetensors.numpy import load_file, save_file
    out_dir.mkdir(parents=True)
    shutil.copyfile(hf_dir / "config.json", out_dir / "config.json")
    sd = load_file(str(hf_dir / "model.safetensors"))
    cfg = json.loads((hf_dir / "config.json").read_text())
    ff = cfg["intermediate_size"]
    out, n = {}, 0
    for k, v in sd.items():
        if k.endswith("feed_forward.experts.gate_up_proj"):
            pre = k[: -len("gate_up_proj")]
            for e in range(v.shape[0]):
                out[f"{pre}{e}.gate_proj.weight"] = np.ascontiguousarray(v[e, :ff])
                out[f"{pre}{e}.up_proj.weight"] = np.ascontiguousarray(v[e, ff:])
            n += 1
        elif k.endswith("feed_forward.experts.down_proj"):
            pre = k[: -len("down_proj")]
            for e in range(v.shape[0]):
                out[f"{pre}{e}.down_proj.weight"] = np.ascontiguousarray(v[e])
        else:
            out[k] = v
    save_file(out, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    return [f"conversion.jamba.JambaModel reads the experts one tensor per expert (transformers 4's layout): it is given "
            f"a copy of the checkpoint in which each of the {n} MoE layers' experts.gate_up_proj [E, 2 ff, embd] / "
            f"experts.down_proj [E, embd, ff] (transformers 5) is split into experts.<e>.gate_proj (rows :ff), "
            f"experts.<e>.up_proj (rows ff:) and experts.<e>.down_proj (same values)"]


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), split=None,
            carry_conv_state=True, stats=None, **_):
    assert sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, eps = m.int("block_count"), m.float("attention.layer_norm_rms_epsilon")
    n_head = m.int("attention.head_count")
    hkv = m.per_layer("attention.head_count_kv", n_layer)
    hd = m.int("embedding_length") // n_head

    def layer(il, x, p0, cache):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        if hkv[il] == 0:
            y = ssm.mamba1_mixer(W, m, h, p, ablate=ablate, state=cache)
        else:
            q, k, v = npf.qkv(W, h, p, n_head, int(hkv[il]), bias=False)
            y = npf.linear(W, ssm.attention_cached(q, k, v, p0, cache, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + y
        h2 = npf.rms_norm(x, W(p + "ffn_norm.weight"), eps)
        if p + "ffn_gate_inp.weight" in W:
            f = moe.moe_ffn(W, m, h2, p, gating="softmax", norm=False, ablate=ablate, stats=stats)
        else:
            f = npf.swiglu(W, h2, p)
        return x + f

    out = ssm.run_chunks(W, ids, lambda c: W("token_embd.weight")[np.asarray(c)], layer,
                         lambda x: npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps)), n_layer,
                         split=split, carry_conv_state=carry_conv_state)
    moe.router_margin(stats)
    return out


def families(zoo):
    def checkpoint_map(sd, config, meta):
        return ssm.map_ssm_tensors(sd, a_column=False, d_column=False) + moe.split_fused_gate_up(
            sd, "feed_forward.experts.gate_up_proj")

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "jamba")
        n_layer = m.int("block_count")
        hkv = m.per_layer("attention.head_count_kv", n_layer)
        moe_layers = [f"blk.{il}.ffn_gate_inp.weight" in tensors for il in range(n_layer)]
        print(f"layers_block_type {config.layers_block_type}, layers_num_experts {config.layers_num_experts}; GGUF "
              f"head_count_kv {hkv}, MoE (ffn_gate_inp) {moe_layers}")
        assert hkv == [config.num_key_value_heads if t == "attention" else 0 for t in config.layers_block_type]
        assert moe_layers == [ne > 1 for ne in config.layers_num_experts]
        assert config.layers_block_type == ["mamba", "mamba", "attention", "mamba"]
        assert moe_layers == [False, True, False, True]
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                                     "expert_count", "expert_used_count", "feed_forward_length")}
        assert got == {"ssm.conv_kernel": 4, "ssm.inner_size": 64, "ssm.state_size": 16, "ssm.time_step_rank": 4,
                       "expert_count": 4, "expert_used_count": 2, "feed_forward_length": 32}, got
        assert m.int("ssm.inner_size") == 2 * m.int("embedding_length")
        for il in range(n_layer):
            if hkv[il] == 0:
                for t in ("dt", "b", "c"):
                    assert f"blk.{il}.ssm_{t}_norm.weight" in tensors
        return {"ssm_init": ssm.softplus_dt_range(model), "gguf_keys_that_matter": got,
                "layer_pattern": {"transformers_layers_block_type": list(config.layers_block_type),
                                  "transformers_layers_num_experts": list(config.layers_num_experts),
                                  "gguf_head_count_kv": hkv, "gguf_moe_layers": moe_layers,
                                  "rule": "Mamba iff jamba.attention.head_count_kv[i] == 0; MoE FFN iff the layer has "
                                          "ffn_gate_inp (llama.cpp jamba.cpp), else dense SwiGLU"},
                "routing": moe.routing_record(forward, tensors, meta, "jamba", "none", zoo.PROMPTS)}

    cfg = base_config(
        vocab_size=128, hidden_size=32, num_hidden_layers=N_LAYER, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=32, num_experts=4, num_experts_per_tok=2, expert_layer_period=EXPERT[0],
        expert_layer_offset=EXPERT[1], attn_layer_period=ATTN[0], attn_layer_offset=ATTN[1], mamba_d_state=16,
        mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4, mamba_conv_bias=True, mamba_proj_bias=False,
        use_mamba_kernels=False, use_mambapy=False, use_associative_scan=False, rms_norm_eps=1e-6,
        tie_word_embeddings=False, hidden_act="silu", experts_implementation="eager", output_router_logits=False)
    for k in ("head_dim", "rope_parameters"):
        cfg.pop(k)
    return {"jamba": zoo.Family(
        config_cls=zoo._transformers_class("JambaConfig"),
        model_cls=zoo._transformers_class("JambaForCausalLM"),
        config_kwargs=cfg,
        perturb=lambda model: ssm.perturb(model, zoo),
        converter_class=("conversion.jamba", "JambaModel"),
        gguf_arch="jamba",
        llama_arch_enum="LLM_ARCH_JAMBA",
        rope_style="none",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight", "blk.{bid}.attn_norm.weight",
            "blk.{bid}.ffn_norm.weight",
            "blk.0.ssm_in.weight", "blk.0.ssm_conv1d.weight", "blk.0.ssm_conv1d.bias", "blk.0.ssm_x.weight",
            "blk.0.ssm_dt.weight", "blk.0.ssm_dt.bias", "blk.0.ssm_a", "blk.0.ssm_d", "blk.0.ssm_out.weight",
            "blk.0.ssm_dt_norm.weight", "blk.0.ssm_b_norm.weight", "blk.0.ssm_c_norm.weight",
            "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight",
            "blk.1.ffn_gate_inp.weight", "blk.1.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight",
            "blk.1.ffn_down_exps.weight", "blk.2.attn_q.weight", "blk.2.attn_k.weight", "blk.2.attn_v.weight",
            "blk.2.attn_output.weight", "blk.2.ffn_gate.weight", "blk.3.ffn_gate_inp.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=lambda model64, meta, tensors: ssm.float64_a_log_from_gguf(
            model64, tensors, [(f"model.layers.{il}.mamba.A_log", f"blk.{il}.ssm_a") for il in (0, 1, 3)], meta=meta),
        ablations=("scan", "D", "dt_b_c_norm", "renorm"),
        conv_state_split=20,
        converter_checkpoint=converter_checkpoint,
        record_gguf=True,
        mechanisms={
            "layer_pattern": "4 layers: Mamba+dense, Mamba+MoE, attention+dense, Mamba+MoE; head_count_kv [0, 0, 2, 0]; "
                             "MoE iff ffn_gate_inp present (layers 1, 3)",
            "block": "x = x + mixer(rms(x, attn_norm)); x = x + ffn(rms(x, ffn_norm)); final output_norm; untied output",
            "mamba": "zoo_families/ssm.py mamba1_mixer with dt, B, C RMSNormed (ssm_dt_norm [4], ssm_b_norm [16], "
                     "ssm_c_norm [16], eps = rms eps) between ssm_x and ssm_dt; d_inner 64 = 2 n_embd, state 16, dt rank "
                     "4, conv 4 with bias; D skip; y * silu(z)",
            "attention": "GQA 4 / 2 heads of 8 (hd = n_embd / n_head; no key_length key), NO RoPE, scale 1/sqrt(8), causal",
            "moe": "softmax over expert_count 4, top expert_used_count 2, weights = the two softmax probabilities WITHOUT "
                   "renormalisation; SwiGLU experts ff 32 (ffn_{gate,up,down}_exps); no shared expert",
            "dense_ffn": "layers 0, 2: SwiGLU ffn_gate / ffn_up / ffn_down, ff 32",
        },
    )}
