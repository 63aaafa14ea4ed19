#pragma once
// Mamba-2 (state-spaces/mamba2-*; GGUF `mamba2`): every layer one Mamba2 mixer
// (policies/mixers/mamba2.hpp: its conv and SSM state per sequence), pre-normed with
// RMSNorm, no attention and no feed-forward (MixerOnlyBlock); no positions.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Mamba2Lm = Decoder<NoPE, Causal, FullCache, RMSNorm, Mamba2, MixerOnlyBlock>;

struct mamba2_architecture {
    static constexpr std::string_view gguf_name = "mamba2";
    using model = Mamba2Lm;
};

} // namespace archetype::presets
