"""DeepSeek-V2 / V3 (DeepseekV2ForCausalLM, DeepseekV3ForCausalLM; GGUF `deepseek2`): multi-head latent
attention (MLA) + MoE with shared experts and leading dense layers. Two fixtures:

  deepseek2-lite  V2-Lite style (DeepseekV2ForCausalLM): NO q_lora_rank (q = attn_q . h), softmax router
                  (scoring_func softmax -> expert_gating_func 1), top-2 without renormalisation,
                  routed_scaling_factor 1, 2 shared experts, 27 tiny layers of which the first 25 are dense
                  (first_k_dense_replace 25; V2-Lite has 1) (layer weights N(0, 0.1)) (llama.cpp's
                  deepseek2 treats a GGUF as "lite" - q_lora_rank key optional - only when n_layer is 26 or 27, or 48
                  with vocab 128256; with any other depth it requires deepseek2.attention.q_lora_rank)
  deepseek2-v3    V3 style (DeepseekV3ForCausalLM): q_lora_rank 48 (q = attn_q_b . RMSNorm(attn_q_a . h)), sigmoid
                  router with e_score_correction_bias (exp_probs_b), n_group 4 / topk_group 2 (group limit),
                  norm_topk_prob, routed_scaling_factor 2.5, 1 shared expert, first_k_dense_replace 1, 2 layers;
                  the config also gets scoring_func = "sigmoid" and topk_method = "noaux_tc" (transformers' V3 router
                  is always sigmoid; the converter writes expert_gating_func only from scoring_func, and without it
                  llama.cpp routes with softmax)

MLA as the GGUF describes it (the converter splits kv_b_proj into attn_k_b and attn_v_b, llama.cpp's absorbed
form; numpy shapes, ggml ne reversed): per head h, q_h = [q_nope (qk_nope) ; q_pe (qk_rope)]; kv_a = attn_kv_a_mqa .
x = [c (kv_lora_rank) ; k_pe (qk_rope)], c = RMSNorm(c, attn_kv_a_norm); RoPE (adjacent pairs, llama.cpp NORM,
YaRN) on q_pe and on the ONE shared k_pe; score_h(t, s) = (k_b[h] . q_nope_h(t)) . c(s) + q_pe_h(t) . k_pe(s)
(attn_k_b [H, kv_lora_rank, qk_nope]) times kq_scale; o_h = v_b[h] . sum_s p_h(t, s) c(s) (attn_v_b
[H, v_head_dim, kv_lora_rank]); out = attn_output . [o_0 .. o_H-1]. Equal to transformers' decompressed form
(k_nope_h = W_kb_h c, v_h = W_vb_h c from kv_b_proj rows [qk_nope ; v_head_dim] per head).

YaRN (both): rope_type yarn, factor 4, original_max_position_embeddings 64, beta 32 / 1 (truncated correction
range, transformers' default), mscale = mscale_all_dim (1.25 V3-style, 0.625 lite-style: values whose
0.1 * m is exact in float32, so the GGUF's yarn_log_multiplier / 0.1 is m exactly). transformers: cos/sin times
get_mscale(f, mscale) / get_mscale(f, mscale_all_dim) = 1, attention scale (qk_nope + qk_rope)^-0.5 *
get_mscale(f, mscale_all_dim)^2, get_mscale(s, m) = 1 + 0.1 m ln s. The GGUF has no mscale key: llama.cpp
assumes mscale = mscale_all_dim (= yarn_log_multiplier / 0.1) for deepseek2 and gets the same.
"""
from __future__ import annotations

import math

import numpy as np

from . import moe, npf
from .common import base_config

N_EXPERT, TOP_K = 8, 2
YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 64,
        "beta_fast": 32.0, "beta_slow": 1.0}
MSCALE_V3, MSCALE_LITE = 1.25, 0.625
LITE_LAYER_STD = 0.1     # the 27-layer lite: layer weights N(0, 0.1) (not 0.2) so that float32 rounding does not
#                         grow past the script's 1e-5 relative bound over the depth
LITE_DENSE = 25         # lite: layers 0..24 dense, 25 and 26 MoE (V2-Lite has 1 dense layer; 25 keeps the routing
#                         decisions few enough - 2 layers x 47 tokens - that none is a near tie, and tests a large
#                         leading_dense_block_count)
LITE_ROUTER_STD = 0.2    # router weights N(0, 0.2) (INIT_STD)
SEED_LITE = 20240608     # deepseek2-lite is generated with --seed 20240608 (the default seed gives a router gap 6.1e-5 < 1e-4)
GATING = {1: "softmax", 2: "sigmoid"}           # gguf ExpertGatingFuncType


def forward(tensors, meta, arch, ids, rope_style, *, ablate=frozenset(), stats=None, **_):
    assert rope_style == "norm"
    W, m = npf.Weights(tensors), npf.Meta(meta, arch)
    n_layer, n_embd = m.int("block_count"), m.int("embedding_length")
    n_head = m.int("attention.head_count")
    assert m.int("attention.head_count_kv") == 1                         # (the converter's MQA view)
    eps = m.float("attention.layer_norm_rms_epsilon")
    r = m.int("attention.kv_lora_rank")
    n_rot = m.int("rope.dimension_count")                                # qk_rope_head_dim
    d_k = m.int("attention.key_length_mla")                              # qk_nope + qk_rope
    d_v = m.int("attention.value_length_mla")                            # v_head_dim
    d_nope = d_k - n_rot
    assert m.int("attention.key_length") == r + n_rot and m.int("attention.value_length") == r
    n_dense = m.int("leading_dense_block_count", 0)
    gating = GATING[m.int("expert_gating_func", 1)]
    if "softmax_router" in ablate:
        gating = "softmax"
    norm = bool(m.get("expert_weights_norm", False))
    n = len(ids)
    base = m.float("rope.freq_base")
    kq_scale = 1.0 / math.sqrt(d_k)
    if m.get("rope.scaling.type", "none") == "yarn" and "yarn" not in ablate:
        factor = m.float("rope.scaling.factor")
        inv = moe.yarn_inv_freq(n_rot, base, factor, m.int("rope.scaling.original_context_length"),
                                m.float("rope.scaling.yarn_beta_fast", 32.0), m.float("rope.scaling.yarn_beta_slow", 1.0),
                                truncate=True)
        log_mul = m.float("rope.scaling.yarn_log_multiplier") / 0.1       # (the converter wrote 0.1 * mscale_all_dim)
        # cos/sin: get_mscale(f, mscale) / get_mscale(f, mscale_all_dim) with mscale = mscale_all_dim -> 1
        cos, sin = npf.rope_cos_sin(np.arange(n), inv, 1.0)
        if "yarn_mscale" not in ablate:
            kq_scale *= moe.yarn_get_mscale(factor, log_mul) ** 2
    else:
        cos, sin = npf.rope_cos_sin(np.arange(n), npf.rope_inv_freq(n_rot, base))
    mask = npf.causal_mask(n)
    x = W("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = npf.rms_norm(x, W(p + "attn_norm.weight"), eps)
        if p + "attn_q_a.weight" in W:                                   # q_lora_rank (V3): low-rank q
            assert p + "attn_q.weight" not in W
            q = npf.linear(W, npf.rms_norm(npf.linear(W, h, p + "attn_q_a", bias=False), W(p + "attn_q_a_norm.weight"), eps),
                           p + "attn_q_b", bias=False)
        else:                                                            # lite: full q
            q = npf.linear(W, h, p + "attn_q", bias=False)
        q = npf.heads(q, n_head)                                         # [n, H, d_nope + n_rot]
        q_nope, q_pe = q[..., :d_nope], q[..., d_nope:]
        kv = npf.linear(W, h, p + "attn_kv_a_mqa", bias=False)           # [n, r + n_rot]
        c = npf.rms_norm(kv[:, :r], W(p + "attn_kv_a_norm.weight"), eps)
        k_pe = kv[:, None, r:]                                           # [n, 1, n_rot]
        q_pe, k_pe = npf.rope(q_pe, cos, sin, "norm"), npf.rope(k_pe, cos, sin, "norm")
        k_b, v_b = W(p + "attn_k_b.weight"), W(p + "attn_v_b.weight")    # [H, r, d_nope], [H, d_v, r]
        assert k_b.shape == (n_head, r, d_nope) and v_b.shape == (n_head, d_v, r), (k_b.shape, v_b.shape)
        o = np.empty((n, n_head, d_v))
        for hh in range(n_head):
            q_abs = q_nope[:, hh, :] @ k_b[hh].T                         # [n, r]
            s = (q_abs @ c.T + q_pe[:, hh, :] @ k_pe[:, 0, :].T) * kq_scale + mask
            pr = moe.softmax(s)
            o[:, hh, :] = (pr @ c) @ v_b[hh].T
        x = x + npf.linear(W, o.reshape(n, -1), p + "attn_output", bias=False)
        h = npf.rms_norm(x, W(p + "ffn_norm.weight"), eps)
        if il < n_dense:
            assert p + "ffn_gate_inp.weight" not in W
            y = npf.swiglu(W, h, p)
        else:
            y = moe.moe_ffn(W, m, h, p, gating=gating, norm=norm, ablate=ablate, stats=stats)
        x = x + y
    logits = npf.head(W, npf.rms_norm(x, W("output_norm.weight"), eps))
    W.check_all_used()
    moe.router_margin(stats)
    return logits


def _checkpoint_map(sd, config, meta):
    notes = moe.split_fused_gate_up(sd, "mlp.experts.gate_up_proj")
    n_head, d_nope, d_v = config.num_attention_heads, config.qk_nope_head_dim, config.v_head_dim
    n = 0
    for k in [k for k in sd if k.endswith("self_attn.kv_b_proj.weight")]:
        w = sd.pop(k)                                                    # [H * (d_nope + d_v), r]
        kv = w.reshape(n_head, d_nope + d_v, w.shape[-1])
        sd[k + ":k_b"] = np.ascontiguousarray(kv[:, :d_nope, :].transpose(0, 2, 1))   # [H, r, d_nope]
        sd[k + ":v_b"] = np.ascontiguousarray(kv[:, d_nope:, :])                       # [H, d_v, r]
        n += 1
    return notes + [f"{n} x kv_b_proj [H*(qk_nope+v), r] -> attn_k_b = rows [:qk_nope] per head, transposed "
                    f"[H, r, qk_nope]; attn_v_b = rows [qk_nope:] per head [H, v, r]"]


def _yarn_checks(model, config, mscale):
    rp = config.rope_parameters
    assert rp["rope_type"] == "yarn" and rp["mscale"] == rp["mscale_all_dim"] == mscale, rp
    attn0 = model.model.layers[0].self_attn
    expect = (config.qk_nope_head_dim + config.qk_rope_head_dim) ** -0.5 * moe.yarn_get_mscale(rp["factor"], mscale) ** 2
    assert abs(attn0.scaling - expect) < 1e-12, (attn0.scaling, expect)
    assert abs(model.model.rotary_emb.attention_scaling - 1.0) < 1e-12, model.model.rotary_emb.attention_scaling
    return {"yarn": {"factor": rp["factor"], "original_max_position_embeddings": rp["original_max_position_embeddings"],
                     "beta_fast": rp["beta_fast"], "beta_slow": rp["beta_slow"], "mscale": mscale,
                     "mscale_all_dim": mscale, "transformers_attention_scaling_cos_sin": 1.0,
                     "transformers_attention_scale": attn0.scaling,
                     "rule": "kq_scale = (qk_nope + qk_rope)^-0.5 * (1 + 0.1 * (yarn_log_multiplier / 0.1) * ln factor)^2; "
                             "cos/sin unscaled (mscale == mscale_all_dim)"}}


def _family(zoo, name, *, cfg_cls, model_cls, config_kwargs, mscale, ablations, mechanisms, extra_checks,
            layer_std=None, router_std=None):
    def family_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "deepseek2")
        rec = _yarn_checks(model, config, mscale)
        assert abs(m.float("rope.scaling.yarn_log_multiplier") / 0.1 - mscale) == 0.0
        assert m.int("attention.kv_lora_rank") == config.kv_lora_rank
        assert m.int("attention.key_length_mla") == config.qk_nope_head_dim + config.qk_rope_head_dim
        assert m.int("attention.value_length_mla") == config.v_head_dim
        assert m.int("rope.dimension_count") == config.qk_rope_head_dim
        for il, layer in enumerate(model.model.layers[config.first_k_dense_replace:], config.first_k_dense_replace):
            b = getattr(layer.mlp.gate, "e_score_correction_bias", None)           # (a buffer: V3 only)
            assert (b is None) == (f"blk.{il}.exp_probs_b.bias" not in tensors)
            assert b is None or ((b != 0).all() and (tensors[f"blk.{il}.exp_probs_b.bias"] == b.numpy()).all())
        rec["routing"] = moe.routing_record(forward, tensors, meta, "deepseek2", "norm", zoo.PROMPTS)
        rec.update(extra_checks(model, config, meta, tensors))
        return rec

    return zoo.Family(
        config_cls=zoo._transformers_class(cfg_cls),
        model_cls=zoo._transformers_class(model_cls),
        config_kwargs=config_kwargs,
        perturb=lambda model: moe.perturb(model, zoo, layer_std=layer_std, expert_std=layer_std, router_std=router_std),
        converter_class=("conversion.deepseek", "DeepseekV2Model"),
        gguf_arch="deepseek2",
        llama_arch_enum="LLM_ARCH_DEEPSEEK2",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_kv_a_mqa.weight", "blk.{bid}.attn_kv_a_norm.weight",
            "blk.{bid}.attn_k_b.weight", "blk.{bid}.attn_v_b.weight", "blk.{bid}.attn_output.weight",
            "blk.{bid}.ffn_norm.weight",
        ],
        numpy_forward=forward,
        checkpoint_map=_checkpoint_map,
        family_checks=family_checks,
        float64_check=True,
        ablations=ablations,
        record_gguf=True,
        mechanisms=mechanisms,
    )


MLA_TEXT = ("MLA, absorbed form (llama.cpp's, used for every batch size): per head h, q_nope = q[h, :qk_nope], "
            "q_pe = q[h, qk_nope:]; kv = attn_kv_a_mqa . x (numpy [r + qk_rope, embd]) = [c ; k_pe]; "
            "c = RMSNorm(c, attn_kv_a_norm [r]); RoPE (adjacent pairs = llama.cpp NORM; HF DeepSeek's interleaved "
            "rope) with YaRN on q_pe and the single shared k_pe; q_abs = attn_k_b[h] (numpy [r, qk_nope]; ggml ne "
            "[qk_nope, r, H]) . q_nope; score = (q_abs . c_s + q_pe . k_pe_s) * kq_scale; o_h = attn_v_b[h] (numpy "
            "[v, r]; ggml ne [r, v, H]) . (sum_s p_s c_s); attn_output (numpy [embd, H*v]). KV cache per token: "
            "[c ; k_pe] = kv_lora_rank + qk_rope floats (key_length), V = its first kv_lora_rank (value_length). "
            "GGUF keys: attention.kv_lora_rank = r, key_length = r + qk_rope, value_length = r, key_length_mla = "
            "qk_nope + qk_rope, value_length_mla = v_head_dim, rope.dimension_count = qk_rope, head_count_kv = 1")


def families(zoo):
    # V2-Lite style: no q_lora_rank, softmax, no renormalisation, 2 shared experts, 27 layers
    lite_cfg = base_config(
        experts_implementation="eager", num_hidden_layers=27, num_key_value_heads=4, intermediate_size=64,
        moe_intermediate_size=16, n_routed_experts=N_EXPERT, num_experts_per_tok=TOP_K, n_shared_experts=2,
        first_k_dense_replace=LITE_DENSE, q_lora_rank=None, kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16,
        v_head_dim=16, topk_method="greedy", n_group=None, topk_group=None, norm_topk_prob=False,
        routed_scaling_factor=1.0, scoring_func="softmax",
        rope_parameters=dict(YARN, mscale=MSCALE_LITE, mscale_all_dim=MSCALE_LITE),
        hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
        output_router_logits=False)
    del lite_cfg["head_dim"]
    # V3 style: q_lora_rank, sigmoid + bias + groups, renormalised, scaled
    v3_cfg = base_config(
        experts_implementation="eager", num_hidden_layers=2, num_key_value_heads=4, intermediate_size=96,
        moe_intermediate_size=32, n_routed_experts=N_EXPERT, num_experts_per_tok=TOP_K, n_shared_experts=1,
        first_k_dense_replace=1, q_lora_rank=48, kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16,
        v_head_dim=12, n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5,
        scoring_func="sigmoid", topk_method="noaux_tc", num_mtp_layers=0,
        rope_parameters=dict(YARN, mscale=MSCALE_V3, mscale_all_dim=MSCALE_V3), rope_interleave=True,
        hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
        output_router_logits=False)
    del v3_cfg["head_dim"]

    def lite_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "deepseek2")
        assert m.int("block_count") == 27 and "attention.q_lora_rank" not in m and "blk.0.attn_q.weight" in tensors
        assert m.int("expert_gating_func") == 1 and "expert_weights_norm" not in m and "expert_group_count" not in m
        assert m.float("expert_weights_scale") == 1.0 and m.int("expert_shared_count") == 2
        return {"lite": "no deepseek2.attention.q_lora_rank and blk.N.attn_q.weight instead of attn_q_a/attn_q_a_norm/"
                        "attn_q_b; llama.cpp reads the GGUF this way only with 26 or 27 layers (is_lite)"}

    def v3_checks(model, config, meta, tensors):
        m = npf.Meta(meta, "deepseek2")
        assert m.int("attention.q_lora_rank") == 48 and "blk.0.attn_q.weight" not in tensors
        assert m.int("expert_gating_func") == 2 and m.get("expert_weights_norm") is True
        assert m.float("expert_weights_scale") == 2.5
        assert (m.int("expert_group_count"), m.int("expert_group_used_count")) == (4, 2)
        # the group limit changes the choice for at least one token
        changed = {}
        for n, ids in zoo.PROMPTS.items():
            a, b = {"chosen": []}, {"chosen": []}
            forward(tensors, meta, "deepseek2", ids, "norm", stats=a)
            forward(tensors, meta, "deepseek2", ids, "norm", stats=b, ablate=frozenset(["groups"]))
            changed[str(n)] = int(sum((np.sort(x, axis=-1) != np.sort(y, axis=-1)).any(axis=-1).sum()
                                      for x, y in zip(a["chosen"], b["chosen"])))
        assert sum(changed.values()) > 0, changed
        return {"group_limit_changes_choice_tokens": changed,
                "config_extra_keys": "scoring_func = 'sigmoid', topk_method = 'noaux_tc' (read by the converter, not by "
                                     "transformers' DeepseekV3TopkRouter, which always uses sigmoid + bias + groups)"}

    router_lite = ("probs = softmax(ffn_gate_inp . h) over 8 experts (expert_gating_func = 1 = softmax, from the "
                   "config's scoring_func 'softmax' as in V2-Lite's config.json; without the key llama.cpp's deepseek2 also "
                   "defaults to softmax); top-2 on probs (topk_method greedy; no exp_probs_b, no groups); weights = probs "
                   "AS IS (no expert_weights_norm key: false), times expert_weights_scale = 1.0 (= no-op)")
    router_v3 = ("p = sigmoid(ffn_gate_inp . h) (expert_gating_func = 2); selection s = p + exp_probs_b "
                 "(blk.N.exp_probs_b.bias [8], HF e_score_correction_bias, a buffer); groups: expert_group_count = 4 "
                 "groups of 2 consecutive experts, group score = sum of its top-2 s, keep the top "
                 "expert_group_used_count = 2 groups, the others' s = -inf; top-2 on s; weights = UNBIASED p of the "
                 "chosen / their sum (expert_weights_norm = true; clamp >= 6.1e-5), times expert_weights_scale = 2.5")
    return {
        "deepseek2-lite": _family(
            zoo, "deepseek2-lite", cfg_cls="DeepseekV2Config", model_cls="DeepseekV2ForCausalLM",
            config_kwargs=lite_cfg, mscale=MSCALE_LITE, layer_std=LITE_LAYER_STD,
            router_std=LITE_ROUTER_STD,
            ablations=("yarn", "yarn_mscale", "shared_expert", "renorm"),
            extra_checks=lite_checks,
            mechanisms={
                "q": "no q_lora_rank: q = attn_q . h (numpy [H*(qk_nope+qk_rope), embd] = [96, 64])",
                "attention": MLA_TEXT + "; sizes: H 4, kv_lora_rank 32, qk_nope 16, qk_rope 8, v 16",
                "rope": "YaRN factor 4, original_context_length 64, beta_fast 32, beta_slow 1, truncated correction "
                        "range (floor/ceil; llama.cpp's too), theta 10000, n_rot 8; mscale = mscale_all_dim = 0.625: "
                        "yarn_log_multiplier = 0.0625 (÷ 0.1 = 0.625); cos/sin factor 1; kq_scale = 24^-0.5 * "
                        "(1 + 0.0625 ln 4)^2",
                "router": router_lite,
                "shared_experts": "expert_shared_count = 2: ONE SwiGLU block of ff 16 * 2 = 32 (ffn_{gate,up,down}_shexp), "
                                  "added ungated",
                "dense_layers": "layers 0..24 (leading_dense_block_count = 25): dense SwiGLU, ff = feed_forward_length = 64; "
                                "layers 25, 26 MoE",
                "experts": "SwiGLU, ff = expert_feed_forward_length = 16",
                "norm": "RMSNorm eps 1e-6 (attn_norm, attn_kv_a_norm, ffn_norm, output_norm); untied output",
                "hf_checkpoint": "saved per expert (mlp.experts.E.{gate,up,down}_proj.weight), self_attn.q_proj, "
                                 "kv_a_proj_with_mqa [r + qk_rope, embd], kv_a_layernorm, kv_b_proj "
                                 "[H*(qk_nope + v), r] (per head: qk_nope rows then v rows)",
            }),
        "deepseek2-v3": _family(
            zoo, "deepseek2-v3", cfg_cls="DeepseekV3Config", model_cls="DeepseekV3ForCausalLM",
            config_kwargs=v3_cfg, mscale=MSCALE_V3,
            ablations=("yarn", "yarn_mscale", "shared_expert", "renorm", "selection_bias", "groups", "weights_scale",
                       "softmax_router"),
            extra_checks=v3_checks,
            mechanisms={
                "q": "q_lora_rank 48: q = attn_q_b . RMSNorm(attn_q_a . h, attn_q_a_norm [48]) (attn_q_a numpy [48, 64], "
                     "attn_q_b numpy [H*(qk_nope+qk_rope), 48] = [96, 48]); deepseek2.attention.q_lora_rank = 48",
                "attention": MLA_TEXT + "; sizes: H 4, kv_lora_rank 32, qk_nope 16, qk_rope 8, v 12 (v differs from qk_nope + qk_rope = 24)",
                "rope": "YaRN factor 4, original_context_length 64, beta_fast 32, beta_slow 1, truncated, theta 10000, "
                        "n_rot 8; mscale = mscale_all_dim = 1.25: yarn_log_multiplier = 0.125 (÷ 0.1 = 1.25); cos/sin "
                        "factor 1; kq_scale = 24^-0.5 * (1 + 0.125 ln 4)^2",
                "router": router_v3,
                "shared_experts": "expert_shared_count = 1: one SwiGLU of ff 32 (ffn_*_shexp), added ungated",
                "dense_layers": "layer 0 (leading_dense_block_count = 1): dense SwiGLU, ff = feed_forward_length = 96",
                "experts": "SwiGLU, ff = expert_feed_forward_length = 32",
                "norm": "RMSNorm eps 1e-6 (attn_norm, attn_q_a_norm, attn_kv_a_norm, ffn_norm, output_norm); untied",
            }),
    }
