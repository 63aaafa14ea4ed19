#pragma once
// ERNIE 4.5 dense (GGUF `ernie4_5`; llama.cpp src/models/ernie4-5.cpp): a Llama with RoPE on
// adjacent pairs (the converter keeps the checkpoint's q/k rows), SwiGLU, RMSNorm pre-norms.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Ernie4_5 = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SwiGLU, RMSNorm>;

struct ernie4_5_architecture {
    static constexpr std::string_view gguf_name = "ernie4_5";
    using model = Ernie4_5;
};

} // namespace archetype::presets
