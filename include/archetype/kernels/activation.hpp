#pragma once
// Element-wise activations in place over n floats, vectorised with xsimd.
// The tail (n % W elements) goes through a padded register so every element,
// wherever it sits, sees the same instruction sequence. Scalar twins:
// kernels/reference/activation.hpp.
#include <cstddef>

#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

namespace detail {
/// x[i] = f(x[i]) over n floats, f taking and returning a simd::fbatch.
template <class F>
inline void map_inplace(float* x, std::size_t n, F f) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    for (std::size_t i = 0; i < nv; i += W) f(fbatch::load_unaligned(x + i)).store_unaligned(x + i);
    if (nv == n) return;
    alignas(64) float t[W] = {};
    for (std::size_t i = nv; i < n; ++i) t[i - nv] = x[i];
    f(fbatch::load_aligned(t)).store_aligned(t);
    for (std::size_t i = nv; i < n; ++i) x[i] = t[i - nv];
}

inline simd::fbatch silu(const simd::fbatch& v) noexcept { return v / (1.f + xsimd::exp(-v)); }
} // namespace detail

inline void silu(float* x, std::size_t n) noexcept { detail::map_inplace(x, n, detail::silu); }

inline void sigmoid(float* x, std::size_t n) noexcept {
    detail::map_inplace(x, n, [](const simd::fbatch& v) { return 1.f / (1.f + xsimd::exp(-v)); });
}
inline void tanh(float* x, std::size_t n) noexcept {
    detail::map_inplace(x, n, [](const simd::fbatch& v) { return xsimd::tanh(v); });
}
inline void exp(float* x, std::size_t n) noexcept {
    detail::map_inplace(x, n, [](const simd::fbatch& v) { return xsimd::exp(v); });
}
/// max(x, 0)^2 (RWKV channel mix)
inline void relu_sq(float* x, std::size_t n) noexcept {
    detail::map_inplace(x, n, [](const simd::fbatch& v) {
        const auto r = xsimd::max(v, simd::fbatch(0.f));
        return r * r;
    });
}
/// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
inline void gelu_tanh(float* x, std::size_t n) noexcept {
    detail::map_inplace(x, n, [](const simd::fbatch& v) {
        const simd::fbatch c(0.7978845608028654f);
        const auto inner = c * xsimd::fma(simd::fbatch(0.044715f) * v, v * v, v);
        return 0.5f * v * (1.f + xsimd::tanh(inner));
    });
}
/// GELU, exact: 0.5 x (1 + erf(x / sqrt 2))
inline void gelu_erf(float* x, std::size_t n) noexcept {
    detail::map_inplace(x, n, [](const simd::fbatch& v) {
        return 0.5f * v * (1.f + xsimd::erf(v * 0.7071067811865476f));
    });
}
/// gate[i] = silu(gate[i]) * up[i]  (SwiGLU)
inline void silu_mul(float* gate, const float* up, std::size_t n) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    for (std::size_t i = 0; i < nv; i += W)
        (detail::silu(fbatch::load_unaligned(gate + i)) * fbatch::load_unaligned(up + i))
            .store_unaligned(gate + i);
    if (nv == n) return;
    alignas(64) float g[W] = {}, u[W] = {};
    for (std::size_t i = nv; i < n; ++i) { g[i - nv] = gate[i]; u[i - nv] = up[i]; }
    (detail::silu(fbatch::load_aligned(g)) * fbatch::load_aligned(u)).store_aligned(g);
    for (std::size_t i = nv; i < n; ++i) gate[i] = g[i - nv];
}

} // namespace archetype::kernels
