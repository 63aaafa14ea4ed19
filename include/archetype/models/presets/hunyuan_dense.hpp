#pragma once
// Hunyuan dense (Tencent; GGUF `hunyuan-dense`; llama.cpp src/models/hunyuan-dense.cpp): GQA
// with NeoX RoPE (the converter wrote the NTK-alpha-scaled base) and a per-head RMSNorm of
// Q and K applied after RoPE, SwiGLU, RMSNorm pre-norms, tied head.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using HunyuanDense = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SelfAttentionWith<qk_norm::rms_after_rope>,
                             SwiGLU, RMSNorm>;

struct hunyuan_dense_architecture {
    static constexpr std::string_view gguf_name = "hunyuan-dense";
    using model = HunyuanDense;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
