#!/usr/bin/env python3
"""Golden fixtures for tiny random-weight models ("zoo"), made by Hugging Face transformers.

For one model family (FAMILIES below; now: qwen2, qwen3, mistral, qwen3moe, stablelm,
starcoder2, llama3, gpt2, phi3, smollm3, bloom, gemma2, olmo2, granite, the
parallel-residual families gptneox, phi2, command-r, command-r-qknorm, and the hybrid
ShortConv/attention lfm2; and, each a module of tools/reference/zoo_families/ registered into
FAMILIES at import (see "issue-40 families" below): gemma, seed_oss, ernie4_5, arcee, glm4,
hunyuan-dense, exaone4, cohere2, olmo3, apertus, mistral3, falcon, falcon-40b) this script
  1. builds a tiny random model with transformers (fixed seed, float32, eager attention),
     with weights large enough that the logits spread over several units and with every
     bias and norm weight perturbed away from its default (0 / 1), so that a loader that
     drops or misplaces one of them is caught;
  2. saves it as a Hugging Face checkpoint (config.json + model.safetensors) in a work
     directory OUTSIDE the repository;
  3. converts that checkpoint to GGUF (all tensors F32) with llama.cpp's own
     convert_hf_to_gguf.py, run in this process with `--outtype f32`. The only change is the
     vocabulary step: a tiny random model has no tokenizer, and the converter's tokenizer
     code refuses an unknown one, so the family's converter class gets its `set_vocab`
     replaced (monkeypatched here; the converter file is not edited) by one that writes a
     dummy byte-level-BPE vocabulary of the model's size ("<t0>".."<tN-1>", see
     dummy_set_vocab). Only token ids are used by the fixture.
     mistral only: the converter writes MistralForCausalLM as GGUF architecture `llama` and
     drops the sliding window (LlamaModel writes no `sliding_window` key, and llama.cpp's
     llama architecture reads none). The script then adds ONE key to the converted file,
     `llama.attention.sliding_window` (uint32, = the config's sliding_window, 8), with
     gguf-py's own copy routine (gguf.scripts.gguf_new_metadata.copy_with_new_metadata, the
     code behind gguf-py's `gguf-new-metadata` tool): the file is rewritten with every other
     key (same order, types and values; the new key comes last) and every tensor (same
     names, shapes, types, bytes) unchanged, which the script asserts. Without the key the
     GGUF would describe a different model from the transformers one for prompts longer
     than the window. starcoder2 likewise: StarCoder2Model writes no window either, and the
     script adds `starcoder2.attention.sliding_window` (uint32, 8) the same way.
     gptneox only: the converter's GPTNeoXModel.set_gguf_parameters reads hparams["rotary_pct"],
     which transformers 5 no longer writes (it keeps rope_parameters.partial_rotary_factor);
     a shim (Family.converter_shims, here _neox_rotary_pct_shim) wraps that method to set
     rotary_pct from partial_rotary_factor first (the converter file is not edited; recorded
     under "shims" in versions.json);
     lfm2: no shim; the converter itself squeezes the depthwise conv weight [E, 1, L] to [E, L]
     (the bit-exact check does the same) and writes attention.head_count_kv per layer (0 for a
     ShortConv layer);
  4. runs transformers (model.eval(), torch.no_grad(), float32, eager attention) on two
     prompts (7 and 40 token ids), one batch each, and keeps the logits of every position;
  5. checks the GGUF: prints every metadata key and the tensor table, asserts the family's
     required tensors (e.g. the q/k/v biases) are present and F32, asserts the GGUF tensors
     equal the checkpoint's bit for bit (for `llama` the converter reorders the rows of
     q_proj/k_proj per head from HF's rotate-halves layout to llama.cpp's adjacent-pair
     layout, LlamaModel.permute; the check applies the same reordering, written
     independently here, to the checkpoint's q/k before comparing; for qwen3moe the
     checkpoint's fused experts.gate_up_proj is split into its gate and up halves first; a
     tensor the converter generates, llama3's rope_freqs.weight, is instead compared with
     transformers' own scaled inverse frequencies), asserts the sliding
     window in the GGUF equals the transformers config's (or that both have none), confirms
     from llama.cpp's source (when the tree has src/llama-model.cpp) the RoPE style
     llama.cpp uses for the architecture, and runs an
     independent float64 numpy forward pass on the GGUF tensors and hyperparameters that
     must match the transformers logits (asserted; --no-numpy-check skips it). With a
     sliding window the same pass is also run WITHOUT the window, and for a prompt longer
     than the window it must then differ from transformers by > 1e-2 (so transformers did
     apply the window) while for a shorter one it must still match. For llama3 the pass is
     also run without rope_freqs and must then differ at n=40 (so the scaling is tested).
     For qwen3moe the smallest gap between the k-th and (k+1)-th router probability must
     be > 1e-4 (no near tie that float32 and float64 could break differently). For lfm2 the
     numpy pass (numpy_forward_lfm2) is also run on the 40-token prompt as 20 + 20 tokens
     carrying the ShortConv state and the K/V: it must equal the one-chunk pass (< 1e-9), and
     with the conv state reset at the split it must differ (> 1e-2). The numpy
     pass must use every GGUF tensor;
  6. writes into OUT/<family>/:
        model.gguf                     the converted model (all F32)
        tokens_7.i32.bin, tokens_40.i32.bin     the prompts, raw little-endian int32
        logits_7.f32.bin, logits_40.f32.bin     transformers' logits, raw little-endian
                                                float32, row-major [n_tokens, n_vocab]
        versions.json                  versions, seed, config, checks, sha256 of each file

The issue-40 families (tools/reference/zoo_families/<family>.py; zoo_families/npf.py holds the
shared float64 numpy pieces) use a few generic Family hooks instead of more per-family flags:
their own numpy forward (reading every size and constant from the GGUF; `ablate={name}` switches
one mechanism off), `ablations` (each switched-off mechanism must move the logits by > 1e-2, or a
given bound), `checkpoint_map` (the converter's tensor edits, written independently, for the
bit-exact check), `family_checks` (family facts tied between the config, transformers and the
GGUF, recorded), `converter_shims` (recorded under "shims"), `mechanisms`
and `record_gguf` (versions.json gets what the family needs beyond a Llama, every metadata key but
the vocabulary arrays, and the tensor table), and `float64_check`: transformers is also run in
float64 END TO END (zoo_families/float64.py: a torch function mode turns transformers' float32
casts, e.g. in RoPE and RMSNorm, into float64; where the converter rounded a value to float32,
e.g. Gemma's 1 + w or Llama-3's rope_freqs, the float64 model is given the GGUF's value) and the
numpy pass must match it to < 1e-9 relative (measured 2e-15 .. 7e-13); the float32 logits (the
fixture) must match the numpy pass to < 1e-5 x max(1, max |logit|).

The issue-38 families (state-space and hybrid models: mamba, mamba2, granitehybrid, nemotron_h, falcon-h1,
qwen3next, qwen35, jamba; tools/reference/zoo_families/issue38.py, one module each, their float64 mechanisms
written once in zoo_families/ssm.py) use the same hooks and three more for this converter, which was written
against transformers 4 and reads some transformers-5 checkpoints silently wrong: `converter_hparams` (the
converter class's __init__, and any ModelBase.load_hparams call it makes, get an edited copy of the config:
e.g. transformers 5's layer-type names mapped to the ones the converter reads), `converter_args` (e.g.
--no-mtp) and `converter_checkpoint` (the converter reads a copy of the checkpoint in the layout it expects,
same values). What each did is recorded under "shims"; the family checks assert that the GGUF's per-layer
arrays / interval reproduce the transformers config's layer types. These families also run the numpy pass on
the 40-token prompt as 20 + 20 tokens carrying every layer's conv / SSM state and K/V (conv_state_split).

Requirements (a virtual environment OUTSIDE the repository; see tools/reference/README.md):
    numpy, torch (CPU is enough), transformers, safetensors, sentencepiece (imported by the
    converter's vocab code), requests/pyyaml/tqdm (gguf-py), and a llama.cpp tree holding
    convert_hf_to_gguf.py, conversion/ and gguf-py/ (the converter is run against the
    tree's own gguf-py, so converter and GGUF library match).

Usage:
    /work/venv-ref/bin/python tools/reference/make_zoo_fixture.py qwen2 \\
        --llama-cpp /work/peers/llama.cpp --work /work/zoo-work
    (and the same with qwen3, mistral, qwen3moe, stablelm, starcoder2, llama3, gpt2, phi3,
    smollm3, bloom, gemma2, olmo2, granite, gptneox, phi2, command-r, command-r-qknorm or lfm2;
    phi3 also writes logits_40_long.f32.bin, see PHI3_* and the README; and gemma, seed_oss,
    ernie4_5, arcee, glm4, hunyuan-dense, exaone4, cohere2, olmo3, apertus, mistral3, falcon,
    falcon-40b, with --save-hf for gemma, glm4 and cohere2)
    (--out defaults to tests/data/zoo of this repository; --llama-cpp-commit overrides the
    commit read from the tree's COMMIT file or git HEAD.)
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

SEED = 20240607
INIT_STD = 0.2        # std of every Linear weight (transformers' default 0.02 gives ~zero logits)
EMBED_STD = 1.0       # std of the token embedding rows
BIAS_SCALE = 0.5      # biases ~ BIAS_SCALE * randn
NORM_SCALE = 0.3      # norm weights ~ 1 + NORM_SCALE * randn
CONV_STD = 0.5        # std of LFM2's depthwise short-convolution weights [E, 1, L] (3 taps per channel)

PROMPTS: dict[int, list[int]] = {
    7: [6, 9, 91, 104, 83, 82, 10],
    40: [38, 106, 12, 100, 44, 91, 10, 87, 88, 26, 66, 106, 127, 106, 72, 51, 105, 64, 99, 94,
         103, 75, 66, 50, 43, 114, 32, 65, 19, 8, 67, 4, 120, 68, 93, 22, 124, 58, 71, 59],
}

REPO = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------------------
# families


def _perturb_biases_and_norms(model) -> list[str]:
    """Every Linear weight (2-D, incl. a MoE router) and every stacked 3-D expert weight
    ("...experts..." parameters) ~ N(0, INIT_STD), embeddings ~ N(0, EMBED_STD), every bias
    (incl. LayerNorm biases) ~ BIAS_SCALE * randn, every norm weight (RMSNorm or LayerNorm)
    ~ 1 + NORM_SCALE * randn (also Cohere's per-head q/k LayerNorm weights, [n_head, head_dim]),
    LFM2's depthwise conv weights ([E, 1, L], "....conv.conv.weight") ~ N(0, CONV_STD).
    Uses the global torch RNG
    (seeded by the caller), parameters in named_parameters() order. Returns what it touched."""
    import torch
    touched = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.copy_(BIAS_SCALE * torch.randn_like(p))
                kind = "bias"
            elif p.ndim == 1 and ("norm" in name or re.search(r"(^|\.)ln_(\d+|f)\.weight$", name)):
                # "...norm..." (RMSNorm/LayerNorm, incl. BLOOM's word_embeddings_layernorm) and
                # GPT-2/BLOOM's LayerNorms named ln_1, ln_2, ln_f
                p.copy_(1.0 + NORM_SCALE * torch.randn_like(p))
                kind = "norm"
            elif p.ndim == 2 and name.endswith(("self_attn.q_norm.weight", "self_attn.k_norm.weight")):
                # Cohere's QK LayerNorm keeps one weight row per head ([n_head, head_dim])
                p.copy_(1.0 + NORM_SCALE * torch.randn_like(p))
                kind = "norm"
            elif "embed_tokens" in name or name.endswith(("wte.weight", "word_embeddings.weight",
                                                          "embed_in.weight")):
                # token embeddings (GPT-2 transformer.wte, BLOOM transformer.word_embeddings,
                # GPT-NeoX gpt_neox.embed_in)
                p.copy_(EMBED_STD * torch.randn_like(p))
                kind = "embedding"
            elif name.endswith("wpe.weight"):
                # GPT-2's learned absolute position embeddings: same scale as the token rows
                p.copy_(EMBED_STD * torch.randn_like(p))
                kind = "position embedding"
            elif p.ndim == 2:
                p.copy_(INIT_STD * torch.randn_like(p))
                kind = "weight"
            elif p.ndim == 3 and name.endswith(".conv.conv.weight"):
                # LFM2's depthwise causal Conv1d weight [E, 1, L]: 3 taps per channel, large
                # enough that the convolution (and a wrong tap order or state) matters
                p.copy_(CONV_STD * torch.randn_like(p))
                kind = "conv weight"
            elif p.ndim == 3 and ".experts." in name:
                # stacked per-expert Linear weights (Qwen3-MoE's experts.gate_up_proj
                # [E, 2*ff, embd] and experts.down_proj [E, embd, ff]): same scale as a Linear
                p.copy_(INIT_STD * torch.randn_like(p))
                kind = "expert weights"
            else:
                raise RuntimeError(f"no perturbation rule for parameter {name} {tuple(p.shape)}")
            touched.append(f"{name} ({kind})")
    return touched


def _qwen2_config():
    from transformers import Qwen2Config
    return Qwen2Config


def _qwen2_model():
    from transformers import Qwen2ForCausalLM
    return Qwen2ForCausalLM


def _qwen3_config():
    from transformers import Qwen3Config
    return Qwen3Config


def _qwen3_model():
    from transformers import Qwen3ForCausalLM
    return Qwen3ForCausalLM


def _mistral_config():
    from transformers import MistralConfig
    return MistralConfig


def _mistral_model():
    from transformers import MistralForCausalLM
    return MistralForCausalLM


def _qwen3moe_config():
    from transformers import Qwen3MoeConfig
    return Qwen3MoeConfig


def _qwen3moe_model():
    from transformers import Qwen3MoeForCausalLM
    return Qwen3MoeForCausalLM


def _stablelm_config():
    from transformers import StableLmConfig
    return StableLmConfig


def _stablelm_model():
    from transformers import StableLmForCausalLM
    return StableLmForCausalLM


def _starcoder2_config():
    from transformers import Starcoder2Config
    return Starcoder2Config


def _starcoder2_model():
    from transformers import Starcoder2ForCausalLM
    return Starcoder2ForCausalLM


def _llama_config():
    from transformers import LlamaConfig
    return LlamaConfig


def _llama_model():
    from transformers import LlamaForCausalLM
    return LlamaForCausalLM


def _transformers_class(name: str) -> Callable[[], Any]:
    """Lazily imported transformers class (for the newer families)."""
    def get():
        import transformers
        return getattr(transformers, name)
    return get


# Mistral's sliding window, small enough that the 40-token prompt crosses it. transformers 5
# (MistralModel.forward: create_sliding_window_causal_mask whenever config.sliding_window is
# not None, also for eager attention) builds the mask from masking_utils:
#   causal_mask_function:   kv_idx <= q_idx
#   sliding_window_overlay: kv_idx > q_idx - sliding_window
# ANDed (sliding_window_causal_mask_function), i.e. key k is visible to query q iff
# k <= q and q - k < sliding_window: a query sees itself and the sliding_window - 1 keys
# before it. (llama.cpp's LLAMA_SWA_TYPE_STANDARD masks p1 - p0 >= n_swa: the same rule.)
MISTRAL_SLIDING_WINDOW = 8
STARCODER2_SLIDING_WINDOW = 8   # the same rule (Starcoder2Model uses create_sliding_window_causal_mask)

# Llama 3 RoPE frequency scaling for the llama3 family. With head_dim 16 and theta 10000 the 8
# frequency pairs have wavelengths 2*pi*10000^(2i/16) = 6.3, 19.9, 62.8, 199, 628, ... ; with
# original_max_position_embeddings 64 the "high" band (wavelength < 64/4 = 16) keeps pair 0,
# the smooth band [16, 64] holds pairs 1 and 2, and the rest are divided by the factor 8:
# per-pair divisors ~ [1, 1.29, 7.67, 8, 8, 8, 8, 8].
LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


# Phi-3 LongRoPE for the phi3 family. head_dim 16 -> 8 frequency pairs, one factor each (theta_i
# is divided by the factor). transformers uses the short set when the sequence is at most
# original_max_position_embeddings (64) long (both our prompts), the long set beyond; llama.cpp
# picks by context size (long iff n_ctx_seq > n_ctx_orig_yarn = 64). factor = 256 / 64 = 4 gives
# the attention (cos/sin) factor sqrt(1 + ln 4 / ln 64) = 1.1547 in both.
PHI3_SHORT_FACTORS = [1.0, 1.15, 1.3, 1.45, 1.6, 1.75, 1.9, 2.0]
PHI3_LONG_FACTORS = [1.5, 2.5, 4.0, 6.0, 9.0, 13.0, 18.0, 24.0]
PHI3_ORIGINAL_MAX_POS = 64

# SmolLM3 NoPE: transformers' default no_rope_layers = [int((i + 1) % no_rope_layer_interval != 0)]
# (1 = the layer USES RoPE), interval 4: with 4 layers, layer 3 has no RoPE. llama.cpp:
# llama_model_smollm3 hard-codes n_no_rope_layer_step = 4 and use_rope = (il + 1) % 4 != 0.
SMOLLM3_NO_ROPE_STEP = 4

# BLOOM ALiBi: llama.cpp hard-codes f_max_alibi_bias = 8 for bloom (no GGUF key); ggml's slopes
# m0^(h+1), m0 = 2^(-8 / n_head_log2) (n_head a power of 2) equal transformers'
# build_alibi_tensor slopes (2^(-8/n))^(h+1): for 4 heads 2^-2, 2^-4, 2^-6, 2^-8.
BLOOM_MAX_ALIBI_BIAS = 8.0

# Gemma 2: window 8 on layers 0 and 2 (transformers' default layer_types alternate sliding /
# full; llama.cpp's gemma2 pattern period 2: il % 2 < 1 windowed). The final cap is Gemma 2's
# own 30, which bends the tiny model's logits (up to ~100 uncapped) without flattening most of
# them; the attention cap is small enough to bend its scores (the checks assert that each matters).
GEMMA2_SLIDING_WINDOW = 8
GEMMA2_ATTN_SOFTCAP = 4.0
GEMMA2_FINAL_SOFTCAP = 30.0

# Granite's four multipliers, all away from 1 and from 1/sqrt(head_dim) (0.25), so that a
# loader that drops any one of them is caught (the checks assert it).
GRANITE_MULTIPLIERS = dict(embedding_multiplier=1.7, residual_multiplier=0.6,
                           attention_multiplier=0.11, logits_scaling=2.5)

# Cohere (Command-R) multiplies the logits by logit_scale (CohereForCausalLM: logits * logit_scale;
# llama.cpp command-r: ggml_scale(logits, f_logit_scale)), unlike Granite's logits_scaling, which
# divides. 0.25 is away from 1 so that a loader that drops it, or divides by it, is caught.
COMMAND_R_LOGIT_SCALE = 0.25


# LFM2 (Liquid): ShortConv layers 0 and 2, attention layers 1 and 3; 3 conv taps (the real models'
# L_cache); the 40-token prompt is also run by the numpy pass as 20 + 20 tokens carrying the state.
LFM2_LAYER_TYPES = ["conv", "full_attention", "conv", "full_attention"]
LFM2_CONV_L_CACHE = 3
LFM2_SPLIT = 20


def _neox_rotary_pct_shim(hparams: dict[str, Any]) -> str | None:
    """llama.cpp's GPTNeoXModel.set_gguf_parameters reads hparams["rotary_pct"] (the
    transformers 4.x config key); transformers 5 writes the fraction only as
    rope_parameters.partial_rotary_factor. Sets rotary_pct from it (when absent) and says what
    it did; the converter then writes rope.dimension_count = int(rotary_pct * head_dim)."""
    if "rotary_pct" in hparams:
        return None
    rp = hparams.get("rope_parameters") or {}
    prf = rp.get("partial_rotary_factor", hparams.get("partial_rotary_factor"))
    assert prf is not None, "no partial_rotary_factor in the config"
    hparams["rotary_pct"] = prf
    return (f"conversion.gptneox.GPTNeoXModel.set_gguf_parameters wrapped: hparams['rotary_pct'] = "
            f"rope_parameters['partial_rotary_factor'] ({prf}) before the original runs (transformers 5 "
            f"writes no rotary_pct key; the converter reads it for rope.dimension_count)")


@dataclasses.dataclass
class Family:
    config_cls: Callable[[], Any]          # lazily imported transformers config class
    model_cls: Callable[[], Any]           # lazily imported transformers *ForCausalLM class
    config_kwargs: dict[str, Any]
    perturb: Callable[[Any], list[str]]    # (model) -> description of what was set
    converter_class: tuple[str, str]       # (module in llama.cpp's conversion/, class) to patch
    gguf_arch: str                         # general.architecture expected in the GGUF
    llama_arch_enum: str                   # llama.cpp's LLM_ARCH_* (for the RoPE-style check)
    rope_style: str                        # "neox" (rotate halves) or "norm" (adjacent pairs)
    required_tensors: list[str]            # per block ({bid}) or global names that must be F32
    numpy_forward: Callable[..., np.ndarray]
    qk_norm: bool = False                  # per-head RMSNorm on q and k before RoPE (attn_{q,k}_norm)
    sliding_window: int | None = None      # expected in the config and, after gguf_added_keys, in the GGUF
    gguf_qk_permuted: bool = False         # the converter reorders q/k rows for adjacent-pair RoPE
    gguf_added_keys: dict[str, tuple[str, Any]] = dataclasses.field(default_factory=dict)
    #                                        keys added to the converted GGUF: name -> (GGUFValueType name, value)
    numpy_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    #                                        extra keyword arguments of numpy_forward (norm, ffn)
    gguf_generated_tensors: list[str] = dataclasses.field(default_factory=list)
    #                                        GGUF tensors the converter makes (not in the checkpoint)
    split_gate_up_experts: bool = False    # checkpoint experts.gate_up_proj [E, 2ff, embd] -> gate, up
    llama3_rope: bool = False              # check rope_freqs.weight against transformers' inv_freq
    gguf_transposed: tuple[str, ...] = ()  # checkpoint parameter name suffixes the converter transposes
    #                                        (GPT-2's Conv1D weights are stored [in, out])
    bloom_qkv: bool = False                # the converter reorders per-head [q, k, v] rows of a fused
    #                                        query_key_value (BLOOM, GPT-NeoX) to Q|K|V
    longrope: bool = False                 # Phi-3 LongRoPE: rope_factors_{short,long}, attn_factor checks
    no_rope_layer_step: int | None = None  # SmolLM3 NoPE: layer il skips RoPE iff (il + 1) % step == 0
    norm_plus_one: bool = False            # Gemma: the converter writes norm weights as 1 + w
    softcaps: bool = False                 # Gemma 2: check that both soft caps change the logits
    multipliers: bool = False              # Granite: check that the multipliers change the logits
    logit_scale_check: bool = False        # Command-R: check that {arch}.logit_scale changes the logits
    converter_shims: tuple[Callable[[dict[str, Any]], str | None], ...] = ()
    #                                        functions applied to the converter class's hparams before its
    #                                        set_gguf_parameters (monkeypatched; recorded as "shims")
    gguf_squeezed: tuple[str, ...] = ()    # checkpoint parameter name suffixes whose size-1 dims the
    #                                        converter drops (LFM2's conv weight [E, 1, L] -> [E, L])
    conv_state_split: int | None = None    # LFM2: also run the numpy pass on the 40-token prompt in two
    #                                        chunks (this many tokens first) carrying the conv state and
    #                                        the KV cache; must equal the one-chunk pass
    # The families added for issue 40 live in tools/reference/zoo_families/<family>.py (each a small
    # module: its config, converter shims, its own numpy forward from zoo_families/npf.py) and use
    # these hooks instead of more flags here:
    float64_check: bool | Callable[..., list[str]] = False
    #                                        also run transformers in float64 end to end
    #                                        (zoo_families/float64.py) and compare the numpy pass with it;
    #                                        a callable (model64, meta, tensors) -> notes first edits the
    #                                        float64 model to the GGUF's values where the converter rounded
    #                                        to float32 (Gemma's 1 + w, Llama-3 rope_freqs)
    ablations: tuple[str | tuple[str, float], ...] = ()
    #                                        numpy_forward(..., ablate={name}) must differ from transformers
    #                                        by > 1e-2, or by > the given bound for (name, bound) (each
    #                                        mechanism really matters)
    mechanisms: dict[str, Any] = dataclasses.field(default_factory=dict)   # recorded in versions.json
    checkpoint_map: Callable[..., list[str]] | None = None
    #                                        (sd, config, meta) -> notes: applies the converter's tensor
    #                                        edits (written independently) to the checkpoint for the
    #                                        bit-exact check; sd may gain/lose entries
    family_checks: Callable[..., dict[str, Any]] | None = None
    #                                        (model, config, meta, tensors) -> records for versions.json
    #                                        (asserts family facts, e.g. the layer pattern)
    record_gguf: bool = False              # record every metadata key (but the vocabulary) and the
    #                                        tensor table in versions.json
    # issue 38 (the state-space families, tools/reference/zoo_families/issue38.py):
    converter_hparams: Callable[[Path], tuple[dict[str, Any], list[str]]] | None = None
    #                                        (hf_dir) -> (hparams, notes): the converter class's __init__ is
    #                                        wrapped to receive these hparams (loaded as that class loads them,
    #                                        then edited: e.g. transformers 5's layer-type names mapped to the
    #                                        ones the converter reads before it derives its layer lists);
    #                                        the notes are recorded as "shims"
    converter_args: tuple[str, ...] = ()   # extra convert_hf_to_gguf.py arguments (e.g. --no-mtp)
    converter_checkpoint: Callable[[Path, Path], list[str]] | None = None
    #                                        (hf_dir, out_dir) -> notes: writes the checkpoint the converter reads
    #                                        (the same values in the layout this converter expects, e.g. Jamba's
    #                                        experts one tensor per expert as transformers 4 saved them); the
    #                                        notes are recorded as "shims"; the bit-exact check still compares
    #                                        the GGUF with transformers' own state_dict


def numpy_forward_llama_like(tensors: dict[str, np.ndarray], meta: dict[str, Any], arch: str,
                             ids: list[int], rope_style: str, *, qk_norm: bool = False,
                             sliding_window: int | None = None, norm: str = "rms",
                             ffn: str = "swiglu", rope_freq_factors: bool = True,
                             rope_factors: str | None = None, rope_attn_factor: bool = True,
                             no_rope_layer_step: int | None = None,
                             norm_place: str = "pre", qk_norm_whole: bool = False,
                             window_period: int | None = None, scaled_embedding: bool = False,
                             softcaps: bool | str = True, multipliers: bool = True,
                             parallel: str | None = None, logit_scale: str = "divide",
                             qk_norm_type: str = "rms",
                             stats: dict[str, Any] | None = None) -> np.ndarray:
    """float64 reference for a pre-norm decoder (Llama/Qwen2/Qwen3/Mistral/Qwen3-MoE/StableLM/
    StarCoder2 shape): norm, RoPE, causal GQA attention with optional q/k/v/o biases, MLP,
    final norm, output head. Everything (sizes, eps, rope base, rope dimension count, expert
    counts) is read from the GGUF, not from transformers. Every GGUF tensor must be used (so
    none can be ignored silently; asserted at the end). Options:
      qk_norm         per-head RMSNorm of q and k over head_dim (weights attn_q_norm /
                      attn_k_norm, [head_dim], eps = the GGUF's rms eps) after the
                      projection and before RoPE (Qwen3). When False the GGUF must not have
                      those tensors (so they cannot be ignored silently).
      sliding_window  key k visible to query q iff k <= q and q - k < sliding_window (the
                      transformers/Mistral rule, see MISTRAL_SLIDING_WINDOW); None: causal only.
      norm            "rms": RMSNorm (weight only), eps {arch}.attention.layer_norm_rms_epsilon;
                      "layer": LayerNorm (x - mean) / sqrt(var + eps) * weight + bias, biased
                      variance, eps {arch}.attention.layer_norm_epsilon (StableLM, StarCoder2,
                      GPT-NeoX, Phi-2); "layer_nobias": the same LayerNorm with weight only, no
                      bias tensor (Cohere's CohereLayerNorm).
      ffn             "swiglu": down(silu(gate(h)) * up(h)); "gelu": down(gelu_tanh(up(h)))
                      with GELU 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (StarCoder2,
                      Phi-2's gelu_new); "gelu_erf": down(gelu(up(h))) with the exact GELU
                      0.5 x (1 + erf(x / sqrt 2)) (GPT-NeoX's "gelu");
                      "moe": softmax router (ffn_gate_inp) over all {arch}.expert_count
                      experts, the {arch}.expert_used_count largest, their weights
                      renormalised to sum 1, SwiGLU experts ffn_{gate,up,down}_exps (Qwen3-MoE).
      RoPE            rotates the first {arch}.rope.dimension_count dims of each head (all of
                      them when the key is absent), theta_i = p * base^(-2i/n_rot); the other
                      dims pass through (StableLM's partial rotary). With a global
                      rope_freqs.weight tensor (Llama 3 scaling) theta_i is divided by its
                      i-th value, as llama.cpp's ggml_rope_ext does with freq_factors;
                      rope_freq_factors=False ignores it (used to show that it matters).
      stats           if a dict, receives "router_min_margin" for "moe": the smallest gap
                      between the k-th and (k+1)-th router probability over all tokens and
                      layers (a near tie could make float32 and float64 pick different experts).
      fused q/k/v     a block with attn_qkv.weight (Phi-3) instead of attn_{q,k,v}: its rows are
                      split Q (n_head*hd) | K (n_head_kv*hd) | V (n_head_kv*hd).
      ffn "swiglu_fused"  one ffn_up of 2*n_ff rows (Phi-3's gate_up_proj): the first n_ff rows
                      are the gate, the rest the up projection: down(silu(gate) * up).
      rope_factors    "short" / "long": theta_i is divided by the i-th value of the global
                      rope_factors_short.weight / rope_factors_long.weight (Phi-3 LongRoPE; the
                      other set is then not used); required when those tensors exist.
      rope_attn_factor  cos and sin are multiplied by {arch}.rope.scaling.attn_factor when the
                      GGUF has that key (LongRoPE's attention factor); False ignores it.
      no_rope_layer_step  layer il applies no RoPE iff (il + 1) % step == 0 (SmolLM3 NoPE;
                      llama.cpp's rule); None: RoPE in every layer.
      norm_place      "pre": x + f(norm(x)) (attn_norm, ffn_norm); "sandwich": x + post(f(pre(x)))
                      with post_attention_norm / post_ffw_norm too (Gemma 2); "post": x + post(f(x)),
                      no attn_norm / ffn_norm (OLMo 2).
      qk_norm_whole   RMSNorm of the whole q (n_head*hd) and k (n_head_kv*hd) projection rows,
                      weights attn_q_norm / attn_k_norm of those widths, before RoPE (OLMo 2).
      window_period   with a sliding window: layer il is windowed iff il % period < period - 1,
                      the others global (llama.cpp's set_swa_pattern; Gemma 2: 2); None: every layer.
      scaled_embedding  the embedding rows times sqrt(n_embd) (Gemma).
      softcaps        apply {arch}.attn_logit_softcapping (scores: c tanh(s / c) after the scale,
                      before the mask) and {arch}.final_logit_softcapping (logits) when the GGUF
                      has them (Gemma 2); False ignores both, "attn_off" / "final_off" one (used
                      to show that each matters).
      multipliers     apply Granite's {arch}.embedding_scale (embedding times it),
                      {arch}.residual_scale (each sublayer output times it before the residual
                      add), {arch}.attention.scale (instead of 1/sqrt(hd)) and {arch}.logit_scale
                      (logits divided by it) when the GGUF has them; False ignores all four.
      ffn "geglu"     down(gelu_tanh(gate(h)) * up(h)) (Gemma).
      parallel        None: sequential x = x + attn(norm(x)); x = x + ffn(ffn_norm(x)).
                      "two_norms": x = x + attn(attn_norm(x)) + ffn(ffn_norm(x)), both norms of the
                      block input (GPT-NeoX use_parallel_residual); "one_norm": h = attn_norm(x),
                      x = x + attn(h) + ffn(h), no ffn_norm tensor (Phi-2, Cohere/Command-R).
                      When the GGUF has {arch}.use_parallel_residual it must agree.
      logit_scale     how {arch}.logit_scale (when the GGUF has it and multipliers is True) is
                      applied: "divide" (Granite's logits_scaling) or "multiply" (Cohere).
      qk_norm_type    with qk_norm: "rms" (RMSNorm, eps rms eps) or "layer" (LayerNorm without
                      bias, eps {arch}.attention.layer_norm_epsilon; Cohere's use_qk_norm, whose
                      weights are per head, [n_head, head_dim] / [n_head_kv, head_dim]).
      head bias       an output.bias tensor is added to the logits (Phi-2's lm_head bias).
      n_head_kv       {arch}.attention.head_count_kv, or head_count when the key is absent (GPT-NeoX)."""
    used: set[str] = set()

    def f64(n):
        used.add(n)
        return tensors[n].astype(np.float64)
    n_layer = int(meta[f"{arch}.block_count"])
    n_embd = int(meta[f"{arch}.embedding_length"])
    n_head = int(meta[f"{arch}.attention.head_count"])
    n_head_kv = int(meta.get(f"{arch}.attention.head_count_kv", n_head))
    if norm == "rms":
        eps = float(meta[f"{arch}.attention.layer_norm_rms_epsilon"])
    elif norm in ("layer", "layer_nobias"):
        eps = float(meta[f"{arch}.attention.layer_norm_epsilon"])
    else:
        raise ValueError(norm)
    if f"{arch}.rope.freq_base" in meta:
        base = float(meta[f"{arch}.rope.freq_base"])
    else:
        base = 10000.0   # llama.cpp's default when the key is absent (the stablelm converter writes none)
        print(f"  ({arch}.rope.freq_base absent: llama.cpp's default {base})")
    hd = int(meta.get(f"{arch}.attention.key_length", n_embd // n_head))
    n_rot = int(meta.get(f"{arch}.rope.dimension_count", hd))
    assert 0 < n_rot <= hd and n_rot % 2 == 0, (n_rot, hd)
    n = len(ids)
    has_qk_norm = "blk.0.attn_q_norm.weight" in tensors or "blk.0.attn_k_norm.weight" in tensors
    assert has_qk_norm == (qk_norm or qk_norm_whole), f"qk_norm={qk_norm} but attn_q/k_norm tensors present: {has_qk_norm}"
    def meta_f(key):
        return float(meta[key]) if key in meta else None
    attn_softcap = meta_f(f"{arch}.attn_logit_softcapping") if softcaps in (True, "final_off") else None
    final_softcap = meta_f(f"{arch}.final_logit_softcapping") if softcaps in (True, "attn_off") else None
    emb_mul = meta_f(f"{arch}.embedding_scale") if multipliers else None
    res_mul = meta_f(f"{arch}.residual_scale") if multipliers else None
    attn_mul = meta_f(f"{arch}.attention.scale") if multipliers else None
    logit_div = meta_f(f"{arch}.logit_scale") if multipliers else None
    assert logit_scale in ("divide", "multiply"), logit_scale
    assert parallel in (None, "two_norms", "one_norm"), parallel
    if f"{arch}.use_parallel_residual" in meta:
        assert bool(meta[f"{arch}.use_parallel_residual"]) == (parallel is not None), (
            meta[f"{arch}.use_parallel_residual"], parallel)
    assert qk_norm_type in ("rms", "layer"), qk_norm_type

    def rms(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

    def layer_norm(x, w, b):
        mu = np.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        return xc / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + eps) * w + b

    def block_norm(x, name):
        if norm in ("rms", "layer_nobias"):
            assert name + ".bias" not in tensors, f"{name}.bias present but norm={norm!r}"
            if norm == "layer_nobias":
                return layer_norm(x, f64(name + ".weight"), 0.0)
            return rms(x, f64(name + ".weight"))
        return layer_norm(x, f64(name + ".weight"), f64(name + ".bias"))

    def qk_head_norm(x, name):
        # per head over head_dim; the weight is [head_dim] or per head [heads, head_dim]
        if qk_norm_type == "layer":
            assert name + ".bias" not in tensors, f"{name}.bias present"
            return layer_norm(x, f64(name + ".weight"), 0.0)
        return rms(x, f64(name + ".weight"))

    def lin(x, name):
        y = x @ f64(name + ".weight").T
        if name + ".bias" in tensors:
            y = y + f64(name + ".bias")
        return y

    pos = np.arange(n, dtype=np.float64)
    inv = base ** (-np.arange(0, n_rot, 2, dtype=np.float64) / n_rot)  # [n_rot/2]
    has_factor_sets = "rope_factors_short.weight" in tensors or "rope_factors_long.weight" in tensors
    assert has_factor_sets == (rope_factors is not None), (has_factor_sets, rope_factors)
    if rope_factors is not None:
        assert rope_factors in ("short", "long"), rope_factors
        ff = f64(f"rope_factors_{rope_factors}.weight")
        used.add("rope_factors_short.weight")
        used.add("rope_factors_long.weight")     # the other set is deliberately not used
        assert ff.shape == inv.shape, (ff.shape, inv.shape)
        inv = inv / ff
    if "rope_freqs.weight" in tensors:
        if rope_freq_factors:
            ff = f64("rope_freqs.weight")
            assert ff.shape == inv.shape, (ff.shape, inv.shape)
            inv = inv / ff
        else:
            used.add("rope_freqs.weight")
    ang = pos[:, None] * inv[None, :]                                   # [n, n_rot/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]          # [n, 1, n_rot/2]
    attn_factor_key = f"{arch}.rope.scaling.attn_factor"
    if attn_factor_key in meta and rope_attn_factor:
        mscale = float(meta[attn_factor_key])
        cos, sin = cos * mscale, sin * mscale

    def rope_full(x):  # x [n, heads, n_rot]
        if rope_style == "neox":
            a, b = x[..., : n_rot // 2], x[..., n_rot // 2:]
            return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
        if rope_style == "norm":
            a, b = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2] = a * cos - b * sin
            out[..., 1::2] = b * cos + a * sin
            return out
        raise ValueError(rope_style)

    def rope(x):  # x [n, heads, hd]
        if n_rot == hd:
            return rope_full(x)
        return np.concatenate([rope_full(x[..., :n_rot]), x[..., n_rot:]], axis=-1)

    def gelu_tanh(x):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))

    def gelu_erf(x):
        import math
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / np.sqrt(2.0)))

    if ffn == "moe":
        n_expert = int(meta[f"{arch}.expert_count"])
        n_used = int(meta[f"{arch}.expert_used_count"])
        assert 0 < n_used < n_expert, (n_used, n_expert)
    margins = []

    def moe(h, p):
        router = h @ f64(p + "ffn_gate_inp.weight").T                     # [n, n_expert]
        assert router.shape[1] == n_expert, router.shape
        pr = np.exp(router - router.max(axis=-1, keepdims=True))
        pr /= pr.sum(axis=-1, keepdims=True)
        order = np.argsort(-pr, axis=-1, kind="stable")
        srt = np.take_along_axis(pr, order, axis=-1)
        margins.append(float((srt[:, n_used - 1] - srt[:, n_used]).min()))
        sel = order[:, :n_used]
        w = np.take_along_axis(pr, sel, axis=-1)
        w = w / w.sum(axis=-1, keepdims=True)
        gate_e, up_e = f64(p + "ffn_gate_exps.weight"), f64(p + "ffn_up_exps.weight")  # [E, ff, embd]
        down_e = f64(p + "ffn_down_exps.weight")                                      # [E, embd, ff]
        out = np.zeros_like(h)
        for t in range(h.shape[0]):
            for j in range(n_used):
                e = sel[t, j]
                g, u = gate_e[e] @ h[t], up_e[e] @ h[t]
                out[t] += w[t, j] * (down_e[e] @ (g / (1.0 + np.exp(-g)) * u))
        return out

    qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
    causal = ki <= qi
    windowed = causal & ((qi - ki) < sliding_window) if sliding_window is not None else causal
    x = f64("token_embd.weight")[np.asarray(ids)]
    if scaled_embedding:
        x = x * np.sqrt(n_embd)
    if emb_mul is not None:
        x = x * emb_mul
    assert norm_place in ("pre", "sandwich", "post"), norm_place

    def residual(x, y, post_name):
        if norm_place != "pre":
            y = block_norm(y, post_name)
        if res_mul is not None:
            y = y * res_mul
        return x + y
    for il in range(n_layer):
        p = f"blk.{il}."
        x_in = x
        layer_windowed = window_period is None or il % window_period < window_period - 1
        mask = np.where(windowed if layer_windowed else causal, 0.0, -np.inf)
        h = block_norm(x, p + "attn_norm") if norm_place != "post" else x
        if p + "attn_qkv.weight" in tensors:
            assert p + "attn_q.weight" not in tensors, "both attn_qkv and attn_q"
            qkv = lin(h, p + "attn_qkv")
            nq, nkv = n_head * hd, n_head_kv * hd
            assert qkv.shape[1] == nq + 2 * nkv, qkv.shape
            q = qkv[:, :nq].reshape(n, n_head, hd)
            k = qkv[:, nq:nq + nkv].reshape(n, n_head_kv, hd)
            v = qkv[:, nq + nkv:].reshape(n, n_head_kv, hd)
        else:
            q = lin(h, p + "attn_q").reshape(n, n_head, hd)
            k = lin(h, p + "attn_k").reshape(n, n_head_kv, hd)
        if qk_norm:
            q = qk_head_norm(q, p + "attn_q_norm")
            k = qk_head_norm(k, p + "attn_k_norm")
        if qk_norm_whole:
            q = rms(q.reshape(n, n_head * hd), f64(p + "attn_q_norm.weight")).reshape(n, n_head, hd)
            k = rms(k.reshape(n, n_head_kv * hd), f64(p + "attn_k_norm.weight")).reshape(n, n_head_kv, hd)
        if no_rope_layer_step is None or (il + 1) % no_rope_layer_step != 0:
            q, k = rope(q), rope(k)
        if p + "attn_qkv.weight" not in tensors:
            v = lin(h, p + "attn_v").reshape(n, n_head_kv, hd)
        group = n_head // n_head_kv
        o = np.empty((n, n_head, hd))
        for hh in range(n_head):
            kv = hh // group
            s = q[:, hh, :] @ k[:, kv, :].T * (attn_mul if attn_mul is not None else 1.0 / np.sqrt(hd))
            if attn_softcap is not None:
                s = attn_softcap * np.tanh(s / attn_softcap)
            s = s + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            o[:, hh, :] = s @ v[:, kv, :]
        attn_out = lin(o.reshape(n, n_head * hd), p + "attn_output")
        if parallel is None:
            x = residual(x, attn_out, p + "post_attention_norm")
            h = block_norm(x, p + "ffn_norm") if norm_place != "post" else x
        else:
            assert norm_place == "pre" and res_mul is None, (norm_place, res_mul)
            if parallel == "two_norms":
                h = block_norm(x_in, p + "ffn_norm")
            else:
                assert p + "ffn_norm.weight" not in tensors, "ffn_norm present but parallel='one_norm'"
                # h: the attn_norm output, shared by attention and MLP
        if ffn == "swiglu":
            g, u = lin(h, p + "ffn_gate"), lin(h, p + "ffn_up")
            y = lin(g / (1.0 + np.exp(-g)) * u, p + "ffn_down")
        elif ffn == "geglu":
            y = lin(gelu_tanh(lin(h, p + "ffn_gate")) * lin(h, p + "ffn_up"), p + "ffn_down")
        elif ffn in ("gelu", "gelu_erf"):
            u = lin(h, p + "ffn_up")
            if f"{arch}.feed_forward_length" in meta:
                assert u.shape[1] == int(meta[f"{arch}.feed_forward_length"]), (u.shape, meta[f"{arch}.feed_forward_length"])
            y = lin(gelu_tanh(u) if ffn == "gelu" else gelu_erf(u), p + "ffn_down")
        elif ffn == "swiglu_fused":
            gu = lin(h, p + "ffn_up")
            n_ff = int(meta[f"{arch}.feed_forward_length"])
            assert gu.shape[1] == 2 * n_ff, (gu.shape, n_ff)
            g, u = gu[:, :n_ff], gu[:, n_ff:]
            y = lin(g / (1.0 + np.exp(-g)) * u, p + "ffn_down")
        elif ffn == "moe":
            y = moe(h, p)
        else:
            raise ValueError(ffn)
        if parallel is None:
            x = residual(x, y, p + "post_ffw_norm")
        else:
            x = x_in + attn_out + y
    x = block_norm(x, "output_norm")
    head = "output" if "output.weight" in tensors else "token_embd"
    logits = lin(x, head)
    if logit_div is not None:
        logits = logits / logit_div if logit_scale == "divide" else logits * logit_div
    if final_softcap is not None:
        logits = final_softcap * np.tanh(logits / final_softcap)
    unused = sorted(set(tensors) - used)
    assert not unused, f"GGUF tensors not used by the numpy forward: {unused}"
    if stats is not None and margins:
        stats["router_min_margin"] = min(margins)
    return logits


def alibi_slopes(n_head: int, max_bias: float) -> np.ndarray:
    """ggml's ALiBi slopes (ggml_soft_max_ext with max_bias): m0 = 2^(-max_bias / n_log2),
    m1 = 2^(-max_bias / 2 / n_log2), n_log2 = the largest power of 2 <= n_head; head h < n_log2
    gets m0^(h+1), the others m1^(2 (h - n_log2) + 1)."""
    n_log2 = 2 ** int(np.floor(np.log2(n_head)))
    m0, m1 = 2.0 ** (-max_bias / n_log2), 2.0 ** (-max_bias / 2.0 / n_log2)
    return np.array([m0 ** (h + 1) if h < n_log2 else m1 ** (2 * (h - n_log2) + 1)
                     for h in range(n_head)], dtype=np.float64)


def numpy_forward_gpt2_bloom(tensors: dict[str, np.ndarray], meta: dict[str, Any], arch: str,
                             ids: list[int], rope_style: str, *, qk_norm: bool = False,
                             sliding_window: int | None = None, positions: str = "learned",
                             stats: dict[str, Any] | None = None) -> np.ndarray:
    """float64 reference for GPT-2 / BLOOM (pre-LayerNorm decoder without RoPE): LayerNorm with
    bias (eps {arch}.attention.layer_norm_epsilon), one fused attn_qkv projection with bias whose
    rows are Q | K | V (n_embd each; multi-head, no GQA), causal attention with scale
    1/sqrt(head_dim), biased attn_output, MLP ffn_down(gelu_tanh(ffn_up(h))) with biases, final
    LayerNorm output_norm, head output.weight or (tied) token_embd.weight. Positions:
      "learned"  GPT-2: x = token_embd[id] + position_embd[p] (position_embd.weight);
      "alibi"    BLOOM: x = LayerNorm(token_embd[id]) with token_embd_norm.{weight,bias}, and the
                 score of query q, key k gets + slope_h * (k - q) (ggml/llama.cpp's -|p0 - p1|
                 for k <= q; transformers adds slope_h * k, equal after the softmax), slopes
                 alibi_slopes(n_head, BLOOM_MAX_ALIBI_BIAS) ("alibi_off": slopes 0, used to
                 show that ALiBi matters).
    Every GGUF tensor must be used (asserted)."""
    assert rope_style == "none" and not qk_norm and sliding_window is None
    used: set[str] = set()

    def f64(nm):
        used.add(nm)
        return tensors[nm].astype(np.float64)
    n_layer = int(meta[f"{arch}.block_count"])
    n_embd = int(meta[f"{arch}.embedding_length"])
    n_head = int(meta[f"{arch}.attention.head_count"])
    n_head_kv = int(meta.get(f"{arch}.attention.head_count_kv", n_head))
    assert n_head_kv == n_head, (n_head, n_head_kv)
    n_ff = int(meta[f"{arch}.feed_forward_length"])
    eps = float(meta[f"{arch}.attention.layer_norm_epsilon"])
    hd = n_embd // n_head
    n = len(ids)

    def layer_norm(x, name):
        w, b = f64(name + ".weight"), f64(name + ".bias")
        mu = np.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        return xc / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + eps) * w + b

    def lin(x, name):
        return x @ f64(name + ".weight").T + f64(name + ".bias")

    def gelu_tanh(x):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))

    x = f64("token_embd.weight")[np.asarray(ids)]
    qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = np.where(ki <= qi, 0.0, -np.inf)
    if positions == "learned":
        x = x + f64("position_embd.weight")[:n]
        bias = np.zeros((n_head, n, n))
    elif positions in ("alibi", "alibi_off"):
        x = layer_norm(x, "token_embd_norm")
        slopes = alibi_slopes(n_head, BLOOM_MAX_ALIBI_BIAS if positions == "alibi" else 0.0)
        bias = slopes[:, None, None] * (ki - qi)[None, :, :].astype(np.float64)
    else:
        raise ValueError(positions)
    for il in range(n_layer):
        p = f"blk.{il}."
        h = layer_norm(x, p + "attn_norm")
        qkv = lin(h, p + "attn_qkv")
        assert qkv.shape[1] == 3 * n_embd, qkv.shape
        q = qkv[:, :n_embd].reshape(n, n_head, hd)
        k = qkv[:, n_embd:2 * n_embd].reshape(n, n_head, hd)
        v = qkv[:, 2 * n_embd:].reshape(n, n_head, hd)
        o = np.empty((n, n_head, hd))
        for hh in range(n_head):
            sc = q[:, hh, :] @ k[:, hh, :].T / np.sqrt(hd) + bias[hh] + mask
            sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
            sc /= sc.sum(axis=-1, keepdims=True)
            o[:, hh, :] = sc @ v[:, hh, :]
        x = x + lin(o.reshape(n, n_embd), p + "attn_output")
        h = layer_norm(x, p + "ffn_norm")
        u = lin(h, p + "ffn_up")
        assert u.shape[1] == n_ff, (u.shape, n_ff)
        x = x + lin(gelu_tanh(u), p + "ffn_down")
    x = layer_norm(x, "output_norm")
    if "output.weight" in tensors:
        logits = x @ f64("output.weight").T
    else:
        logits = x @ f64("token_embd.weight").T
    unused = sorted(set(tensors) - used)
    assert not unused, f"GGUF tensors not used by the numpy forward: {unused}"
    return logits


def numpy_forward_lfm2(tensors: dict[str, np.ndarray], meta: dict[str, Any], arch: str,
                       ids: list[int], rope_style: str, *, qk_norm: bool = True,
                       sliding_window: int | None = None, split: int | None = None,
                       carry_conv_state: bool = True,
                       stats: dict[str, Any] | None = None) -> np.ndarray:
    """float64 reference for Liquid LFM2 (hybrid of gated short-convolution and attention
    layers), everything read from the GGUF. Layer il is a ShortConv layer iff
    {arch}.attention.head_count_kv[il] == 0 (llama.cpp: is_recr = n_head_kv(il) == 0), an
    attention layer otherwise. Every block, with RMSNorm rms(x, w) = x / sqrt(mean(x^2) + eps) * w
    (eps {arch}.attention.layer_norm_rms_epsilon):
        h = rms(x, attn_norm)                  (transformers' operator_norm)
        x = x + op(h)
        x = x + ffn_down(silu(ffn_gate(rms(x, ffn_norm))) * ffn_up(rms(x, ffn_norm)))
    then rms(x, token_embd_norm) (the FINAL norm: llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2 is named
    "token_embd_norm"; transformers' model.embedding_norm), head output.weight or (tied)
    token_embd.weight.
      ShortConv op (L = {arch}.shortconv.l_cache taps): bcx = shortconv.in_proj(h) ([3E] per token;
        in_proj.weight ggml ne [E, 3E]); B = bcx[0:E], C = bcx[E:2E], X = bcx[2E:3E]; bx = B * X;
        with s = the L-1 previous bx rows (oldest first; zeros at the sequence start) followed by
        this chunk's bx rows, conv[t, e] = sum_{i=0}^{L-1} s[t + i, e] * w[e, i], where w is
        shortconv.conv.weight (numpy [E, L], ggml ne [L, E]; w[e, L-1] multiplies the current
        token's bx, w[e, 0] the one L-1 tokens back); y = shortconv.out_proj(C * conv). The new
        state is the last L-1 rows of s.
      attention op: q/k/v projections, per-head RMSNorm of q and k over head_dim (attn_q_norm /
        attn_k_norm, [head_dim], the same eps), RoPE (NEOX: rotate halves) with
        {arch}.rope.freq_base on {arch}.rope.dimension_count dims, causal GQA softmax(q k^T /
        sqrt(head_dim)) v, attn_output.
    split: run ids[:split] then ids[split:] as two chunks, carrying each ShortConv layer's state
    and each attention layer's K/V (positions continue); carry_conv_state=False resets the conv
    state to zeros at the second chunk (used to show that the state matters). Every GGUF tensor
    must be used (asserted)."""
    assert rope_style == "neox" and qk_norm and sliding_window is None, (rope_style, qk_norm, sliding_window)
    used: set[str] = set()

    def f64(nm):
        used.add(nm)
        return tensors[nm].astype(np.float64)
    n_layer = int(meta[f"{arch}.block_count"])
    n_embd = int(meta[f"{arch}.embedding_length"])
    n_head = int(meta[f"{arch}.attention.head_count"])
    hkv = meta[f"{arch}.attention.head_count_kv"]
    hkv = [int(v) for v in hkv] if isinstance(hkv, list) else [int(hkv)] * n_layer
    assert len(hkv) == n_layer, hkv
    n_ff = meta[f"{arch}.feed_forward_length"]
    n_ff = [int(v) for v in n_ff] if isinstance(n_ff, list) else [int(n_ff)] * n_layer
    L = int(meta[f"{arch}.shortconv.l_cache"])
    assert L > 1, L
    eps = float(meta[f"{arch}.attention.layer_norm_rms_epsilon"])
    base = float(meta[f"{arch}.rope.freq_base"])
    hd = int(meta.get(f"{arch}.attention.key_length", n_embd // n_head))
    n_rot = int(meta.get(f"{arch}.rope.dimension_count", hd))
    assert n_rot == hd, (n_rot, hd)

    def rms(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

    def lin(x, nm):
        assert nm + ".bias" not in tensors, f"{nm}.bias present"
        return x @ f64(nm + ".weight").T
    inv = base ** (-np.arange(0, n_rot, 2, dtype=np.float64) / n_rot)

    def rope(x, pos):  # x [n, heads, hd], NEOX (rotate halves)
        ang = pos[:, None] * inv[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., : n_rot // 2], x[..., n_rot // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)

    chunks = [list(ids)] if split is None else [list(ids[:split]), list(ids[split:])]
    conv_state = {il: np.zeros((L - 1, n_embd)) for il in range(n_layer) if hkv[il] == 0}
    kv_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    head = "output" if "output.weight" in tensors else "token_embd"
    out, p0 = [], 0
    for ci, chunk in enumerate(chunks):
        n = len(chunk)
        pos = p0 + np.arange(n, dtype=np.float64)
        x = f64("token_embd.weight")[np.asarray(chunk)]
        for il in range(n_layer):
            p = f"blk.{il}."
            h = rms(x, f64(p + "attn_norm.weight"))
            if hkv[il] == 0:
                for nm in ("attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm"):
                    assert p + nm + ".weight" not in tensors, f"{p}{nm} in a ShortConv layer"
                bcx = lin(h, p + "shortconv.in_proj")                       # [n, 3E]
                assert bcx.shape[1] == 3 * n_embd, bcx.shape
                b, c, xx = bcx[:, :n_embd], bcx[:, n_embd:2 * n_embd], bcx[:, 2 * n_embd:]
                w = f64(p + "shortconv.conv.weight")                        # [E, L]
                assert w.shape == (n_embd, L), w.shape
                if ci > 0 and not carry_conv_state:
                    conv_state[il] = np.zeros((L - 1, n_embd))
                s = np.concatenate([conv_state[il], b * xx], axis=0)       # [L-1+n, E]
                conv = np.zeros((n, n_embd))
                for i in range(L):
                    conv += s[i:i + n] * w[:, i]
                conv_state[il] = s[-(L - 1):]
                y = lin(c * conv, p + "shortconv.out_proj")
            else:
                for nm in ("shortconv.in_proj", "shortconv.conv", "shortconv.out_proj"):
                    assert p + nm + ".weight" not in tensors, f"{p}{nm} in an attention layer"
                nkv = hkv[il]
                q = lin(h, p + "attn_q").reshape(n, n_head, hd)
                k = lin(h, p + "attn_k").reshape(n, nkv, hd)
                v = lin(h, p + "attn_v").reshape(n, nkv, hd)
                q = rope(rms(q, f64(p + "attn_q_norm.weight")), pos)
                k = rope(rms(k, f64(p + "attn_k_norm.weight")), pos)
                if il in kv_cache:
                    k = np.concatenate([kv_cache[il][0], k], axis=0)
                    v = np.concatenate([kv_cache[il][1], v], axis=0)
                kv_cache[il] = (k, v)
                qpos, kpos = pos[:, None], np.arange(k.shape[0], dtype=np.float64)[None, :]
                mask = np.where(kpos <= qpos, 0.0, -np.inf)
                group = n_head // nkv
                o = np.empty((n, n_head, hd))
                for hh in range(n_head):
                    sc = q[:, hh, :] @ k[:, hh // group, :].T / np.sqrt(hd) + mask
                    sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
                    sc /= sc.sum(axis=-1, keepdims=True)
                    o[:, hh, :] = sc @ v[:, hh // group, :]
                y = lin(o.reshape(n, n_head * hd), p + "attn_output")
            x = x + y
            h = rms(x, f64(p + "ffn_norm.weight"))
            g, u = lin(h, p + "ffn_gate"), lin(h, p + "ffn_up")
            assert g.shape[1] == n_ff[il], (g.shape, n_ff[il])
            x = x + lin(g / (1.0 + np.exp(-g)) * u, p + "ffn_down")
        x = rms(x, f64("token_embd_norm.weight"))
        out.append(lin(x, head))
        p0 += n
    unused = sorted(set(tensors) - used)
    assert not unused, f"GGUF tensors not used by the numpy forward: {unused}"
    return np.concatenate(out, axis=0)


FAMILIES: dict[str, Family] = {
    "qwen2": Family(
        config_cls=_qwen2_config,
        model_cls=_qwen2_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
            hidden_act="silu", attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.qwen", "Qwen2Model"),
        gguf_arch="qwen2",
        llama_arch_enum="LLM_ARCH_QWEN2",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
    ),
    "qwen3": Family(
        config_cls=_qwen3_config,
        model_cls=_qwen3_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
            attention_bias=False, hidden_act="silu", attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # q_norm/k_norm are "...self_attn.q_norm.weight": norm rule
        converter_class=("conversion.qwen", "Qwen3Model"),
        gguf_arch="qwen3",
        llama_arch_enum="LLM_ARCH_QWEN3",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        qk_norm=True,
    ),
    "mistral": Family(
        config_cls=_mistral_config,
        model_cls=_mistral_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-5, tie_word_embeddings=False,
            sliding_window=MISTRAL_SLIDING_WINDOW,
            hidden_act="silu", attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.llama", "LlamaModel"),  # MistralForCausalLM is registered there
        gguf_arch="llama",
        llama_arch_enum="LLM_ARCH_LLAMA",
        rope_style="norm",                           # the converter permutes q/k rows to match
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        sliding_window=MISTRAL_SLIDING_WINDOW,
        gguf_qk_permuted=True,
        gguf_added_keys={"llama.attention.sliding_window": ("UINT32", MISTRAL_SLIDING_WINDOW)},
    ),
    "qwen3moe": Family(
        config_cls=_qwen3moe_config,
        model_cls=_qwen3moe_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
            attention_bias=False, hidden_act="silu", attention_dropout=0.0,
            num_experts=4, num_experts_per_tok=2, norm_topk_prob=True, moe_intermediate_size=64,
            decoder_sparse_step=1, mlp_only_layers=[], output_router_logits=False,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # router mlp.gate.weight: 2-D weight; experts: 3-D rule
        converter_class=("conversion.qwen", "Qwen3MoeModel"),
        gguf_arch="qwen3moe",
        llama_arch_enum="LLM_ARCH_QWEN3MOE",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate_inp.weight", "blk.{bid}.ffn_gate_exps.weight",
            "blk.{bid}.ffn_up_exps.weight", "blk.{bid}.ffn_down_exps.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        qk_norm=True,
        numpy_options={"ffn": "moe"},
        split_gate_up_experts=True,
    ),
    "stablelm": Family(
        config_cls=_stablelm_config,
        model_cls=_stablelm_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                             "partial_rotary_factor": 0.25},           # n_rot 4
            layer_norm_eps=1e-5, tie_word_embeddings=False,
            use_qkv_bias=True, qk_layernorm=False, use_parallel_residual=False,
            hidden_act="silu", hidden_dropout=0.0, attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # LayerNorm weights: norm rule, their biases: bias rule
        converter_class=("conversion.stablelm", "StableLMModel"),
        gguf_arch="stablelm",
        llama_arch_enum="LLM_ARCH_STABLELM",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output_norm.bias", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_norm.bias",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight", "blk.{bid}.ffn_norm.bias",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"norm": "layer"},
    ),
    "starcoder2": Family(
        config_cls=_starcoder2_config,
        model_cls=_starcoder2_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            norm_epsilon=1e-5, tie_word_embeddings=False, use_bias=True,
            sliding_window=STARCODER2_SLIDING_WINDOW,
            hidden_act="gelu_pytorch_tanh",
            attention_dropout=0.0, residual_dropout=0.0, embedding_dropout=0.0,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.starcoder", "StarCoder2Model"),
        gguf_arch="starcoder2",
        llama_arch_enum="LLM_ARCH_STARCODER2",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output_norm.bias", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_norm.bias",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.attn_output.bias",
            "blk.{bid}.ffn_norm.weight", "blk.{bid}.ffn_norm.bias",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_up.bias",
            "blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down.bias",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"norm": "layer", "ffn": "gelu"},
        sliding_window=STARCODER2_SLIDING_WINDOW,
        gguf_added_keys={"starcoder2.attention.sliding_window": ("UINT32", STARCODER2_SLIDING_WINDOW)},
    ),
    "llama3": Family(
        config_cls=_llama_config,
        model_cls=_llama_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=256,
            rope_parameters=dict(LLAMA3_ROPE),
            rms_norm_eps=1e-5, tie_word_embeddings=False,
            attention_bias=False, mlp_bias=False,
            hidden_act="silu", attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.llama", "LlamaModel"),
        gguf_arch="llama",
        llama_arch_enum="LLM_ARCH_LLAMA",
        rope_style="norm",                           # the converter permutes q/k rows to match
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight", "rope_freqs.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        gguf_qk_permuted=True,
        gguf_generated_tensors=["rope_freqs.weight"],
        llama3_rope=True,
    ),
    "gpt2": Family(
        config_cls=_transformers_class("GPT2Config"),
        model_cls=_transformers_class("GPT2LMHeadModel"),
        config_kwargs=dict(
            vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=256,
            n_ctx=256,                                   # read by the converter (context_length)
            n_inner=None,                                # MLP 4 * 64 = 256 (the converter hard-codes 4 * n_embd)
            activation_function="gelu_new", layer_norm_epsilon=1e-5,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
            scale_attn_weights=True, scale_attn_by_inverse_layer_idx=False,
            reorder_and_upcast_attn=False, tie_word_embeddings=True,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # wte/wpe: embedding rules, ln_*: norm rule
        converter_class=("conversion.gpt2", "GPT2Model"),
        gguf_arch="gpt2",
        llama_arch_enum="LLM_ARCH_GPT2",
        rope_style="none",
        required_tensors=[
            "token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_norm.bias",
            "blk.{bid}.attn_qkv.weight", "blk.{bid}.attn_qkv.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.attn_output.bias",
            "blk.{bid}.ffn_norm.weight", "blk.{bid}.ffn_norm.bias",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_up.bias",
            "blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down.bias",
        ],
        numpy_forward=numpy_forward_gpt2_bloom,
        numpy_options={"positions": "learned"},
        gguf_transposed=(".c_attn.weight", ".c_proj.weight", ".c_fc.weight"),
    ),
    "phi3": Family(
        config_cls=_transformers_class("Phi3Config"),
        model_cls=_transformers_class("Phi3ForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256, original_max_position_embeddings=PHI3_ORIGINAL_MAX_POS,
            rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                             "short_factor": list(PHI3_SHORT_FACTORS),
                             "long_factor": list(PHI3_LONG_FACTORS),
                             "original_max_position_embeddings": PHI3_ORIGINAL_MAX_POS},
            rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None,
            hidden_act="silu", resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.phi", "Phi3MiniModel"),
        gguf_arch="phi3",
        llama_arch_enum="LLM_ARCH_PHI3",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "rope_factors_short.weight", "rope_factors_long.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_qkv.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"ffn": "swiglu_fused", "rope_factors": "short"},
        gguf_generated_tensors=["rope_factors_long.weight", "rope_factors_short.weight"],
        longrope=True,
    ),
    "smollm3": Family(
        config_cls=_transformers_class("SmolLM3Config"),
        model_cls=_transformers_class("SmolLM3ForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=False,
            no_rope_layers=None, no_rope_layer_interval=SMOLLM3_NO_ROPE_STEP,
            use_sliding_window=False, sliding_window=None,
            attention_bias=False, mlp_bias=False, hidden_act="silu", attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.llama", "SmolLM3Model"),
        gguf_arch="smollm3",
        llama_arch_enum="LLM_ARCH_SMOLLM3",
        rope_style="norm",                           # the converter permutes q/k rows (LlamaModel)
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"no_rope_layer_step": SMOLLM3_NO_ROPE_STEP},
        gguf_qk_permuted=True,
        no_rope_layer_step=SMOLLM3_NO_ROPE_STEP,
    ),
    "bloom": Family(
        config_cls=_transformers_class("BloomConfig"),
        model_cls=_transformers_class("BloomForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, n_layer=2, n_head=4, layer_norm_epsilon=1e-5,
            seq_length=256,                              # read by the converter (context_length;
            #                                              without it the converter writes n_embd = 64)
            apply_residual_connection_post_layernorm=False,
            hidden_dropout=0.0, attention_dropout=0.0, pretraining_tp=1, slow_but_exact=False,
            tie_word_embeddings=True,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # word_embeddings: embedding rule; *layernorm*, ln_f: norm rule
        converter_class=("conversion.bloom", "BloomModel"),
        gguf_arch="bloom",
        llama_arch_enum="LLM_ARCH_BLOOM",
        rope_style="none",
        required_tensors=[
            "token_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias",
            "output_norm.weight", "output_norm.bias",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_norm.bias",
            "blk.{bid}.attn_qkv.weight", "blk.{bid}.attn_qkv.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.attn_output.bias",
            "blk.{bid}.ffn_norm.weight", "blk.{bid}.ffn_norm.bias",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_up.bias",
            "blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down.bias",
        ],
        numpy_forward=numpy_forward_gpt2_bloom,
        numpy_options={"positions": "alibi"},
        bloom_qkv=True,
    ),
    "gemma2": Family(
        config_cls=_transformers_class("Gemma2Config"),
        model_cls=_transformers_class("Gemma2ForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            query_pre_attn_scalar=16,                    # llama.cpp: 1/sqrt(key_length) unless 46 layers
            hidden_activation="gelu_pytorch_tanh", max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=True,
            sliding_window=GEMMA2_SLIDING_WINDOW, layer_types=None,   # default: sliding, full, sliding, full
            attn_logit_softcapping=GEMMA2_ATTN_SOFTCAP, final_logit_softcapping=GEMMA2_FINAL_SOFTCAP,
            attention_bias=False, attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # Gemma's norm weights w (used as 1 + w): 1 + 0.3 randn
        converter_class=("conversion.gemma", "Gemma2Model"),
        gguf_arch="gemma2",
        llama_arch_enum="LLM_ARCH_GEMMA2",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_output.weight", "blk.{bid}.post_attention_norm.weight",
            "blk.{bid}.ffn_norm.weight", "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight",
            "blk.{bid}.ffn_down.weight", "blk.{bid}.post_ffw_norm.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"ffn": "geglu", "norm_place": "sandwich", "window_period": 2, "scaled_embedding": True},
        sliding_window=GEMMA2_SLIDING_WINDOW,
        norm_plus_one=True,
        softcaps=True,
    ),
    "olmo2": Family(
        config_cls=_transformers_class("Olmo2Config"),
        model_cls=_transformers_class("Olmo2ForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            hidden_act="silu", max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.olmo", "Olmo2Model"),
        gguf_arch="olmo2",
        llama_arch_enum="LLM_ARCH_OLMO2",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.post_attention_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
            "blk.{bid}.post_ffw_norm.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"norm_place": "post", "qk_norm_whole": True},
    ),
    "granite": Family(
        config_cls=_transformers_class("GraniteConfig"),
        model_cls=_transformers_class("GraniteForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            hidden_act="silu", max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
            attention_dropout=0.0,
            **GRANITE_MULTIPLIERS,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.granite", "GraniteModel"),
        gguf_arch="granite",
        llama_arch_enum="LLM_ARCH_GRANITE",
        rope_style="norm",                           # GraniteModel is a LlamaModel: q/k rows permuted
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        gguf_qk_permuted=True,
        multipliers=True,
    ),
    "gptneox": Family(
        config_cls=_transformers_class("GPTNeoXConfig"),
        model_cls=_transformers_class("GPTNeoXForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=256, num_hidden_layers=2,
            num_attention_heads=4,                                     # head_dim 16, no GQA
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                             "partial_rotary_factor": 0.25},           # n_rot 4 (Pythia's rotary_pct)
            layer_norm_eps=1e-5, hidden_act="gelu", use_parallel_residual=True,
            attention_bias=True, tie_word_embeddings=False,
            attention_dropout=0.0, hidden_dropout=0.0,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # embed_in: embedding rule; embed_out: 2-D weight
        converter_class=("conversion.gptneox", "GPTNeoXModel"),
        gguf_arch="gptneox",
        llama_arch_enum="LLM_ARCH_GPTNEOX",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output_norm.bias", "output.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_norm.bias",
            "blk.{bid}.attn_qkv.weight", "blk.{bid}.attn_qkv.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.attn_output.bias",
            "blk.{bid}.ffn_norm.weight", "blk.{bid}.ffn_norm.bias",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_up.bias",
            "blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down.bias",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"norm": "layer", "ffn": "gelu_erf", "parallel": "two_norms"},
        bloom_qkv=True,                              # query_key_value rows per head [q, k, v] -> Q|K|V
        converter_shims=(_neox_rotary_pct_shim,),
    ),
    "phi2": Family(
        config_cls=_transformers_class("PhiConfig"),
        model_cls=_transformers_class("PhiForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64,
            intermediate_size=256,                       # the phi2 converter hard-codes 4 * hidden_size
            num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=4,                       # the converter writes head_count_kv = head_count
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                             "partial_rotary_factor": 0.5},            # n_rot 8
            layer_norm_eps=1e-5, hidden_act="gelu_new", qk_layernorm=False,
            tie_word_embeddings=False, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # incl. lm_head.bias: bias rule
        converter_class=("conversion.phi", "Phi2Model"),
        gguf_arch="phi2",
        llama_arch_enum="LLM_ARCH_PHI2",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output_norm.bias",
            "output.weight", "output.bias",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.attn_norm.bias",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.attn_output.bias",
            "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_up.bias",
            "blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down.bias",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"norm": "layer", "ffn": "gelu", "parallel": "one_norm"},
    ),
    "command-r": Family(
        config_cls=_transformers_class("CohereConfig"),
        model_cls=_transformers_class("CohereForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            layer_norm_eps=1e-5, logit_scale=COMMAND_R_LOGIT_SCALE, hidden_act="silu",
            attention_bias=False, attention_dropout=0.0, tie_word_embeddings=True,
            use_qk_norm=False,
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.command_r", "CommandR2Model"),
        gguf_arch="command-r",
        llama_arch_enum="LLM_ARCH_COMMAND_R",
        rope_style="norm",                           # Cohere's own RoPE rotates adjacent pairs: no permutation
        required_tensors=[
            "token_embd.weight", "output_norm.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        numpy_options={"norm": "layer_nobias", "parallel": "one_norm", "logit_scale": "multiply"},
        logit_scale_check=True,
    ),
    "command-r-qknorm": Family(
        config_cls=_transformers_class("CohereConfig"),
        model_cls=_transformers_class("CohereForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            layer_norm_eps=1e-5, logit_scale=COMMAND_R_LOGIT_SCALE, hidden_act="silu",
            attention_bias=False, attention_dropout=0.0, tie_word_embeddings=True,
            use_qk_norm=True,                            # per-head q/k LayerNorm, weights [heads, head_dim]
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # q_norm/k_norm [heads, head_dim]: norm rule
        converter_class=("conversion.command_r", "CommandR2Model"),
        gguf_arch="command-r",
        llama_arch_enum="LLM_ARCH_COMMAND_R",
        rope_style="norm",
        required_tensors=[
            "token_embd.weight", "output_norm.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
            "blk.{bid}.attn_output.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
            "blk.{bid}.attn_q_norm.weight", "blk.{bid}.attn_k_norm.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
        qk_norm=True,
        numpy_options={"norm": "layer_nobias", "parallel": "one_norm", "logit_scale": "multiply",
                       "qk_norm_type": "layer"},
        logit_scale_check=True,
    ),
    "lfm2": Family(
        config_cls=_transformers_class("Lfm2Config"),
        model_cls=_transformers_class("Lfm2ForCausalLM"),
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, num_hidden_layers=4,
            intermediate_size=128, block_auto_adjust_ff_dim=False,   # FFN width = 128 as given (with the
            #                                              auto adjustment both transformers and the converter
            #                                              would use 256 * ceil(int(2 * 128 / 3) / 256) = 256)
            block_multiple_of=256, block_ffn_dim_multiplier=1.0,     # read by the converter (unused here)
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            layer_types=list(LFM2_LAYER_TYPES), full_attn_idxs=[1, 3],
            conv_L_cache=LFM2_CONV_L_CACHE, conv_bias=False,
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            norm_eps=1e-5, tie_word_embeddings=True,                 # LFM2's default: tied head
            bos_token_id=1, eos_token_id=2, pad_token_id=None,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,           # conv.conv.weight [E, 1, L]: conv rule (N(0, CONV_STD))
        converter_class=("conversion.lfm2", "LFM2Model"),
        gguf_arch="lfm2",
        llama_arch_enum="LLM_ARCH_LFM2",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "token_embd_norm.weight",
            "blk.{bid}.attn_norm.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
            # ShortConv layers 0 and 2
            "blk.0.shortconv.conv.weight", "blk.0.shortconv.in_proj.weight", "blk.0.shortconv.out_proj.weight",
            "blk.2.shortconv.conv.weight", "blk.2.shortconv.in_proj.weight", "blk.2.shortconv.out_proj.weight",
            # attention layers 1 and 3
            "blk.1.attn_q.weight", "blk.1.attn_k.weight", "blk.1.attn_v.weight", "blk.1.attn_output.weight",
            "blk.1.attn_q_norm.weight", "blk.1.attn_k_norm.weight",
            "blk.3.attn_q.weight", "blk.3.attn_k.weight", "blk.3.attn_v.weight", "blk.3.attn_output.weight",
            "blk.3.attn_q_norm.weight", "blk.3.attn_k_norm.weight",
        ],
        numpy_forward=numpy_forward_lfm2,
        qk_norm=True,
        gguf_squeezed=(".conv.conv.weight",),
        conv_state_split=LFM2_SPLIT,
    ),
}

import zoo_families  # noqa: E402  (tools/reference/zoo_families: the issue-40 families)
zoo_families.register(sys.modules[__name__])
import zoo_families.issue39  # noqa: E402  (tools/reference/zoo_families/issue39.py: the issue-39 MoE/MLA families)
zoo_families.issue39.register(sys.modules[__name__])
import zoo_families.issue38  # noqa: E402  (tools/reference/zoo_families/issue38.py: the issue-38 state-space families)
zoo_families.issue38.register(sys.modules[__name__])


# ----------------------------------------------------------------------------------------
# the converter


DUMMY_BOS, DUMMY_EOS = 1, 2


def make_dummy_set_vocab(calls: list[int]):
    def dummy_set_vocab(self) -> None:
        """Replacement for the converter's set_vocab: a GPT-2-style ("gpt2", pre "default")
        vocabulary of vocab_size tokens "<t0>".."<tN-1>", all NORMAL except BOS (1) and EOS
        (2), which are CONTROL; no BOS/EOS added automatically. A "gpt2" vocabulary needs a
        merges array (llama.cpp and archetype both require the key, and gguf-py drops an
        empty array), so it has one merge, "< t", whose result is not a token: it never
        applies. The fixture only uses token ids."""
        import gguf
        n = int(self.hparams["vocab_size"])
        tokens = [f"<t{i}>" for i in range(n)]
        types = [gguf.TokenType.NORMAL] * n
        types[DUMMY_BOS] = gguf.TokenType.CONTROL
        types[DUMMY_EOS] = gguf.TokenType.CONTROL
        w = self.gguf_writer
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(["< t"])
        w.add_bos_token_id(DUMMY_BOS)
        w.add_eos_token_id(DUMMY_EOS)
        w.add_add_bos_token(False)
        w.add_add_eos_token(False)
        calls.append(n)
    return dummy_set_vocab


def convert_to_gguf(fam: Family, llama_cpp: Path, hf_dir: Path, out_file: Path, model_name: str,
                    shims_applied: list[str] | None = None):
    """Runs llama.cpp's convert_hf_to_gguf.main() in this process with the family's
    converter class's set_vocab replaced and, for a family with converter_shims, its
    set_gguf_parameters wrapped so that each shim edits self.hparams first (what the shims
    did is appended to shims_applied)."""
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    sys.path.insert(0, str(llama_cpp))
    import gguf  # noqa: F401  (the tree's gguf-py)
    assert Path(gguf.__file__).resolve().is_relative_to((llama_cpp / "gguf-py").resolve()), gguf.__file__
    import importlib
    convert = importlib.import_module("convert_hf_to_gguf")
    mod = importlib.import_module(fam.converter_class[0])
    cls = mod
    for part in fam.converter_class[1].split("."):      # "Outer.Inner" for a nested class (Ministral 3)
        cls = getattr(cls, part)
    calls: list[int] = []
    original = cls.__dict__.get("set_vocab")
    cls.set_vocab = make_dummy_set_vocab(calls)
    original_params = cls.__dict__.get("set_gguf_parameters")
    if fam.converter_shims:
        inner = cls.set_gguf_parameters          # the class's own or the inherited one

        def shimmed_set_gguf_parameters(self):
            for shim in fam.converter_shims:
                if (what := shim(self.hparams)) is not None and shims_applied is not None:
                    shims_applied.append(what)
            return inner(self)
        cls.set_gguf_parameters = shimmed_set_gguf_parameters
    original_init = cls.__dict__.get("__init__")
    if fam.converter_hparams is not None:
        init_inner = cls.__init__                # the class's own or the inherited one

        model_base = importlib.import_module("conversion.base").ModelBase

        def shimmed_init(self, dir_model, *args, **kwargs):
            # the class gets the edited hparams, and so does any ModelBase.load_hparams call made while it
            # initialises (NemotronHModel.__init__ decides MoE or not from its own load_hparams)
            assert kwargs.get("hparams") is None, "the converter passed hparams itself"
            hparams, notes = fam.converter_hparams(Path(dir_model))
            if shims_applied is not None:
                shims_applied.extend(notes)
            saved_load = model_base.__dict__["load_hparams"]
            model_base.load_hparams = staticmethod(lambda *a, **k: json.loads(json.dumps(hparams)))
            try:
                init_inner(self, dir_model, *args, hparams=hparams, **kwargs)
            finally:
                model_base.load_hparams = saved_load
        cls.__init__ = shimmed_init
    argv = ["convert_hf_to_gguf.py", str(hf_dir), "--outtype", "f32", "--outfile", str(out_file),
            "--model-name", model_name, *fam.converter_args]
    if fam.converter_args and shims_applied is not None:
        shims_applied.append(f"convert_hf_to_gguf.py run with the extra arguments {list(fam.converter_args)} "
                             f"(the family module's docstring says why)")
    saved_argv = sys.argv
    try:
        sys.argv = argv
        convert.main()
    finally:
        sys.argv = saved_argv
        if original is not None:
            cls.set_vocab = original
        else:
            del cls.set_vocab                   # inherited before: back to the base class's
        if fam.converter_hparams is not None:
            if original_init is not None:
                cls.__init__ = original_init
            else:
                del cls.__init__
        if fam.converter_shims:
            if original_params is not None:
                cls.set_gguf_parameters = original_params
            else:
                del cls.set_gguf_parameters
    assert calls, f"{fam.converter_class[1]}.set_vocab was not the one called: the converter picked another class"
    return argv[1:]


def llama_cpp_commit(llama_cpp: Path, override: str | None) -> str:
    if override:
        return override
    if (llama_cpp / "COMMIT").is_file():
        return (llama_cpp / "COMMIT").read_text().strip()
    try:
        return subprocess.run(["git", "-C", str(llama_cpp), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except Exception:
        return "unknown"


def rope_style_in_llama_cpp(llama_cpp: Path, arch_enum: str) -> str | None:
    """Which RoPE llama.cpp's llama_model_rope_type() returns for arch_enum (the first
    `return` after its `case`), or None when the tree has no src/llama-model.cpp."""
    src = llama_cpp / "src" / "llama-model.cpp"
    if not src.is_file():
        return None
    text = src.read_text()
    start = text.find("llama_rope_type llama_model_rope_type(")
    assert start >= 0, "llama_model_rope_type not found"
    end = text.find("\n}\n", start)
    body = text[start:end]
    m = re.search(r"case\s+" + re.escape(arch_enum) + r"\s*:", body)
    assert m, f"{arch_enum} not in llama_model_rope_type"
    r = re.search(r"return\s+([^;]+);", body[m.end():])
    value = r.group(1).strip()
    if (mr := re.fullmatch(r"model->hparams\.use_mrope\(\)\s*\?\s*LLAMA_ROPE_TYPE_MROPE\s*:\s*(\w+)", value)):
        value = mr.group(1)     # GLM-4: M-RoPE only for the vision model (rope.dimension_sections); text: this
    return {"LLAMA_ROPE_TYPE_NEOX": "neox", "LLAMA_ROPE_TYPE_NORM": "norm",
            "LLAMA_ROPE_TYPE_NONE": "none"}.get(value, value)


def add_gguf_keys(path: Path, added: dict[str, tuple[str, Any]]) -> None:
    """Rewrites the GGUF at path with the keys in `added` (name -> (GGUFValueType name,
    value)) appended after the existing ones, using gguf-py's copy routine (the one behind
    its gguf-new-metadata tool). Asserts that every other key (order, type, value) and
    every tensor (name, shape, type, bytes) is unchanged."""
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata
    tmp = path.with_name(path.name + ".edit")
    reader = gguf.GGUFReader(str(path), "r")
    for key in added:
        assert reader.get_field(key) is None, f"{key} already in {path}"
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(str(tmp), arch=arch, endianess=reader.endianess)
    if (alignment := reader.get_field(gguf.Keys.General.ALIGNMENT)) is not None:
        writer.data_alignment = alignment.contents()
    new = {k: MetadataDetails(gguf.GGUFValueType[t], v) for k, (t, v) in added.items()}
    copy_with_new_metadata(reader, writer, new, [])
    del reader

    def snapshot(p: Path):
        r = gguf.GGUFReader(str(p), "r")
        kv = [(f.name, [int(t) for t in f.types], f.contents()) for f in r.fields.values()
              if not f.name.startswith("GGUF.")]
        ts = [(t.name, [int(d) for d in t.shape], int(t.tensor_type), np.array(t.data).tobytes())
              for t in r.tensors]
        return kv, ts
    kv0, ts0 = snapshot(path)
    kv1, ts1 = snapshot(tmp)
    assert ts1 == ts0, "tensors changed by the GGUF rewrite"
    assert kv1[: len(kv0)] == kv0, "existing keys changed by the GGUF rewrite"
    assert [k for k, _, _ in kv1[len(kv0):]] == list(added), kv1[len(kv0):]
    for (k, types, v) in kv1[len(kv0):]:
        assert types == [int(gguf.GGUFValueType[added[k][0]])] and v == added[k][1], (k, types, v)
    os.replace(tmp, path)
    print(f"added to {path.name}: " + ", ".join(f"{k} = {v} ({t})" for k, (t, v) in added.items())
          + f"; the other {len(kv0)} keys and {len(ts0)} tensors unchanged")


def interleave_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """The q/k row order llama.cpp's `llama` GGUFs use: per head, HF's rotate-halves rows
    [a_0..a_{d/2-1}, b_0..b_{d/2-1}] become adjacent pairs [a_0, b_0, a_1, b_1, ...] (what
    convert_hf_to_gguf's LlamaModel.permute does; written here independently for the check)."""
    hd = w.shape[0] // n_heads
    out = np.empty_like(w)
    for h in range(n_heads):
        blk = w[h * hd:(h + 1) * hd]
        out[h * hd:(h + 1) * hd][0::2] = blk[: hd // 2]
        out[h * hd:(h + 1) * hd][1::2] = blk[hd // 2:]
    return out


# ----------------------------------------------------------------------------------------
# GGUF inspection


def read_gguf(path: Path):
    from gguf import GGUFReader, GGMLQuantizationType
    r = GGUFReader(str(path))
    meta: dict[str, Any] = {}
    for key, field in r.fields.items():
        if key.startswith("GGUF."):
            continue
        meta[key] = field.contents()
    tensors, table = {}, []
    for t in r.tensors:
        table.append((t.name, [int(d) for d in t.shape], GGMLQuantizationType(t.tensor_type).name))
        tensors[t.name] = np.array(t.data)
    return meta, tensors, table


def short(v: Any) -> str:
    if isinstance(v, list) and len(v) > 8:
        return f"[{', '.join(repr(x) for x in v[:6])}, ... ({len(v)} items)]"
    return repr(v)


# ----------------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("family", choices=sorted(FAMILIES))
    ap.add_argument("--llama-cpp", type=Path, required=True,
                    help="llama.cpp tree with convert_hf_to_gguf.py, conversion/, gguf-py/")
    ap.add_argument("--llama-cpp-commit", default=None, help="commit to record (default: DIR/COMMIT or git HEAD)")
    ap.add_argument("--work", type=Path, required=True, help="work directory outside the repository")
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "zoo")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--no-numpy-check", action="store_true")
    ap.add_argument("--save-hf", action="store_true",
                    help="also copy the checkpoint (config.json, model.safetensors) to OUT/<family>/hf/")
    ap.add_argument("--bf16", action="store_true",
                    help="also save the checkpoint in bfloat16 to OUT/<family>/hf-bf16/ with transformers' float32 "
                         "logits of those rounded weights (logits_<n>_bf16.f32.bin)")
    args = ap.parse_args()

    fam = FAMILIES[args.family]
    work = args.work.resolve() / args.family
    if work.is_relative_to(REPO):
        sys.exit(f"--work {work} is inside the repository; use a directory outside it")
    out = args.out.resolve() / args.family
    hf_dir = work / "hf"
    for d in (hf_dir, out):
        d.mkdir(parents=True, exist_ok=True)

    import torch
    import transformers
    torch.set_num_threads(1)

    # 1. the model
    torch.manual_seed(args.seed)
    config = fam.config_cls()(**fam.config_kwargs)
    model = fam.model_cls()(config)
    perturbed = fam.perturb(model)
    model = model.to(torch.float32).eval()
    assert model.config._attn_implementation == "eager", model.config._attn_implementation

    # 2. the checkpoint
    for f in hf_dir.iterdir():
        f.unlink()
    model.save_pretrained(hf_dir)
    print(f"HF checkpoint: {sorted(p.name for p in hf_dir.iterdir())} in {hf_dir}")

    # 3. the GGUF
    gguf_work = work / "model.gguf"
    shims_applied: list[str] = []
    conv_src = hf_dir
    if fam.converter_checkpoint is not None:
        # the converter reads a copy of the checkpoint in the layout it expects (same values; see the family)
        conv_src = work / "hf-converter"
        if conv_src.exists():
            shutil.rmtree(conv_src)
        shims_applied.extend(fam.converter_checkpoint(hf_dir, conv_src))
    conv_args = convert_to_gguf(fam, args.llama_cpp.resolve(), conv_src, gguf_work,
                                model_name=f"zoo-{args.family}-tiny", shims_applied=shims_applied)
    if fam.converter_shims or fam.converter_hparams is not None or fam.converter_checkpoint is not None:
        print("converter shims: " + ("; ".join(shims_applied) if shims_applied else "none needed"))
    commit = llama_cpp_commit(args.llama_cpp, args.llama_cpp_commit)
    if fam.gguf_added_keys:
        add_gguf_keys(gguf_work, fam.gguf_added_keys)

    # 4. transformers logits
    logits: dict[int, np.ndarray] = {}
    with torch.no_grad():
        for n, ids in PROMPTS.items():
            assert len(ids) == n and max(ids) < config.vocab_size
            out_t = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
            lg = out_t.logits[0].to(torch.float32).numpy()
            assert lg.shape == (n, config.vocab_size)
            logits[n] = np.ascontiguousarray(lg, dtype="<f4")
    spread = {n: float(lg.std()) for n, lg in logits.items()}
    max_abs = max(float(np.abs(lg).max()) for lg in logits.values())
    print(f"transformers logits: max |logit| {max_abs:.4f}, std per prompt {spread}")
    assert min(spread.values()) > 0.5, "logits too flat to catch a wrong computation"

    # 5. checks on the GGUF
    meta, tensors, table = read_gguf(gguf_work)
    print(f"\nGGUF {gguf_work} ({gguf_work.stat().st_size} bytes) metadata:")
    for k, v in meta.items():
        print(f"  {k} = {short(v)}")
    print("tensors (name, ggml shape ne[0..], type):")
    for name, shape, ttype in table:
        print(f"  {name:32s} {str(shape):12s} {ttype}")
    assert meta["general.architecture"] == fam.gguf_arch, meta["general.architecture"]
    assert all(ttype == "F32" for _, _, ttype in table), "not every tensor is F32"
    types = {name: ttype for name, _, ttype in table}
    n_layer = int(meta[f"{fam.gguf_arch}.block_count"])
    for pattern in fam.required_tensors:
        for bid in (range(n_layer) if "{bid}" in pattern else [None]):
            name = pattern.format(bid=bid)
            assert types.get(name) == "F32", f"{name} missing or not F32"
    # the GGUF holds exactly the checkpoint's values
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    # a tied head (GPT-2, BLOOM) is the same tensor as the token embedding: keep it once
    seen_ptrs: dict[int, str] = {}
    tied = []
    for k, v in model.state_dict().items():
        ptr = v.data_ptr()
        if ptr in seen_ptrs:
            tied.append(f"{k} = {seen_ptrs[ptr]}")
            del sd[k]
        else:
            seen_ptrs[ptr] = k
    if tied:
        print(f"tied (compared once): {tied}")
    if fam.gguf_transposed:
        # GPT-2's Conv1D keeps its weight as [in, out]; the converter writes [out, in]
        transposed = 0
        for k in sd:
            if k.endswith(fam.gguf_transposed):
                sd[k] = np.ascontiguousarray(sd[k].T)
                transposed += 1
        print(f"compared {transposed} Conv1D weights transposed")
    if fam.gguf_squeezed:
        # LFM2's depthwise Conv1d weight is [E, 1, L]; the converter drops the size-1 dim
        # (LFM2Model.modify_tensors: "conv op requires 2d tensor"), GGUF ne [L, E]
        squeezed = 0
        for k in sd:
            if k.endswith(fam.gguf_squeezed):
                sd[k] = np.ascontiguousarray(sd[k].squeeze(1))
                squeezed += 1
        assert squeezed > 0, squeezed
        print(f"compared {squeezed} weights with their size-1 dim 1 dropped")
    if fam.bloom_qkv:
        # BLOOM's / GPT-NeoX's query_key_value rows are per head [q_h, k_h, v_h] (head_dim rows
        # each, heads in order: BloomAttention._reshape views [.., n_head, 3, head_dim],
        # GPTNeoXAttention views [.., n_head, 3 * head_size] and chunks it in 3); the converter
        # writes all q rows, then all k, then all v. The same reordering, written independently:
        n_h = int(meta[f"{fam.gguf_arch}.attention.head_count"])
        reordered = 0
        for k in sd:
            if k.endswith((".query_key_value.weight", ".query_key_value.bias")):
                w = sd[k]
                hd_ = w.shape[0] // (3 * n_h)
                rows = [h * 3 * hd_ + part * hd_ + r for part in range(3) for h in range(n_h) for r in range(hd_)]
                sd[k] = np.ascontiguousarray(w[rows])
                reordered += 1
        assert reordered == 2 * n_layer, reordered
        print(f"compared {reordered} query_key_value weights/biases with rows reordered to Q|K|V")
    if fam.gguf_qk_permuted:
        permuted = 0
        for k in sd:
            if k.endswith("self_attn.q_proj.weight"):
                sd[k] = interleave_rope_rows(sd[k], config.num_attention_heads)
            elif k.endswith("self_attn.k_proj.weight"):
                sd[k] = interleave_rope_rows(sd[k], config.num_key_value_heads)
            else:
                continue
            permuted += 1
        assert permuted == 2 * n_layer, permuted
        print(f"compared {permuted} q_proj/k_proj weights with their rows in adjacent-pair RoPE order")
    if fam.split_gate_up_experts:
        # transformers keeps each layer's experts as one [E, 2*ff, embd] gate_up_proj (gate rows
        # first: Qwen3MoeExperts.forward does linear(x, gate_up_proj[e]).chunk(2, dim=-1)); the
        # GGUF has ffn_gate_exps and ffn_up_exps, [E, ff, embd] each
        split = 0
        for k in [k for k in sd if k.endswith("mlp.experts.gate_up_proj")]:
            w = sd.pop(k)
            assert w.ndim == 3 and w.shape[1] % 2 == 0, w.shape
            ff = w.shape[1] // 2
            sd[k + ":gate"], sd[k + ":up"] = w[:, :ff, :], w[:, ff:, :]
            split += 1
        assert split == n_layer, split
        print(f"compared {split} experts.gate_up_proj split into gate (first half of dim 1) and up")
    if fam.norm_plus_one:
        # Gemma's RMSNorm multiplies by (1 + w); the converter stores 1 + w (Gemma2Model.modify_tensors)
        shifted = 0
        for k in sd:
            if k.endswith("norm.weight"):
                sd[k] = sd[k] + np.float32(1.0)
                shifted += 1
        print(f"compared {shifted} norm weights as 1 + w")
    checkpoint_map_notes: list[str] = []
    if fam.checkpoint_map is not None:
        checkpoint_map_notes = fam.checkpoint_map(sd, config, meta)
        for note in checkpoint_map_notes:
            print(f"compared: {note}")
    for name in fam.gguf_generated_tensors:
        assert name in tensors, f"{name} not in the GGUF"
    assert len(sd) == len(tensors) - len(fam.gguf_generated_tensors), (len(sd), len(tensors))
    matched = 0
    for k, v in sd.items():
        cands = [name for name, t in tensors.items() if t.shape == v.shape and np.array_equal(t, v)
                 and name not in fam.gguf_generated_tensors]
        assert len(cands) == 1, f"{k}: {len(cands)} GGUF tensors equal to it"
        matched += 1
    print(f"all {matched} checkpoint tensors found bit-exact in the GGUF")
    window = meta.get(f"{fam.gguf_arch}.attention.sliding_window")
    if window == 0 and fam.gguf_arch == "phi3":
        # the phi3 converter writes 0 when the config has no window (Phi-4's "no window")
        print(f"{fam.gguf_arch}.attention.sliding_window = 0: no window")
        window = None
    # (Qwen2-MoE's config writes sliding_window = 0 when use_sliding_window is false: no window)
    assert (getattr(config, "sliding_window", None) or None) == fam.sliding_window, (config.sliding_window, fam.sliding_window)
    assert window == fam.sliding_window, (window, fam.sliding_window)
    if window is not None:
        print(f"sliding window: config {config.sliding_window}, GGUF {window}")
    rope = rope_style_in_llama_cpp(args.llama_cpp, fam.llama_arch_enum)
    if rope is None:
        print(f"(no src/llama-model.cpp in {args.llama_cpp}: RoPE style not checked against llama.cpp)")
    else:
        print(f"llama.cpp's llama_model_rope_type({fam.llama_arch_enum}) -> {rope}")
        assert rope == fam.rope_style, (rope, fam.rope_style)

    rope_freqs = None
    if fam.llama3_rope:
        # the converter's rope_freqs.weight (per-pair divisor of theta_i) against transformers'
        # own scaled inverse frequencies: base^(-2i/d) / rope_freqs[i] == rotary_emb.inv_freq[i]
        rope_freqs = [float(v) for v in tensors["rope_freqs.weight"]]
        hd = int(meta.get(f"{fam.gguf_arch}.attention.key_length",
                          int(meta[f"{fam.gguf_arch}.embedding_length"]) // int(meta[f"{fam.gguf_arch}.attention.head_count"])))
        base = float(meta[f"{fam.gguf_arch}.rope.freq_base"])
        inv_default = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
        inv_tf = model.model.rotary_emb.inv_freq.detach().to(torch.float64).numpy()
        assert model.model.rotary_emb.rope_type == "llama3", model.model.rotary_emb.rope_type
        tf_factors = inv_default / inv_tf
        print(f"rope_freqs.weight {rope_freqs}\n  transformers' base^(-2i/d) / inv_freq {tf_factors.tolist()}")
        assert len(rope_freqs) == hd // 2
        assert np.allclose(rope_freqs, tf_factors, rtol=1e-5, atol=0), (rope_freqs, tf_factors)
        assert len(set(rope_freqs)) >= 3 and any(f != 1.0 for f in rope_freqs), rope_freqs

    extra_versions: dict[str, Any] = {}       # family-specific records for versions.json
    extra_checks: dict[str, Any] = {}
    extra_files: dict[str, np.ndarray] = {}   # more outputs (phi3: numpy logits with the long factors)
    arch = fam.gguf_arch
    if fam.longrope:
        # the converter's factor tensors and attention factor against transformers' own LongRoPE
        short_f = [float(v) for v in tensors["rope_factors_short.weight"]]
        long_f = [float(v) for v in tensors["rope_factors_long.weight"]]
        rp = config.rope_parameters
        assert rp["rope_type"] == "longrope", rp
        assert short_f == [float(np.float32(v)) for v in rp["short_factor"]], short_f
        assert long_f == [float(np.float32(v)) for v in rp["long_factor"]], long_f
        assert short_f != long_f and len(set(short_f)) > 3 and len(set(long_f)) > 3
        hd = int(meta[f"{arch}.embedding_length"]) // int(meta[f"{arch}.attention.head_count"])
        assert int(meta[f"{arch}.rope.dimension_count"]) == hd and len(short_f) == hd // 2
        base = float(meta[f"{arch}.rope.freq_base"])
        inv_default = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
        rot = model.model.rotary_emb
        assert rot.rope_type == "longrope", rot.rope_type
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
        orig = int(rp["original_max_position_embeddings"])
        inv_long_tf, attn_long_tf = ROPE_INIT_FUNCTIONS["longrope"](config, None, seq_len=orig + 1)
        tf_short = inv_default / rot.original_inv_freq.detach().to(torch.float64).numpy()
        tf_long = inv_default / inv_long_tf.detach().to(torch.float64).numpy()
        print(f"rope_factors_short.weight {short_f}\n  transformers' base^(-2i/d) / inv_freq (short) {tf_short.tolist()}")
        print(f"rope_factors_long.weight {long_f}\n  transformers' base^(-2i/d) / inv_freq (long) {tf_long.tolist()}")
        assert np.allclose(short_f, tf_short, rtol=1e-5, atol=0) and np.allclose(long_f, tf_long, rtol=1e-5, atol=0)
        attn_gguf = float(meta[f"{arch}.rope.scaling.attn_factor"])
        ctx = int(meta[f"{arch}.context_length"])
        orig_gguf = int(meta[f"{arch}.rope.scaling.original_context_length"])
        expected = float(np.sqrt(1.0 + np.log(ctx / orig_gguf) / np.log(orig_gguf)))
        print(f"attn_factor: GGUF {attn_gguf!r}, transformers attention_scaling {rot.attention_scaling!r} "
              f"(long {attn_long_tf!r}), sqrt(1 + ln({ctx}/{orig_gguf}) / ln {orig_gguf}) = {expected!r}")
        assert (ctx, orig_gguf) == (config.max_position_embeddings, orig) == (256, PHI3_ORIGINAL_MAX_POS)
        assert abs(attn_gguf - rot.attention_scaling) < 1e-6 and abs(attn_gguf - attn_long_tf) < 1e-6
        assert abs(attn_gguf - expected) < 1e-6 and attn_gguf > 1.1
        extra_versions["longrope"] = {
            "tensors": "rope_factors_short.weight / rope_factors_long.weight (global, generated by the "
                       "converter from rope_parameters short_factor / long_factor)",
            "short_factors": short_f, "long_factors": long_f,
            "attn_factor": attn_gguf,
            "use": "theta_i = p * freq_base^(-2i/n_rot) / factors[i]; cos and sin multiplied by attn_factor",
            "selection": f"transformers: long iff the sequence length > original_max_position_embeddings "
                         f"({orig}): both prompts use the short set; llama.cpp: long iff n_ctx_seq > "
                         f"rope.scaling.original_context_length ({orig_gguf})",
            "matches_transformers": True,
        }
    if fam.no_rope_layer_step is not None:
        step = fam.no_rope_layer_step
        llama_rule = [int((il + 1) % step != 0) for il in range(config.num_hidden_layers)]
        print(f"no_rope_layers (1 = RoPE): transformers {config.no_rope_layers}, llama.cpp rule "
              f"(il + 1) % {step} != 0 -> {llama_rule}")
        assert list(config.no_rope_layers) == llama_rule and 0 in llama_rule, config.no_rope_layers
        assert [layer.self_attn.use_rope for layer in model.model.layers] == llama_rule
        extra_versions["no_rope_layers"] = {
            "transformers_no_rope_layers": list(config.no_rope_layers),
            "rule": f"layer il applies RoPE iff (il + 1) % {step} != 0 (transformers no_rope_layer_interval "
                    f"{config.no_rope_layer_interval}; llama.cpp n_no_rope_layer_step {step}, not in the GGUF)",
        }
    if fam.numpy_forward is numpy_forward_lfm2:
        # the hybrid layout as the converter encodes it: head_count_kv per layer, 0 = ShortConv
        hkv = meta[f"{arch}.attention.head_count_kv"]
        expect = [config.num_key_value_heads if t == "full_attention" else 0 for t in config.layer_types]
        print(f"layer_types {config.layer_types}; GGUF {arch}.attention.head_count_kv {hkv}; "
              f"{arch}.shortconv.l_cache {meta[f'{arch}.shortconv.l_cache']}")
        assert hkv == expect and 0 in hkv and any(hkv), (hkv, expect)
        assert int(meta[f"{arch}.shortconv.l_cache"]) == config.conv_L_cache
        assert int(meta[f"{arch}.feed_forward_length"]) == config.intermediate_size
        assert [layer.feed_forward.w1.out_features for layer in model.model.layers] == [config.intermediate_size] * n_layer
        extra_versions["lfm2"] = {
            "layer_types": list(config.layer_types),
            "gguf_head_count_kv": hkv,
            "rule": "layer il is a ShortConv layer iff attention.head_count_kv[il] == 0 (llama.cpp is_recr)",
            "shortconv": "bcx = in_proj(h); B, C, X = bcx[0:E], bcx[E:2E], bcx[2E:3E]; s = [L-1 previous B*X rows "
                         "(zeros at the start); B*X rows]; conv[t, e] = sum_i s[t+i, e] * w[e, i] "
                         "(w = shortconv.conv.weight, ggml ne [L, E]); y = out_proj(C * conv)",
            "final_norm": "token_embd_norm.weight (transformers model.embedding_norm, applied after the last layer)",
        }
    if fam.numpy_forward is numpy_forward_gpt2_bloom and fam.numpy_options.get("positions") == "alibi":
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor
        n_h = int(meta[f"{arch}.attention.head_count"])
        al = build_alibi_tensor(torch.ones(1, 8, dtype=torch.long), n_h, torch.float32)  # [n_head, 1, 8]
        tf_slopes = al[:, 0, 1].to(torch.float64).numpy()
        ours = alibi_slopes(n_h, BLOOM_MAX_ALIBI_BIAS)
        print(f"ALiBi slopes: transformers {tf_slopes.tolist()}, ggml (max_bias {BLOOM_MAX_ALIBI_BIAS}) {ours.tolist()}")
        assert np.array_equal(tf_slopes, ours), (tf_slopes, ours)
        assert np.allclose(al[:, 0, :].numpy(), ours[:, None] * np.arange(8)), "alibi not slope * position"
        extra_versions["alibi"] = {"slopes": ours.tolist(), "max_bias": BLOOM_MAX_ALIBI_BIAS,
                                   "rule": "score(q, k) += slope_h * (k - q) (llama.cpp: -|p0 - p1|; "
                                           "transformers: slope_h * k, the same after softmax)"}

    numpy_diff = no_window_diff = no_rope_freqs_diff = None
    numpy_stats: dict[str, Any] = {}
    if not args.no_numpy_check:
        numpy_diff = {}
        for n, ids in PROMPTS.items():
            ref = fam.numpy_forward(tensors, meta, fam.gguf_arch, ids, fam.rope_style,
                                    qk_norm=fam.qk_norm, sliding_window=window,
                                    stats=numpy_stats, **fam.numpy_options)
            d = float(np.abs(ref - logits[n].astype(np.float64)).max())
            numpy_diff[n] = d
            print(f"numpy float64 forward on the GGUF vs transformers, n={n}: max |diff| {d:.3e}")
        if fam.float64_check:
            # float32 rounding grows with the logits' size (the float64 check below is the tight one)
            assert max(numpy_diff.values()) / max(1.0, max_abs) < 1e-5, (numpy_diff, max_abs)
        else:
            assert max(numpy_diff.values()) < 1e-4, numpy_diff
        if fam.conv_state_split is not None:
            # the same pass on the 40-token prompt in two chunks, carrying each ShortConv layer's
            # last L-1 inputs and each attention layer's K/V: must equal the one-chunk pass; with
            # the conv state reset to zeros at the second chunk it must differ (the state matters)
            n40 = PROMPTS[40]
            sp = fam.conv_state_split
            one = fam.numpy_forward(tensors, meta, arch, n40, fam.rope_style, qk_norm=fam.qk_norm,
                                    sliding_window=window, **fam.numpy_options)
            two = fam.numpy_forward(tensors, meta, arch, n40, fam.rope_style, qk_norm=fam.qk_norm,
                                    sliding_window=window, split=sp, **fam.numpy_options)
            reset = fam.numpy_forward(tensors, meta, arch, n40, fam.rope_style, qk_norm=fam.qk_norm,
                                      sliding_window=window, split=sp, carry_conv_state=False,
                                      **fam.numpy_options)
            d_split = float(np.abs(two - one).max())
            d_reset = float(np.abs(reset - one).max())
            print(f"  numpy n=40 as {sp} + {40 - sp} tokens carrying conv state and K/V vs one chunk: "
                  f"max |diff| {d_split:.3e}; with the conv state reset at the split: {d_reset:.3e}")
            assert d_split < 1e-9 and d_reset > 1e-2, (d_split, d_reset)
            extra_checks[f"numpy_split_{sp}_{40 - sp}_carrying_conv_state_vs_one_chunk_max_abs_diff"] = d_split
            extra_checks[f"numpy_split_{sp}_{40 - sp}_conv_state_reset_vs_one_chunk_max_abs_diff"] = d_reset
        if "router_min_margin" in numpy_stats:
            # no near tie between the k-th and (k+1)-th expert, so float32 and float64 agree on the choice
            print(f"smallest gap between the k-th and (k+1)-th router probability: {numpy_stats['router_min_margin']:.3e}")
            assert numpy_stats["router_min_margin"] > 1e-4, numpy_stats
        if fam.llama3_rope:
            # transformers really applied the Llama 3 scaling: without rope_freqs the reference
            # must differ at n=40
            no_rope_freqs_diff = {}
            for n, ids in PROMPTS.items():
                ref = fam.numpy_forward(tensors, meta, fam.gguf_arch, ids, fam.rope_style,
                                        qk_norm=fam.qk_norm, sliding_window=window,
                                        rope_freq_factors=False, **fam.numpy_options)
                d = float(np.abs(ref - logits[n].astype(np.float64)).max())
                no_rope_freqs_diff[n] = d
                print(f"  the same WITHOUT rope_freqs (unscaled RoPE), n={n}: max |diff| {d:.3e}")
            assert no_rope_freqs_diff[40] > 1e-2, no_rope_freqs_diff
        if window is not None:
            # transformers really applied the window: without it the reference must differ
            # exactly where a prompt is longer than the window
            no_window_diff = {}
            for n, ids in PROMPTS.items():
                ref = fam.numpy_forward(tensors, meta, fam.gguf_arch, ids, fam.rope_style,
                                        qk_norm=fam.qk_norm, sliding_window=None,
                                        **fam.numpy_options)
                d = float(np.abs(ref - logits[n].astype(np.float64)).max())
                no_window_diff[n] = d
                print(f"  the same WITHOUT the sliding window, n={n}: max |diff| {d:.3e}")
                assert (d > 1e-2) if n > window else (d < 1e-4), (n, window, d)
        if fam.longrope:
            # the long factor set: numpy with rope_factors_long.weight at n=40, checked against
            # transformers with its own long inverse frequencies swapped in (what it uses for a
            # sequence longer than original_max_position_embeddings)
            n40 = PROMPTS[40]
            opts = dict(fam.numpy_options)
            opts["rope_factors"] = "long"
            ref_long = fam.numpy_forward(tensors, meta, arch, n40, fam.rope_style,
                                         qk_norm=fam.qk_norm, sliding_window=window, **opts)
            rot = model.model.rotary_emb
            saved = rot.original_inv_freq.clone()
            try:
                rot.original_inv_freq.copy_(inv_long_tf.to(saved.dtype))
                with torch.no_grad():
                    tf_long_logits = model(input_ids=torch.tensor([n40], dtype=torch.long),
                                           use_cache=False).logits[0].to(torch.float64).numpy()
            finally:
                rot.original_inv_freq.copy_(saved)
            d_long = float(np.abs(ref_long - tf_long_logits).max())
            d_short_long = float(np.abs(ref_long - logits[40].astype(np.float64)).max())
            print(f"  numpy with the LONG factors vs transformers with its long inv_freq, n=40: max |diff| {d_long:.3e}")
            print(f"  numpy LONG vs the (short) transformers logits, n=40: max |diff| {d_short_long:.3e}")
            assert d_long < 1e-4 and d_short_long > 1e-2, (d_long, d_short_long)
            no_attn = {}
            for n, ids in PROMPTS.items():
                ref = fam.numpy_forward(tensors, meta, arch, ids, fam.rope_style, qk_norm=fam.qk_norm,
                                        sliding_window=window, rope_attn_factor=False, **fam.numpy_options)
                no_attn[n] = float(np.abs(ref - logits[n].astype(np.float64)).max())
                print(f"  the same WITHOUT attn_factor, n={n}: max |diff| {no_attn[n]:.3e}")
            assert min(no_attn.values()) > 1e-2, no_attn
            extra_files["logits_40_long.f32.bin"] = np.ascontiguousarray(ref_long, dtype="<f4")
            extra_checks["numpy_long_factors_vs_transformers_long_inv_freq_max_abs_diff_40"] = d_long
            extra_checks["numpy_long_factors_vs_transformers_short_max_abs_diff_40"] = d_short_long
            extra_checks["numpy_float64_without_attn_factor_vs_transformers_max_abs_diff"] = {
                str(n): d for n, d in no_attn.items()}
        if fam.no_rope_layer_step is not None:
            opts = {k: v for k, v in fam.numpy_options.items() if k != "no_rope_layer_step"}
            all_rope = {}
            for n, ids in PROMPTS.items():
                ref = fam.numpy_forward(tensors, meta, arch, ids, fam.rope_style, qk_norm=fam.qk_norm,
                                        sliding_window=window, no_rope_layer_step=None, **opts)
                all_rope[n] = float(np.abs(ref - logits[n].astype(np.float64)).max())
                print(f"  the same WITH RoPE in every layer, n={n}: max |diff| {all_rope[n]:.3e}")
            assert min(all_rope.values()) > 1e-2, all_rope
            extra_checks["numpy_float64_with_rope_in_every_layer_vs_transformers_max_abs_diff"] = {
                str(n): d for n, d in all_rope.items()}
        for flag, option, value, what in ((fam.softcaps, "softcaps", "attn_off", "attention soft cap"),
                                          (fam.softcaps, "softcaps", "final_off", "final soft cap"),
                                          (fam.multipliers, "multipliers", False, "multipliers"),
                                          (fam.logit_scale_check, "multipliers", False, "logit scale")):
            if not flag:
                continue
            # the file's keys really change the model: without them the reference must differ
            off = {}
            for n, ids in PROMPTS.items():
                ref = fam.numpy_forward(tensors, meta, arch, ids, fam.rope_style, qk_norm=fam.qk_norm,
                                        sliding_window=window, **{option: value}, **fam.numpy_options)
                off[n] = float(np.abs(ref - logits[n].astype(np.float64)).max())
                print(f"  the same WITHOUT the {what}, n={n}: max |diff| {off[n]:.3e}")
            assert min(off.values()) > 1e-2, off
            extra_checks[f"numpy_float64_without_{what.replace(' ', '_')}_vs_transformers_max_abs_diff"] = {
                str(n): d for n, d in off.items()}
        if fam.numpy_options.get("positions") == "alibi":
            no_alibi = {}
            for n, ids in PROMPTS.items():
                ref = fam.numpy_forward(tensors, meta, arch, ids, fam.rope_style, qk_norm=fam.qk_norm,
                                        sliding_window=window, positions="alibi_off")
                no_alibi[n] = float(np.abs(ref - logits[n].astype(np.float64)).max())
                print(f"  the same WITHOUT ALiBi, n={n}: max |diff| {no_alibi[n]:.3e}")
            assert min(no_alibi.values()) > 1e-2, no_alibi
            extra_checks["numpy_float64_without_alibi_vs_transformers_max_abs_diff"] = {
                str(n): d for n, d in no_alibi.items()}

    if fam.family_checks is not None:
        extra_versions.update(fam.family_checks(model, config, meta, tensors))
    if not args.no_numpy_check and fam.float64_check:
        # transformers in float64 end to end (zoo_families/float64.py) against the numpy pass: this
        # comparison has no float32 rounding on either side, so it checks the numpy pass (and the
        # GGUF's description of the model) to ~1e-12 relative instead of ~1e-6
        from zoo_families.float64 import float64_logits, float64_model
        model64 = float64_model(fam.model_cls, config, model.state_dict())
        f64_notes = fam.float64_check(model64, meta, tensors) if callable(fam.float64_check) else []
        f64: dict[str, Any] = {"weights_edited": f64_notes} if f64_notes else {}
        for n, ids in PROMPTS.items():
            ref = fam.numpy_forward(tensors, meta, arch, ids, fam.rope_style, qk_norm=fam.qk_norm,
                                    sliding_window=window, **fam.numpy_options)
            t64 = float64_logits(model64, ids)
            scale = max(1.0, float(np.abs(t64).max()))
            f64[str(n)] = {
                "numpy_vs_transformers_float64_max_abs_diff": float(np.abs(ref - t64).max()),
                "numpy_vs_transformers_float64_max_rel_diff": float(np.abs(ref - t64).max()) / scale,
                "transformers_float32_vs_float64_max_abs_diff": float(np.abs(logits[n] - t64).max()),
            }
            print(f"numpy float64 vs transformers float64 end to end, n={n}: max |diff| "
                  f"{f64[str(n)]['numpy_vs_transformers_float64_max_abs_diff']:.3e} (relative to max(1, max |logit|) "
                  f"{f64[str(n)]['numpy_vs_transformers_float64_max_rel_diff']:.3e}); transformers float32 vs float64 "
                  f"{f64[str(n)]['transformers_float32_vs_float64_max_abs_diff']:.3e}")
            assert f64[str(n)]["numpy_vs_transformers_float64_max_rel_diff"] < 1e-9, f64
        extra_checks["float64"] = f64
    if not args.no_numpy_check and fam.ablations:
        ablated = {}
        for entry in fam.ablations:
            what, bound = (entry, 1e-2) if isinstance(entry, str) else entry
            diffs = {}
            for n, ids in PROMPTS.items():
                ref = fam.numpy_forward(tensors, meta, arch, ids, fam.rope_style, qk_norm=fam.qk_norm,
                                        sliding_window=window, ablate=frozenset([what]), **fam.numpy_options)
                diffs[str(n)] = float(np.abs(ref - logits[n].astype(np.float64)).max())
            print(f"  the numpy pass WITHOUT {what}: max |diff| vs transformers {diffs}")
            assert max(diffs.values()) > bound, (what, bound, diffs)
            ablated[what] = diffs if bound == 1e-2 else dict(diffs, required_above=bound)
        extra_checks["numpy_float64_ablated_vs_transformers_max_abs_diff"] = ablated

    # 6. outputs
    shutil.copyfile(gguf_work, out / "model.gguf")
    written = ["model.gguf"]
    if args.save_hf:
        (out / "hf").mkdir(exist_ok=True)
        for name in ("config.json", "model.safetensors"):
            shutil.copyfile(hf_dir / name, out / "hf" / name)
            written.append(f"hf/{name}")
    if args.bf16:
        # the same weights rounded to bfloat16, saved as such; the reference runs them in float32
        bf_dir = out / "hf-bf16"
        bf_dir.mkdir(exist_ok=True)
        import copy
        copy.deepcopy(model).to(torch.bfloat16).save_pretrained(bf_dir)   # (.to changes a model in place)
        for f in bf_dir.iterdir():
            if f.name not in ("config.json", "model.safetensors"):
                f.unlink()
        model_bf = fam.model_cls().from_pretrained(bf_dir, dtype=torch.float32, attn_implementation="eager").eval()
        with torch.no_grad():
            for n, ids in PROMPTS.items():
                lg = model_bf(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False).logits[0]
                np.ascontiguousarray(lg.to(torch.float32).numpy(), dtype="<f4").tofile(out / f"logits_{n}_bf16.f32.bin")
                written.append(f"logits_{n}_bf16.f32.bin")
        written += ["hf-bf16/config.json", "hf-bf16/model.safetensors"]
    for n, ids in PROMPTS.items():
        np.asarray(ids, dtype="<i4").tofile(out / f"tokens_{n}.i32.bin")
        logits[n].tofile(out / f"logits_{n}.f32.bin")
        written += [f"tokens_{n}.i32.bin", f"logits_{n}.f32.bin"]
    for name, arr in extra_files.items():
        arr.tofile(out / name)
        written.append(name)
    gguf_py_version = re.search(r'^version\s*=\s*"([^"]+)"',
                                (args.llama_cpp / "gguf-py" / "pyproject.toml").read_text(), re.M)
    import safetensors
    versions = {
        "family": args.family,
        "reference": "Hugging Face transformers, float32, eager attention, CPU, model.eval(), torch.no_grad()",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "safetensors": safetensors.__version__,
            "numpy": np.__version__,
            "llama_cpp_commit": commit,
            "gguf_py": gguf_py_version.group(1) if gguf_py_version else "unknown",
        },
        "converter": {
            "script": "convert_hf_to_gguf.py (llama.cpp tree at llama_cpp_commit, its own gguf-py)",
            "args": [{str(hf_dir): "<work>/hf", str(work / "hf-converter"): "<work>/hf-converter",
                      str(gguf_work): "<work>/model.gguf"}.get(a, a) for a in conv_args],
            "patched": f"{fam.converter_class[0]}.{fam.converter_class[1]}.set_vocab -> dummy vocabulary "
                       f"('gpt2', pre 'default', tokens '<t0>'..'<t{config.vocab_size - 1}>', "
                       f"bos {DUMMY_BOS}, eos {DUMMY_EOS} CONTROL, merges ['< t'], add_bos/add_eos false)",
        },
        "seed": args.seed,
        "init": {
            "rng": "torch.manual_seed(seed) before constructing the model, then parameters in "
                   "named_parameters() order",
            "linear_weight_std": INIT_STD, "embedding_std": EMBED_STD,
            "bias": f"{BIAS_SCALE} * randn", "norm_weight": f"1 + {NORM_SCALE} * randn",
        },
        "config": json.loads(config.to_json_string()),
        "rope_style": fam.rope_style,
        "prompts": {str(n): ids for n, ids in PROMPTS.items()},
        "logits_layout": "little-endian float32, row-major [n_tokens, vocab_size], every position",
        "checks": {
            "max_abs_logit": max_abs,
            "logit_std": {str(n): s for n, s in spread.items()},
            "numpy_float64_vs_transformers_max_abs_diff":
                None if numpy_diff is None else {str(n): d for n, d in numpy_diff.items()},
            "gguf_tensors_bit_exact_to_checkpoint": True,
        },
        "files": {name: {"bytes": (out / name).stat().st_size, "sha256": sha256(out / name)} for name in written},
    }
    if fam.gguf_added_keys:
        versions["converter"]["gguf_keys_added_after_conversion"] = {
            k: {"type": t, "value": v} for k, (t, v) in fam.gguf_added_keys.items()}
        versions["converter"]["gguf_edit"] = (
            "gguf-py gguf.scripts.gguf_new_metadata.copy_with_new_metadata (the rest of the file "
            "unchanged: same keys in the same order, the new keys last, same tensors)")
    if fam.gguf_qk_permuted:
        versions["converter"]["qk_rows"] = (
            "q_proj/k_proj rows reordered per head to adjacent-pair RoPE order by the converter "
            "(LlamaModel.permute); GGUF RoPE style 'norm'")
    if window is not None:
        versions["sliding_window"] = {
            "size": window,
            "rule": "key k visible to query q iff k <= q and q - k < sliding_window "
                    "(transformers masking_utils: causal_mask_function kv_idx <= q_idx AND "
                    "sliding_window_overlay kv_idx > q_idx - sliding_window)",
        }
        if no_window_diff is not None:
            versions["checks"]["numpy_float64_without_window_vs_transformers_max_abs_diff"] = {
                str(n): d for n, d in no_window_diff.items()}
    if fam.numpy_options:
        versions["checks"]["numpy_forward_options"] = dict(fam.numpy_options)
    if fam.mechanisms:
        versions["mechanisms"] = fam.mechanisms
    if checkpoint_map_notes:
        versions["converter"]["tensor_edits"] = checkpoint_map_notes
    if fam.record_gguf:
        versions["gguf"] = {
            "metadata": {k: v for k, v in meta.items()
                         if not k.startswith("tokenizer.ggml.") or not isinstance(v, list)},
            "metadata_note": "every key the converter wrote (and any added after it), but the vocabulary arrays "
                             "(tokenizer.ggml.tokens / token_type / merges: the dummy vocabulary)",
            "tensors": [{"name": nm, "ne": shape, "type": tt} for nm, shape, tt in table],
        }
    if "router_min_margin" in numpy_stats:
        versions["checks"]["numpy_router_min_gap_kth_vs_next_prob"] = numpy_stats["router_min_margin"]
    if fam.split_gate_up_experts:
        versions["converter"]["experts"] = (
            "transformers' experts.gate_up_proj [E, 2*ff, embd] is split by the converter into "
            "ffn_gate_exps (first ff rows) and ffn_up_exps; experts.down_proj -> ffn_down_exps")
    if rope_freqs is not None:
        versions["rope_freqs"] = {
            "tensor": "rope_freqs.weight (generated by the converter, LlamaModel.generate_extra_tensors)",
            "values": rope_freqs,
            "use": "theta_i = p * freq_base^(-2i/n_rot) / rope_freqs[i] (llama.cpp freq_factors)",
            "matches_transformers_inv_freq": True,
        }
        if no_rope_freqs_diff is not None:
            versions["checks"]["numpy_float64_without_rope_freqs_vs_transformers_max_abs_diff"] = {
                str(n): d for n, d in no_rope_freqs_diff.items()}
    if fam.converter_shims or fam.record_gguf:
        versions["shims"] = list(shims_applied)   # [] = none beyond the set_vocab patch ("converter.patched")
    versions.update(extra_versions)
    versions["checks"].update(extra_checks)
    if "logits_40_long.f32.bin" in extra_files:
        versions["logits_40_long"] = (
            "logits_40_long.f32.bin: the 40-token prompt's logits from the float64 numpy forward on the "
            "GGUF with rope_factors_long.weight (stored as float32, layout as logits_40), i.e. what "
            "llama.cpp computes with a context > rope.scaling.original_context_length; checked against "
            "transformers with its long inverse frequencies")
    (out / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    written.append("versions.json")
    print(f"\nwrote {', '.join(written)} to {out}")


if __name__ == "__main__":
    main()
