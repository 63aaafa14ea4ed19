#pragma once
// Attention-scale axis: the factor of the attention scores q.k before the softmax (and
// before a score cap). One rule per policy, each reading only its own keys:
//   InvSqrtHeadDim (default)   1/sqrt(head_dim) (key_length); reads no key
//   AttentionScaleKey          {arch}.attention.scale when the file has it, else
//                              1/sqrt(head_dim) (Granite's attention_multiplier; llama.cpp
//                              reads the key for granite, granitemoe, granitehybrid only)
//   QueryPreAttnScale<L>       Gemma 2 / 3: {arch}.attention.scale when the file has it (our
//                              Hugging Face converter writes query_pre_attn_scalar^-1/2), else
//                              llama.cpp's rule: 1/sqrt(n_embd / n_head) for the model of L
//                              layers (Gemma 2 27B: 46, Gemma 3 27B: 62), 1/sqrt(head_dim)
//                              for the others
// An attn_scale_impl<S> has `scale(binder)`, returning the scale from the file's keys
// (binder.keys(): the dimensions; binder.file() / prefix(): its own keys). A file with
// {arch}.attention.scale and a model whose rule does not read it is refused by the key
// ledger (io/key_ledger.hpp).
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct InvSqrtHeadDim {
    using axis = archetype::axis::attn_scale;
    static constexpr std::string_view name = "InvSqrtHeadDim";
    static std::string describe() { return "1/sqrt(head_dim)"; }
};

struct AttentionScaleKey {
    using axis = archetype::axis::attn_scale;
    static constexpr std::string_view name = "AttentionScaleKey";
    static std::string describe() { return "{arch}.attention.scale, else 1/sqrt(head_dim)"; }
};

template <std::size_t WideLayers>
struct QueryPreAttnScale {
    using axis = archetype::axis::attn_scale;
    static constexpr std::string_view name = "QueryPreAttnScale";
    static constexpr std::size_t wide_layers = WideLayers;
    static std::string describe() {
        return "{arch}.attention.scale, else 1/sqrt(n_embd / n_head) at " + std::to_string(WideLayers) +
               " layers, else 1/sqrt(head_dim)";
    }
};

namespace detail {
/// {arch}.attention.scale as a finite positive float, or `otherwise` when the file lacks it.
template <class Binder>
float attention_scale_key(Binder& b, float otherwise) {
    const std::string key = b.prefix() + "attention.scale";
    if (!b.file().has(key)) return otherwise;
    const float v = b.file().template get<float>(key);
    if (!std::isfinite(v) || !(v > 0.f))
        throw format_error(key + " = " + std::to_string(v) + " must be a finite positive number");
    return v;
}
} // namespace detail

template <>
struct attn_scale_impl<InvSqrtHeadDim> {
    template <class Binder>
    static float scale(Binder& b) {
        return 1.f / std::sqrt(float(b.keys().head_dim));
    }
};

template <>
struct attn_scale_impl<AttentionScaleKey> {
    template <class Binder>
    static float scale(Binder& b) {
        return detail::attention_scale_key(b, 1.f / std::sqrt(float(b.keys().head_dim)));
    }
};

template <std::size_t L>
struct attn_scale_impl<QueryPreAttnScale<L>> {
    template <class Binder>
    static float scale(Binder& b) {
        const auto& h = b.keys();
        return detail::attention_scale_key(b, 1.f / std::sqrt(float(h.n_layer == L ? h.n_embd / h.n_head : h.head_dim)));
    }
};

} // namespace archetype
