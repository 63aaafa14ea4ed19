"""Granite MoE (GraniteMoeForCausalLM; GGUF `granitemoe`; granite-3.0-1b-a400m / 3b-a800m shape).

Granite's four multipliers (as the zoo's `granite`: embedding times embedding_scale, each sublayer output
times residual_scale before its residual add, attention scale = attention.scale instead of 1/sqrt(hd),
logits DIVIDED by logit_scale) plus a MoE FFN in every layer: 8 SwiGLU experts (ff 32 =
feed_forward_length), top-2. transformers' GraniteMoeTopKRouter takes the top-2 of the router LOGITS and
softmaxes those two, which equals softmax over all 8 + top-2 + renormalisation; llama.cpp's granitemoe uses
build_moe_ffn(..., norm_w = true, SOFTMAX) (no GGUF key). q/k rows permuted by the converter (GraniteModel is
a LlamaModel): llama.cpp NORM RoPE. Tied head (granite-3.0 MoE's tie_word_embeddings = true). The converter
drops head_dim (GraniteModel pops it): head_dim = embd / heads = 16.
"""
from __future__ import annotations

import functools

from . import moe, npf
from .common import base_config

N_EXPERT, TOP_K, FF = 8, 2, 32
MULTIPLIERS = dict(embedding_multiplier=1.7, residual_multiplier=0.6, attention_multiplier=0.11, logits_scaling=2.5)

forward = functools.partial(moe.decoder_forward, gating="softmax", norm=True, multipliers=True)


def _checkpoint_map(sd, config, meta):
    return moe.split_fused_gate_up(sd, "block_sparse_moe.experts.gate_up_proj")


def _float64_multipliers(model64, meta, tensors):
    """The GGUF stores the four multipliers as float32 (0.11 -> 0.10999999940395355): give the float64 model
    those values (transformers reads them from the config at __init__, logits_scaling at each forward)."""
    import numpy as np
    f32 = {k: float(np.float32(v)) for k, v in MULTIPLIERS.items()}
    model64.model.embedding_multiplier = f32["embedding_multiplier"]
    for layer in model64.model.layers:
        layer.residual_multiplier = f32["residual_multiplier"]
        layer.self_attn.scaling = f32["attention_multiplier"]
    model64.config.logits_scaling = model64.logits_scaling = f32["logits_scaling"]
    return [f"multipliers -> their float32 values in the GGUF: {f32}"]


def _config():
    cfg = base_config(experts_implementation="eager", intermediate_size=FF, num_local_experts=N_EXPERT,
                      num_experts_per_tok=TOP_K, hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=True,
                      attention_bias=False, output_router_logits=False, **MULTIPLIERS)
    del cfg["head_dim"]                      # (GraniteMoeConfig has none; embd / heads = 16)
    return cfg


def families(zoo):
    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "granitemoe")
        assert (m.int("expert_count"), m.int("expert_used_count")) == (N_EXPERT, TOP_K)
        for key in ("expert_gating_func", "expert_weights_norm", "expert_weights_scale", "expert_feed_forward_length"):
            assert key not in m, key
        for key, cfg_key in (("embedding_scale", "embedding_multiplier"), ("residual_scale", "residual_multiplier"),
                             ("attention.scale", "attention_multiplier"), ("logit_scale", "logits_scaling")):
            assert abs(m.float(key) - MULTIPLIERS[cfg_key]) < 1e-6, key
        assert "output.weight" not in tensors
        return {"routing": moe.routing_record(forward, tensors, meta, "granitemoe", "norm", zoo.PROMPTS),
                "init_extra": "expert weights ~ N(0, 0.2); router block_sparse_moe.router.weight ~ N(0, 0.2)"}

    return {"granitemoe": zoo.Family(
        config_cls=zoo._transformers_class("GraniteMoeConfig"),
        model_cls=zoo._transformers_class("GraniteMoeForCausalLM"),
        config_kwargs=_config(),
        perturb=lambda model: moe.perturb(model, zoo),
        converter_class=("conversion.granite", "GraniteMoeModel"),
        gguf_arch="granitemoe",
        llama_arch_enum="LLM_ARCH_GRANITE_MOE",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_exps.weight", "blk.{bid}.ffn_up_exps.weight",
            "blk.{bid}.ffn_down_exps.weight",
        ],
        numpy_forward=forward,
        gguf_qk_permuted=True,
        checkpoint_map=_checkpoint_map,
        family_checks=family_checks,
        float64_check=_float64_multipliers,
        ablations=("renorm", "multipliers"),
        record_gguf=True,
        mechanisms={
            "router": "top-2 of the router logits ffn_gate_inp . h, weights = softmax over those two (transformers) = "
                      "softmax over all 8, top-2, renormalised (llama.cpp granitemoe: SOFTMAX + norm_w = true, hard-coded, "
                      "no GGUF key); no bias, no scale, no groups",
            "experts": "SwiGLU per expert, ff = granitemoe.feed_forward_length = 32; every layer MoE; no shared expert "
                       "(GraniteMoeShared would add ffn_*_shexp + expert_shared_feed_forward_length)",
            "multipliers": "granitemoe.embedding_scale 1.7 (x0 = embedding * 1.7), residual_scale 0.6 (x += 0.6 * attn; "
                           "x += 0.6 * moe), attention.scale 0.11 (scores = q.k * 0.11), logit_scale 2.5 (logits / 2.5)",
            "attention": "GQA 4/2 heads of 16, no biases; q/k permuted by the converter, llama.cpp NORM RoPE theta 10000",
            "norm": "RMSNorm eps 1e-6, pre-norm, final output_norm; TIED head (no output.weight)",
            "hf_checkpoint": "saved as block_sparse_moe.input_linear.weight [E, 2ff, embd] (gate rows first), "
                             "block_sparse_moe.output_linear.weight [E, embd, ff], block_sparse_moe.router.layer.weight",
        },
    )}
