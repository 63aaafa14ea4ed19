#pragma once
// Mellum (GGUF `mellum`, JetBrains): a mixture of experts with per-head QK
// RMSNorm (from the file) and NeoX RoPE; with a sliding window, the file's
// per-layer pattern (sliding_window_pattern, required by llama.cpp) picks the
// windowed layers, which keep a rolling cache.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Mellum = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, MoE<dynamic, dynamic, SwiGLU>>;
using MellumSWA = Decoder<GQA<dynamic, dynamic>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache,
                          MoE<dynamic, dynamic, SwiGLU>>;

inline constexpr arch::gguf_conventions mellum_conventions{.rope_neox = true, .window_pattern_required = true};

struct mellum_swa_architecture {
    static constexpr std::string_view gguf_name = "mellum";
    using model = MellumSWA;
    static constexpr arch::gguf_conventions conventions = mellum_conventions;
    static bool accepts(const gguf::file& f) { return f.get_or<std::uint32_t>("mellum.attention.sliding_window", 0) > 0; }
};
struct mellum_architecture {
    static constexpr std::string_view gguf_name = "mellum";
    using model = Mellum;
    static constexpr arch::gguf_conventions conventions = mellum_conventions;
};

} // namespace archetype::presets
