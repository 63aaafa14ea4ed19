#pragma once
// Nemotron-H (NVIDIA; GGUF `nemotron_h`): each layer ONE sublayer with its own RMSNorm and
// residual (SingleSublayerBlock), chosen from two per-layer arrays as llama.cpp does: an MLP
// (non-gated ReLU², ReluSquaredMLP) where feed_forward_length[il] > 0, else Mamba-2 where
// head_count_kv[il] == 0 and NoPE GQA attention elsewhere (HybridMixer). Its Mamba-2 floors
// dt at 1e-3 as transformers' model does (config.time_step_min; no GGUF key, llama.cpp does
// not: Mamba2With<1000>, in millionths). The converter writes layer_norm_epsilon beside the RMS one.
#include "archetype/io/key_ledger.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using NemotronH = Decoder<GQA<dynamic, dynamic>, NoPE, Causal, FullCache, ReluSquaredMLP, RMSNorm,
                          HybridMixer<SelfAttention, Mamba2With<1000>>, SingleSublayerBlock>;

struct nemotron_h_architecture {
    static constexpr std::string_view gguf_name = "nemotron_h";
    using model = NemotronH;
    static constexpr known_unused_key known_unused_keys[] = {
        {"{arch}.attention.layer_norm_epsilon", "written beside layer_norm_rms_epsilon; every norm is an RMSNorm"}};
};

} // namespace archetype::presets
