#pragma once
// LFM2 (Liquid AI; GGUF `lfm2`): a hybrid whose layers are gated short convolutions
// (ShortConv, its conv state per sequence) or GQA self-attention with a per-head QK
// RMSNorm, as the file's lfm2.attention.head_count_kv array says (0 = a convolution
// layer: HybridMixer), each followed by a SwiGLU feed-forward, pre-normed with RMSNorm;
// NeoX RoPE; the final norm filed as token_embd_norm (llama.cpp's name for it); tied head.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using LFM2 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, RMSNorm,
                     HybridMixer<SelfAttention, ShortConv>>;

struct lfm2_architecture {
    static constexpr std::string_view gguf_name = "lfm2";
    using model = LFM2;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true, .output_norm = "token_embd_norm"};
};

} // namespace archetype::presets
