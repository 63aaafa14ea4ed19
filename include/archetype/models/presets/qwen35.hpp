#pragma once
// Qwen3.5, dense (GGUF `qwen35`): Qwen3-Next's layers — gated DeltaNet between gated-attention
// layers by full_attention_interval — with separate ssm_beta / ssm_alpha, value heads TILED over
// key heads (its converter reorders them from transformers' grouped order), and a dense SwiGLU
// feed-forward. Its M-RoPE sections (rope.dimension_sections) rotate text positions exactly as
// NeoX RoPE does (every section gets the same position), so the entry reads them as known.
#include "archetype/io/key_ledger.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Qwen35 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, RMSNorm,
                      HybridMixer<GatedSelfAttention, GatedDeltaNetWith<kernels::value_head_order::tiled>,
                                  recurrent_between_full_attention>,
                      SequentialBlockWith<"attn_norm", "post_attention_norm">>;

struct qwen35_architecture {
    static constexpr std::string_view gguf_name = "qwen35";
    using model = Qwen35;
    static constexpr known_unused_key known_unused_keys[] = {
        {"{arch}.rope.dimension_sections", "text positions are equal in every M-RoPE section: NeoX RoPE"}};
};

} // namespace archetype::presets
