#pragma once
// GraniteMoE (GGUF `granitemoe`; llama.cpp src/models/granite-moe.cpp): Granite's four
// multipliers (embedding_scale, residual_scale, attention.scale, logit_scale dividing the
// logits) with a mixture of SwiGLU experts in every layer: softmax over all experts, top
// expert_used_count, renormalised (= transformers' softmax over the top-k logits).
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using GraniteMoe = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, MoE<dynamic, dynamic, SwiGLU>, RMSNorm,
                          EmbeddingMultiplier, ResidualMultiplier<>, LogitDivisor, AttentionScaleKey>;

struct granitemoe_architecture {
    static constexpr std::string_view gguf_name = "granitemoe";
    using model = GraniteMoe;
};

} // namespace archetype::presets
