#pragma once
// OLMoE (GGUF `olmoe`; llama.cpp src/models/olmoe.cpp): one RMSNorm over the whole Q and
// the whole K projection rows before NeoX RoPE (as OLMo 2), pre-norms, and a mixture of
// SwiGLU experts in every layer: softmax over all experts, top expert_used_count, NOT
// renormalised (llama.cpp hard-codes it); the experts' width is feed_forward_length.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using OLMoE = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SelfAttentionWith<qk_norm::rms_whole>,
                     MoE<dynamic, dynamic, SwiGLU, SoftmaxRouter<false>>, RMSNorm>;

struct olmoe_architecture {
    static constexpr std::string_view gguf_name = "olmoe";
    using model = OLMoE;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
