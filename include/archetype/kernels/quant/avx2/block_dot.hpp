#pragma once
// AVX2 + FMA + F16C dot products of quantised weight rows with one token's int8
// activations (avx2/activations.hpp), R rows at a time so that each activation
// block is loaded once for R independent accumulators.
//
// Each weight format is a struct with its block bytes and `idot(block, xq)`: the
// integer products of one 32-element (sub-)block, eight int32 lanes. The weights
// enter vpmaddubsw as unsigned values u = w + zero (nibbles as stored); the zero
// point and the Q4_1 / Q5_1 / K-type mins are folded out afterwards through the
// activations' integer sums, so no per-block sign trick is needed. Every
// intermediate fits: a vpmaddubsw pair is at most 2 * 63 * 127 < 2^15 (Q8_0 takes
// |w| and sign(x, w) instead: 2 * 128 * 127 < 2^15).
//
// Float work per block and row, the same in every R so that a row's output does
// not depend on which rows it was grouped with (threads, fused products):
//     acc   = fma(float(idot lanes), dw * dx, acc)           (8 lanes)
//     extra = fma(zero-point or min term, ..., extra)          (scalar)
//     y     = hsum(acc) + extra
// against ggml's numerics (reference::dot_row in double) only float rounding is
// left (tests/quant: nmse < 1e-12).
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define ARCHETYPE_QUANT_AVX2 1

#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "archetype/kernels/quant/avx2/activations.hpp"
#include "archetype/kernels/quant/blocks.hpp"

namespace archetype::quant::avx2 {

namespace detail {

inline float f16(const std::uint8_t* p) noexcept {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

inline __m256i load32(const std::uint8_t* p) noexcept { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

inline float hsum(__m256 v) noexcept {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/// 16 bytes of packed nibbles -> 32 values: the low nibbles (elements 0-15), then the high.
inline __m256i nibbles(const std::uint8_t* qs) noexcept {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}

/// Bit j of the 32-bit word at p -> byte j: 0x10 if set, else 0 (the 5-bit types' high bit).
inline __m256i high_bits(const std::uint8_t* p) noexcept {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    const __m256i spread = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202,
                                              0x0303030303030303);
    const __m256i bit = _mm256_set1_epi64x(std::int64_t(0x8040201008040201));
    const __m256i bytes = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(int(w)), spread), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(bytes, bit), _mm256_set1_epi8(0x10));
}

/// Unsigned weights u times signed activations x, pairs then quadruples: 8 int32 lanes.
inline __m256i udot(__m256i u, __m256i x) noexcept {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
}

/// Moves the linear prefetch cursor over the bytes one step of R rows consumes (see
/// gemv.hpp, prefetch_ahead); a null cursor (a second token over rows now in L1) does nothing.
template <std::size_t StepBytes>
inline void prefetch_step(const std::uint8_t*& pf) noexcept {
    if (!pf) return;
    for (std::size_t o = 0; o < StepBytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(pf + o), _MM_HINT_T1);
    pf += StepBytes;
}

} // namespace detail

// Legacy 32-element blocks. `zero`: w = d * (u - zero); `min_at` >= 0: w = d * u + m
// with m the fp16 at that byte (then the activations' s carries the min's term).
struct fmt_q8_0 {
    static constexpr std::size_t block = 32, bytes = 34;
    static constexpr int zero = 0, min_at = -1;
    static __m256i idot(const std::uint8_t* b, __m256i x) noexcept {
        const __m256i w = detail::load32(b + 2);
        return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)),
                                 _mm256_set1_epi16(1));
    }
};
struct fmt_q4_0 {
    static constexpr std::size_t block = 32, bytes = 18;
    static constexpr int zero = 8, min_at = -1;
    static __m256i idot(const std::uint8_t* b, __m256i x) noexcept { return detail::udot(detail::nibbles(b + 2), x); }
};
struct fmt_q4_1 {
    static constexpr std::size_t block = 32, bytes = 20;
    static constexpr int zero = 0, min_at = 2;
    static __m256i idot(const std::uint8_t* b, __m256i x) noexcept { return detail::udot(detail::nibbles(b + 4), x); }
};
struct fmt_q5_0 {
    static constexpr std::size_t block = 32, bytes = 22;
    static constexpr int zero = 16, min_at = -1;
    static __m256i idot(const std::uint8_t* b, __m256i x) noexcept {
        return detail::udot(_mm256_or_si256(detail::nibbles(b + 6), detail::high_bits(b + 2)), x);
    }
};
struct fmt_q5_1 {
    static constexpr std::size_t block = 32, bytes = 24;
    static constexpr int zero = 0, min_at = 2;
    static __m256i idot(const std::uint8_t* b, __m256i x) noexcept {
        return detail::udot(_mm256_or_si256(detail::nibbles(b + 8), detail::high_bits(b + 4)), x);
    }
};

/// y[i] = row i . a for the R rows at w (row_bytes apart), nb blocks each; pf: the
/// prefetch cursor (or null), advanced by the bytes each block step consumes.
template <class F, int R>
inline void dot_legacy(const std::uint8_t* w, std::size_t row_bytes, std::size_t nb, const act_row& a, float* y,
                       const std::uint8_t* pf = nullptr) noexcept {
    __m256 acc[R];
    float extra[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), extra[r] = 0.f;
    for (std::size_t b = 0; b < nb; ++b) {
        detail::prefetch_step<R * F::bytes>(pf);
        const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.q + 32 * b));
        const float dx = a.d[b];
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* blk = w + std::size_t(r) * row_bytes + b * F::bytes;
            const float dwx = detail::f16(blk) * dx;
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(F::idot(blk, x)), _mm256_set1_ps(dwx), acc[r]);
            if constexpr (F::min_at >= 0) extra[r] = std::fma(detail::f16(blk + F::min_at), a.s[b], extra[r]);
            else if constexpr (F::zero != 0) extra[r] = std::fma(dwx, float(-F::zero * a.sum32[b]), extra[r]);
        }
    }
    for (int r = 0; r < R; ++r) y[r] = detail::hsum(acc[r]) + extra[r];
}

// K types: 256-element super-blocks with per-sub-block integer scales.
struct fmt_q4_K { static constexpr std::size_t block = 256, bytes = 144; };
struct fmt_q5_K { static constexpr std::size_t block = 256, bytes = 176; };
struct fmt_q6_K { static constexpr std::size_t block = 256, bytes = 210; };

namespace detail {

/// Q4_K / Q5_K super-block: sum over the 8 sub-blocks of scale_j * (u . x); the
/// mins' term -dmin * sum_j m_j * sum32_j goes to `mins`.
template <bool Five>
inline __m256i k45_block(const std::uint8_t* blk, const std::int8_t* x, const std::int32_t* sum32,
                         std::int32_t& mins) noexcept {
    std::uint8_t sc[8], m[8];
    for (std::size_t j = 0; j < 8; ++j) scale_min_k4(j, blk + 4, sc[j], m[j]);
    const std::uint8_t* qs = blk + (Five ? 48 : 16);
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256i hb = Five ? load32(blk + 16) : _mm256_setzero_si256();
    __m256i sum = _mm256_setzero_si256();
    for (std::size_t c = 0; c < 4; ++c) {
        const __m256i v = load32(qs + 32 * c);
        __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        if constexpr (Five) {
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hb, one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4));
            hb = _mm256_srli_epi16(hb, 2);
        }
        const auto* xc = reinterpret_cast<const __m256i*>(x + 64 * c);
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_load_si256(xc)),
                                                      _mm256_set1_epi16(sc[2 * c])));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_load_si256(xc + 1)),
                                                      _mm256_set1_epi16(sc[2 * c + 1])));
    }
    std::int32_t ms = 0;
    for (std::size_t j = 0; j < 8; ++j) ms += std::int32_t(m[j]) * sum32[j];
    mins = ms;
    return sum;
}

/// Q6_K super-block: sum over the 16 sub-blocks of scale_k * (u . x) with u = q + 32;
/// the zero's term -32 * sum_k scale_k * sum16_k goes to `zeros`.
inline __m256i k6_block(const std::uint8_t* blk, const std::int8_t* x, const std::int32_t* sum16,
                        std::int32_t& zeros) noexcept {
    const auto* sc = reinterpret_cast<const std::int8_t*>(blk + 192);
    const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3);
    __m256i sum = _mm256_setzero_si256();
    for (std::size_t h = 0; h < 2; ++h) {
        const __m256i ql0 = load32(blk + 64 * h), ql1 = load32(blk + 64 * h + 32);
        const __m256i qh = load32(blk + 128 + 32 * h);
        const __m256i u[4] = {
            _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, two), 4)),
            _mm256_or_si256(_mm256_and_si256(ql1, low4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two), 4)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two), 4)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two), 4)),
        };
        for (std::size_t q = 0; q < 4; ++q) {
            const std::size_t k = 8 * h + 2 * q; // the first of the two 16-element sub-blocks
            const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[k + 1]), _mm_set1_epi16(sc[k]));
            const auto* xq = reinterpret_cast<const __m256i*>(x + 128 * h + 32 * q);
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(u[q], _mm256_load_si256(xq)), s));
        }
    }
    std::int32_t z = 0;
    for (std::size_t k = 0; k < 16; ++k) z += std::int32_t(sc[k]) * sum16[k];
    zeros = -32 * z;
    return sum;
}

} // namespace detail

/// y[i] = row i . a for R rows of a K type, nb super-blocks each; pf as in dot_legacy.
template <class F, int R>
inline void dot_k(const std::uint8_t* w, std::size_t row_bytes, std::size_t nb, const act_row& a, float* y,
                  const std::uint8_t* pf = nullptr) noexcept {
    __m256 acc[R];
    float extra[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), extra[r] = 0.f;
    for (std::size_t b = 0; b < nb; ++b) {
        detail::prefetch_step<R * F::bytes>(pf);
        const float dx = a.d[b];
        const std::int8_t* x = a.q + 256 * b;
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* blk = w + std::size_t(r) * row_bytes + b * F::bytes;
            std::int32_t corr;
            __m256i s;
            float dwx, cx;
            if constexpr (std::is_same_v<F, fmt_q6_K>) {
                s = detail::k6_block(blk, x, a.sum16 + 16 * b, corr);
                dwx = detail::f16(blk + 208) * dx;
                cx = dwx;
            } else {
                s = detail::k45_block<std::is_same_v<F, fmt_q5_K>>(blk, x, a.sum32 + 8 * b, corr);
                dwx = detail::f16(blk) * dx;
                cx = -(detail::f16(blk + 2) * dx);
            }
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(dwx), acc[r]);
            extra[r] = std::fma(cx, float(corr), extra[r]);
        }
    }
    for (int r = 0; r < R; ++r) y[r] = detail::hsum(acc[r]) + extra[r];
}

} // namespace archetype::quant::avx2

#endif
