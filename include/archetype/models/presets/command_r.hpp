#pragma once
// Command-R / Cohere (GGUF `command-r`): a parallel residual block on one shared LayerNorm
// without bias, x + attn(ln(x)) + mlp(ln(x)) (ParallelResidual), RoPE on adjacent pairs
// (Cohere rotates interleaved dimensions), a SwiGLU MLP, the head tied to the embedding,
// and the logits MULTIPLIED by command-r.logit_scale (LogitMultiplier; Granite's key of
// the same name divides). With use_qk_norm the file has a LayerNorm per head for Q and K
// (attn_{q,k}_norm.weight [head_dim, heads]): command_r_qknorm_architecture, chosen by
// that tensor's presence.
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

template <qk_norm QK> using CommandRWith = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SwiGLU,
                                                   LayerNormNoBias, ParallelResidual, LogitMultiplier, SelfAttentionWith<QK>>;
using CommandR = CommandRWith<qk_norm::none>;
using CommandRQKNorm = CommandRWith<qk_norm::layer_per_head>;

struct command_r_qknorm_architecture {
    static constexpr std::string_view gguf_name = "command-r";
    using model = CommandRQKNorm;
    static bool accepts(const gguf::file& f) { return f.find_tensor("blk.0.attn_q_norm.weight") != nullptr; }
};
struct command_r_architecture {
    static constexpr std::string_view gguf_name = "command-r";
    using model = CommandR;
};

} // namespace archetype::presets
