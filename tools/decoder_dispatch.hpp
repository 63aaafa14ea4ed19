#pragma once
// The decoder structures compiled into the archetype program, one per GGUF
// architecture (every dimension from the file), and the dispatch from a file to
// its structure. A program that knows its model names a static Decoder<...>.
#include <string>
#include <string_view>
#include <utility>

#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/gemma3.hpp"

namespace archetype::tools {

/// `llama`: causal attention, full cache, dense SwiGLU, adjacent RoPE pairs.
using cli_llama = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SwiGLU>;
/// `mellum` with a sliding window: the file's per-layer pattern, rolling cache
/// on the windowed layers, full cache on the global ones, MoE, QK-norm, NeoX RoPE.
using cli_mellum_swa =
    Decoder<GQA<dynamic, dynamic>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache, MoE<dynamic, dynamic, SwiGLU>>;
/// `mellum` without a window.
using cli_mellum = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, MoE<dynamic, dynamic, SwiGLU>>;

/// `gemma3`: presets::Gemma3 with the window and the layer pattern from the file.
using cli_gemma3 = Decoder<GQA<dynamic, dynamic>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache,
                           SelfAttentionWith<qk_norm::rms>, GeGLU, PrePostNorm<RMSNorm>, ScaledEmbedding>;

inline bool is_decoder_arch(std::string_view arch) { return arch == "llama" || arch == "mellum" || arch == "gemma3"; }

/// Calls f(model) with the file loaded as the structure of its architecture.
template <class F>
int with_decoder(gguf::file file, F&& f) {
    const std::string arch(file.architecture());
    if (arch == "llama") return f(decoder_model<cli_llama>::load(std::move(file)));
    if (arch == "mellum") {
        if (file.get_or<std::uint32_t>("mellum.attention.sliding_window", 0) > 0)
            return f(decoder_model<cli_mellum_swa>::load(std::move(file)));
        return f(decoder_model<cli_mellum>::load(std::move(file)));
    }
    if (arch == "gemma3") return f(decoder_model<cli_gemma3>::load(std::move(file)));
    throw shape_error("architecture '" + arch + "' is not a decoder this program knows (llama, mellum, gemma3)");
}

} // namespace archetype::tools
