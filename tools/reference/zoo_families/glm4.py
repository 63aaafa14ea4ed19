"""GLM-4-0414 (Glm4ForCausalLM; GGUF `glm4`).

Beyond a plain Llama: sandwich norms (4 RMSNorms per block: pre-attention, post-attention on the
attention output, pre-MLP, post-MLP on the MLP output), a fused gate|up projection (ffn_up with
2 * n_ff rows, gate first), q/k/v biases (no o_proj bias), and PARTIAL rotary on INTERLEAVED pairs:
only the first rope.dimension_count = head_dim * partial_rotary_factor (0.5) dims of each head are
rotated, as adjacent pairs (2i, 2i + 1) with theta_i = p * base^(-2i/n_rot) (llama.cpp NORM RoPE
with n_rot; transformers Glm4 rotate_half on x[0::2] / x[1::2]); the other dims pass through.
The config's pad_token_id (default 151329) must be < vocab_size, so it is set to 0.
"""
from __future__ import annotations

import numpy as np

from . import npf
from .common import base_config


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "norm" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer = m.int("block_count")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = m.int("attention.key_length")
    assert m.int("attention.value_length") == hd
    n_ff = m.int("feed_forward_length")
    eps = m.float("attention.layer_norm_rms_epsilon")
    n_rot = hd if "partial_rotary" in ablate else m.int("rope.dimension_count")
    assert n_rot < hd or "partial_rotary" in ablate
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, m.float("rope.freq_base")))
    style = "neox" if "interleaved_rope" in ablate else "norm"
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        q, k, v = npf.qkv(W, h, p, n_head, n_kv, bias=True)
        q, k = npf.rope(q, cos, sin, style), npf.rope(k, cos, sin, style)
        a = npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        x = x + npf.rms_norm(a, W(p + "post_attention_norm.weight"), eps)
        h = npf.rms_norm(x, W(p + "ffn_norm.weight"), eps)
        gu = npf.linear(W, h, p + "ffn_up", bias=False)
        assert gu.shape[1] == 2 * n_ff, (gu.shape, n_ff)
        f = npf.linear(W, npf.silu(gu[:, :n_ff]) * gu[:, n_ff:], p + "ffn_down", bias=False)
        x = x + npf.rms_norm(f, W(p + "post_ffw_norm.weight"), eps)
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    return logits


def families(zoo):
    return {"glm4": zoo.Family(
        config_cls=zoo._transformers_class("Glm4Config"),
        model_cls=zoo._transformers_class("Glm4ForCausalLM"),
        config_kwargs=base_config(
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
            hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True,
            pad_token_id=0),
        perturb=zoo._perturb_biases_and_norms,
        converter_class=("conversion.glm", "Glm4Model"),
        gguf_arch="glm4",
        llama_arch_enum="LLM_ARCH_GLM4",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.post_attention_norm.weight",
            "blk.{bid}.ffn_norm.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
            "blk.{bid}.post_ffw_norm.weight",
        ],
        numpy_forward=forward,
        float64_check=True,
        ablations=("partial_rotary", "interleaved_rope"),
        record_gguf=True,
        mechanisms={
            "norm": "RMSNorm (weight only), eps attention.layer_norm_rms_epsilon; SANDWICH: "
                    "x += post_attention_norm(attn(attn_norm(x))); x += post_ffw_norm(ffn(ffn_norm(x))); "
                    "final output_norm",
            "tensor_names": "HF input_layernorm -> attn_norm, post_self_attn_layernorm -> post_attention_norm, "
                            "post_attention_layernorm -> ffn_norm (the pre-MLP norm), post_mlp_layernorm -> post_ffw_norm",
            "attention": "GQA; q/k/v biases, no attn_output bias; scale 1/sqrt(head_dim)",
            "rope": "partial AND interleaved: the first rope.dimension_count (= head_dim / 2 = 8) dims of each "
                    "head rotated as adjacent pairs (2i, 2i+1), theta_i = p * base^(-2i/n_rot) (n_rot = 8, "
                    "not head_dim); dims 8..15 pass through; llama.cpp NORM RoPE with n_rot; no q/k permutation",
            "ffn": "fused gate|up: ffn_up.weight has 2*n_ff rows (ggml ne [n_embd, 2*n_ff]); first n_ff rows = gate, "
                   "rest = up; ffn_down(silu(gate) * up) (llama.cpp LLM_FFN_SWIGLU on the fused tensor); no ffn_gate",
            "head": "untied output.weight",
            "config": "pad_token_id 0 (GLM-4's default 151329 must be < vocab_size), eos 2, bos 1",
        },
    )}
