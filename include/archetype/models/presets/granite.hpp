#pragma once
// Granite (GGUF `granite`; llama.cpp's src/models/granite.cpp graph): a Llama (RoPE on
// adjacent pairs: the converter permutes q/k as for llama) with four multipliers from the
// file, each read by its policy: granite.embedding_scale on the embedding rows,
// granite.residual_scale on each sublayer's output before the residual add,
// granite.attention.scale instead of 1/sqrt(head_dim), and granite.logit_scale dividing
// the logits (transformers' embedding_multiplier, residual_multiplier,
// attention_multiplier, logits_scaling): EmbeddingMultiplier, ResidualMultiplier<>,
// AttentionScaleKey, LogitDivisor.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Granite = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SwiGLU, RMSNorm, EmbeddingMultiplier,
                        ResidualMultiplier<>, LogitDivisor, AttentionScaleKey>;

struct granite_architecture {
    static constexpr std::string_view gguf_name = "granite";
    using model = Granite;
};

} // namespace archetype::presets
