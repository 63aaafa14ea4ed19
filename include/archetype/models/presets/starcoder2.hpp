#pragma once
// StarCoder2 (GGUF `starcoder2`): LayerNorm with biases, a GELU (tanh form) MLP with
// biases, q/k/v/o biases, NeoX RoPE. A file with starcoder2.attention.sliding_window
// (Hugging Face's sliding_window; llama.cpp's converter drops it, see
// tools/reference/README.md) windows every layer with a rolling cache.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using StarCoder2 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, GeluMLP, LayerNorm>;
using StarCoder2SWA = Decoder<GQA<dynamic, dynamic>, RoPENeox, SlidingWindow<>, RollingCache, GeluMLP, LayerNorm>;

struct starcoder2_architecture {
    static constexpr std::string_view gguf_name = "starcoder2";
    using model = StarCoder2;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
    static bool accepts(const gguf::file& f) { return !f.has("starcoder2.attention.sliding_window"); }
};
struct starcoder2_swa_architecture {
    static constexpr std::string_view gguf_name = "starcoder2";
    using model = StarCoder2SWA;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
