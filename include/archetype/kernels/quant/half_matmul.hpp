#pragma once
// Matmul with F16 or BF16 weights and F32 activations, converting 16 weights at
// a time in registers (F16C vcvtph2ps / a 16-bit shift for BF16): no converted
// copy of the matrix. A tile of R rows x T tokens shares each converted vector.
// Each output keeps one fixed accumulation order whatever the tiling or thread
// split, so results do not depend on the thread count.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__F16C__)
#define ARCHETYPE_QUANT_HALF_AVX512 1

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"

namespace archetype::quant::half_avx512 {

namespace detail {

template <bool BF>
inline __m512 load16(const std::uint16_t* p, __mmask16 k) noexcept {
    const __m256i h = _mm256_maskz_loadu_epi16(k, p);
    if constexpr (BF)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else
        return _mm512_cvtph_ps(h);
}

template <bool BF, int R, int T>
inline void tile(const std::uint16_t* const* w, std::size_t cols, const float* const* x, float* y,
                 std::size_t ldy) noexcept {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    for (std::size_t k = 0; k < cols; k += 16) {
        const std::size_t left = cols - k;
        const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
        __m512 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = load16<BF>(w[r] + k, mask);
        for (int t = 0; t < T; ++t) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x[t] + k);
            for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[std::size_t(t) * ldy + std::size_t(r)] = _mm512_reduce_add_ps(acc[r][t]);
}

inline constexpr int tile_rows = 4;
inline constexpr int tile_toks = 4;

template <bool BF, int R>
inline void rows_tokens(const std::uint16_t* W, std::size_t cols, std::size_t r0, const float* x, std::size_t ldx,
                        std::size_t t0, std::size_t t1, float* y, std::size_t ldy) noexcept {
    const std::uint16_t* w[R];
    for (int r = 0; r < R; ++r) w[r] = W + (r0 + std::size_t(r)) * cols;
    const float* xs[tile_toks];
    std::size_t t = t0;
    for (; t + tile_toks <= t1; t += tile_toks) {
        for (int k = 0; k < tile_toks; ++k) xs[k] = x + (t + std::size_t(k)) * ldx;
        tile<BF, R, tile_toks>(w, cols, xs, y + t * ldy + r0, ldy);
    }
    for (; t < t1; ++t) {
        xs[0] = x + t * ldx;
        tile<BF, R, 1>(w, cols, xs, y + t * ldy + r0, ldy);
    }
}

template <bool BF>
inline void run(const std::uint16_t* W, std::size_t rows, std::size_t cols, const float* x, std::size_t ldx,
                std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const std::size_t groups = (rows + tile_rows - 1) / tile_rows;
    // Token chunks of 64 keep the activations they touch in L2 while the weights stream.
    constexpr std::size_t chunk = 64;
    auto work = [&](std::size_t gb, std::size_t ge) {
        for (std::size_t t0 = 0; t0 < n_tok; t0 += chunk) {
            const std::size_t t1 = t0 + chunk < n_tok ? t0 + chunk : n_tok;
            for (std::size_t g = gb; g < ge; ++g) {
                const std::size_t r0 = g * tile_rows;
                if (r0 + tile_rows <= rows)
                    rows_tokens<BF, tile_rows>(W, cols, r0, x, ldx, t0, t1, y, ldy);
                else
                    for (std::size_t r = r0; r < rows; ++r) rows_tokens<BF, 1>(W, cols, r, x, ldx, t0, t1, y, ldy);
            }
        }
    };
    if (pool) pool->parallel_for(groups, work); else work(0, groups);
}

} // namespace detail

/// y = x * W^T for W in F16 (bf16 = false) or BF16 (bf16 = true), rows of `cols` 16-bit values.
inline void matmul(bool bf16, const void* W, std::size_t rows, std::size_t cols, const float* x, std::size_t ldx,
                   std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto* w = static_cast<const std::uint16_t*>(W);
    if (bf16) detail::run<true>(w, rows, cols, x, ldx, n_tok, y, ldy, pool);
    else detail::run<false>(w, rows, cols, x, ldx, n_tok, y, ldy, pool);
}

} // namespace archetype::quant::half_avx512

#endif
