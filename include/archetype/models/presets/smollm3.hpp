#pragma once
// SmolLM3 (GGUF `smollm3`): Llama (adjacent-pair RoPE after the converter's permutation)
// whose every 4th layer has no position encoding at all (NoPE; the step is the
// architecture's, llama.cpp hard-codes it too).
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using SmolLM3 = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SwiGLU, RMSNorm>;

struct smollm3_architecture {
    static constexpr std::string_view gguf_name = "smollm3";
    using model = SmolLM3;
    static constexpr arch::gguf_conventions conventions{.no_rope_layer_step = 4};
};

} // namespace archetype::presets
