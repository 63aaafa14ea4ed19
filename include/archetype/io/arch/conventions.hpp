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
    /// Base of the windowed layers' RoPE when {arch}.rope.freq_base_swa is absent
    /// (0: the global base; gemma3: 10000).
    float rope_swa_base_default = 0.f;
    /// Layer pattern when the file gives a window but no {arch}.attention.sliding_window_pattern:
    /// 0 = every layer windowed, N = layer il windowed iff il % N < N - 1 (gemma3: 6).
    std::size_t window_period_default = 0;
    /// A window without a pattern key is a format error (mellum).
    bool window_pattern_required = false;
    /// The token embedding is multiplied by sqrt(n_embd) (gemma): a Decoder loading such a
    /// file must say ScaledEmbedding, and one that says it needs such a file.
    bool scaled_embedding = false;
    /// RoPE skips every N-th layer (layer il unrotated iff (il + 1) % N == 0; SmolLM3: 4,
    /// which llama.cpp hard-codes too); 0 = every layer rotated.
    std::size_t no_rope_layer_step = 0;
    /// Attention scale from the dimensions; null = 1/sqrt(head_dim). A file's own
    /// {arch}.attention.scale takes precedence.
    float (*attn_scale)(std::size_t n_layer, std::size_t n_embd, std::size_t n_head, std::size_t head_dim) = nullptr;
    /// The file's {arch}.embedding_scale, residual_scale and logit_scale are Granite's
    /// multipliers: embedding rows times the first, each sublayer's output times the
    /// second before the residual add, logits divided by the third (llama.cpp's granite
    /// graph). Other architectures give logit_scale other meanings (Command-R multiplies),
    /// so a file of an architecture without this flag that carries one of the keys is refused.
    bool multipliers = false;
};

} // namespace archetype::arch
