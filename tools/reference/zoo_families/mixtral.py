"""Mixtral (MixtralForCausalLM; the converter writes GGUF architecture `llama` WITH experts).

Beyond a plain Llama: every layer's FFN is a mixture of 8 SwiGLU experts, 2 used per token. Router
(transformers MixtralTopKRouter; llama.cpp src/models/llama.cpp: build_moe_ffn(..., norm_w = true,
LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX)): probs = softmax(ffn_gate_inp . h) over all experts, top-2,
the two weights divided by their sum. The GGUF has NO key for the gating function or the
renormalisation (llama.cpp's `llama` hard-codes both); a loader tells Mixtral from Llama by
llama.expert_count / the ffn_*_exps tensors. q/k rows are permuted by the converter for llama.cpp's
NORM (adjacent-pair) RoPE, as for Llama.
"""
from __future__ import annotations

import functools

from . import moe, npf
from .common import base_config

N_EXPERT, TOP_K, FF = 8, 2, 32

forward = functools.partial(moe.decoder_forward, gating="softmax", norm=True)


def _checkpoint_map(sd, config, meta):
    return moe.split_fused_gate_up(sd, "mlp.experts.gate_up_proj")


def families(zoo):
    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "llama")
        assert (m.int("expert_count"), m.int("expert_used_count")) == (N_EXPERT, TOP_K)
        for key in ("expert_gating_func", "expert_weights_norm", "expert_weights_scale", "expert_shared_count",
                    "leading_dense_block_count", "expert_feed_forward_length"):
            assert key not in m, key
        assert m.int("feed_forward_length") == FF == tensors["blk.0.ffn_gate_exps.weight"].shape[1]
        return {"routing": moe.routing_record(forward, tensors, meta, "llama", "norm", zoo.PROMPTS),
                "init_extra": "expert weights (3-D experts.gate_up_proj / down_proj) ~ N(0, 0.2), router weight "
                              "mlp.gate.weight ~ N(0, 0.2)"}

    return {"mixtral": zoo.Family(
        config_cls=zoo._transformers_class("MixtralConfig"),
        model_cls=zoo._transformers_class("MixtralForCausalLM"),
        config_kwargs=base_config(experts_implementation="eager", intermediate_size=FF, num_local_experts=N_EXPERT, num_experts_per_tok=TOP_K,
                                  hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=False,
                                  sliding_window=None, router_jitter_noise=0.0, output_router_logits=False),
        perturb=lambda model: moe.perturb(model, zoo),
        converter_class=("conversion.llama", "LlamaModel"),
        gguf_arch="llama",
        llama_arch_enum="LLM_ARCH_LLAMA",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_exps.weight", "blk.{bid}.ffn_up_exps.weight",
            "blk.{bid}.ffn_down_exps.weight",
        ],
        numpy_forward=forward,
        gguf_qk_permuted=True,
        checkpoint_map=_checkpoint_map,
        family_checks=family_checks,
        float64_check=True,
        ablations=("renorm",),
        record_gguf=True,
        mechanisms={
            "gguf": "architecture `llama` with llama.expert_count = 8, llama.expert_used_count = 2 and per block "
                    "ffn_gate_inp [E, embd] + ffn_{gate,up,down}_exps (numpy [E, ff, embd] / [E, embd, ff]) instead of "
                    "ffn_{gate,up,down}; no gating/norm/scale keys: llama.cpp's llama hard-codes softmax + renormalise",
            "router": "probs = softmax(ffn_gate_inp . h) over all 8 experts; top-2 by probs; weights = the two probs "
                      "divided by their sum (clamped >= 6.1e-5 in llama.cpp); no bias, no scale, no groups",
            "experts": "SwiGLU per expert: down_e(silu(gate_e h) * up_e h), weighted sum over the 2 chosen",
            "shared_experts": "none; every layer MoE (no leading dense layers)",
            "attention": "Llama GQA (4 q heads / 2 kv heads of 16), no biases, scale 1/sqrt(16); q/k rows permuted "
                         "by the converter: llama.cpp NORM RoPE (adjacent pairs), theta 10000, all 16 dims",
            "norm": "RMSNorm eps 1e-5, pre-norm attn_norm / ffn_norm, final output_norm; untied output.weight",
            "hf_checkpoint": "transformers 5 saves the legacy per-expert layout: model.layers.N.block_sparse_moe."
                             "experts.E.{w1 (gate), w2 (down), w3 (up)}.weight and block_sparse_moe.gate.weight "
                             "(the in-memory model has mlp.experts.gate_up_proj [E, 2ff, embd] / down_proj)",
        },
    )}
