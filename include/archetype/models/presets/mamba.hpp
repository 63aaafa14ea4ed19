#pragma once
// Mamba (Mamba-1, state-spaces/mamba-*, FalconMamba; GGUF `mamba`): every layer one Mamba
// mixer (policies/mixers/mamba.hpp: its conv and SSM state per sequence; FalconMamba's
// ssm.dt_b_c_rms norms dt, B and C), pre-normed with RMSNorm, no attention and no
// feed-forward (MixerOnlyBlock); no positions.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using MambaLm = Decoder<NoPE, Causal, FullCache, RMSNorm, Mamba, MixerOnlyBlock>;

struct mamba_architecture {
    static constexpr std::string_view gguf_name = "mamba";
    using model = MambaLm;
};

} // namespace archetype::presets
