#pragma once
// The GEMM tile of avx2/tile.hpp for the 256-element super-blocks (Q4_K, Q5_K, Q6_K,
// Q2_K, Q3_K, IQ4_XS), at `avx2` and `avxvnni` alike: their sub-blocks carry integer
// scales, and vpmaddwd multiplies by them in the step that widens vpmaddubsw's pairs (the
// row engine does the same at both levels). Panels as tile.hpp's, per super-block: ymm
// (kg, v) holds bytes 4kg..4kg+3 of the 8 rows of octet v; per sub-block a ymm of the 8
// rows' scales (int16, twice per 32-bit lane); per pair of sub-blocks a ymm of the two
// coefficients of the activations' sums (the mins, or the scales that multiply the zero
// point); the 8 rows' d (and dmin) as floats.
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

#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/ggml_tables.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"

namespace archetype::quant::avx2::tile {

/// A super-block type as the tile takes it. decode(blk, u, sc, c, d, dmin): the 256
/// values in element order (unsigned u, or signed values when is_signed), the nsub
/// sub-block scales, the nsub coefficients of the activations' sums (sums32: of 32
/// quants, else of 16) and the float scales. fold: the factor of corr in total (0: none);
/// min: corr has its own step with -dmin. max_value: the largest |u|.
template <ggml_type T> struct kfmt;

inline float f16_at(const std::uint8_t* p) noexcept {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/// Q4_K / Q5_K: the 8 sub-block scales and mins, packed in 6 bits at blk + 4.
inline void k4_scales_and_mins(const std::uint8_t* blk, std::int16_t* sc, std::int16_t* c) noexcept {
    for (std::size_t j = 0; j < 8; ++j) {
        std::uint8_t s, m;
        scale_min_k4(j, blk + 4, s, m);
        sc[j] = s, c[j] = m;
    }
}

template <> struct kfmt<ggml_type::Q4_K> {
    static constexpr int sub = 32, max_value = 15, fold = 0;
    static constexpr bool is_signed = false, min = true, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c, float& d,
                       float& dmin) noexcept {
        k4_scales_and_mins(blk, sc, c);
        for (std::size_t e = 0; e < 256; ++e) {
            const std::uint8_t q = blk[16 + 32 * (e / 64) + e % 32];
            u[e] = e % 64 < 32 ? q & 15 : q >> 4;
        }
        d = f16_at(blk), dmin = f16_at(blk + 2);
    }
};
template <> struct kfmt<ggml_type::Q5_K> {
    static constexpr int sub = 32, max_value = 31, fold = 0;
    static constexpr bool is_signed = false, min = true, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c, float& d,
                       float& dmin) noexcept {
        k4_scales_and_mins(blk, sc, c);
        for (std::size_t e = 0; e < 256; ++e) {
            const std::uint8_t q = blk[48 + 32 * (e / 64) + e % 32];
            const unsigned high = (unsigned(blk[16 + e % 32]) >> (e / 32)) & 1u;
            u[e] = std::uint8_t((e % 64 < 32 ? q & 15 : q >> 4) | high << 4);
        }
        d = f16_at(blk), dmin = f16_at(blk + 2);
    }
};
template <> struct kfmt<ggml_type::Q6_K> { // u = q + 32 (0..63), w = d * sc * (u - 32)
    static constexpr int sub = 16, max_value = 63, fold = -32;
    static constexpr bool is_signed = false, min = false, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c, float& d,
                       float& dmin) noexcept {
        for (std::size_t k = 0; k < 16; ++k) sc[k] = c[k] = static_cast<std::int8_t>(blk[192 + k]);
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t l = 0; l < 32; ++l) {
                const unsigned ql0 = blk[64 * h + l], ql1 = blk[64 * h + 32 + l], qh = blk[128 + 32 * h + l];
                u[128 * h + l] = std::uint8_t((ql0 & 15) | (qh & 3) << 4);
                u[128 * h + 32 + l] = std::uint8_t((ql1 & 15) | ((qh >> 2) & 3) << 4);
                u[128 * h + 64 + l] = std::uint8_t((ql0 >> 4) | ((qh >> 4) & 3) << 4);
                u[128 * h + 96 + l] = std::uint8_t((ql1 >> 4) | ((qh >> 6) & 3) << 4);
            }
        d = f16_at(blk + 208), dmin = 0.f;
    }
};
template <> struct kfmt<ggml_type::Q2_K> { // w = d * (sc & 15) * q - dmin * (sc >> 4)
    static constexpr int sub = 16, max_value = 3, fold = 0;
    static constexpr bool is_signed = false, min = true, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c, float& d,
                       float& dmin) noexcept {
        for (std::size_t k = 0; k < 16; ++k) sc[k] = blk[k] & 15, c[k] = blk[k] >> 4;
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t j = 0; j < 4; ++j)
                for (std::size_t l = 0; l < 32; ++l) u[128 * h + 32 * j + l] = (blk[16 + 32 * h + l] >> (2 * j)) & 3;
        d = f16_at(blk + 80), dmin = f16_at(blk + 82);
    }
};
template <> struct kfmt<ggml_type::Q3_K> { // u = q + 4 (0..7), w = d * (sc - 32) * (u - 4)
    static constexpr int sub = 16, max_value = 7, fold = -4;
    static constexpr bool is_signed = false, min = false, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c, float& d,
                       float& dmin) noexcept {
        std::uint8_t raw[16];
        q3_K_scales(blk + 96, raw);
        for (std::size_t k = 0; k < 16; ++k) sc[k] = c[k] = std::int16_t(int(raw[k]) - 32);
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t j = 0; j < 4; ++j)
                for (std::size_t l = 0; l < 32; ++l)
                    u[128 * h + 32 * j + l] = std::uint8_t(((blk[32 + 32 * h + l] >> (2 * j)) & 3) |
                                                           ((blk[l] >> (4 * h + j)) & 1) << 2);
        d = f16_at(blk + 108), dmin = 0.f;
    }
};
template <> struct kfmt<ggml_type::IQ4_XS> { // signed table values, signed scales ls - 32
    static constexpr int sub = 32, max_value = 127, fold = 0;
    static constexpr bool is_signed = true, min = false, has_corr = false;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c, float& d,
                       float& dmin) noexcept {
        for (std::size_t i = 0; i < 8; ++i) {
            sc[i] = std::int16_t(int(iq4_xs_scale(blk, i)) - 32), c[i] = 0;
            for (std::size_t l = 0; l < 16; ++l) {
                const std::uint8_t q = blk[8 + 16 * i + l];
                u[32 * i + l] = std::uint8_t(ggml_tables::kvalues_iq4nl[q & 15]);
                u[32 * i + 16 + l] = std::uint8_t(ggml_tables::kvalues_iq4nl[q >> 4]);
            }
        }
        d = f16_at(blk), dmin = 0.f;
    }
};

template <ggml_type T>
inline constexpr bool k_tiled = T == ggml_type::Q4_K || T == ggml_type::Q5_K || T == ggml_type::Q6_K ||
                                T == ggml_type::Q2_K || T == ggml_type::Q3_K || T == ggml_type::IQ4_XS;

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
                K::decode(W + (r0 + r) * row_bytes + b * tr.type_size, u, sc, c, d, dmin);
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
