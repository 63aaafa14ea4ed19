"""Granite-4.0-H (GraniteMoeHybridForCausalLM; GGUF `granitehybrid`), 3 layers: Mamba-2, attention, Mamba-2
(transformers 5 layer_types ["linear_attention", "full_attention", "linear_attention"]), each layer
x = x + r * mixer(attn_norm(x)); x = x + r * ffn(ffn_norm(x)) with Granite's residual multiplier r; the FFN
is the dense SwiGLU "shared_mlp" (num_local_experts 0: Granite-4.0-H-micro's shape) written as ffn_gate /
ffn_up / ffn_down; NoPE (position_embedding_type None: the converter writes rope.scaling.finetuned false);
the embedding times embedding_multiplier, attention scale attention_multiplier, logits / logits_scaling.

The Mamba-2 mixer is zoo_families/ssm.py's (one group here, Granite-4.0-H's n_groups 1; mamba2 covers two).

Shim (transformers 5.24 vs this converter): GraniteHybridModel.get_attn_layers (run in __init__) counts a
layer as attention iff layer_types[i] == "attention", the Hub's name; transformers 5 names the layers
"full_attention" / "linear_attention" (its GraniteMoeHybridDecoderLayer: Mamba iff "linear_attention"), so
without the shim every layer is taken for Mamba-2 and head_count_kv is all zeros (silently wrong). The shim
hands the converter a copy of config.json with the names mapped ("full_attention" -> "attention",
"linear_attention" -> "mamba"); the checkpoint keeps transformers' names. The script asserts that the GGUF's
head_count_kv reproduces the config's layer types.

granitehybrid-rope: the same model with position_embedding_type "rope" (rope_theta 500, not the default, so
that a wrong base shows): RoPE on the attention layers, full head width (GraniteMoeHybridRotaryEmbedding has
no partial factor), which llama.cpp runs when rope.scaling.finetuned is true or absent (granite-hybrid.cpp),
with LLAMA_ROPE_TYPE_NORM on the q/k rows the converter permuted as for llama. Second shim: the converter
writes rope.scaling.finetuned = ("BambaForCausalLM" in architectures or no Mamba layer) and never reads
position_embedding_type, so without it this checkpoint would be written NoPE (silently wrong: transformers
rotates q and k). The shim lists "BambaForCausalLM" after the checkpoint's own class in the architectures the
converter reads (its own switch for RoPE); the class it runs is still GraniteHybridModel, chosen from the
checkpoint's config.json. (Bamba itself is not the fixture: transformers' Bamba rotates only the first half of
each head, partial_rotary_factor 0.5 hard-coded, while the converter permutes the whole head as for llama, so
llama.cpp's reading of a Bamba GGUF is not transformers': 0.95 apart at 40 tokens on a tiny random Bamba, see
tools/reference/README.md.)
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np

from . import moe, npf, ssm
from .common import base_config

LAYER_TYPES = ["linear_attention", "full_attention", "linear_attention"]
HUB_NAMES = {"full_attention": "attention", "linear_attention": "mamba"}
MULTIPLIERS = dict(embedding_multiplier=1.7, residual_multiplier=0.6, attention_multiplier=0.11, logits_scaling=2.5)
ROPE_THETA = 500.0     # granitehybrid-rope: not llama.cpp's default 10000, so that a base not read from the file fails


def converter_hparams(hf_dir):
    """config.json as GraniteHybridModel (a Mamba2Model) reads it, with the layer-type names mapped."""
    hp = json.loads((hf_dir / "config.json").read_text())
    before = list(hp["layer_types"])
    hp["layer_types"] = [HUB_NAMES[t] for t in before]
    return hp, [f"conversion.granite.GraniteHybridModel.__init__ given config.json with layer_types {before} renamed "
                f"to the Hub's {hp['layer_types']} (its get_attn_layers counts only 'attention'; with transformers 5's "
                f"names every layer would be Mamba-2 and head_count_kv all 0)"]


def converter_hparams_rope(hf_dir):
    """converter_hparams, and "BambaForCausalLM" added to the architectures the converter reads: its
    set_gguf_parameters writes rope.scaling.finetuned true only for Bamba (or no Mamba layer)."""
    hp, notes = converter_hparams(hf_dir)
    assert hp.get("position_embedding_type") == "rope", hp.get("position_embedding_type")
    before = list(hp["architectures"])
    hp["architectures"] = before + ["BambaForCausalLM"]
    return hp, notes + [f"conversion.granite.GraniteHybridModel given config.json with architectures {before} "
                        f"extended to {hp['architectures']}: its set_gguf_parameters writes rope.scaling.finetuned = "
                        f"('BambaForCausalLM' in architectures or no Mamba layer) and does not read "
                        f"position_embedding_type, so this RoPE checkpoint would be written NoPE (silently wrong); "
                        f"the class run is still GraniteHybridModel, picked from the checkpoint's own config.json"]


def float64_from_gguf(model64, meta, tensors, layer_types=None):
    """The float64 model gets the GGUF's float32 values: A = -exp(A_log) (ssm.float64_a_log_from_gguf) and
    Granite's four multipliers (0.11 -> 0.10999999940395355; transformers reads them at __init__, logits_scaling
    at each forward)."""
    notes = ssm.float64_a_log_from_gguf(model64, tensors, [(f"model.layers.{il}.mamba.A_log", f"blk.{il}.ssm_a")
                                                            for il, t in enumerate(layer_types or LAYER_TYPES)
                                                            if t == "linear_attention"],
                                          meta=meta)
    f32 = {k: float(np.float32(v)) for k, v in MULTIPLIERS.items()}
    model64.model.embedding_multiplier = f32["embedding_multiplier"]
    for layer in model64.model.layers:
        layer.residual_multiplier = f32["residual_multiplier"]
        if layer.self_attn is not None:
            layer.self_attn.scaling = f32["attention_multiplier"]
    model64.config.logits_scaling = model64.logits_scaling = f32["logits_scaling"]
    return notes + [f"multipliers -> their float32 values in the GGUF: {f32}"]


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), split=None,
            carry_conv_state=True, stats=None, **_):
    assert sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, n_embd = m.int("block_count"), m.int("embedding_length")
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_head = m.int("attention.head_count")
    hkv = m.per_layer("attention.head_count_kv", n_layer)
    hd = m.int("attention.key_length", n_embd // n_head)
    use_rope = bool(m.get("rope.scaling.finetuned", True)) != ("nope" in ablate)
    mult = "multipliers" not in ablate
    emb_mul = m.float("embedding_scale") if mult else 1.0
    res_mul = m.float("residual_scale") if mult else 1.0
    attn_scale = m.float("attention.scale") if mult else 1.0 / np.sqrt(hd)
    logit_div = m.float("logit_scale") if mult else 1.0
    n_rot = m.int("rope.dimension_count", hd)
    base = 10000.0 if "rope_base" in ablate else m.float("rope.freq_base", 10000.0)
    pairs = "neox" if "rope_pairs" in ablate else "norm"     # the file's rows are in adjacent-pair order

    def layer(il, x, p0, cache):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        if hkv[il] == 0:
            y = ssm.mamba2_mixer(W, m, h, p, ablate=ablate, state=cache)
        else:
            q, k, v = npf.qkv(W, h, p, n_head, int(hkv[il]), bias=False)
            if use_rope:     # rope.scaling.finetuned true or absent (granitehybrid-rope), or NoPE's ablation
                cos, sin = npf.rope_cos_sin(p0 + np.arange(len(h)), npf.rope_inv_freq(n_rot, base))
                q, k = npf.rope(q, cos, sin, pairs), npf.rope(k, cos, sin, pairs)
            y = npf.linear(W, ssm.attention_cached(q, k, v, p0, cache, attn_scale), p + "attn_output", bias=False)
        x = x + res_mul * y
        h2 = npf.rms_norm(x, W(p + "ffn_norm.weight"), eps)
        if p + "ffn_gate_inp.weight" in W:       # MoE (expert_count > 0): routed experts + the ungated shared one
            f = moe.moe_ffn(W, m, h2, p, gating="softmax", norm=True, ablate=ablate, stats=stats)
        else:
            f = npf.swiglu(W, h2, p)
        return x + res_mul * f

    out = ssm.run_chunks(W, ids, lambda c: W("token_embd.weight")[np.asarray(c)] * emb_mul, layer,
                         lambda x: npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps)) / logit_div, n_layer,
                         split=split, carry_conv_state=carry_conv_state)
    moe.router_margin(stats)
    return out


def families(zoo):
    def checkpoint_map(sd, config, meta):
        notes = ssm.map_ssm_tensors(sd, n_group=config.mamba_n_groups, a_column=True, d_column=True,
                                    norm_suffix="mamba.norm.weight")
        n_split = n_perm = 0
        for k in list(sd):
            if k.endswith("shared_mlp.input_linear.weight"):
                w = sd.pop(k)
                ff = config.shared_intermediate_size
                assert w.shape[0] == 2 * ff, w.shape
                sd[k + ":gate"], sd[k + ":up"] = w[:ff], w[ff:]     # forward: chunk(2)[0] is the gated half
                n_split += 1
            elif k.endswith("self_attn.q_proj.weight"):
                sd[k] = zoo.interleave_rope_rows(sd[k], config.num_attention_heads)
                n_perm += 1
            elif k.endswith("self_attn.k_proj.weight"):
                sd[k] = zoo.interleave_rope_rows(sd[k], config.num_key_value_heads)
                n_perm += 1
        why = ("llama.cpp's LLAMA_ROPE_TYPE_NORM rotates these adjacent pairs" if config.position_embedding_type == "rope"
               else "harmless under NoPE: q and k rows move alike")
        return notes + [f"{n_split} shared_mlp.input_linear [2 ff, embd] split into ffn_gate (rows :ff) and ffn_up "
                        f"(rows ff:)", f"{n_perm} q_proj / k_proj rows reordered per head to adjacent-pair order "
                        f"(LlamaModel.permute, undo_permute; {why})"]

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "granitehybrid")
        n_layer = m.int("block_count")
        hkv = m.per_layer("attention.head_count_kv", n_layer)
        want = [config.num_key_value_heads if t == "full_attention" else 0 for t in config.layer_types]
        print(f"layer_types {config.layer_types}; GGUF granitehybrid.attention.head_count_kv {hkv}")
        assert list(config.layer_types) == LAYER_TYPES and hkv == want and 0 in hkv and any(hkv), (hkv, want)
        assert [lay.mamba is not None for lay in model.model.layers] == [t == "linear_attention" for t in LAYER_TYPES]
        rope = config.position_embedding_type == "rope"
        if rope:      # granitehybrid-rope: what llama.cpp's RoPE reads (full head width, the config's base)
            rope_keys = {"rope.scaling.finetuned": m.get("rope.scaling.finetuned"), "rope.freq_base": m.float("rope.freq_base"),
                         "rope.dimension_count": m.int("rope.dimension_count"), "context_length": m.int("context_length")}
            assert rope_keys == {"rope.scaling.finetuned": True, "rope.freq_base": ROPE_THETA,
                                 "rope.dimension_count": config.hidden_size // config.num_attention_heads,
                                 "context_length": config.max_position_embeddings}, rope_keys
            assert config.rope_parameters == {"rope_type": "default", "rope_theta": ROPE_THETA}, config.rope_parameters
            assert model.model.rotary_emb is not None
        else:
            assert m.get("rope.scaling.finetuned") is False and config.position_embedding_type is None
        got = {k: m.int(k) for k in ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                                     "ssm.group_count")}
        assert got == {"ssm.conv_kernel": config.mamba_d_conv, "ssm.inner_size": config.mamba_expand * config.hidden_size,
                       "ssm.state_size": config.mamba_d_state, "ssm.time_step_rank": config.mamba_n_heads,
                       "ssm.group_count": config.mamba_n_groups}, got
        for key, name in (("embedding_scale", "embedding_multiplier"), ("residual_scale", "residual_multiplier"),
                          ("attention.scale", "attention_multiplier"), ("logit_scale", "logits_scaling")):
            assert abs(m.float(key) - MULTIPLIERS[name]) < 1e-6, (key, m.float(key))
        assert m.int("expert_count", 0) == 0 and m.int("feed_forward_length") == config.shared_intermediate_size
        return {"ssm_init": ssm.softplus_dt_range(model),
                "layer_pattern": {"transformers_layer_types": list(config.layer_types), "gguf_head_count_kv": hkv,
                                  "rule": "layer il is Mamba-2 iff granitehybrid.attention.head_count_kv[il] == 0, "
                                          "else GQA attention (llama.cpp hparams.is_recurrent(il))"},
                "gguf_ssm_keys": got, **({"gguf_rope_keys": rope_keys} if rope else {})}

    cfg = base_config(
        num_hidden_layers=len(LAYER_TYPES), layer_types=list(LAYER_TYPES), vocab_size=128,
        intermediate_size=64, shared_intermediate_size=64, num_local_experts=0, num_experts_per_tok=0,
        position_embedding_type=None, attention_bias=False, rms_norm_eps=1e-5, tie_word_embeddings=True,
        mamba_n_heads=8, mamba_n_groups=1, mamba_d_state=16, mamba_d_head=16, mamba_d_conv=4, mamba_expand=2,
        mamba_chunk_size=16, mamba_conv_bias=True, mamba_proj_bias=False, hidden_act="silu",
        **MULTIPLIERS)
    cfg.pop("head_dim")
    dense = zoo.Family(
        config_cls=zoo._transformers_class("GraniteMoeHybridConfig"),
        model_cls=zoo._transformers_class("GraniteMoeHybridForCausalLM"),
        config_kwargs=cfg,
        perturb=lambda model: ssm.perturb(model, zoo),
        converter_class=("conversion.granite", "GraniteHybridModel"),
        gguf_arch="granitehybrid",
        llama_arch_enum="LLM_ARCH_GRANITE_HYBRID",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "blk.{bid}.attn_norm.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
            "blk.0.ssm_in.weight", "blk.0.ssm_conv1d.weight", "blk.0.ssm_conv1d.bias", "blk.0.ssm_dt.bias",
            "blk.0.ssm_a", "blk.0.ssm_d", "blk.0.ssm_norm.weight", "blk.0.ssm_out.weight",
            "blk.2.ssm_in.weight", "blk.2.ssm_a",
            "blk.1.attn_q.weight", "blk.1.attn_k.weight", "blk.1.attn_v.weight", "blk.1.attn_output.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=float64_from_gguf,
        ablations=("scan", "norm_before_gate", "nope", "multipliers"),
        conv_state_split=20,
        converter_hparams=converter_hparams,
        record_gguf=True,
        mechanisms={
            "layer_pattern": "head_count_kv per layer [0, 2, 0]: 0 = Mamba-2 mixer, > 0 = attention (NoPE)",
            "block": "x = x + residual_scale * mixer(rms(x, attn_norm)); x = x + residual_scale * "
                     "ffn_down(silu(ffn_gate(h)) * ffn_up(h)), h = rms(x, ffn_norm) (HF shared_mlp, input_linear "
                     "split gate | up); embedding * embedding_scale; logits = head(rms(x, output_norm)) / logit_scale; "
                     "tied head",
            "attention": "GQA 4 / 2 heads of 16, no biases, NO RoPE (rope.scaling.finetuned = false; "
                         "position_embedding_type None); score scale = attention.scale (attention_multiplier 0.11), "
                         "causal; q/k rows permuted per head by the converter (no effect without RoPE)",
            "mamba2_mixer": "as mamba2 (zoo_families/ssm.py mamba2_mixer): 8 heads of 16, ONE group, state 16, conv 4 "
                            "with bias; y * silu(z) then RMSNorm over all 128 channels (one group) * ssm_norm [1, 128]",
            "moe": "num_local_experts 0: no router; the shared_mlp is the dense FFN (llama.cpp: expert_count 0)",
        },
    )
    rope = dataclasses.replace(
        dense,
        config_kwargs={**cfg, "position_embedding_type": "rope",
                       "rope_parameters": {"rope_type": "default", "rope_theta": ROPE_THETA}},
        ablations=("scan", "norm_before_gate", "nope", "rope_base", "rope_pairs", "multipliers"),
        converter_hparams=converter_hparams_rope,
        mechanisms={**dense.mechanisms,
                    "layer_pattern": "head_count_kv per layer [0, 2, 0]: 0 = Mamba-2 mixer, > 0 = attention (RoPE)",
                    "attention": "GQA 4 / 2 heads of 16, no biases, RoPE on all 16 dims of each head "
                                 f"(position_embedding_type \"rope\", rope_theta {ROPE_THETA:g}; GGUF "
                                 "rope.scaling.finetuned true, rope.freq_base, rope.dimension_count 16), adjacent pairs "
                                 "(llama.cpp LLAMA_ROPE_TYPE_NORM) on the q/k rows the converter permuted per head "
                                 "(transformers: rotate_half on the unpermuted rows); score scale = attention.scale "
                                 "(attention_multiplier 0.11), causal"})
    return {"granitehybrid": dense, "granitehybrid-rope": rope, "granitehybrid-moe": _moe_family(zoo, checkpoint_map)}


MOE_LAYER_TYPES = ["linear_attention", "full_attention"]
N_EXPERT, TOP_K, FF_EXP, FF_SHEXP = 4, 2, 16, 32


def _moe_family(zoo, dense_checkpoint_map):
    """granitehybrid-moe: Granite-4.0-H-tiny's shape, 2 layers (Mamba-2, NoPE attention), each with a MoE FFN:
    router softmax over 4 experts, top-2, the two weights renormalised (transformers: softmax over the top-2
    logits; llama.cpp granite-hybrid: softmax, norm_w true), SwiGLU experts (ff 16), plus the shared_mlp as an
    UNGATED shared expert (ff 32; GGUF ffn_{gate,up,down}_shexp, expert_shared_feed_forward_length 32)."""
    def checkpoint_map(sd, config, meta):
        notes = dense_checkpoint_map(sd, config, meta)
        return notes + moe.split_fused_gate_up(sd, "block_sparse_moe.experts.gate_up_proj")

    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "granitehybrid")
        hkv = m.per_layer("attention.head_count_kv", m.int("block_count"))
        assert hkv == [0, 2] and list(config.layer_types) == MOE_LAYER_TYPES, hkv
        got = {k: m.int(k) for k in ("expert_count", "expert_used_count", "feed_forward_length",
                                     "expert_shared_feed_forward_length", "ssm.group_count", "ssm.time_step_rank")}
        assert got == {"expert_count": N_EXPERT, "expert_used_count": TOP_K, "feed_forward_length": FF_EXP,
                       "expert_shared_feed_forward_length": FF_SHEXP, "ssm.group_count": 1,
                       "ssm.time_step_rank": 8}, got
        for il in range(2):
            assert f"blk.{il}.ffn_gate_inp.weight" in tensors and f"blk.{il}.ffn_up_shexp.weight" in tensors
            assert f"blk.{il}.ffn_gate_inp_shexp.weight" not in tensors and f"blk.{il}.ffn_up.weight" not in tensors
        return {"ssm_init": ssm.softplus_dt_range(model), "gguf_keys_that_matter": got,
                "layer_pattern": {"transformers_layer_types": MOE_LAYER_TYPES, "gguf_head_count_kv": hkv,
                                  "rule": "Mamba-2 iff head_count_kv[il] == 0; MoE in every layer iff expert_count > 0; "
                                          "shared expert iff expert_shared_feed_forward_length > 0"},
                "routing": moe.routing_record(forward, tensors, meta, "granitehybrid", "norm", zoo.PROMPTS)}

    cfg = base_config(
        num_hidden_layers=len(MOE_LAYER_TYPES), layer_types=list(MOE_LAYER_TYPES), vocab_size=128,
        intermediate_size=FF_EXP, shared_intermediate_size=FF_SHEXP, num_local_experts=N_EXPERT,
        num_experts_per_tok=TOP_K, position_embedding_type=None, attention_bias=False, rms_norm_eps=1e-5,
        tie_word_embeddings=True, mamba_n_heads=8, mamba_n_groups=1, mamba_d_state=16, mamba_d_head=16,
        mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=16, mamba_conv_bias=True, mamba_proj_bias=False,
        hidden_act="silu", experts_implementation="eager", output_router_logits=False, **MULTIPLIERS)
    cfg.pop("head_dim")
    return zoo.Family(
        config_cls=zoo._transformers_class("GraniteMoeHybridConfig"),
        model_cls=zoo._transformers_class("GraniteMoeHybridForCausalLM"),
        config_kwargs=cfg,
        perturb=lambda model: ssm.perturb(model, zoo),
        converter_class=("conversion.granite", "GraniteHybridModel"),
        gguf_arch="granitehybrid",
        llama_arch_enum="LLM_ARCH_GRANITE_HYBRID",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "blk.{bid}.attn_norm.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_exps.weight", "blk.{bid}.ffn_up_exps.weight",
            "blk.{bid}.ffn_down_exps.weight", "blk.{bid}.ffn_gate_shexp.weight", "blk.{bid}.ffn_up_shexp.weight",
            "blk.{bid}.ffn_down_shexp.weight", "blk.0.ssm_in.weight", "blk.0.ssm_a", "blk.0.ssm_norm.weight",
            "blk.1.attn_q.weight", "blk.1.attn_k.weight", "blk.1.attn_v.weight", "blk.1.attn_output.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=checkpoint_map,
        family_checks=family_checks,
        float64_check=lambda model64, meta, tensors: float64_from_gguf(model64, meta, tensors, MOE_LAYER_TYPES),
        ablations=("scan", "renorm", "shared_expert", "multipliers"),
        conv_state_split=20,
        converter_hparams=converter_hparams,
        record_gguf=True,
        mechanisms={
            "layer_pattern": "head_count_kv [0, 2]: Mamba-2, then NoPE attention; every layer MoE",
            "block": "as granitehybrid (residual_scale on both sublayers, embedding_scale, logit_scale divides, tied head)",
            "moe": "router ffn_gate_inp: softmax over 4, top-2, the two weights renormalised to sum 1 (transformers: "
                   "softmax of the top-2 logits); SwiGLU experts ff 16 (ffn_{gate,up,down}_exps, HF "
                   "block_sparse_moe.experts.gate_up_proj split gate | up); plus the shared_mlp as an UNGATED shared "
                   "SwiGLU expert ff 32 (ffn_{gate,up,down}_shexp) added to the routed sum",
            "mamba2_mixer": "as granitehybrid (8 heads of 16, one group, state 16, conv 4)",
        },
    )
