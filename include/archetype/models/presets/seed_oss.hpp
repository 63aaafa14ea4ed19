#pragma once
// Seed-OSS (ByteDance; GGUF `seed_oss`; llama.cpp src/models/seed-oss.cpp): GQA with q/k/v
// biases and NeoX RoPE, SwiGLU, RMSNorm pre-norms — the feed-forward's norm filed as
// blk.N.post_attention_norm (Hugging Face's post_attention_layernorm), there is no ffn_norm.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using SeedOss = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, RMSNorm,
                       SequentialBlockWith<"attn_norm", "post_attention_norm">>;

struct seed_oss_architecture {
    static constexpr std::string_view gguf_name = "seed_oss";
    using model = SeedOss;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
