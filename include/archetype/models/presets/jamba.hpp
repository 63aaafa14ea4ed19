#pragma once
// Jamba (AI21; GGUF `jamba`): Mamba-1 layers (with Jamba's RMSNorms on dt, B and C, by their
// tensors) where head_count_kv[il] == 0 and NoPE GQA attention elsewhere (HybridMixer); the
// feed-forward a mixture of experts where the layer has a router (ffn_gate_inp), dense SwiGLU
// where it has none (DenseWithoutRouter); its router is softmax top-k WITHOUT renormalising
// the k weights (SoftmaxRouter<false>, llama.cpp jamba.cpp).
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Jamba = Decoder<GQA<dynamic, dynamic>, NoPE, Causal, FullCache, RMSNorm,
                     MoE<dynamic, dynamic, SwiGLU, SoftmaxRouter<false>, NoSharedExpert, DenseWithoutRouter>,
                     HybridMixer<SelfAttention, Mamba>>;

struct jamba_architecture {
    static constexpr std::string_view gguf_name = "jamba";
    using model = Jamba;
};

} // namespace archetype::presets
