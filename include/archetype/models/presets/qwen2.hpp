#pragma once
// Qwen2 (GGUF `qwen2`): Llama with biases on the Q, K and V projections (bound by
// SelfAttention whenever the file has them) and RoPE on NeoX pairs.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Qwen2 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, RMSNorm>;

struct qwen2_architecture {
    static constexpr std::string_view gguf_name = "qwen2";
    using model = Qwen2;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
