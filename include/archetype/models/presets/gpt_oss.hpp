#pragma once
// gpt-oss (GGUF `gpt-oss`; llama.cpp src/models/openai-moe.cpp): GQA with q/k/v/o biases and
// attention sinks (attn_sinks [n_head], bound by SelfAttention), the even layers windowed
// (sliding_window, period 2 without a pattern key), NeoX RoPE with YaRN whose correction
// range is not rounded (the released configs' truncate: false, as transformers; llama.cpp
// rounds it), the FFN's pre-norm filed as post_attention_norm, and a mixture of SwigluOai
// experts with biases: top-k of the biased router logits, softmax over those k.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using GptOss = Decoder<GQA<dynamic, dynamic>, RoPENeoxYarnUnrounded, Interleave<dynamic, SlidingWindow<>, Causal>,
                      RollingCache, RMSNorm, SequentialBlockWith<"attn_norm", "post_attention_norm">,
                      MoE<dynamic, dynamic, SwigluOai, SoftmaxOfTopKRouter>>;

struct gpt_oss_architecture {
    static constexpr std::string_view gguf_name = "gpt-oss";
    using model = GptOss;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true, .window_period_default = 2};
};

} // namespace archetype::presets
