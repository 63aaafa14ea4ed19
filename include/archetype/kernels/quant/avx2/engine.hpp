#pragma once
// The integer side of the int8 row engine on AVX2 + FMA + F16C (int8/row_dot.hpp has
// the float side, int8/row_gemv.hpp the rows and threads): the products of a
// quantised weight block with a token's int8 activations (int8/activations.hpp).
//
// Each 32-element format fmt<T, P> has `idot(block, xq)`: the integer products of one
// block, eight int32 lanes, summed in fours by the products P (madd_products here:
// vpmaddubsw then vpmaddwd; avxvnni/engine.hpp's: vpdpbusd). The weights enter as
// unsigned values u = w + zero (nibbles as stored); the zero point and the Q4_1 /
// Q5_1 / K-type mins are folded out afterwards through the activations' integer sums,
// so no per-block sign trick is needed. Every intermediate fits: a vpmaddubsw pair is
// at most 2 * 63 * 127 < 2^15 (Q8_0 takes |w| and sign(x, w): 2 * 128 * 127 < 2^15).
// Against ggml's numerics (reference::dot_row in double) only float rounding is
// left (tests/quant: nmse < 1e-12).
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define ARCHETYPE_QUANT_AVX2 1

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/core/dtype.hpp"
#include "archetype/kernels/quant/ggml_tables.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"

namespace archetype::quant::avx2 {

namespace detail {

inline __m256i load32(const std::uint8_t* p) noexcept { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

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

/// The 4 bytes at p in every 32-bit lane (a k-group of activations, avx2/tile.hpp).
inline __m256i bcast4(const std::int8_t* p) noexcept {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/// The 16-entry table t in both 128-bit lanes, for vpshufb.
inline __m256i table16(const std::int8_t* t) noexcept {
    return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

} // namespace detail

/// Unsigned weights u times signed activations x, summed in fours: 8 int32 lanes. AVX2
/// has no such instruction: vpmaddubsw sums pairs into int16 (never saturating here,
/// see above), vpmaddwd by ones the pairs of pairs.
struct madd_products {
    static constexpr bool dpbusd = false;
    static __m256i udot(__m256i u, __m256i x) noexcept {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
    }
};

// The 32-element formats. `zero`: w = d * (u - zero); `min_at` >= 0: w = d * u + m
// with m the fp16 at that byte (then the activations' s carries the min's term).
// values(block): the 32 weights as the integer products take them, in element order:
// unsigned u (is_signed false) or the signed values v themselves (is_signed true: then
// v . x = |v| . sign(x, v), |v| <= 128, so a vpmaddubsw pair stays below 2^15).
// max_value: the largest |u| or |v| (how many vpmaddubsw results an int16 lane may sum,
// avx2/tile.hpp). idot(block, x): the block's products, eight int32 lanes.
template <ggml_type T, class P> struct fmt;
template <ggml_type T, class P> struct fmt_products {
    static __m256i idot(const std::uint8_t* b, __m256i x) noexcept {
        using F = fmt<T, P>;
        const __m256i v = F::values(b);
        if constexpr (F::is_signed) return P::udot(_mm256_sign_epi8(v, v), _mm256_sign_epi8(x, v));
        else return P::udot(v, x);
    }
};
template <class P> struct fmt<ggml_type::Q8_0, P> : fmt_products<ggml_type::Q8_0, P> {
    static constexpr int zero = 0, min_at = -1, max_value = 128;
    static constexpr bool is_signed = true;
    static __m256i values(const std::uint8_t* b) noexcept { return detail::load32(b + 2); }
};
template <class P> struct fmt<ggml_type::Q4_0, P> : fmt_products<ggml_type::Q4_0, P> {
    static constexpr int zero = 8, min_at = -1, max_value = 15;
    static constexpr bool is_signed = false;
    static __m256i values(const std::uint8_t* b) noexcept { return detail::nibbles(b + 2); }
};
template <class P> struct fmt<ggml_type::Q4_1, P> : fmt_products<ggml_type::Q4_1, P> {
    static constexpr int zero = 0, min_at = 2, max_value = 15;
    static constexpr bool is_signed = false;
    static __m256i values(const std::uint8_t* b) noexcept { return detail::nibbles(b + 4); }
};
template <class P> struct fmt<ggml_type::Q5_0, P> : fmt_products<ggml_type::Q5_0, P> {
    static constexpr int zero = 16, min_at = -1, max_value = 31;
    static constexpr bool is_signed = false;
    static __m256i values(const std::uint8_t* b) noexcept {
        return _mm256_or_si256(detail::nibbles(b + 6), detail::high_bits(b + 2));
    }
};
template <class P> struct fmt<ggml_type::Q5_1, P> : fmt_products<ggml_type::Q5_1, P> {
    static constexpr int zero = 0, min_at = 2, max_value = 31;
    static constexpr bool is_signed = false;
    static __m256i values(const std::uint8_t* b) noexcept {
        return _mm256_or_si256(detail::nibbles(b + 8), detail::high_bits(b + 4));
    }
};

// The non-linear types: the codes' signed values v from the table (vpshufb).
template <class P> struct fmt<ggml_type::IQ4_NL, P> : fmt_products<ggml_type::IQ4_NL, P> {
    static constexpr int zero = 0, min_at = -1, max_value = 127;
    static constexpr bool is_signed = true;
    static __m256i values(const std::uint8_t* b) noexcept {
        return _mm256_shuffle_epi8(detail::table16(ggml_tables::kvalues_iq4nl), detail::nibbles(b + 2));
    }
};
template <class P> struct fmt<ggml_type::MXFP4, P> : fmt_products<ggml_type::MXFP4, P> { // the E8M0 scale: int8/row_dot.hpp
    static constexpr int zero = 0, min_at = -1, max_value = 12;
    static constexpr bool is_signed = true;
    static __m256i values(const std::uint8_t* b) noexcept {
        return _mm256_shuffle_epi8(detail::table16(ggml_tables::kvalues_mxfp4), detail::nibbles(b + 1));
    }
};

/// The engine of int8/row_dot.hpp and int8/row_gemv.hpp on AVX2, with the products P
/// of the 32-element formats. The K types' sub-blocks keep vpmaddubsw + vpmaddwd at
/// every level: the vpmaddwd multiplies by the sub-block's scale in the same step.
template <class P>
struct basic_engine {
    /// Distance (bytes) of the linear prefetch cursor ahead of the rows being read, into
    /// L2. The rows a thread takes are one contiguous stream; left to the hardware
    /// prefetchers, four row streams read a block (18-24 bytes) at a time reached a third
    /// of the bus on a Zen 4 (session 18). The cursor of avx512/gemv.hpp (linear_ahead).
    static constexpr std::size_t prefetch_ahead = 32768;

    template <ggml_type T> using fmt = avx2::fmt<T, P>;
    using lanes = __m256;
    static lanes zero() noexcept { return _mm256_setzero_ps(); }
    static lanes fma(__m256i s, float scale, lanes acc) noexcept {
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(scale), acc);
    }
    static __m256i load_x(const std::int8_t* q) noexcept { return _mm256_load_si256(reinterpret_cast<const __m256i*>(q)); }
    static float f16(const std::uint8_t* p) noexcept {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        return _cvtsh_ss(h);
    }
    static float hsum(__m256 v) noexcept {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    /// Moves the linear prefetch cursor over the bytes one step of R rows consumes (see
    /// prefetch_ahead); a null cursor (a second token over rows now in L1) does nothing.
    template <std::size_t StepBytes>
    static void prefetch_step(const std::uint8_t*& pf) noexcept {
        if (!pf) return;
        for (std::size_t o = 0; o < StepBytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(pf + o), _MM_HINT_T1);
        pf += StepBytes;
    }

    /// Q4_K / Q5_K super-block: sum over the 8 sub-blocks of sc[j] * (u . x).
    template <bool Five>
    static __m256i k45_block(const std::uint8_t* blk, const std::int8_t* x, const std::uint8_t* sc) noexcept {
        const std::uint8_t* qs = blk + (Five ? 48 : 16);
        const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
        __m256i hb = Five ? detail::load32(blk + 16) : _mm256_setzero_si256();
        __m256i sum = _mm256_setzero_si256();
        for (std::size_t c = 0; c < 4; ++c) {
            const __m256i v = detail::load32(qs + 32 * c);
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
        return sum;
    }

    /// Q6_K super-block: sum over the 16 sub-blocks of scale_k * (u . x) with u = q + 32.
    static __m256i k6_block(const std::uint8_t* blk, const std::int8_t* x) noexcept {
        const auto* sc = reinterpret_cast<const std::int8_t*>(blk + 192);
        const __m256i low4 = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
        __m256i sum = _mm256_setzero_si256();
        for (std::size_t h = 0; h < 2; ++h) {
            const __m256i ql0 = detail::load32(blk + 64 * h), ql1 = detail::load32(blk + 64 * h + 32);
            const __m256i qh = detail::load32(blk + 128 + 32 * h);
            const __m256i u[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, three), 4)),
                _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), three), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), three), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), three), 4)),
            };
            for (std::size_t q = 0; q < 4; ++q) {
                const std::size_t k = 8 * h + 2 * q; // the first of the two 16-element sub-blocks
                const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[k + 1]), _mm_set1_epi16(sc[k]));
                const auto* xq = reinterpret_cast<const __m256i*>(x + 128 * h + 32 * q);
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(u[q], _mm256_load_si256(xq)), s));
            }
        }
        return sum;
    }

    /// Q2_K super-block: sum over the 16 sub-blocks of (scales[k] & 15) * (q . x), q the
    /// 2-bit quants: qs[32h + l] >> 2j & 3 is element 128h + 32j + l.
    static __m256i k2_block(const std::uint8_t* blk, const std::int8_t* x) noexcept {
        const __m256i three = _mm256_set1_epi8(3);
        __m256i sum = _mm256_setzero_si256();
        for (std::size_t h = 0; h < 2; ++h) {
            const __m256i q = detail::load32(blk + 16 + 32 * h);
            for (int j = 0; j < 4; ++j) {
                const std::size_t k = 8 * h + 2 * std::size_t(j); // the first of the two sub-blocks
                const __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three);
                const __m256i s = _mm256_set_m128i(_mm_set1_epi16(blk[k + 1] & 15), _mm_set1_epi16(blk[k] & 15));
                const auto* xq = reinterpret_cast<const __m256i*>(x + 128 * h + 32 * std::size_t(j));
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_load_si256(xq)), s));
            }
        }
        return sum;
    }

    /// Q3_K super-block: sum over the 16 sub-blocks of sc[k] * (u . x), u = q + 4 (0..7):
    /// the 2 low bits as Q2_K's, the third bit 4h + j of hmask[l].
    static __m256i k3_block(const std::uint8_t* blk, const std::int8_t* x, const std::int8_t* sc) noexcept {
        const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
        const __m256i hm = detail::load32(blk);
        __m256i sum = _mm256_setzero_si256();
        for (std::size_t h = 0; h < 2; ++h) {
            const __m256i q = detail::load32(blk + 32 + 32 * h);
            for (int j = 0; j < 4; ++j) {
                const std::size_t k = 8 * h + 2 * std::size_t(j);
                const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, int(4 * h) + j), one);
                const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three),
                                                  _mm256_slli_epi16(hb, 2));
                const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[k + 1]), _mm_set1_epi16(sc[k]));
                const auto* xq = reinterpret_cast<const __m256i*>(x + 128 * h + 32 * std::size_t(j));
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_load_si256(xq)), s));
            }
        }
        return sum;
    }

    /// IQ4_XS block: sum over the 8 sub-blocks of sc[i] * (v . x), v the codes' table values.
    static __m256i kxs_block(const std::uint8_t* blk, const std::int8_t* x, const std::int8_t* sc) noexcept {
        const __m256i tbl = detail::table16(ggml_tables::kvalues_iq4nl);
        __m256i sum = _mm256_setzero_si256();
        for (std::size_t i = 0; i < 8; ++i) {
            const __m256i v = _mm256_shuffle_epi8(tbl, detail::nibbles(blk + 8 + 16 * i));
            const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 32 * i));
            const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(xv, v));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, _mm256_set1_epi16(sc[i])));
        }
        return sum;
    }

    /// v . x for 32 signed levels v (Q1_0, Q2_0): |v| . sign(x, v) by the products P.
    static __m256i sdot32(const std::int8_t* v, const std::int8_t* x) noexcept {
        const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(v));
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(x));
        return P::udot(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w));
    }

    /// The types of quant/unpack.hpp: sum over the 16 sub-blocks of sc[k] * (v . x), v
    /// signed (|v| <= 127: |v| . sign(x, v), a vpmaddubsw pair below 2^15).
    static __m256i sdot16_block(const std::int8_t* v, const std::int8_t* x, const std::int16_t* sc) noexcept {
        __m256i sum = _mm256_setzero_si256();
        for (std::size_t i = 0; i < 8; ++i) {
            const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + 32 * i));
            const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 32 * i));
            const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w));
            const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[2 * i + 1]), _mm_set1_epi16(sc[2 * i]));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, s));
        }
        return sum;
    }
};

// avx2::engine, the level's engine with its GEMM tile: avx2/tile.hpp.

} // namespace archetype::quant::avx2

#endif
