#pragma once
// XieluMLP: down(xielu(up(x))), not gated, with the activation's parameters per layer from
// the file (Apertus; transformers' XIELUActivation, llama.cpp's ggml_xielu):
//
//   alpha_p = softplus(a_p), alpha_n = beta + softplus(a_n)
//   xielu(x) = alpha_p x^2 + beta x                          x > 0
//            = (expm1(min(x, eps)) - x) alpha_n + beta x     x <= 0
//
// Keys xielu.alpha_p, xielu.alpha_n, xielu.beta, xielu.eps: one float per layer (arrays of
// block_count; a single value applies to every layer, as llama.cpp's get_key_or_arr), kept
// outside the {arch}. prefix by the converter. a_p and a_n are stored before the softplus.
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "archetype/core/dims.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

template <dim_t Hidden = dynamic>
struct XieluMLPWith {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "XieluMLP";
    static constexpr dim_t hidden = Hidden;
    static constexpr bool gated = false;
    static std::string describe() { return "XieluMLP(per-layer xIELU)"; }
};
using XieluMLP = XieluMLPWith<>;

template <dim_t H>
struct ffn_impl<XieluMLPWith<H>> {
    /// act = {alpha_p, alpha_n, beta, eps} of the layer being bound.
    template <class Binder>
    static void bind_activation(Binder& b, std::array<float, 4>& act) {
        const std::size_t il = b.layer_index(), n_layer = b.hparams().dims.n_layer;
        auto value = [&](const char* name) {
            const std::string key = std::string("xielu.") + name;
            float v = 0.f;
            if (b.file().type_of(key) == gguf::value_type::ARRAY) {
                const auto a = b.file().template get<std::vector<float>>(key);
                if (a.size() != n_layer)
                    throw format_error("metadata key '" + key + "' has " + std::to_string(a.size()) + " values for " +
                                       std::to_string(n_layer) + " layers");
                v = a[il];
            } else {
                v = b.file().template get<float>(key);
            }
            if (!std::isfinite(v)) throw format_error("metadata key '" + key + "' is not finite at layer " + std::to_string(il));
            return v;
        };
        // ggml's softplus: the input itself above 20 (where log1p(exp) is it in float)
        auto softplus = [](float x) { return x > 20.f ? x : std::log(1.f + std::exp(x)); };
        const float beta = value("beta");
        act = {softplus(value("alpha_p")), beta + softplus(value("alpha_n")), beta, value("eps")};
    }
    static void apply(const std::array<float, 4>& act, float* x, std::size_t n) noexcept {
        const float alpha_p = act[0], alpha_n = act[1], beta = act[2], eps = act[3];
        for (std::size_t i = 0; i < n; ++i) {
            const float v = x[i];
            x[i] = v > 0.f ? alpha_p * v * v + beta * v : (std::expm1(std::fmin(v, eps)) - v) * alpha_n + beta * v;
        }
    }
};

} // namespace archetype
