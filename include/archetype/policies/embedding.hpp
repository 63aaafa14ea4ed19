#pragma once
// Embedding axis: what is done to a token's embedding row before the first
// layer. Gemma multiplies it by sqrt(n_embd) (its embeddings are tied to the
// output head, so they are stored at the output's scale).
#include <string>

#include "archetype/core/policy.hpp"

namespace archetype {

/// The embedding row as stored (Llama, Mistral).
struct PlainEmbedding {
    using axis = archetype::axis::embedding;
    static constexpr std::string_view name = "PlainEmbedding";
    static constexpr bool scaled = false;
    static std::string describe() { return "PlainEmbedding"; }
};

/// The embedding row times sqrt(n_embd), in float32 as llama.cpp's ggml_scale (Gemma).
struct ScaledEmbedding {
    using axis = archetype::axis::embedding;
    static constexpr std::string_view name = "ScaledEmbedding";
    static constexpr bool scaled = true;
    static std::string describe() { return "ScaledEmbedding (x sqrt(n_embd))"; }
};

} // namespace archetype
