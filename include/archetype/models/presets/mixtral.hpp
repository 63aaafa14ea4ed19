#pragma once
// Mixtral (GGUF `llama` with experts: llama.expert_count and per layer ffn_gate_inp +
// ffn_{gate,up,down}_exps instead of ffn_{gate,up,down}): a Llama whose feed-forward is a
// mixture of SwiGLU experts, softmax over all experts, top expert_used_count, renormalised
// (llama.cpp's llama graph hard-codes it). The registry tells it from a dense Llama by
// its tensors (listed before llama's entry).
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Mixtral = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, MoE<dynamic, dynamic, SwiGLU>, RMSNorm>;

struct mixtral_architecture {
    static constexpr std::string_view gguf_name = "llama";
    using model = Mixtral;
    static bool accepts(const gguf::file& f) {
        return f.find_tensor("blk.0.ffn_gate_exps.weight") && !f.has("llama.attention.sliding_window");
    }
};

} // namespace archetype::presets
