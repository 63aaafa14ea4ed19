#pragma once
// Qwen1.5/Qwen2-MoE (GGUF `qwen2moe`; llama.cpp src/models/qwen2moe.cpp): Qwen2's attention
// (q/k/v biases, NeoX RoPE) with a mixture of SwiGLU experts in every layer, softmax over all
// experts, top expert_used_count, NOT renormalised (llama.cpp hard-codes it), plus one shared
// SwiGLU expert of expert_shared_feed_forward_length times sigmoid(ffn_gate_inp_shexp . x).
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Qwen2Moe = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, RMSNorm,
                        MoE<dynamic, dynamic, SwiGLU, SoftmaxRouter<false>, SigmoidGatedSharedExpert>>;

struct qwen2moe_architecture {
    static constexpr std::string_view gguf_name = "qwen2moe";
    using model = Qwen2Moe;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
