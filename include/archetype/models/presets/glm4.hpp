#pragma once
// GLM-4-0414 (GGUF `glm4`; llama.cpp src/models/glm4.cpp): sandwich RMSNorms around
// attention and the feed-forward, q/k/v biases, RoPE on adjacent pairs over the first
// rope.dimension_count dimensions of each head (partial), SwiGLU on gate|up fused in ffn_up.
#include "archetype/models/decoder.hpp"
#include "archetype/policies/norm_sandwich.hpp"

namespace archetype::presets {

using GLM4 = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SwiGLU, PrePostNorm<RMSNorm>>;

struct glm4_architecture {
    static constexpr std::string_view gguf_name = "glm4";
    using model = GLM4;
};

} // namespace archetype::presets
