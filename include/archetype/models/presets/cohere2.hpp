#pragma once
// Command R7B / Command A (GGUF `cohere2`; llama.cpp src/models/cohere2-iswa.cpp): the
// Command-R parallel block on one bias-free LayerNorm, three windowed layers with RoPE on
// adjacent pairs then one global layer without RoPE (period 4 when the file has no pattern),
// SwiGLU, the logits multiplied by cohere2.logit_scale, tied head.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Cohere2 = Decoder<GQA<dynamic, dynamic>, NoPEOnGlobalLayers<RoPE, nope_rule::global_layers>,
                       Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache, SwiGLU, LayerNormNoBias,
                       ParallelResidual, LogitMultiplier>;

struct cohere2_architecture {
    static constexpr std::string_view gguf_name = "cohere2";
    using model = Cohere2;
    static constexpr arch::gguf_conventions conventions{.window_period_default = 4};
};

} // namespace archetype::presets
