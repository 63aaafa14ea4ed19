#pragma once
// OLMo 3 (its converter writes GGUF `olmo2`, told apart by olmo2.attention.sliding_window):
// OLMo 2's block (RMSNorms after the sublayers, one QK RMSNorm over all heads, NeoX RoPE)
// with windowed layers from the file's bool pattern, whose RoPE base is rope.freq_base_swa.
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/norm_sandwich.hpp"

namespace archetype::presets {

using OLMo3 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache,
                     SelfAttentionWith<qk_norm::rms_whole>, SwiGLU, NormAfterSublayer<RMSNorm>>;

struct olmo3_architecture {
    static constexpr std::string_view gguf_name = "olmo2";
    using model = OLMo3;
    static bool accepts(const gguf::file& f) { return f.has("olmo2.attention.sliding_window"); }
};

} // namespace archetype::presets
