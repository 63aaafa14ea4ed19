#pragma once
// StableLM (GGUF `stablelm`): LayerNorm with biases (eps {arch}.attention.layer_norm_epsilon),
// RoPE on NeoX pairs over the first rope.dimension_count dimensions of each head (partial
// rotary), q/k/v biases (bound by SelfAttention when present), SwiGLU.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using StableLM = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, LayerNorm>;

struct stablelm_architecture {
    static constexpr std::string_view gguf_name = "stablelm";
    using model = StableLM;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
