#pragma once
// The integer side of the int8 row engine on aarch64 Advanced SIMD (int8/row_dot.hpp
// has the float side, int8/row_gemv.hpp the rows and threads): avx2/engine.hpp's twin,
// the same integer arithmetic per block.
//
// The weights enter as int8 values u = w + zero (nibbles as stored, 0..63); the zero
// point and the Q4_1 / Q5_1 / K-type mins are folded out afterwards through the
// activations' integer sums. 16 int8 products are summed into four int32 lanes by
//   sdot (vdotq_s32)                      with the dotprod extension (armv8.2-a+dotprod;
//                                          when the compiler targets it),
//   smull / smull2 + sadalp (vpadalq_s16) without: |u x| <= 128 * 127 fits int16.
// K types multiply each sub-block's int32 sum by its integer scale (vmlaq_n_s32):
// at most 8 x 63 x 32 x 63 x 127 < 2^31 (Q4_K / Q5_K), 16 x 128 x 16 x 63 x 127 < 2^31
// (Q6_K). The float accumulators have four lanes. neon::engine, this row engine with
// the GEMM tile for batches: neon/tile.hpp.
#if defined(__aarch64__) && defined(__ARM_NEON)
#define ARCHETYPE_QUANT_NEON 1

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/core/dtype.hpp"
#include "archetype/kernels/quant/ggml_tables.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"

namespace archetype::quant::neon {

namespace detail {

/// acc + the products of 16 int8 pairs, as four int32 lanes.
inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) noexcept {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, a, b);
#else
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

inline int8x16_t load16(const void* p) noexcept { return vld1q_s8(static_cast<const std::int8_t*>(p)); }

/// The products of 32 weights (two 16-byte halves) with x, four int32 lanes.
inline int32x4_t dot32(int8x16_t w0, int8x16_t w1, const std::int8_t* x) noexcept {
    return dot16(dot16(vdupq_n_s32(0), w0, load16(x)), w1, load16(x + 16));
}

/// 16 bytes of packed nibbles -> the low nibbles (elements 0-15) and the high (16-31).
inline void nibbles(const std::uint8_t* qs, int8x16_t& lo, int8x16_t& hi) noexcept {
    const uint8x16_t b = vld1q_u8(qs);
    lo = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0F)));
    hi = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
}

/// Bits 0-15 (lo) and 16-31 (hi) of the 32-bit word at p -> bytes: 0x10 if set, else 0
/// (the 5-bit types' high bit).
inline void high_bits(const std::uint8_t* p, int8x16_t& lo, int8x16_t& hi) noexcept {
    static constexpr std::uint8_t bit_of[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bit = vld1q_u8(bit_of), ten = vdupq_n_u8(0x10);
    const uint8x16_t b01 = vcombine_u8(vdup_n_u8(p[0]), vdup_n_u8(p[1]));
    const uint8x16_t b23 = vcombine_u8(vdup_n_u8(p[2]), vdup_n_u8(p[3]));
    lo = vreinterpretq_s8_u8(vandq_u8(vtstq_u8(b01, bit), ten));
    hi = vreinterpretq_s8_u8(vandq_u8(vtstq_u8(b23, bit), ten));
}

} // namespace detail

// The 32-element formats (avx2/engine.hpp's): `zero`, `min_at`; values(block, lo, hi):
// the block's 32 values as int8, elements 0-15 and 16-31 (u = w + zero, or the signed
// table values); idot(block, x): their products with x (32 quants), four int32 lanes.
template <ggml_type T> struct fmt;
template <ggml_type T> struct fmt_products {
    static int32x4_t idot(const std::uint8_t* b, const std::int8_t* x) noexcept {
        int8x16_t lo, hi;
        fmt<T>::values(b, lo, hi);
        return detail::dot32(lo, hi, x);
    }
};
template <> struct fmt<ggml_type::Q8_0> : fmt_products<ggml_type::Q8_0> {
    static constexpr int zero = 0, min_at = -1;
    static void values(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept {
        lo = detail::load16(b + 2), hi = detail::load16(b + 18);
    }
};
template <> struct fmt<ggml_type::Q4_0> : fmt_products<ggml_type::Q4_0> {
    static constexpr int zero = 8, min_at = -1;
    static void values(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept { detail::nibbles(b + 2, lo, hi); }
};
template <> struct fmt<ggml_type::Q4_1> : fmt_products<ggml_type::Q4_1> {
    static constexpr int zero = 0, min_at = 2;
    static void values(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept { detail::nibbles(b + 4, lo, hi); }
};
/// Q5_0 / Q5_1: the high bits at qh, the nibbles at qs.
template <std::size_t QH, std::size_t QS>
inline void values5(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept {
    int8x16_t hlo, hhi;
    detail::nibbles(b + QS, lo, hi);
    detail::high_bits(b + QH, hlo, hhi);
    lo = vorrq_s8(lo, hlo), hi = vorrq_s8(hi, hhi);
}
template <> struct fmt<ggml_type::Q5_0> : fmt_products<ggml_type::Q5_0> {
    static constexpr int zero = 16, min_at = -1;
    static void values(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept { values5<2, 6>(b, lo, hi); }
};
template <> struct fmt<ggml_type::Q5_1> : fmt_products<ggml_type::Q5_1> {
    static constexpr int zero = 0, min_at = 2;
    static void values(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept { values5<4, 8>(b, lo, hi); }
};

/// The non-linear types: the codes' signed table values (tbl) of the 16 bytes of nibbles at qs.
inline void table_values(const std::uint8_t* qs, const std::int8_t* table, int8x16_t& lo, int8x16_t& hi) noexcept {
    detail::nibbles(qs, lo, hi);
    const int8x16_t t = vld1q_s8(table);
    lo = vqtbl1q_s8(t, vreinterpretq_u8_s8(lo)), hi = vqtbl1q_s8(t, vreinterpretq_u8_s8(hi));
}
template <> struct fmt<ggml_type::IQ4_NL> : fmt_products<ggml_type::IQ4_NL> {
    static constexpr int zero = 0, min_at = -1;
    static void values(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept {
        table_values(b + 2, ggml_tables::kvalues_iq4nl, lo, hi);
    }
};
template <> struct fmt<ggml_type::MXFP4> : fmt_products<ggml_type::MXFP4> { // the E8M0 scale: int8/row_dot.hpp
    static constexpr int zero = 0, min_at = -1;
    static void values(const std::uint8_t* b, int8x16_t& lo, int8x16_t& hi) noexcept {
        table_values(b + 1, ggml_tables::kvalues_mxfp4, lo, hi);
    }
};

/// The engine of int8/row_dot.hpp and int8/row_gemv.hpp on aarch64 (neon::engine, the
/// level's engine with its GEMM tile: neon/tile.hpp).
struct basic_engine {
    /// Distance (bytes) of the linear prefetch cursor ahead of the rows being read (the
    /// AVX2 engine's; unmeasured on aarch64 hardware).
    static constexpr std::size_t prefetch_ahead = 32768;

    template <ggml_type T> using fmt = neon::fmt<T>;
    using lanes = float32x4_t;
    static lanes zero() noexcept { return vdupq_n_f32(0.f); }
    static lanes fma(int32x4_t s, float scale, lanes acc) noexcept { return vfmaq_n_f32(acc, vcvtq_f32_s32(s), scale); }
    static float hsum(lanes v) noexcept { return vaddvq_f32(v); }
    /// idot reads the activation block where it lies.
    static const std::int8_t* load_x(const std::int8_t* q) noexcept { return q; }
    /// fcvt: half-precision conversion is part of the base aarch64 floating point.
    static float f16(const std::uint8_t* p) noexcept {
        __fp16 h;
        std::memcpy(&h, p, 2);
        return float(h);
    }
    /// Moves the linear prefetch cursor over the bytes one step of R rows consumes (see
    /// prefetch_ahead, into L2); a null cursor does nothing.
    template <std::size_t StepBytes>
    static void prefetch_step(const std::uint8_t*& pf) noexcept {
        if (!pf) return;
        for (std::size_t o = 0; o < StepBytes; o += 64) __builtin_prefetch(pf + o, 0, 2);
        pf += StepBytes;
    }

    /// Q4_K / Q5_K super-block: sum over the 8 sub-blocks of sc[j] * (u . x).
    template <bool Five>
    static int32x4_t k45_block(const std::uint8_t* blk, const std::int8_t* x, const std::uint8_t* sc) noexcept {
        const std::uint8_t* qs = blk + (Five ? 48 : 16);
        const uint8x16_t low4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1);
        uint8x16_t hb[2] = {vdupq_n_u8(0), vdupq_n_u8(0)};
        if constexpr (Five) hb[0] = vld1q_u8(blk + 16), hb[1] = vld1q_u8(blk + 32);
        int32x4_t sum = vdupq_n_s32(0);
        for (std::size_t c = 0; c < 4; ++c) {
            int8x16_t lo[2], hi[2];
            for (std::size_t h = 0; h < 2; ++h) {
                const uint8x16_t v = vld1q_u8(qs + 32 * c + 16 * h);
                uint8x16_t l = vandq_u8(v, low4), u = vshrq_n_u8(v, 4);
                if constexpr (Five) { // bits 2c and 2c + 1 of each qh byte (shifted down as c runs)
                    l = vorrq_u8(l, vshlq_n_u8(vandq_u8(hb[h], one), 4));
                    u = vorrq_u8(u, vshlq_n_u8(vandq_u8(vshrq_n_u8(hb[h], 1), one), 4));
                    hb[h] = vshrq_n_u8(hb[h], 2);
                }
                lo[h] = vreinterpretq_s8_u8(l);
                hi[h] = vreinterpretq_s8_u8(u);
            }
            sum = vmlaq_n_s32(sum, detail::dot32(lo[0], lo[1], x + 64 * c), sc[2 * c]);
            sum = vmlaq_n_s32(sum, detail::dot32(hi[0], hi[1], x + 64 * c + 32), sc[2 * c + 1]);
        }
        return sum;
    }

    /// Q6_K super-block: sum over the 16 sub-blocks of scale_k * (u . x) with u = q + 32.
    static int32x4_t k6_block(const std::uint8_t* blk, const std::int8_t* x) noexcept {
        const auto* sc = reinterpret_cast<const std::int8_t*>(blk + 192);
        const uint8x16_t low4 = vdupq_n_u8(0x0F), three = vdupq_n_u8(3);
        int32x4_t sum = vdupq_n_s32(0);
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t half = 0; half < 2; ++half) { // elements 16 * half .. of each 32-element group
                const uint8x16_t ql0 = vld1q_u8(blk + 64 * h + 16 * half), ql1 = vld1q_u8(blk + 64 * h + 32 + 16 * half);
                const uint8x16_t qh = vld1q_u8(blk + 128 + 32 * h + 16 * half);
                const uint8x16_t u[4] = {
                    vorrq_u8(vandq_u8(ql0, low4), vshlq_n_u8(vandq_u8(qh, three), 4)),
                    vorrq_u8(vandq_u8(ql1, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), three), 4)),
                    vorrq_u8(vshrq_n_u8(ql0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), three), 4)),
                    vorrq_u8(vshrq_n_u8(ql1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4)),
                };
                for (std::size_t q = 0; q < 4; ++q) {
                    const std::size_t k = 8 * h + 2 * q + half; // this 16-element sub-block
                    const int32x4_t d = detail::dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(u[q]), detail::load16(x + 128 * h + 32 * q + 16 * half));
                    sum = vmlaq_n_s32(sum, d, sc[k]);
                }
            }
        return sum;
    }

    /// Q2_K super-block: sum over the 16 sub-blocks of (scales[k] & 15) * (q . x), q the
    /// 2-bit quants: qs[32h + l] >> 2j & 3 is element 128h + 32j + l.
    static int32x4_t k2_block(const std::uint8_t* blk, const std::int8_t* x) noexcept {
        const uint8x16_t three = vdupq_n_u8(3);
        int32x4_t sum = vdupq_n_s32(0);
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t half = 0; half < 2; ++half) {
                const uint8x16_t q = vld1q_u8(blk + 16 + 32 * h + 16 * half);
                for (int j = 0; j < 4; ++j) {
                    const std::size_t k = 8 * h + 2 * std::size_t(j) + half;
                    const uint8x16_t u = vandq_u8(vshlq_u8(q, vdupq_n_s8(std::int8_t(-2 * j))), three);
                    const int32x4_t d = detail::dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(u),
                                                      detail::load16(x + 128 * h + 32 * std::size_t(j) + 16 * half));
                    sum = vmlaq_n_s32(sum, d, blk[k] & 15);
                }
            }
        return sum;
    }

    /// Q3_K super-block: sum over the 16 sub-blocks of sc[k] * (u . x), u = q + 4 (0..7):
    /// the 2 low bits as Q2_K's, the third bit 4h + j of hmask[l].
    static int32x4_t k3_block(const std::uint8_t* blk, const std::int8_t* x, const std::int8_t* sc) noexcept {
        const uint8x16_t three = vdupq_n_u8(3), one = vdupq_n_u8(1);
        int32x4_t sum = vdupq_n_s32(0);
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t half = 0; half < 2; ++half) {
                const uint8x16_t q = vld1q_u8(blk + 32 + 32 * h + 16 * half);
                const uint8x16_t hm = vld1q_u8(blk + 16 * half);
                for (int j = 0; j < 4; ++j) {
                    const std::size_t k = 8 * h + 2 * std::size_t(j) + half;
                    const uint8x16_t hb = vandq_u8(vshlq_u8(hm, vdupq_n_s8(std::int8_t(-(int(4 * h) + j)))), one);
                    const uint8x16_t u = vorrq_u8(vandq_u8(vshlq_u8(q, vdupq_n_s8(std::int8_t(-2 * j))), three),
                                                  vshlq_n_u8(hb, 2));
                    const int32x4_t d = detail::dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(u),
                                                      detail::load16(x + 128 * h + 32 * std::size_t(j) + 16 * half));
                    sum = vmlaq_n_s32(sum, d, sc[k]);
                }
            }
        return sum;
    }

    /// IQ4_XS block: sum over the 8 sub-blocks of sc[i] * (v . x), v the codes' table values.
    static int32x4_t kxs_block(const std::uint8_t* blk, const std::int8_t* x, const std::int8_t* sc) noexcept {
        int32x4_t sum = vdupq_n_s32(0);
        for (std::size_t i = 0; i < 8; ++i) {
            int8x16_t lo, hi;
            table_values(blk + 8 + 16 * i, ggml_tables::kvalues_iq4nl, lo, hi);
            sum = vmlaq_n_s32(sum, detail::dot32(lo, hi, x + 32 * i), sc[i]);
        }
        return sum;
    }

    /// v . x for 32 signed levels v (Q1_0, Q2_0).
    static int32x4_t sdot32(const std::int8_t* v, const std::int8_t* x) noexcept {
        return detail::dot32(detail::load16(v), detail::load16(v + 16), x);
    }

    /// The types of quant/unpack.hpp: sum over the 16 sub-blocks of sc[k] * (v . x), v signed.
    static int32x4_t sdot16_block(const std::int8_t* v, const std::int8_t* x, const std::int16_t* sc) noexcept {
        int32x4_t sum = vdupq_n_s32(0);
        for (std::size_t k = 0; k < 16; ++k)
            sum = vmlaq_n_s32(sum, detail::dot16(vdupq_n_s32(0), detail::load16(v + 16 * k), detail::load16(x + 16 * k)),
                              sc[k]);
        return sum;
    }
};

} // namespace archetype::quant::neon

#endif
