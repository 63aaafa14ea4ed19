"""Qwen3.5 dense (Qwen3_5ForCausalLM; GGUF `qwen35`), 4 layers: gated DeltaNet in layers 0-2, gated attention in
layer 3 (full_attention_interval 4). Every layer: x = x + mixer(rms(x, attn_norm)); x = x + swiglu(rms(x,
post_attention_norm)) (a dense SwiGLU, ff 64); final output_norm, untied head. Hidden 32.

Differences from qwen3next (zoo_families/qwen3next.py, whose forward this reuses): separate projections
in_proj_qkv / in_proj_z / in_proj_b / in_proj_a (GGUF attn_qkv, attn_gate, ssm_beta, ssm_alpha), and the
converter REORDERS the value heads from grouped (HF: the r = nv / nk value heads of key head g are g r .. g r + r - 1)
to tiled (GGUF value head j = i nk + g holds HF head g r + i, i.e. value head j uses key head j % nk) in every
per-value-head tensor: the v rows of attn_qkv, attn_gate rows, ssm_beta / ssm_alpha rows, ssm_dt.bias, ssm_a, the v
channels of ssm_conv1d and the columns of ssm_out (conversion/qwen.py _LinearAttentionVReorderBase; the
bit-exact check applies the same permutation, written independently). So the numpy pass runs the DeltaNet with
v_order "tiled". 2 key heads / 4 value heads of 8 (the reorder is a real permutation).

RoPE: transformers' Qwen3.5 applies interleaved M-RoPE; for text all three position streams are equal, so it is
partial NEOX RoPE on the first rope.dimension_count dims. The converter writes rope.dimension_sections from
rope_parameters.mrope_section, defaulting to [11, 11, 10, 0] (64 dims), far beyond this model's 8 rotary dims:
the config sets mrope_section [2, 1, 1] (4 pairs = 8 dims), and the script asserts that the sections fit.

Shims: `--no-mtp`; full_attention_interval derived from layer_types as for qwen3next (transformers 5 saves none).
"""
from __future__ import annotations

import numpy as np

from . import npf, ssm
from .common import base_config
from .qwen3next import (ZERO_CENTRED, converter_hparams_with_interval, float64_norms_and_a, gguf_norm_name,
                        make_forward, norms_plus_one, recurrent_layers)

N_LAYER = 4
LAYER_TYPES = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(N_LAYER)]
NK, NV, DK, DV = 2, 4, 8, 8
MROPE_SECTION = [2, 1, 1]

forward = make_forward("tiled", "dense")


def tiled_from_grouped(nk: int, nv: int) -> np.ndarray:
    """perm[j] = the HF (grouped) value head at GGUF (tiled) position j: j = i nk + g <- g r + i."""
    r = nv // nk
    return np.array([(j % nk) * r + j // nk for j in range(nv)])


def families(zoo):
    def checkpoint_map(sd, config, meta):
        notes = norms_plus_one(sd)
        perm = tiled_from_grouped(NK, NV)
        rows_v = np.concatenate([np.arange(h * DV, (h + 1) * DV) for h in perm])     # value channels, tiled order
        qk = 2 * NK * DK
        done = []
        for k in list(sd):
            if ".linear_attn." not in k:
                continue
            w = sd[k]
            if k.endswith("in_proj_qkv.weight"):
                w = np.concatenate([w[:qk], w[qk:][rows_v]])
            elif k.endswith("in_proj_z.weight"):
                w = w[rows_v]
            elif k.endswith(("in_proj_b.weight", "in_proj_a.weight", ".dt_bias", ".A_log")):
                w = w[perm]
            elif k.endswith("conv1d.weight"):
                w = np.concatenate([w[:qk], w[qk:][rows_v]])
            elif k.endswith("out_proj.weight"):
                w = w[:, rows_v]
            else:
                continue
            sd[k] = np.ascontiguousarray(w)
            done.append(k.split(".", 4)[-1])
        notes.append(f"value heads reordered grouped -> tiled (GGUF head j = HF head {perm.tolist()}[j]) in "
                     f"{len(done)} tensors: " + ", ".join(sorted(set(done))))
        return notes + ssm.map_ssm_tensors(sd, a_column=False, d_column=False)

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "qwen35")
        n_layer = m.int("block_count")
        rec = recurrent_layers(m, n_layer)
        print(f"layer_types {config.layer_types}; GGUF full_attention_interval {m.get('full_attention_interval')} "
              f"-> recurrent {rec}; rope.dimension_sections {m.get('rope.dimension_sections')}")
        assert list(config.layer_types) == LAYER_TYPES and rec == [t == "linear_attention" for t in LAYER_TYPES]
        assert m.int("full_attention_interval") == 4
        sections = list(m["rope.dimension_sections"])
        n_rot = m.int("rope.dimension_count")
        assert sum(sections) * 2 == n_rot == 8 and sections[:3] == MROPE_SECTION, (sections, n_rot)
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank",
                                     "ssm.inner_size", "rope.dimension_count", "attention.key_length",
                                     "feed_forward_length")}
        assert got == {"ssm.conv_kernel": 4, "ssm.state_size": DK, "ssm.group_count": NK, "ssm.time_step_rank": NV,
                       "ssm.inner_size": NV * DV, "rope.dimension_count": 8, "attention.key_length": 16,
                       "feed_forward_length": 64}, got
        assert "nextn_predict_layers" not in m and "expert_count" not in m
        # the grouped -> tiled reorder really moved heads: GGUF dt bias j == HF dt bias perm[j], perm != identity
        perm = tiled_from_grouped(NK, NV)
        assert (perm != np.arange(NV)).any()
        hf_dt = model.model.layers[0].linear_attn.dt_bias.detach().numpy()
        assert (tensors["blk.0.ssm_dt.bias"] == hf_dt[perm]).all()
        return {"ssm_init": ssm.softplus_dt_range(model), "gguf_keys_that_matter": got,
                "rope_dimension_sections": sections,
                "v_head_order": {"gguf_head_j_is_hf_head": perm.tolist(),
                                 "rule": "GGUF value head j uses key head j % nk (tiled); HF value head h uses key "
                                         "head h // (nv / nk) (grouped)"},
                "layer_pattern": {"transformers_layer_types": LAYER_TYPES,
                                  "gguf_full_attention_interval": m.int("full_attention_interval"),
                                  "rule": "layer i is gated DeltaNet iff (i + 1) % qwen35.full_attention_interval != 0 "
                                          "(or attention.recurrent_layers[i] when present), else gated attention"}}

    cfg = base_config(
        vocab_size=128, hidden_size=32, num_hidden_layers=N_LAYER, layer_types=list(LAYER_TYPES),
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, intermediate_size=64,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                         "mrope_section": list(MROPE_SECTION), "mrope_interleaved": True},
        linear_conv_kernel_dim=4, linear_key_head_dim=DK, linear_value_head_dim=DV, linear_num_key_heads=NK,
        linear_num_value_heads=NV, rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu")
    a_pairs = [(f"model.layers.{il}.linear_attn.A_log", f"blk.{il}.ssm_a")
               for il, t in enumerate(LAYER_TYPES) if t == "linear_attention"]

    def float64_check(model64, meta, tensors):
        # A_log in GGUF (tiled) order -> back to HF order before giving it to the model
        import torch
        perm = tiled_from_grouped(NK, NV)
        inv = np.argsort(perm)
        notes = float64_norms_and_a(model64, tensors, [(k, gguf_norm_name(k)) for k, _ in model64.named_parameters()
                                                       if k.endswith(ZERO_CENTRED)], [])
        params = dict(model64.named_parameters())
        with torch.no_grad():
            for hf, gg in a_pairs:
                a = tensors[gg].astype(np.float64)[inv]
                params[hf].copy_(torch.from_numpy(np.log(-a)))
        return notes + [f"{len(a_pairs)} A_log set to log(-A) of the GGUF's A, value heads put back in HF order"]

    return {"qwen35": zoo.Family(
        config_cls=zoo._transformers_class("Qwen3_5TextConfig"),
        model_cls=zoo._transformers_class("Qwen3_5ForCausalLM"),
        config_kwargs=cfg,
        perturb=lambda model: ssm.perturb(model, zoo, zero_centered_norms=ZERO_CENTRED),
        converter_class=("conversion.qwen", "Qwen3_5TextModel"),
        gguf_arch="qwen35",
        llama_arch_enum="LLM_ARCH_QWEN35",
        rope_style="LLAMA_ROPE_TYPE_IMROPE",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight", "blk.{bid}.attn_norm.weight",
            "blk.{bid}.post_attention_norm.weight", "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight",
            "blk.{bid}.ffn_down.weight",
            "blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_beta.weight", "blk.0.ssm_alpha.weight",
            "blk.0.ssm_conv1d.weight", "blk.0.ssm_dt.bias", "blk.0.ssm_a", "blk.0.ssm_norm.weight",
            "blk.0.ssm_out.weight", "blk.3.attn_q.weight", "blk.3.attn_k.weight", "blk.3.attn_v.weight",
            "blk.3.attn_output.weight", "blk.3.attn_q_norm.weight", "blk.3.attn_k_norm.weight",
        ],
        numpy_forward=lambda tensors, meta, arch, ids, rope_style, **kw: forward(tensors, meta, arch, ids, "neox", **kw),
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=float64_check,
        ablations=("delta", "decay", "l2norm", "gate", "output_gate"),
        conv_state_split=20,
        converter_hparams=converter_hparams_with_interval,
        converter_args=("--no-mtp",),
        record_gguf=True,
        mechanisms={
            "layer_pattern": "4 layers, recurrent iff (i + 1) % full_attention_interval (4) != 0: DeltaNet 0-2, gated "
                             "attention 3",
            "block": "x = x + mixer(rms(x, attn_norm)); x = x + ffn_down(silu(ffn_gate(h)) * ffn_up(h)), h = rms(x, "
                     "post_attention_norm); final output_norm; untied output.weight; norm weights stored as 1 + w",
            "gated_deltanet": "as qwen3next but: separate attn_qkv / attn_gate / ssm_beta / ssm_alpha, and value heads in "
                              "TILED order (GGUF value head j uses key head j % nk; the converter permuted HF's grouped "
                              "heads in attn_qkv's v rows, attn_gate, ssm_beta, ssm_alpha, ssm_dt.bias, ssm_a, the v "
                              "channels of ssm_conv1d and the columns of ssm_out)",
            "gated_attention": "as qwen3next: attn_q rows per head [q_h | gate_h], q/k RMSNorm, partial RoPE on 8 of 16 "
                               "dims, output * sigmoid(gate)",
            "rope": "llama.cpp LLAMA_ROPE_TYPE_IMROPE with rope.dimension_sections [2, 1, 1, 0]; text positions are equal "
                    "in every section, so it is NEOX RoPE on the first rope.dimension_count = 8 dims (theta 10000)",
        },
    )}
