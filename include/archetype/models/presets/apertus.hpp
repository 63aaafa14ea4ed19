#pragma once
// Apertus (Swiss AI; GGUF `apertus`; llama.cpp src/models/apertus.cpp): GQA with a per-head
// QK RMSNorm and NeoX RoPE (Llama-3 frequency divisors from rope_freqs.weight), a non-gated
// MLP with the per-layer xIELU activation (XieluMLP, the file's xielu.* keys), RMSNorm.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/ffn_xielu.hpp"

namespace archetype::presets {

using Apertus = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SelfAttentionWith<qk_norm::rms>, XieluMLP, RMSNorm>;

struct apertus_architecture {
    static constexpr std::string_view gguf_name = "apertus";
    using model = Apertus;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
