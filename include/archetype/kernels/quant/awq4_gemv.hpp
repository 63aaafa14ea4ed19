#pragma once
// Products with AWQ4 weights (AutoAWQ's int4 groups, blocks.hpp) for a few tokens:
// y[t][r] = sum_k d_b * (q_k - z_b) * x[t][k], with FLOAT activations (TinyChat's and
// AutoAWQ's W4A16 numerics: the activations are never rounded to int8, so a decode step
// gives the exact model's products to float rounding, as a batch through the panels does).
//
// Each 32-element block is decoded in registers to its exact float weights,
// w = float(q - z) * d (|q - z| <= 15 times an F16: no rounding; the ways of computing it
// below are all exact), and multiplied into one float accumulator per (row, token) with
// FMA: no dequantised copy of the matrix, 19 bytes read per 32 weights. One level per
// target, chosen by the compiler's macros like every quantised kernel (docs/isa.md):
//   avx512           16 lanes: the 16 quant bytes widened to 32-bit lanes (vpmovzxbd),
//                    low nibbles = elements 0..15, high = 16..31, used as indices into the
//                    block's 16 possible weights, made in one vector (the constant row
//                    level_minus_zero[z] times the scale, vcvtph2ps) and looked up by vpermps;
//   avx2, avxvnni    8 lanes (AVX2 + FMA + F16C): bytes 0..7 and 8..15 widened, each giving
//                    two vectors (low and high nibbles), w = fma(float(q), d, -z * d) with d
//                    and -z * d made in vectors; AVX-VNNI has nothing to add to a float
//                    product, so avxvnni runs this kernel;
//   neon, neon_dotprod  4 lanes: nibbles split as bytes, widened to 16 then 32 bits;
//                    the dot product extension is integer-only, so both levels run it;
//   generic          scalar, the same per-lane sums in plain float.
// Rows go in groups of 4 (four independent accumulator chains per token), tokens in
// pairs; every (row, token) output is made by the same instructions in the same order
// whatever its group, the number of tokens and the thread count, so the results are
// bitwise independent of all three (tests/quant/test_awq4.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/blocks.hpp"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__)
#define ARCHETYPE_AWQ4_LEVEL "avx512"
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define ARCHETYPE_AWQ4_LEVEL "avx2"
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define ARCHETYPE_AWQ4_LEVEL "neon"
#else
#define ARCHETYPE_AWQ4_LEVEL "generic"
#endif

namespace archetype::quant::awq4 {

inline constexpr std::size_t block_bytes = 19;

/// Which of the kernels below this translation unit compiled (tests name it).
inline constexpr const char* level = ARCHETYPE_AWQ4_LEVEL;

namespace detail {

/// How far ahead of the rows being read the L2 prefetch cursor runs (prefetches never fault:
/// past the end of the matrix they are dropped).
inline constexpr std::uintptr_t prefetch_ahead = 32 * 1024;

/// Row z: the values q - z for q = 0..15 (a block's weights before its scale).
alignas(64) inline constexpr float level_minus_zero[16][16] = {
#define ARCHETYPE_AWQ4_ROW(z) {0 - z, 1 - z, 2 - z, 3 - z, 4 - z, 5 - z, 6 - z, 7 - z, 8 - z, 9 - z, 10 - z, 11 - z, 12 - z, 13 - z, 14 - z, 15 - z}
    ARCHETYPE_AWQ4_ROW(0),  ARCHETYPE_AWQ4_ROW(1),  ARCHETYPE_AWQ4_ROW(2),  ARCHETYPE_AWQ4_ROW(3),
    ARCHETYPE_AWQ4_ROW(4),  ARCHETYPE_AWQ4_ROW(5),  ARCHETYPE_AWQ4_ROW(6),  ARCHETYPE_AWQ4_ROW(7),
    ARCHETYPE_AWQ4_ROW(8),  ARCHETYPE_AWQ4_ROW(9),  ARCHETYPE_AWQ4_ROW(10), ARCHETYPE_AWQ4_ROW(11),
    ARCHETYPE_AWQ4_ROW(12), ARCHETYPE_AWQ4_ROW(13), ARCHETYPE_AWQ4_ROW(14), ARCHETYPE_AWQ4_ROW(15)};
#undef ARCHETYPE_AWQ4_ROW

#if defined(__AVX512F__)
struct lanes {
    using vec = __m512;
    static constexpr std::size_t per_block = 2; // vectors of 16 per 32-element block
    static vec zero() noexcept { return _mm512_setzero_ps(); }
    static vec load(const float* x) noexcept { return _mm512_loadu_ps(x); }
    static vec fma(vec a, vec b, vec c) noexcept { return _mm512_fmadd_ps(a, b, c); }
    static vec add(vec a, vec b) noexcept { return _mm512_add_ps(a, b); }
    static float sum(vec a) noexcept { return _mm512_reduce_add_ps(a); }
    static void decode(const std::uint8_t* b, vec* w) noexcept {
        // the block's 16 possible weights (q - z) * d, q = 0..15, in one register (each exact:
        // a small integer times an F16), then looked up by the nibbles
        std::uint16_t h;
        std::memcpy(&h, b, 2);
        const __m512 d = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(h)));
        const __m512 table = _mm512_mul_ps(_mm512_load_ps(level_minus_zero[b[2] & 15]), d);
        const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 3)));
        w[0] = _mm512_permutexvar_ps(v, table); // vpermps reads the low 4 bits of each index
        w[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);
    }
    // x offset of vector i of a block
    static constexpr std::size_t offset(std::size_t i) noexcept { return 16 * i; }
};
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
struct lanes {
    using vec = __m256;
    static constexpr std::size_t per_block = 4;
    static vec zero() noexcept { return _mm256_setzero_ps(); }
    static vec load(const float* x) noexcept { return _mm256_loadu_ps(x); }
    static vec fma(vec a, vec b, vec c) noexcept { return _mm256_fmadd_ps(a, b, c); }
    static vec add(vec a, vec b) noexcept { return _mm256_add_ps(a, b); }
    static float sum(vec a) noexcept {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    static void decode(const std::uint8_t* b, vec* w) noexcept {
        std::uint16_t h;
        std::memcpy(&h, b, 2);
        const __m256 vd = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(h))); // exact
        const __m256 nzd = _mm256_mul_ps(_mm256_broadcast_ss(&level_minus_zero[b[2] & 15][0]), vd); // -z·d, exact
        const __m256i m = _mm256_set1_epi32(15);
        const __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 3)));
        const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 11)));
        w[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(a, m)), vd, nzd);   // 0..7
        w[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(c, m)), vd, nzd);   // 8..15
        w[2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(a, 4)), vd, nzd);  // 16..23
        w[3] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c, 4)), vd, nzd);  // 24..31
    }
    static constexpr std::size_t offset(std::size_t i) noexcept { return 8 * i; }
};
#elif defined(__aarch64__) && defined(__ARM_NEON)
struct lanes {
    using vec = float32x4_t;
    static constexpr std::size_t per_block = 8;
    static vec zero() noexcept { return vdupq_n_f32(0.f); }
    static vec load(const float* x) noexcept { return vld1q_f32(x); }
    static vec fma(vec a, vec b, vec c) noexcept { return vfmaq_f32(c, a, b); }
    static vec add(vec a, vec b) noexcept { return vaddq_f32(a, b); }
    static float sum(vec a) noexcept { return vaddvq_f32(a); }
    static void decode(const std::uint8_t* b, vec* w) noexcept {
        const float d = load_f16(b);
        const int16x8_t z = vdupq_n_s16(b[2] & 15);
        const uint8x16_t v = vld1q_u8(b + 3);
        const uint8x16_t nib[2] = {vandq_u8(v, vdupq_n_u8(15)), vshrq_n_u8(v, 4)}; // elements 0..15, 16..31
        for (int h = 0; h < 2; ++h) {
            const int16x8_t a = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(nib[h]))), z);
            const int16x8_t c = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(nib[h]))), z);
            w[4 * h + 0] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(a))), d);
            w[4 * h + 1] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(a))), d);
            w[4 * h + 2] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(c))), d);
            w[4 * h + 3] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(c))), d);
        }
    }
    static constexpr std::size_t offset(std::size_t i) noexcept { return 4 * i; }
};
#else
struct lanes {
    using vec = float;
    static constexpr std::size_t per_block = 32;
    static vec zero() noexcept { return 0.f; }
    static vec load(const float* x) noexcept { return *x; }
    static vec fma(vec a, vec b, vec c) noexcept { return a * b + c; }
    static vec add(vec a, vec b) noexcept { return a + b; }
    static float sum(vec a) noexcept { return a; }
    static void decode(const std::uint8_t* b, vec* w) noexcept {
        const float d = load_f16(b);
        const int z = b[2] & 15;
        for (std::size_t j = 0; j < 16; ++j) {
            w[j] = float((b[3 + j] & 0xF) - z) * d;
            w[j + 16] = float((b[3 + j] >> 4) - z) * d;
        }
    }
    static constexpr std::size_t offset(std::size_t i) noexcept { return i; }
};
#endif

/// R rows (consecutive, row_bytes apart) times T tokens. Per (row, token) one
/// accumulator: the block's vectors are added into it in order, so the sequence of
/// operations of an output is the same for every R and T.
template <std::size_t R, std::size_t T>
inline void rows_tokens(const std::uint8_t* W, std::size_t row_bytes, std::size_t n_blocks, const float* x,
                        std::size_t ldx, float* y, std::size_t ldy) noexcept {
    using L = lanes;
    typename L::vec acc[R][T];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t t = 0; t < T; ++t) acc[r][t] = L::zero();
    // The R rows are R x row_bytes contiguous bytes read in an interleaved order, which the
    // hardware prefetchers follow poorly: a linear cursor walks the same bytes `prefetch_ahead`
    // further on into L2 (the next groups' rows), R x 19 bytes per block (docs/weights.md).
    const std::uintptr_t cursor = reinterpret_cast<std::uintptr_t>(W) + prefetch_ahead;
    for (std::size_t b = 0; b < n_blocks; ++b) {
        const std::uintptr_t p = cursor + b * R * block_bytes;
        __builtin_prefetch(reinterpret_cast<const void*>(p), 0, 2);
        if constexpr (R * block_bytes > 64) __builtin_prefetch(reinterpret_cast<const void*>(p + 64), 0, 2);
        for (std::size_t r = 0; r < R; ++r) {
            typename L::vec w[L::per_block]; // one row's block at a time: few registers live
            L::decode(W + r * row_bytes + b * block_bytes, w);
            for (std::size_t t = 0; t < T; ++t) {
                const float* xb = x + t * ldx + b * 32;
                for (std::size_t i = 0; i < L::per_block; ++i) acc[r][t] = L::fma(w[i], L::load(xb + L::offset(i)), acc[r][t]);
            }
        }
    }
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t t = 0; t < T; ++t) y[t * ldy + r] = L::sum(acc[r][t]);
}

template <std::size_t R>
inline void rows(const std::uint8_t* W, std::size_t row_bytes, std::size_t n_blocks, const float* x, std::size_t ldx,
                 std::size_t n_tok, float* y, std::size_t ldy) noexcept {
    std::size_t t = 0;
    for (; t + 2 <= n_tok; t += 2) rows_tokens<R, 2>(W, row_bytes, n_blocks, x + t * ldx, ldx, y + t * ldy, ldy);
    if (t < n_tok) rows_tokens<R, 1>(W, row_bytes, n_blocks, x + t * ldx, ldx, y + t * ldy, ldy);
}

} // namespace detail

/// y[n_tok x rows] (leading dim ldy) = x[n_tok x cols] (leading dim ldx) * W^T, W rows of
/// AWQ4 blocks (cols a multiple of 32), float activations. Work is split by groups of 4
/// rows over the pool.
inline void matmul(const void* W, std::size_t rows, std::size_t cols, const float* x, std::size_t ldx,
                   std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto* w = static_cast<const std::uint8_t*>(W);
    const std::size_t n_blocks = cols / 32, row_bytes = n_blocks * block_bytes;
    const std::size_t groups = (rows + 3) / 4;
    auto part = [&](std::size_t g0, std::size_t g1) {
        for (std::size_t g = g0; g < g1; ++g) {
            const std::size_t r0 = 4 * g;
            if (r0 + 4 <= rows) {
                detail::rows<4>(w + r0 * row_bytes, row_bytes, n_blocks, x, ldx, n_tok, y + r0, ldy);
            } else {
                for (std::size_t r = r0; r < rows; ++r)
                    detail::rows<1>(w + r * row_bytes, row_bytes, n_blocks, x, ldx, n_tok, y + r, ldy);
            }
        }
    };
    if (pool && pool->size() > 1 && groups > 1) pool->parallel_for(groups, part);
    else part(0, groups);
}

} // namespace archetype::quant::awq4

#undef ARCHETYPE_AWQ4_LEVEL
