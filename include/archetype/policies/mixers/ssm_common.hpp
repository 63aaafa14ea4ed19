#pragma once
// What the state-space mixers (Mamba, Mamba2, GatedDeltaNet) share: reading the {arch}.ssm.*
// keys and the small F32 tensors of a layer (each checked with a message naming the key or
// tensor), and the scalar activations of their gates (softplus as ggml computes it, SiLU).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::detail {

/// log(1 + e^x), as ggml_compute_softplus_f32 (x itself above 20).
inline float softplus(float x) noexcept { return x > 20.f ? x : std::log1p(std::exp(x)); }
inline float silu(float x) noexcept { return x / (1.f + std::exp(-x)); }

/// {arch}.<key>, a count in 1..limit.
template <class Binder>
std::size_t ssm_key(Binder& b, const char* key, std::uint64_t limit = std::uint64_t(1) << 20) {
    const std::string k = b.prefix() + key;
    const auto v = b.file().template get<std::uint64_t>(k);
    if (v == 0 || v > limit)
        throw format_error("metadata key '" + k + "' = " + std::to_string(v) + " is out of range (1.." +
                           std::to_string(limit) + ")");
    return std::size_t(v);
}

/// An F32 tensor of exactly this shape (ggml order), as floats.
template <class Binder>
const float* f32_tensor(Binder& b, const std::string& name, std::vector<std::uint64_t> ne) {
    const auto& t = b.tensor(name, std::move(ne));
    if (t.type != ggml_type::F32)
        throw shape_error("tensor '" + name + "' is " + std::string(type_name(t.type)) + ", expected F32");
    return reinterpret_cast<const float*>(t.data);
}

} // namespace archetype::detail
