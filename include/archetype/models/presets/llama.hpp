#pragma once
// Llama (GGUF `llama`): grouped-query attention, RoPE on adjacent pairs,
// causal mask, full cache, SwiGLU, RMSNorm. Every dimension from the file.
// A `llama` file with {arch}.attention.sliding_window (a Mistral converted with
// the window kept) runs as LlamaSWA: every layer windowed, a rolling cache.
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Llama = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SwiGLU, RMSNorm>;
using LlamaSWA = Decoder<GQA<dynamic, dynamic>, RoPE, SlidingWindow<>, RollingCache, SwiGLU, RMSNorm>;

struct llama_architecture {
    static constexpr std::string_view gguf_name = "llama";
    using model = Llama;
    static bool accepts(const gguf::file& f) { return f.get_or<std::uint32_t>("llama.attention.sliding_window", 0) == 0; }
};
struct llama_swa_architecture {
    static constexpr std::string_view gguf_name = "llama";
    using model = LlamaSWA;
};

} // namespace archetype::presets
