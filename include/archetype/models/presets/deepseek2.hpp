#pragma once
// DeepSeek-V2 / V3 (GGUF `deepseek2`; llama.cpp src/models/deepseek2.cpp): multi-head latent
// attention in the absorbed form (a K-only cache of [RMSNorm(kv_cmpr) ; k_pe] per token, q
// low-rank when the file has attn_q_a), YaRN on adjacent pairs with its magnitude in the
// score scale, dense SwiGLU on the first leading_dense_block_count layers, then a mixture
// of SwiGLU experts routed as the file says (V2: softmax; V3: sigmoid with exp_probs_b and
// expert groups, renormalised, times expert_weights_scale) plus an ungated shared expert.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using DeepSeek2 = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, MultiHeadLatentAttention, RMSNorm,
                         MoE<dynamic, dynamic, SwiGLU, RouterFromFile<>, SharedExpert, LeadingDenseLayers>>;

struct deepseek2_architecture {
    static constexpr std::string_view gguf_name = "deepseek2";
    using model = DeepSeek2;
};

} // namespace archetype::presets
