"""Falcon (FalconForCausalLM; GGUF `falcon`), two shapes:

`falcon` (Falcon-7B): new_decoder_architecture False, multi_query True (ONE KV head), parallel_attn:
    h = LN(x) (input_layernorm: LayerNorm with bias); x = x + attn(h) + mlp(h).
`falcon-40b` (Falcon-40B / 180B): new_decoder_architecture True, num_kv_heads 2 (GQA), two LayerNorms
    of the block input: x = x + attn(ln_attn(x)) + mlp(ln_mlp(x)).
Both: one fused query_key_value projection without bias (HF rows per KV group [q_1..q_r, k, v], which
the converter reorders to Q | K | V: attn_qkv ggml ne [n_embd, n_embd + 2 n_kv hd]), NEOX RoPE on the
whole head with base 10000 (the converter writes no rope.freq_base: llama.cpp's default), scale
1/sqrt(head_dim), a non-gated MLP down(gelu(up(h))) with the EXACT erf GELU (transformers
activation "gelu"), no linear biases (bias False), final LayerNorm with bias, tied head (no
output.weight). GGUF naming trap for falcon-40b: attn_norm is ln_MLP (the MLP's input) and attn_norm_2
is ln_ATTN (the attention's input); with a single norm (falcon) attn_norm feeds both.
The converter hard-codes falcon.context_length = 2048 and feed_forward_length = 4 * n_embd, and writes
general.tensor_data_layout "jploski" (the Q|K|V reordering).
Config note: transformers 5's FalconConfig sets num_kv_heads = num_attention_heads when absent, which
the converter would read as 4 KV heads for a multi_query model (whose attention uses 1); the
falcon config therefore says num_kv_heads=1 (what the model computes; old Falcon-7B configs carry no
such key, where the converter's default is 1).
llama.cpp (src/models/falcon.cpp) runs the MLP with LLM_FFN_GELU, the tanh approximation as a float16
table, not the erf GELU transformers uses: its agreement is ~1e-3, not ~1e-6.
"""
from __future__ import annotations

import types

import numpy as np

from . import npf
from .common import base_config


def forward(tensors, meta, arch, ids, rope_style, *, sliding_window=None, ablate=frozenset(), **_):
    assert rope_style == "neox" and sliding_window is None
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, n_embd = m.int("block_count"), m.int("embedding_length")
    n_head, n_kv = m.int("attention.head_count"), m.int("attention.head_count_kv")
    hd = n_embd // n_head
    eps = m.float("attention.layer_norm_epsilon")
    n_rot = m.int("rope.dimension_count", hd)
    base = m.float("rope.freq_base", 10000.0)            # absent: llama.cpp's default
    n = len(ids)
    cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, base))
    mask = npf.causal_mask(n)
    gelu = npf.gelu_tanh if "gelu_erf" in ablate else npf.gelu_erf

    def ln(x, name):
        return npf.layer_norm(x, W(name + ".weight"), W(name + ".bias"), eps)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h_mlp = ln(x, p + "attn_norm")
        if p + "attn_norm_2.weight" in W and "two_norms" in ablate:
            W.mark_used(p + "attn_norm_2.weight"), W.mark_used(p + "attn_norm_2.bias")
        h_attn = ln(x, p + "attn_norm_2") if p + "attn_norm_2.weight" in W and "two_norms" not in ablate else h_mlp
        qkv = npf.linear(W, h_attn, p + "attn_qkv", bias=False)
        nq, nk = n_head * hd, n_kv * hd
        assert qkv.shape[1] == nq + 2 * nk, qkv.shape
        q, k, v = (npf.heads(qkv[:, :nq], n_head), npf.heads(qkv[:, nq:nq + nk], n_kv),
                   npf.heads(qkv[:, nq + nk:], n_kv))
        q, k = npf.rope(q, cos, sin, "neox"), npf.rope(k, cos, sin, "neox")
        a = npf.linear(W, npf.attention(q, k, v, mask, 1.0 / np.sqrt(hd)), p + "attn_output", bias=False)
        f = npf.linear(W, gelu(npf.linear(W, h_mlp, p + "ffn_up", bias=False)), p + "ffn_down", bias=False)
        x = x + a + f
    x = ln(x, "output_norm")
    logits = npf.head(W, x)
    W.check_all_used()
    return logits


def _qkv_to_gguf(sd, config, meta):
    """HF query_key_value rows per KV group g: [q_(g,0) .. q_(g,r-1), k_g, v_g] (head_dim rows each,
    r = n_head / n_kv); the converter writes all q, then all k, then all v. Written independently."""
    n_head = config.num_attention_heads
    n_kv = config.num_kv_heads if config.new_decoder_architecture else 1
    hd = config.hidden_size // n_head
    r = n_head // n_kv
    blocks = ([g * (r + 2) + j for g in range(n_kv) for j in range(r)] + [g * (r + 2) + r for g in range(n_kv)]
              + [g * (r + 2) + r + 1 for g in range(n_kv)])
    rows = [b * hd + i for b in blocks for i in range(hd)]
    done = 0
    for k in sd:
        if k.endswith("query_key_value.weight"):
            assert sd[k].shape[0] == len(rows), (sd[k].shape, len(rows))
            sd[k] = np.ascontiguousarray(sd[k][rows])
            done += 1
    return [f"{done} query_key_value weights: rows per KV group [q.., k, v] ({n_kv} group(s) of {r} query heads) "
            f"reordered to Q | K | V (FalconModel.modify_tensors)"]


def _perturb(zoo):
    def perturb(model):
        """the zoo's rule parameter by parameter (in named_parameters() order), with Falcon-40B's
        LayerNorm weights ln_attn / ln_mlp (names without "norm") given the norm rule 1 + 0.3 randn"""
        import torch
        touched = []
        for name, p in model.named_parameters():
            if name.endswith((".ln_attn.weight", ".ln_mlp.weight")):
                with torch.no_grad():
                    p.copy_(1.0 + zoo.NORM_SCALE * torch.randn_like(p))
                touched.append(f"{name} (norm)")
            else:
                touched += zoo._perturb_biases_and_norms(types.SimpleNamespace(named_parameters=lambda: [(name, p)]))
        return touched
    return perturb


def _family(zoo, *, two_norms: bool):
    cfg = base_config(
        num_attention_heads=4, head_dim=None, layer_norm_epsilon=1e-5, bias=False, alibi=False,
        parallel_attn=True, activation="gelu", ffn_hidden_size=256, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        hidden_dropout=0.0)
    for key in ("intermediate_size", "head_dim", "num_key_value_heads"):
        cfg.pop(key)
    if two_norms:
        cfg.update(new_decoder_architecture=True, multi_query=False, num_kv_heads=2, num_ln_in_parallel_attn=2)
    else:
        cfg.update(new_decoder_architecture=False, multi_query=True, num_kv_heads=1)
    norms = ["blk.{bid}.attn_norm.weight", "blk.{bid}.attn_norm.bias"]
    if two_norms:
        norms += ["blk.{bid}.attn_norm_2.weight", "blk.{bid}.attn_norm_2.bias"]
    return zoo.Family(
        config_cls=zoo._transformers_class("FalconConfig"),
        model_cls=zoo._transformers_class("FalconForCausalLM"),
        config_kwargs=cfg,
        perturb=_perturb(zoo),                       # input_layernorm / ln_attn / ln_mlp / ln_f: norm + bias rules
        converter_class=("conversion.falcon", "FalconModel"),
        gguf_arch="falcon",
        llama_arch_enum="LLM_ARCH_FALCON",
        rope_style="neox",
        required_tensors=["token_embd.weight", "output_norm.weight", "output_norm.bias",
                          "blk.{bid}.attn_qkv.weight", "blk.{bid}.attn_output.weight",
                          "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight"] + norms,
        numpy_forward=forward,
        checkpoint_map=_qkv_to_gguf,
        float64_check=True,
        # the tanh GELU instead of erf moves the logits by ~5e-3 (~1.5e-4 of max |logit|): required
        # > 3e-3, above the zoo test's 1e-4 x max |logit| (~3.6e-3 here), so a tanh GELU fails it
        ablations=(("gelu_erf", 3e-3),) + ((("two_norms", 1e-2),) if two_norms else ()),
        record_gguf=True,
        mechanisms={
            "norm": "LayerNorm with bias, eps attention.layer_norm_epsilon; final output_norm (weight + bias)",
            "block": ("parallel, TWO norms of the block input: x = x + attn(attn_norm_2(x)) + ffn(attn_norm(x)); "
                      "attn_norm_2 = HF ln_attn (attention input), attn_norm = HF ln_mlp (MLP input)")
                     if two_norms else
                     "parallel, ONE norm: h = attn_norm(x) (HF input_layernorm); x = x + attn(h) + ffn(h)",
            "attention": ("GQA, 4 query heads / 2 KV heads (new_decoder_architecture, num_kv_heads 2)" if two_norms else
                          "MQA: 4 query heads / 1 KV head (multi_query)")
                         + "; fused attn_qkv rows Q (n_head*hd) | K (n_kv*hd) | V (n_kv*hd) (converter-reordered from "
                           "HF's per-group layout; general.tensor_data_layout 'jploski'); no biases; scale 1/sqrt(hd), "
                           "hd = n_embd / n_head (no key_length key)",
            "rope": "NEOX on all head dims; no rope.freq_base key (10000, llama.cpp's default)",
            "ffn": "NOT gated: ffn_down(gelu_erf(ffn_up(h))), EXACT GELU 0.5x(1+erf(x/sqrt2)) (HF activation 'gelu'); "
                   "no biases; n_ff = feed_forward_length = 4 n_embd",
            "head": "tied: logits = output_norm(x) @ token_embd^T (no output.weight)",
            "llama_cpp_difference": "llama.cpp uses the tanh GELU (LLM_FFN_GELU, float16 table)",
        },
    )


def families(zoo):
    return {"falcon": _family(zoo, two_norms=False), "falcon-40b": _family(zoo, two_norms=True)}
