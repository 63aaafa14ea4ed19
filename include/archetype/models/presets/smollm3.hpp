#pragma once
// SmolLM3 (GGUF `smollm3`): Llama (adjacent-pair RoPE after the converter's permutation)
// whose every 4th layer has no position encoding at all (NoPE; the step is the
// architecture's, llama.cpp hard-codes it too).
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using SmolLM3 = Decoder<GQA<dynamic, dynamic>, NoPEEvery<4, RoPE>, Causal, FullCache, SwiGLU, RMSNorm>;

struct smollm3_architecture {
    static constexpr std::string_view gguf_name = "smollm3";
    using model = SmolLM3;
};

} // namespace archetype::presets
