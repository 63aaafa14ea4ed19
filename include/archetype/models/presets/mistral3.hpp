#pragma once
// Ministral 3 (GGUF `mistral3`; llama.cpp src/models/mistral3.cpp): a Llama with YaRN RoPE
// on adjacent pairs (its mscale through rope.scaling.yarn_log_multiplier) and the Llama-4
// attention temperature on the queries (QueryTemperature), SwiGLU, RMSNorm pre-norms.
#include "archetype/models/decoder.hpp"
#include "archetype/policies/position/temperature.hpp"

namespace archetype::presets {

using Mistral3 = Decoder<GQA<dynamic, dynamic>, QueryTemperature<RoPE>, Causal, FullCache, SwiGLU, RMSNorm>;

struct mistral3_architecture {
    static constexpr std::string_view gguf_name = "mistral3";
    using model = Mistral3;
};

} // namespace archetype::presets
