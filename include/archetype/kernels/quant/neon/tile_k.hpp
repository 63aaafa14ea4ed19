#pragma once
// The GEMM tile of neon/tile.hpp for the 256-element super-blocks (Q4_K, Q5_K, Q6_K,
// Q2_K, Q3_K, IQ4_XS), at `neon` and `neon_dotprod` alike (the products P:
// tile_products.hpp). Each row's super-block decoded once per call (int8/super_blocks.hpp)
// into panels as tile.hpp's, per super-block: the 64 k-group panels (16 bytes per quad of
// rows, 32 per octet), per sub-block the 8 rows' integer scales as int32, per sub-block
// the 8 rows' coefficients of the activations' sums (the mins, or the scales that
// multiply the zero point), the 8 rows' d and dmin as floats.
//
// Per super-block and output, exact integers first:
//     total = sum_k scale_k * (u_k . x_k)        (mla of each sub-block's dot by its scales)
//     corr  = sum_k c_k * sum_k(x)               (mla by the sums of 32 or 16 quants)
//     total += fold * corr                       (Q6_K: u = q + 32, fold -32; Q3_K: -4)
// then   acc = fma(float(total), d * dx, acc)
//        acc = fma(float(corr), -(dmin * dx), acc)      (Q4_K, Q5_K, Q2_K: the mins)
// int8/row_dot.hpp's dot_rows_block_totals for one token, bitwise. The integers stay in
// int32: neon/engine.hpp's bounds (the same sums).
#include "archetype/kernels/quant/neon/tile_products.hpp"
#if defined(ARCHETYPE_QUANT_NEON)

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/int8/activations.hpp"
#include "archetype/kernels/quant/int8/super_blocks.hpp"

namespace archetype::quant::neon::tile {

using int8::k_tiled;

/// Where the parts of one packed super-block of an octet lie (bytes from its start).
template <ggml_type T>
struct klayout {
    using K = int8::kfmt<T>;
    static constexpr std::size_t nsub = 256 / K::sub, kg_per_sub = K::sub / 4;
    static constexpr std::size_t scales = 64 * 32, coefs = scales + nsub * 32,
                                 d = coefs + (K::has_corr ? nsub * 32 : 0), dmin = d + 32, bytes = dmin + 32;
};

/// Packs the octet of rows [r0, r0 + nr) (nr <= 8; the other rows zero), nb super-blocks each.
template <ggml_type T>
inline void kpack_octet(const std::uint8_t* W, std::size_t row_bytes, std::size_t r0, std::size_t nr,
                        std::size_t nb, std::uint8_t* pk) noexcept {
    using K = int8::kfmt<T>;
    using L = klayout<T>;
    constexpr auto tr = traits_of(T);
    std::uint8_t u[256];
    std::int16_t sc[16], c[16];
    for (std::size_t b = 0; b < nb; ++b) {
        std::uint8_t* pb = pk + b * L::bytes;
        auto* ps = reinterpret_cast<std::int32_t*>(pb + L::scales);
        auto* pc = reinterpret_cast<std::int32_t*>(pb + L::coefs);
        auto* pd = reinterpret_cast<float*>(pb + L::d);
        auto* pm = reinterpret_cast<float*>(pb + L::dmin);
        for (std::size_t r = 0; r < 8; ++r) {
            float d = 0.f, dmin = 0.f;
            if (r < nr) {
                const std::uint8_t* blk = W + (r0 + r) * row_bytes + b * tr.type_size;
                K::decode(blk, u, sc, c);
                d = basic_engine::f16(blk + K::d_at);
                if constexpr (K::min) dmin = basic_engine::f16(blk + K::dmin_at);
            } else {
                std::memset(u, 0, sizeof u);
                for (std::size_t k = 0; k < 16; ++k) sc[k] = c[k] = 0;
            }
            for (std::size_t kg = 0; kg < 64; ++kg) std::memcpy(pb + 32 * kg + 4 * r, u + 4 * kg, 4);
            for (std::size_t k = 0; k < L::nsub; ++k) {
                ps[8 * k + r] = sc[k];
                if constexpr (K::has_corr) pc[8 * k + r] = c[k];
            }
            pd[r] = d;
            pm[r] = dmin;
        }
    }
}

/// y[t * ldy + i] for NT tokens x the nr valid rows of a packed octet of super-blocks.
/// Per quad and sub-block its k-group panels and scales stay in registers for the NT
/// tokens; each token's integer total and correction are kept per super-block.
template <class P, ggml_type T, int NT>
inline void run_ktile(const std::uint8_t* pk, std::size_t nb, const int8::act_row* a, float* y, std::size_t ldy,
                      std::size_t nr) noexcept {
    using K = int8::kfmt<T>;
    using L = klayout<T>;
    constexpr std::size_t kgs = L::kg_per_sub;
    float32x4_t acc[2][NT];
    for (std::size_t q = 0; q < 2; ++q)
        for (int t = 0; t < NT; ++t) acc[q][t] = vdupq_n_f32(0.f);
    for (std::size_t b = 0; b < nb; ++b) {
        const std::uint8_t* pb = pk + b * L::bytes;
        const auto* ps = reinterpret_cast<const std::int32_t*>(pb + L::scales);
        const auto* pc = reinterpret_cast<const std::int32_t*>(pb + L::coefs);
        for (std::size_t q = 0; q < 2; ++q) {
            int32x4_t total[NT], corr[NT];
            for (int t = 0; t < NT; ++t) total[t] = corr[t] = vdupq_n_s32(0);
            for (std::size_t k = 0; k < L::nsub; ++k) {
                const int32x4_t s = vld1q_s32(ps + 8 * k + 4 * q);
                int8x16_t w[kgs];
                for (std::size_t j = 0; j < kgs; ++j) w[j] = panel(pb, k * kgs + j, q);
                for (int t = 0; t < NT; ++t) {
                    const std::int8_t* x = a[t].q + 256 * b + std::size_t(K::sub) * k;
                    total[t] = vmlaq_s32(total[t], P::rows(dot_panels<P, kgs / 4>(P::zero(), w, x)), s);
                }
            }
            if constexpr (K::has_corr) {
                for (std::size_t i = 0; i < L::nsub; ++i) {
                    const int32x4_t cv = vld1q_s32(pc + 8 * i + 4 * q);
                    for (int t = 0; t < NT; ++t) {
                        const std::int32_t sum = K::sub == 32 ? a[t].sum32[8 * b + i] : a[t].sum16[16 * b + i];
                        corr[t] = vmlaq_n_s32(corr[t], cv, sum);
                    }
                }
                if constexpr (K::fold != 0)
                    for (int t = 0; t < NT; ++t) total[t] = vmlaq_n_s32(total[t], corr[t], K::fold);
            }
            const float32x4_t d = vld1q_f32(reinterpret_cast<const float*>(pb + L::d) + 4 * q);
            const float32x4_t dmin = vld1q_f32(reinterpret_cast<const float*>(pb + L::dmin) + 4 * q);
            for (int t = 0; t < NT; ++t) {
                const float dx = a[t].d[b];
                acc[q][t] = vfmaq_f32(acc[q][t], vcvtq_f32_s32(total[t]), vmulq_n_f32(d, dx));
                if constexpr (K::min)
                    acc[q][t] = vfmaq_f32(acc[q][t], vcvtq_f32_s32(corr[t]), vnegq_f32(vmulq_n_f32(dmin, dx)));
            }
        }
    }
    for (std::size_t q = 0; q < 2; ++q)
        for (int t = 0; t < NT; ++t)
            store_rows(y + std::size_t(t) * ldy + 4 * q, acc[q][t], nr > 4 * q ? nr - 4 * q : 0);
}

} // namespace archetype::quant::neon::tile

#endif
