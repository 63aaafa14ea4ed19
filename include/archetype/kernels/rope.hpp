#pragma once
// Rotary position embedding applied in place to n_heads heads of one token.
// The kernel knows no model: the caller (the RoPE policy) precomputes cos/sin of
// the n_rot/2 rotation angles for this position (base, scaling, YaRN live there).
// Pairing: `adjacent` rotates (x[2i], x[2i+1]) (GGUF llama, ggml mode 0);
// `neox` rotates (x[i], x[i + n_rot/2]) (ggml NeoX mode, HF layout).
// Dimensions past n_rot are left unchanged. Scalar twin: kernels/reference/rope.hpp.
#include <cstddef>
#include <cstdint>

#include "archetype/kernels/reference/rope.hpp"
#include "archetype/kernels/rope_pairing.hpp"
#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

namespace detail {
// Lane permutation 0<->1, 2<->3, ...: swaps each adjacent pair.
struct swap_pairs_index {
    static constexpr std::uint32_t get(std::size_t i, std::size_t) { return std::uint32_t(i ^ 1u); }
};
} // namespace detail

inline void rope(float* x, std::size_t n_heads, std::size_t head_stride, std::size_t n_rot,
                 const float* cos, const float* sin, rope_pairing pairing) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t half = n_rot / 2;
    if (pairing == rope_pairing::neox) {
        const std::size_t nv = half - half % W;
        for (std::size_t h = 0; h < n_heads; ++h) {
            float* v = x + h * head_stride;
            for (std::size_t i = 0; i < nv; i += W) {
                const auto x0 = fbatch::load_unaligned(v + i), x1 = fbatch::load_unaligned(v + i + half);
                const auto c = fbatch::load_unaligned(cos + i), s = fbatch::load_unaligned(sin + i);
                xsimd::fms(x0, c, x1 * s).store_unaligned(v + i);
                xsimd::fma(x0, s, x1 * c).store_unaligned(v + i + half);
            }
            for (std::size_t i = nv; i < half; ++i) {
                const float x0 = v[i], x1 = v[i + half];
                v[i] = x0 * cos[i] - x1 * sin[i];
                v[i + half] = x0 * sin[i] + x1 * cos[i];
            }
        }
        return;
    }
    // Adjacent pairs: out = x * [c0 c0 c1 c1 ..] + swap_pairs(x) * [-s0 s0 -s1 s1 ..],
    // with the duplicated tables built once for all heads.
    constexpr std::size_t max_rot = 1024;
    if constexpr (W < 2) {
        reference::rope(x, n_heads, head_stride, n_rot, cos, sin, pairing);
    } else {
        if (n_rot > max_rot) {
            reference::rope(x, n_heads, head_stride, n_rot, cos, sin, pairing);
            return;
        }
        const std::size_t nr = 2 * half;
        const std::size_t nv = nr - nr % W;
        alignas(64) float cd[max_rot], sd[max_rot];
        for (std::size_t i = 0; i < half; ++i) {
            cd[2 * i] = cd[2 * i + 1] = cos[i];
            sd[2 * i] = -sin[i];
            sd[2 * i + 1] = sin[i];
        }
        using ubatch = xsimd::batch<std::uint32_t>;
        constexpr auto perm = xsimd::make_batch_constant<ubatch, detail::swap_pairs_index>();
        for (std::size_t h = 0; h < n_heads; ++h) {
            float* v = x + h * head_stride;
            for (std::size_t j = 0; j < nv; j += W) {
                const auto xv = fbatch::load_unaligned(v + j);
                const auto sw = xsimd::swizzle(xv, perm);
                xsimd::fma(xv, fbatch::load_aligned(cd + j), sw * fbatch::load_aligned(sd + j))
                    .store_unaligned(v + j);
            }
            for (std::size_t j = nv; j < nr; j += 2) {
                const float x0 = v[j], x1 = v[j + 1];
                v[j] = x0 * cd[j] + x1 * sd[j];
                v[j + 1] = x1 * cd[j] + x0 * sd[j + 1];
            }
        }
    }
}

/// RoPE over n_tok tokens: token t's heads start at x + t * tok_stride and its
/// cos/sin tables at cos/sin + t * cs_stride (one position per token).
inline void rope_tokens(float* x, std::size_t n_tok, std::size_t tok_stride, std::size_t n_heads,
                        std::size_t head_stride, std::size_t n_rot, const float* cos, const float* sin,
                        std::size_t cs_stride, rope_pairing pairing) noexcept {
    for (std::size_t t = 0; t < n_tok; ++t)
        rope(x + t * tok_stride, n_heads, head_stride, n_rot, cos + t * cs_stride, sin + t * cs_stride,
             pairing);
}

} // namespace archetype::kernels
