"""Qwen3-Next (Qwen3NextForCausalLM; GGUF `qwen3next`), 8 layers: gated DeltaNet in layers 0-2 and 4-6, gated
attention in layers 3 and 7 (transformers layer_types; llama.cpp: layer i recurrent iff (i + 1) %
full_attention_interval != 0, interval 4). Every layer: x = x + mixer(rms(x, attn_norm)); x = x + moe(rms(x,
post_attention_norm)), the MoE being 4 SwiGLU experts (ff 8), top-2 on softmax, the two weights renormalised
(norm_topk_prob), plus a shared SwiGLU expert (ff 8) times sigmoid(ffn_gate_inp_shexp . h). Final output_norm,
untied head.

Sizes (hidden 32 to keep 8 layers small): DeltaNet 2 key heads / 4 value heads of 8 (dk = dv = 8; llama.cpp
requires dk == dv), conv 4; attention 2 query heads / 1 KV head of 16, partial NEOX RoPE on the first 8 dims
(partial_rotary_factor 0.5), per-head q/k RMSNorm, the output gate interleaved per head in attn_q.
Qwen3-Next's RMSNorms multiply by (1 + w) (weights zero-centred, perturbed as 0.3 randn); the converter stores
1 + w for every norm but the DeltaNet's gated norm (a plain weight). The mechanisms: zoo_families/ssm.py
(gated_deltanet with v_order "grouped", gated_attention); the MoE: zoo_families/moe.py.

Shims: `--no-mtp` (the converter's MTP export; transformers has no MTP weights); transformers 5 saves no
full_attention_interval (its config pops it into layer_types), so the converter would write its default 4: the
converter is given full_attention_interval derived from layer_types (4 here, asserted periodic); the script
asserts the GGUF's interval reproduces the config's layer types.
"""
from __future__ import annotations

import numpy as np

from . import moe, npf, ssm
from .common import base_config

N_LAYER = 8
LAYER_TYPES = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(N_LAYER)]
ZERO_CENTRED = ("input_layernorm.weight", "post_attention_layernorm.weight", "q_norm.weight", "k_norm.weight",
                "model.norm.weight")


def interval_of(layer_types: list[str]) -> int:
    """The full_attention_interval that reproduces layer_types under llama.cpp's rule, or an error."""
    full = [i for i, t in enumerate(layer_types) if t == "full_attention"]
    assert full, layer_types
    iv = full[0] + 1
    assert [(i + 1) % iv == 0 for i in range(len(layer_types))] == [t == "full_attention" for t in layer_types], \
        f"layer_types {layer_types} is not periodic in llama.cpp's sense"
    return iv


def converter_hparams_with_interval(hf_dir):
    from conversion.base import ModelBase
    hp = ModelBase.load_hparams(hf_dir, False)
    assert "full_attention_interval" not in hp
    hp["full_attention_interval"] = interval_of(hp["layer_types"])
    return hp, [f"the converter class's __init__ (conversion/qwen.py) given its hparams (ModelBase.load_hparams) with "
                f"full_attention_interval = {hp['full_attention_interval']} derived from layer_types "
                f"{hp['layer_types']} (transformers 5 saves no interval; the converter would write its default 4)"]


def recurrent_layers(m: npf.Meta, n_layer: int) -> list[bool]:
    """llama.cpp's rule: attention.recurrent_layers (bool per layer) when present, else (i + 1) % interval != 0."""
    if "attention.recurrent_layers" in m:
        rec = [bool(v) for v in m["attention.recurrent_layers"]]
        assert len(rec) == n_layer
        return rec
    iv = m.int("full_attention_interval", 4)
    return [(i + 1) % iv != 0 for i in range(n_layer)]


def make_forward(v_order: str, ffn: str):
    def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), split=None,
                carry_conv_state=True, stats=None, **_):
        assert sliding_window is None and rope_style == "neox"
        W, m = npf.Weights(tensors), npf.Meta(meta, arch)
        n_layer, eps = m.int("block_count"), m.float("attention.layer_norm_rms_epsilon")
        rec = recurrent_layers(m, n_layer)

        def layer(il, x, p0, cache):
            p = f"blk.{il}."
            h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
            if rec[il]:
                y = ssm.gated_deltanet(W, m, h, p, v_order=v_order, ablate=ablate, state=cache)
            else:
                y = ssm.gated_attention(W, m, h, p, p0, cache, ablate=ablate)
            x = x + y
            h2 = npf.rms_norm(x, W(p + "post_attention_norm.weight"), eps)
            if ffn == "moe":
                f = moe.moe_ffn(W, m, h2, p, gating="softmax", norm=True, ablate=ablate, stats=stats)
            else:
                f = npf.swiglu(W, h2, p)
            return x + f

        out = ssm.run_chunks(W, ids, lambda c: W("token_embd.weight")[np.asarray(c)], layer,
                             lambda x: npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps)), n_layer,
                             split=split, carry_conv_state=carry_conv_state)
        moe.router_margin(stats)
        return out
    return forward


forward = make_forward("grouped", "moe")


def norms_plus_one(sd: dict) -> list[str]:
    """The converter stores 1 + w for every (1 + w) RMSNorm (all "norm.weight" but the DeltaNet's gated
    linear_attn.norm.weight), float32."""
    n = 0
    for k in list(sd):
        if k.endswith(ZERO_CENTRED):
            sd[k] = sd[k].astype(np.float32) + np.float32(1.0)
            n += 1
    return [f"{n} (1 + w) RMSNorm weights stored as 1 + w (float32)"]


def float64_norms_and_a(model64, tensors, norm_pairs, a_pairs) -> list[str]:
    """The float64 model gets the GGUF's values: a (1 + w) norm weight w = gguf - 1 (exact in float64, so that
    1 + w is the GGUF's float32 value), A_log = log(-A)."""
    import torch
    params = dict(model64.named_parameters())
    with torch.no_grad():
        for hf, gg in norm_pairs:
            params[hf].copy_(torch.from_numpy(tensors[gg].astype(np.float64) - 1.0).reshape(params[hf].shape))
    # the RMSNorm eps as the GGUF stores it (float32 1e-6 = 9.99999997e-07): the DeltaNet's gated norm sees
    # outputs small enough at the first tokens for the difference to show at 1e-10
    n_eps = 0
    for mod in model64.modules():
        for attr in ("variance_epsilon", "eps"):
            if isinstance(getattr(mod, attr, None), float) and getattr(mod, attr) == 1e-6:
                setattr(mod, attr, float(np.float32(1e-6)))
                n_eps += 1
    return ssm.float64_a_log_from_gguf(model64, tensors, a_pairs) + [
        f"{len(norm_pairs)} (1 + w) norm weights set to gguf - 1",
        f"{n_eps} RMSNorm eps set to the GGUF's float32 value {float(np.float32(1e-6))!r}"]


def gguf_norm_name(hf: str) -> str:
    if hf == "model.norm.weight":
        return "output_norm.weight"
    il, rest = hf.split(".")[2], hf.split(".", 3)[3]
    return f"blk.{il}." + {"input_layernorm.weight": "attn_norm.weight",
                           "post_attention_layernorm.weight": "post_attention_norm.weight",
                           "self_attn.q_norm.weight": "attn_q_norm.weight",
                           "self_attn.k_norm.weight": "attn_k_norm.weight"}[rest]


def families(zoo):
    def checkpoint_map(sd, config, meta):
        notes = norms_plus_one(sd) + ssm.map_ssm_tensors(sd, a_column=False, d_column=False)
        nk, dk, nv, dv = (config.linear_num_key_heads, config.linear_key_head_dim, config.linear_num_value_heads,
                          config.linear_value_head_dim)
        r = nv // nk
        n_split = 0
        for k in [k for k in sd if k.endswith("in_proj_qkvz.weight")]:
            w = sd.pop(k).reshape(nk, 2 * dk + 2 * r * dv, -1)                 # rows per key head [q k v z]
            q, kk, v, z = (w[:, :dk], w[:, dk:2 * dk], w[:, 2 * dk:2 * dk + r * dv], w[:, 2 * dk + r * dv:])
            cols = w.shape[-1]
            sd[k + ":qkv"] = np.ascontiguousarray(np.concatenate([q.reshape(-1, cols), kk.reshape(-1, cols),
                                                                  v.reshape(-1, cols)]))
            sd[k + ":z"] = np.ascontiguousarray(z.reshape(-1, cols))
            n_split += 1
        return notes + moe.split_fused_gate_up(sd, "mlp.experts.gate_up_proj") + [
            f"{n_split} in_proj_qkvz (rows per key head [q dk | k dk | v r*dv | z r*dv]) split into attn_qkv "
            f"(all q, all k, all v) and attn_gate (all z)"]

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "qwen3next")
        n_layer = m.int("block_count")
        rec = recurrent_layers(m, n_layer)
        print(f"layer_types {config.layer_types}; GGUF full_attention_interval {m.get('full_attention_interval')} "
              f"-> recurrent {rec}")
        assert list(config.layer_types) == LAYER_TYPES and n_layer == N_LAYER
        assert rec == [t == "linear_attention" for t in config.layer_types]
        assert m.int("full_attention_interval") == 4 and "attention.recurrent_layers" not in m
        assert [lay.block_type for lay in model.model.layers] == LAYER_TYPES
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank",
                                     "ssm.inner_size", "rope.dimension_count", "attention.key_length",
                                     "expert_count", "expert_used_count", "expert_feed_forward_length",
                                     "expert_shared_feed_forward_length")}
        assert got == {"ssm.conv_kernel": 4, "ssm.state_size": 8, "ssm.group_count": 2, "ssm.time_step_rank": 4,
                       "ssm.inner_size": 32, "rope.dimension_count": 8, "attention.key_length": 16,
                       "expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 8,
                       "expert_shared_feed_forward_length": 8}, got
        assert "nextn_predict_layers" not in m
        return {"ssm_init": ssm.softplus_dt_range(model), "gguf_keys_that_matter": got,
                "layer_pattern": {"transformers_layer_types": LAYER_TYPES,
                                  "gguf_full_attention_interval": m.int("full_attention_interval"),
                                  "rule": "layer i is gated DeltaNet iff (i + 1) % qwen3next.full_attention_interval "
                                          "!= 0 (or attention.recurrent_layers[i] when present), else gated attention"},
                "routing": moe.routing_record(forward, tensors, meta, "qwen3next", "neox", zoo.PROMPTS)}

    cfg = base_config(
        vocab_size=128, hidden_size=32, num_hidden_layers=N_LAYER, layer_types=list(LAYER_TYPES),
        num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
        linear_conv_kernel_dim=4, linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2,
        linear_num_value_heads=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=8,
        shared_expert_intermediate_size=8, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
        intermediate_size=16, rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu",
        experts_implementation="eager", output_router_logits=False)
    a_pairs = [(f"model.layers.{il}.linear_attn.A_log", f"blk.{il}.ssm_a")
               for il, t in enumerate(LAYER_TYPES) if t == "linear_attention"]
    return {"qwen3next": zoo.Family(
        config_cls=zoo._transformers_class("Qwen3NextConfig"),
        model_cls=zoo._transformers_class("Qwen3NextForCausalLM"),
        config_kwargs=cfg,
        perturb=lambda model: ssm.perturb(model, zoo, zero_centered_norms=ZERO_CENTRED),
        converter_class=("conversion.qwen", "Qwen3NextModel"),
        gguf_arch="qwen3next",
        llama_arch_enum="LLM_ARCH_QWEN3NEXT",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight", "blk.{bid}.attn_norm.weight",
            "blk.{bid}.post_attention_norm.weight", "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_exps.weight",
            "blk.{bid}.ffn_up_exps.weight", "blk.{bid}.ffn_down_exps.weight", "blk.{bid}.ffn_gate_inp_shexp.weight",
            "blk.{bid}.ffn_gate_shexp.weight", "blk.{bid}.ffn_up_shexp.weight", "blk.{bid}.ffn_down_shexp.weight",
            "blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_ba.weight", "blk.0.ssm_conv1d.weight",
            "blk.0.ssm_dt.bias", "blk.0.ssm_a", "blk.0.ssm_norm.weight", "blk.0.ssm_out.weight",
            "blk.3.attn_q.weight", "blk.3.attn_k.weight", "blk.3.attn_v.weight", "blk.3.attn_output.weight",
            "blk.3.attn_q_norm.weight", "blk.3.attn_k_norm.weight", "blk.7.attn_q.weight", "blk.6.attn_qkv.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=lambda model64, meta, tensors: float64_norms_and_a(
            model64, tensors, [(k, gguf_norm_name(k)) for k, _ in model64.named_parameters() if k.endswith(ZERO_CENTRED)],
            a_pairs),
        ablations=("delta", "decay", "l2norm", "gate", "output_gate", "shared_gate", "renorm"),
        conv_state_split=20,
        converter_hparams=converter_hparams_with_interval,
        converter_args=("--no-mtp",),
        record_gguf=True,
        mechanisms={
            "layer_pattern": "8 layers, recurrent iff (i + 1) % full_attention_interval (4) != 0: DeltaNet 0-2, 4-6; "
                             "gated attention 3, 7",
            "block": "x = x + mixer(rms(x, attn_norm)); x = x + moe(rms(x, post_attention_norm)); final output_norm; "
                     "untied output.weight. Norm weights in the GGUF are already 1 + w (transformers: x_hat * (1 + w))",
            "gated_deltanet": "zoo_families/ssm.py gated_deltanet, v_order 'grouped': attn_qkv rows [q (nk dk) | k | v "
                              "(nv dv)], v heads in HF order (value head j uses key head j // (nv / nk)); attn_gate = z; "
                              "ssm_ba rows per key head g: [b_(g,0..r-1) | a_(g,0..r-1)] (r = nv / nk), value head "
                              "j = g r + i; conv over q|k|v, no bias, silu; q, k L2-normalised (x rsqrt(sum x^2 + 1e-6)); "
                              "q / sqrt(dk); beta = sigmoid(b); g = ssm_a * softplus(a + ssm_dt.bias); S = exp(g) S; "
                              "S += k ((v - S^T k) beta)^T; o = S^T q; o = rms(o) * ssm_norm [dv] then * silu(z); "
                              "ssm_out",
            "gated_attention": "zoo_families/ssm.py gated_attention: attn_q [n_embd -> 2 * n_head * hd], rows per head "
                               "[q_h | gate_h]; q/k per-head RMSNorm (weights 1 + w stored), partial NEOX RoPE on the "
                               "first 8 of 16 dims, scale 1/sqrt(16); output * sigmoid(gate) before attn_output",
            "moe": "softmax over 4 experts, top-2, renormalised (norm_topk_prob; llama.cpp norm_w true), SwiGLU experts "
                   "ff 8; shared SwiGLU expert ff 8 times sigmoid(ffn_gate_inp_shexp . h) (ggml ne [32, 1])",
            "l2norm_eps": "transformers x * rsqrt(sum x^2 + 1e-6); llama.cpp ggml_l2_norm with eps = rms eps (1e-6 here)",
        },
    )}
