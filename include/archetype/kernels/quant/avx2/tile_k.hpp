#pragma once
// The GEMM tile of avx2/tile.hpp for the 256-element super-blocks (Q4_K, Q5_K, Q6_K,
// Q2_K, Q3_K, IQ4_XS), at `avx2` and `avxvnni` alike: their sub-blocks carry integer
// scales, and vpmaddwd multiplies by them in the step that widens vpmaddubsw's pairs (the
// row engine does the same at both levels). Panels as tile.hpp's, per super-block: ymm
// (kg, v) holds bytes 4kg..4kg+3 of the 8 rows of octet v; per sub-block a ymm of the 8
// rows' scales (int16, twice per 32-bit lane); per pair of sub-blocks a ymm of the two
// coefficients of the activations' sums (the mins, or the scales that multiply the zero
// point); the 8 rows' d (and dmin) as floats. Each row's super-block is decoded by
// int8/super_blocks.hpp (the same at every level's tile).
//
// Per super-block and output, exact integers first:
//     total = sum_k scale_k * (u_k . x_k)        (int16 sums of vpmaddubsw while they fit)
//     corr  = sum_k c_k * sum_k(x)               (vpmaddwd on pairs; sums of 32 or 16 quants)
//     total += fold * corr                       (Q6_K: u = q + 32, fold -32; Q3_K: -4)
// then   acc = fma(float(total), d * dx, acc)
//        acc = fma(float(corr), -(dmin * dx), acc)      (Q4_K, Q5_K, Q2_K: the mins)
// int8/row_dot.hpp's dot_rows_block_totals for one token, bitwise.
#include "archetype/kernels/quant/avx2/engine.hpp"
#if defined(ARCHETYPE_QUANT_AVX2)

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/int8/activations.hpp"
#include "archetype/kernels/quant/int8/super_blocks.hpp"

namespace archetype::quant::avx2::tile {

using int8::kfmt;
using int8::k_tiled;

inline float f16_at(const std::uint8_t* p) noexcept {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

template <class K>
struct kshape {
    static constexpr std::size_t nsub = 256 / K::sub, kg_per_sub = K::sub / 4;
    /// vpmaddubsw results one int16 lane sums before vpmaddwd (a divisor of kg_per_sub).
    static constexpr std::size_t chunk = [] {
        std::size_t n = std::size_t(32767 / (2 * K::max_value * 127));
        std::size_t c = 1;
        while (c * 2 <= n && c * 2 <= kg_per_sub) c *= 2;
        return c;
    }();
};

/// Bytes of one packed super-block of 8V rows: values, scales, sum coefficients, d, dmin.
template <class K, int V>
inline constexpr std::size_t kblock_bytes =
    std::size_t(V) * (64 * 32 + kshape<K>::nsub * 32 + (K::has_corr ? kshape<K>::nsub / 2 * 32 : 0) + 32 + 32);

template <ggml_type T, int V>
inline void kpack_group(const std::uint8_t* W, std::size_t row_bytes, std::size_t r0, std::size_t nr,
                        std::size_t nb, std::uint8_t* pk) noexcept {
    using K = kfmt<T>;
    using S = kshape<K>;
    constexpr auto tr = traits_of(T);
    constexpr std::size_t bb = kblock_bytes<K, V>;
    alignas(32) std::uint8_t u[256];
    std::int16_t sc[16], c[16];
    for (std::size_t b = 0; b < nb; ++b) {
        std::uint8_t* pb = pk + b * bb;
        std::uint8_t* ps = pb + V * 2048;
        std::uint8_t* pc = ps + S::nsub * V * 32;
        auto* pd = reinterpret_cast<float*>(pc + (K::has_corr ? S::nsub / 2 * V * 32 : 0));
        auto* pm = pd + 8 * V;
        for (std::size_t r = 0; r < std::size_t(8 * V); ++r) {
            const std::size_t v = r / 8, lane = r % 8;
            float d = 0.f, dmin = 0.f;
            if (r < nr) {
                const std::uint8_t* blk = W + (r0 + r) * row_bytes + b * tr.type_size;
                K::decode(blk, u, sc, c);
                d = f16_at(blk + K::d_at);
                if constexpr (K::min) dmin = f16_at(blk + K::dmin_at);
            } else {
                std::memset(u, 0, sizeof u);
                for (std::size_t k = 0; k < 16; ++k) sc[k] = c[k] = 0;
            }
            for (std::size_t kg = 0; kg < 64; ++kg) std::memcpy(pb + (kg * V + v) * 32 + lane * 4, u + 4 * kg, 4);
            for (std::size_t k = 0; k < S::nsub; ++k) {
                const std::int16_t pair[2] = {sc[k], sc[k]};
                std::memcpy(ps + (k * V + v) * 32 + lane * 4, pair, 4);
            }
            if constexpr (K::has_corr)
                for (std::size_t i = 0; i < S::nsub / 2; ++i) {
                    const std::int16_t pair[2] = {c[2 * i], c[2 * i + 1]};
                    std::memcpy(pc + (i * V + v) * 32 + lane * 4, pair, 4);
                }
            pd[8 * v + lane] = d;
            pm[8 * v + lane] = dmin;
        }
    }
}

/// y[t * ldy + i] for NT tokens x the nr valid rows of a packed octet of super-blocks
/// (V = 1). Per sub-block its k-group panels and scales stay in registers for the NT
/// tokens; each token's integer total and correction are kept per super-block.
template <ggml_type T, int V, int NT>
inline void run_ktile(const std::uint8_t* pk, std::size_t nb, const int8::act_row* a, float* y, std::size_t ldy,
                      std::size_t nr) noexcept {
    static_assert(V == 1);
    using K = kfmt<T>;
    using S = kshape<K>;
    constexpr std::size_t bb = kblock_bytes<K, V>, kgs = S::kg_per_sub;
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (std::size_t b = 0; b < nb; ++b) {
        const std::uint8_t* pb = pk + b * bb;
        const std::uint8_t* ps = pb + 2048;
        const std::uint8_t* pc = ps + S::nsub * 32;
        const auto* pd = reinterpret_cast<const float*>(pc + (K::has_corr ? S::nsub / 2 * 32 : 0));
        const float* pm = pd + 8;
        __m256i total[NT];
        for (int t = 0; t < NT; ++t) total[t] = _mm256_setzero_si256();
        for (std::size_t k = 0; k < S::nsub; ++k) {
            const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ps + k * 32));
            __m256i w[kgs];
            for (std::size_t j = 0; j < kgs; ++j) {
                w[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + (k * kgs + j) * 32));
                if constexpr (K::is_signed) w[j] = _mm256_sign_epi8(w[j], w[j]); // |v|
            }
            for (int t = 0; t < NT; ++t) {
                const std::int8_t* xq = a[t].q + 256 * b + 4 * k * kgs;
                for (std::size_t c = 0; c < kgs; c += S::chunk) {
                    __m256i part = _mm256_setzero_si256();
                    for (std::size_t j = c; j < c + S::chunk; ++j) {
                        __m256i xb = detail::bcast4(xq + 4 * j);
                        if constexpr (K::is_signed) // v . x = |v| . sign(x, v)
                            xb = _mm256_sign_epi8(xb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + (k * kgs + j) * 32)));
                        part = _mm256_add_epi16(part, _mm256_maddubs_epi16(w[j], xb));
                    }
                    total[t] = _mm256_add_epi32(total[t], _mm256_madd_epi16(part, s));
                }
            }
        }
        const __m256 d = _mm256_loadu_ps(pd);
        for (int t = 0; t < NT; ++t) {
            __m256i corr = _mm256_setzero_si256();
            if constexpr (K::has_corr) {
                const std::int32_t* sums = K::sub == 32 ? a[t].sum32 + 8 * b : a[t].sum16 + 16 * b;
                for (std::size_t i = 0; i < S::nsub / 2; ++i) {
                    const __m256i pair = _mm256_set1_epi32(int((std::uint32_t(sums[2 * i]) & 0xFFFFu) |
                                                               std::uint32_t(sums[2 * i + 1]) << 16));
                    const __m256i cv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pc + i * 32));
                    corr = _mm256_add_epi32(corr, _mm256_madd_epi16(cv, pair));
                }
                if constexpr (K::fold != 0)
                    total[t] = _mm256_add_epi32(total[t], _mm256_mullo_epi32(corr, _mm256_set1_epi32(K::fold)));
            }
            const __m256 dx = _mm256_set1_ps(a[t].d[b]);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[t]), _mm256_mul_ps(d, dx), acc[t]);
            if constexpr (K::min)
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(corr),
                                         _mm256_xor_ps(_mm256_mul_ps(_mm256_loadu_ps(pm), dx), _mm256_set1_ps(-0.f)), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) {
        float* out = y + std::size_t(t) * ldy;
        if (nr >= 8) {
            _mm256_storeu_ps(out, acc[t]);
        } else {
            alignas(32) float tmp[8];
            _mm256_store_ps(tmp, acc[t]);
            for (std::size_t i = 0; i < nr; ++i) out[i] = tmp[i];
        }
    }
}

template <ggml_type T, int V, int NT>
inline void run_ktail(const std::uint8_t* pk, std::size_t nb, const int8::act_row* a, float* y, std::size_t ldy,
                      std::size_t nr, int n) noexcept {
    if constexpr (NT > 0) {
        if (n == NT) run_ktile<T, V, NT>(pk, nb, a, y, ldy, nr);
        else run_ktail<T, V, NT - 1>(pk, nb, a, y, ldy, nr, n);
    }
}

} // namespace archetype::quant::avx2::tile

#endif
