#pragma once
// Normalisations over contiguous vectors, vectorised. Weights/biases may be
// null (= 1 / 0). y may alias x. Sums run in float over four vector
// accumulators (the reference twins in kernels/reference/norm.hpp use double;
// the tests bound the difference).
#include <cmath>
#include <cstddef>

#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

namespace detail {
/// sum of (x[i] - c)^2
inline float sum_sq_dev(const float* x, std::size_t n, float c) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    const fbatch cv(c);
    fbatch a0(0.f), a1(0.f), a2(0.f), a3(0.f);
    std::size_t i = 0;
    for (; i + 4 * W <= nv; i += 4 * W) {
        const auto d0 = fbatch::load_unaligned(x + i) - cv, d1 = fbatch::load_unaligned(x + i + W) - cv;
        const auto d2 = fbatch::load_unaligned(x + i + 2 * W) - cv, d3 = fbatch::load_unaligned(x + i + 3 * W) - cv;
        a0 = xsimd::fma(d0, d0, a0); a1 = xsimd::fma(d1, d1, a1);
        a2 = xsimd::fma(d2, d2, a2); a3 = xsimd::fma(d3, d3, a3);
    }
    for (; i < nv; i += W) { const auto d = fbatch::load_unaligned(x + i) - cv; a0 = xsimd::fma(d, d, a0); }
    float s = xsimd::hadd((a0 + a1) + (a2 + a3));
    for (; i < n; ++i) s += (x[i] - c) * (x[i] - c);
    return s;
}

inline float sum(const float* x, std::size_t n) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    fbatch a0(0.f), a1(0.f);
    std::size_t i = 0;
    for (; i + 2 * W <= nv; i += 2 * W) { a0 += fbatch::load_unaligned(x + i); a1 += fbatch::load_unaligned(x + i + W); }
    for (; i < nv; i += W) a0 += fbatch::load_unaligned(x + i);
    float s = xsimd::hadd(a0 + a1);
    for (; i < n; ++i) s += x[i];
    return s;
}

/// y = (x - shift) * scale * w + b, w/b optional
inline void scale_shift(const float* x, const float* w, const float* b, float* y, std::size_t n,
                        float shift, float scale) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    const fbatch sh(shift), sc(scale);
    std::size_t i = 0;
    for (; i < nv; i += W) {
        auto v = (fbatch::load_unaligned(x + i) - sh) * sc;
        if (w) v *= fbatch::load_unaligned(w + i);
        if (b) v += fbatch::load_unaligned(b + i);
        v.store_unaligned(y + i);
    }
    for (; i < n; ++i) y[i] = (x[i] - shift) * scale * (w ? w[i] : 1.f) + (b ? b[i] : 0.f);
}
} // namespace detail

/// y = x / sqrt(mean(x^2) + eps) * w
inline void rms_norm(const float* x, const float* w, float* y, std::size_t n, float eps) noexcept {
    if (n == 0) return;
    const float scale = 1.f / std::sqrt(detail::sum_sq_dev(x, n, 0.f) / float(n) + eps);
    detail::scale_shift(x, w, nullptr, y, n, 0.f, scale);
}

/// y = (x - mean) / sqrt(var + eps) * w + b   (two passes: no cancellation)
inline void layer_norm(const float* x, const float* w, const float* b, float* y, std::size_t n,
                       float eps) noexcept {
    if (n == 0) return;
    const float mean = detail::sum(x, n) / float(n);
    const float scale = 1.f / std::sqrt(detail::sum_sq_dev(x, n, mean) / float(n) + eps);
    detail::scale_shift(x, w, b, y, n, mean, scale);
}

/// LayerNorm of each of `groups` equal slices of x (RWKV ln_x), then per-element w, b over all n.
inline void group_norm(const float* x, const float* w, const float* b, float* y, std::size_t n,
                       std::size_t groups, float eps) noexcept {
    if (groups == 0) return;
    const std::size_t g = n / groups;
    for (std::size_t k = 0; k < groups; ++k)
        layer_norm(x + k * g, w ? w + k * g : nullptr, b ? b + k * g : nullptr, y + k * g, g, eps);
}

} // namespace archetype::kernels
