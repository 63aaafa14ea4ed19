#pragma once
// What a GGUF architecture implies but its metadata does not say: llama.cpp
// decides these by architecture in its C++ code (llama_model_rope_type, the
// per-architecture load_hparams). Each registered architecture carries its own
// (models/presets/*.hpp); a file of an architecture nobody registered gets the
// defaults, which are llama's.
#include <cstddef>

namespace archetype::arch {

struct gguf_conventions {
    /// RoPE pairs halves (NeoX, Hugging Face layout) rather than adjacent dimensions;
    /// decides a RoPE whose pairing is from_file.
    bool rope_neox = false;
    /// Layer pattern when the file gives a window but no {arch}.attention.sliding_window_pattern:
    /// 0 = every layer windowed, N = layer il windowed iff il % N < N - 1 (gemma3: 6; see
    /// window_global_first).
    std::size_t window_period_default = 0;
    /// A window without a pattern key is a format error (mellum).
    bool window_pattern_required = false;
    /// A period N (from the pattern key or window_period_default) puts the global layer
    /// first in each group: layer il windowed iff il % N != 0 (llama.cpp's
    /// set_swa_pattern(N, dense_first = true); ModernBERT) instead of last.
    bool window_global_first = false;
    /// Layer 0 may have no attention norm (blk.0.attn_norm absent = identity): ModernBERT,
    /// whose first layer feeds the embedding LayerNorm's output straight to attention.
    bool first_attn_norm_optional = false;
    /// The LayerNorm eps may be stored under {arch}.attention.layer_norm_rms_epsilon when
    /// layer_norm_epsilon is absent: llama.cpp's converter files a config's `norm_eps`
    /// there (conversion/base.py), which for ModernBERT is the eps of LayerNorms.
    bool layer_norm_eps_in_rms_key = false;
    /// The name of the final norm's tensors (before .weight / .bias): "output_norm", or
    /// "token_embd_norm" where llama.cpp files it so (LLM_TENSOR_OUTPUT_NORM_LFM2).
    const char* output_norm = "output_norm";
};

} // namespace archetype::arch
