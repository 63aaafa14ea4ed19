#pragma once
// Gemma 1 / CodeGemma (GGUF `gemma`; llama.cpp src/models/gemma.cpp): GQA with NeoX RoPE,
// a GeGLU feed-forward (tanh GELU), RMSNorm pre-norms (the converter stored Gemma's
// 1 + w), the token embedding times sqrt(n_embd), the head tied to the embedding.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/embedding.hpp"

namespace archetype::presets {

using Gemma = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SelfAttentionWith<qk_norm::none>, GeGLU, RMSNorm,
                     ScaledEmbedding>;

struct gemma_architecture {
    static constexpr std::string_view gguf_name = "gemma";
    using model = Gemma;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
