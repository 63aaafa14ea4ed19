#pragma once
// GPT-2 (GGUF `gpt2`): learned absolute positions (position_embd.weight), LayerNorm with
// biases, one fused attn_qkv projection with its bias (SelfAttention splits it by rows),
// every projection biased, a GELU (tanh form, float32) MLP; the head tied to the
// embedding when the file has no output.weight.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using GPT2 = Decoder<MHA<dynamic>, LearnedPositions<>, Causal, FullCache, GeluMLP, LayerNorm>;

struct gpt2_architecture {
    static constexpr std::string_view gguf_name = "gpt2";
    using model = GPT2;
};

} // namespace archetype::presets
