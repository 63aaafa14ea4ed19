#pragma once
// Falcon-H1 (TII; GGUF `falcon-h1`): every layer runs GQA attention (NeoX RoPE) and Mamba-2
// side by side on the same attn_norm output, their outputs summed (ParallelMixers), then an
// RMSNorm + SwiGLU feed-forward; the μP multipliers are folded into the weights by the
// converter; Mamba-2's ssm_norm is optional (absent in the released models). llama.cpp files
// the FFN norm as blk.N.ffn_norm, without .weight.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using FalconH1 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, RMSNorm,
                         ParallelMixers<SelfAttention, Mamba2>,
                         SequentialBlockWith<"attn_norm", "ffn_norm", norm_tensor::bare>>;

struct falcon_h1_architecture {
    static constexpr std::string_view gguf_name = "falcon-h1";
    using model = FalconH1;
};

} // namespace archetype::presets
