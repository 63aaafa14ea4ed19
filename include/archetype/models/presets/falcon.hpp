#pragma once
// Falcon (GGUF `falcon`; llama.cpp src/models/falcon.cpp): attention and the feed-forward
// side by side on the block input, NeoX RoPE, fused Q|K|V (MQA / GQA), a non-gated exact-GELU
// MLP, LayerNorms with biases, tied head. Falcon-7B normalises once (attn_norm); Falcon-40B
// twice: attn_norm_2 before attention, attn_norm before the MLP.
#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

template <class Block>
using FalconWith = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, GeluMLPWith<gelu_form::erf>, LayerNorm, Block>;
using Falcon = FalconWith<ParallelResidual>;
using Falcon40B = FalconWith<ParallelResidualWith<2, "attn_norm_2", "attn_norm">>;

struct falcon_40b_architecture {
    static constexpr std::string_view gguf_name = "falcon";
    using model = Falcon40B;
    static bool accepts(const gguf::file& f) { return f.find_tensor("blk.0.attn_norm_2.weight") != nullptr; }
};
struct falcon_architecture {
    static constexpr std::string_view gguf_name = "falcon";
    using model = Falcon;
};

} // namespace archetype::presets
