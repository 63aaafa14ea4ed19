#pragma once
// OLMo 2 (GGUF `olmo2`; llama.cpp's src/models/olmo2.cpp graph): a Llama whose norms
// sit after the sublayers only, x + norm(f(x)) (NormAfterSublayer: post_attention_norm,
// post_ffw_norm, no attn_norm / ffn_norm), with an RMSNorm over the whole Q and K
// projection rows before RoPE (attn_q_norm [n_head * head_dim], attn_k_norm
// [n_head_kv * head_dim]; Qwen 3 norms each head instead), RoPE on NeoX pairs.
// OLMo 3 files (also `olmo2`, with a sliding window) are refused by the Causal mask.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/norm_sandwich.hpp"

namespace archetype::presets {

using OLMo2 = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SelfAttentionWith<qk_norm::rms_whole>, SwiGLU,
                     NormAfterSublayer<RMSNorm>>;

struct olmo2_architecture {
    static constexpr std::string_view gguf_name = "olmo2";
    using model = OLMo2;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
