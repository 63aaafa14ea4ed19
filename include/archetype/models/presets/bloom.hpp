#pragma once
// BLOOM (GGUF `bloom`): ALiBi instead of rotary positions, a LayerNorm on the embedding
// (token_embd_norm), LayerNorm with biases, one fused attn_qkv with its bias, every
// projection biased, a GELU (tanh form) MLP; the head tied to the embedding.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Bloom = Decoder<MHA<dynamic>, ALiBi, Causal, FullCache, GeluMLP, LayerNorm, NormedEmbedding<LayerNorm>>;

struct bloom_architecture {
    static constexpr std::string_view gguf_name = "bloom";
    using model = Bloom;
};

} // namespace archetype::presets
