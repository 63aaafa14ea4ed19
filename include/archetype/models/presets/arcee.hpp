#pragma once
// Arcee (AFM; GGUF `arcee`; llama.cpp src/models/arcee.cpp): a Llama whose feed-forward is
// not gated, down(relu(up(x))^2); RoPE on adjacent pairs (the converter permutes q/k).
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Arcee = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, ReluSquaredMLP, RMSNorm>;

struct arcee_architecture {
    static constexpr std::string_view gguf_name = "arcee";
    using model = Arcee;
};

} // namespace archetype::presets
