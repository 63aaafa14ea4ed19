#pragma once
// GLM-4.5 (GGUF `glm4moe`; llama.cpp src/models/glm4-moe.cpp): GQA with q/k/v biases and a
// per-head QK RMSNorm before partial NeoX RoPE; the FFN's pre-norm filed as
// post_attention_norm; dense SwiGLU on the first leading_dense_block_count layers, then a
// mixture of SwiGLU experts routed as the file says (sigmoid, selection bias exp_probs_b,
// renormalised, times expert_weights_scale) plus an ungated shared expert.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Glm4Moe = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, RMSNorm,
                       SequentialBlockWith<"attn_norm", "post_attention_norm">,
                       MoE<dynamic, dynamic, SwiGLU, RouterFromFile<moe_gating::sigmoid>, SharedExpert, LeadingDenseLayers>>;

struct glm4moe_architecture {
    static constexpr std::string_view gguf_name = "glm4moe";
    using model = Glm4Moe;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
