#pragma once
// Qwen3-Next (GGUF `qwen3next`): gated DeltaNet layers (value heads grouped over key heads)
// between gated-attention layers — layer il attends iff (il + 1) % full_attention_interval
// == 0, or as {arch}.attention.recurrent_layers says (HybridMixer with
// recurrent_between_full_attention); per-head QK RMSNorm, partial NeoX RoPE; each layer's
// feed-forward a mixture of experts (softmax top-k, renormalised) plus a sigmoid-gated shared
// expert, pre-normed by post_attention_norm. The norms are stored as 1 + w by the converter.
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Qwen3Next = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, RMSNorm,
                         MoE<dynamic, dynamic, SwiGLU, SoftmaxRouter<>, SigmoidGatedSharedExpert>,
                         HybridMixer<GatedSelfAttention, GatedDeltaNet, recurrent_between_full_attention>,
                         SequentialBlockWith<"attn_norm", "post_attention_norm">>;

struct qwen3next_architecture {
    static constexpr std::string_view gguf_name = "qwen3next";
    using model = Qwen3Next;
};

} // namespace archetype::presets
