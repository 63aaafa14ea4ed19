#pragma once
// Softmax in place, vectorised. A row that is entirely -inf (fully masked)
// gives zeros, never NaN. softmax_scaled fuses the attention 1/sqrt(d) scale so
// the scores are read one time fewer. Scalar twin: kernels/reference/softmax.hpp.
#include <cstddef>
#include <limits>

#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

/// x = softmax(scale * x) in place (scale > 0).
inline void softmax_scaled(float* x, std::size_t n, float scale) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    const std::size_t nv = n - n % W;
    const fbatch sc(scale);
    fbatch mv(ninf);
    for (std::size_t i = 0; i < nv; i += W) mv = xsimd::max(mv, fbatch::load_unaligned(x + i) * sc);
    float m = simd::hmax(mv);
    for (std::size_t i = nv; i < n; ++i) m = x[i] * scale > m ? x[i] * scale : m;
    if (!(m > ninf)) { // all -inf (or NaN): a fully masked row contributes nothing
        for (std::size_t i = 0; i < n; ++i) x[i] = 0.f;
        return;
    }
    // exp(scale*x - m) as one fma before exp; the row max maps to exp(0) = 1, so s >= 1.
    const fbatch negm(-m);
    fbatch s0(0.f), s1(0.f);
    std::size_t i = 0;
    for (; i + 2 * W <= nv; i += 2 * W) {
        const auto e0 = xsimd::exp(xsimd::fma(fbatch::load_unaligned(x + i), sc, negm));
        const auto e1 = xsimd::exp(xsimd::fma(fbatch::load_unaligned(x + i + W), sc, negm));
        e0.store_unaligned(x + i);
        e1.store_unaligned(x + i + W);
        s0 += e0;
        s1 += e1;
    }
    for (; i < nv; i += W) {
        const auto e = xsimd::exp(xsimd::fma(fbatch::load_unaligned(x + i), sc, negm));
        e.store_unaligned(x + i);
        s0 += e;
    }
    float tail = 0.f;
    if (nv != n) {
        alignas(64) float t[W];
        for (std::size_t k = 0; k < W; ++k) t[k] = nv + k < n ? x[nv + k] : 0.f;
        xsimd::exp(xsimd::fma(fbatch::load_aligned(t), sc, negm)).store_aligned(t);
        for (std::size_t k = nv; k < n; ++k) { x[k] = t[k - nv]; tail += t[k - nv]; }
    }
    const fbatch inv(1.f / (xsimd::hadd(s0 + s1) + tail));
    for (std::size_t k = 0; k < nv; k += W) (fbatch::load_unaligned(x + k) * inv).store_unaligned(x + k);
    for (std::size_t k = nv; k < n; ++k) x[k] *= inv.get(0);
}

inline void softmax(float* x, std::size_t n) noexcept { softmax_scaled(x, n, 1.f); }

/// The unnormalised half of a softmax, for attention split over key chunks:
/// x = exp(x - m) in place with m = max(x); returns {m, sum}. A fully masked
/// row (all -inf) gives zeros and {-inf, 0}. Chunks merge as
/// softmax = exp(m_c - M) * x_c / sum_c' exp(m_c' - M) * l_c'.
struct softmax_part { float max, sum; };
inline softmax_part softmax_unnormalised(float* x, std::size_t n) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    const std::size_t nv = n - n % W;
    fbatch mv(ninf);
    for (std::size_t i = 0; i < nv; i += W) mv = xsimd::max(mv, fbatch::load_unaligned(x + i));
    float m = simd::hmax(mv);
    for (std::size_t i = nv; i < n; ++i) m = x[i] > m ? x[i] : m;
    if (!(m > ninf)) {
        for (std::size_t i = 0; i < n; ++i) x[i] = 0.f;
        return {ninf, 0.f};
    }
    const fbatch negm(-m);
    fbatch s0(0.f);
    for (std::size_t i = 0; i < nv; i += W) {
        const auto e = xsimd::exp(fbatch::load_unaligned(x + i) + negm);
        e.store_unaligned(x + i);
        s0 += e;
    }
    float tail = 0.f;
    if (nv != n) {
        alignas(64) float t[W];
        for (std::size_t k = 0; k < W; ++k) t[k] = nv + k < n ? x[nv + k] : ninf;
        xsimd::exp(fbatch::load_aligned(t) + negm).store_aligned(t);
        for (std::size_t k = nv; k < n; ++k) { x[k] = t[k - nv]; tail += t[k - nv]; }
    }
    return {m, xsimd::hadd(s0) + tail};
}

} // namespace archetype::kernels
