#pragma once
// EXAONE 4 (LG AI; GGUF `exaone4`): RMSNorms after the sublayers only, a per-head QK RMSNorm
// before RoPE, windowed layers (the file's window and bool pattern) with NeoX RoPE and global
// layers without it — every layer rotates when the model has no window — SwiGLU. As
// transformers defines it; llama.cpp applies the window and the NoPE layers only to 64-layer
// files (docs/architectures.md).
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/norm_sandwich.hpp"

namespace archetype::presets {

using Exaone4 = Decoder<GQA<dynamic, dynamic>, NoPEOnGlobalLayers<RoPE, nope_rule::global_layers_of_a_windowed_model>,
                       Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache, SelfAttentionWith<qk_norm::rms>,
                       SwiGLU, NormAfterSublayer<RMSNorm>>;

struct exaone4_architecture {
    static constexpr std::string_view gguf_name = "exaone4";
    using model = Exaone4;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
