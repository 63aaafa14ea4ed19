#pragma once
// Phi-3 (GGUF `phi3`): one fused attn_qkv and gate/up fused in ffn_up (split by rows
// when bound), NeoX RoPE with LongRoPE's short/long factors (rope_factors_*: the session's
// context picks, as llama.cpp; transformers picks per forward call by its length), RMSNorm.
// phi3.attention.sliding_window > 0 windows every layer as transformers does (llama.cpp
// ignores Phi-3 windows; 0 is Phi-4's "none").
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Phi3 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, RMSNorm>;
using Phi3SWA = Decoder<GQA<dynamic, dynamic>, RoPENeox, SlidingWindow<>, RollingCache, SwiGLU, RMSNorm>;

struct phi3_architecture {
    static constexpr std::string_view gguf_name = "phi3";
    using model = Phi3;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
    static bool accepts(const gguf::file& f) { return f.get_or<std::uint32_t>("phi3.attention.sliding_window", 0) == 0; }
};
struct phi3_swa_architecture {
    static constexpr std::string_view gguf_name = "phi3";
    using model = Phi3SWA;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
