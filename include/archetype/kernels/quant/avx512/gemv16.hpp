#pragma once
// One token against 16 rows without packing (Q6_K, and Q8_0 rows of 4 KiB and more
// on Intel): bitwise the batch tile's result.
#include "archetype/kernels/quant/avx512/level.hpp"
#if defined(ARCHETYPE_QUANT_VNNI)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/avx512/lanes.hpp"
#include "archetype/kernels/quant/avx512/tile.hpp"

namespace archetype::quant::vnni::detail {

inline constexpr std::size_t gemv_prefetch = 512; // per row, 16 rows in flight
inline constexpr std::size_t gemv_linear_ahead = 32768; // linear L2 cursor over a 16-row group
inline constexpr std::size_t gemv_linear_max_group = 49152; // ... used when the group is at most this many bytes

// One token gains nothing from packing: the decoded rows go straight into
// vpdpbusd, and the 16 rows' lane partials are reduced and transposed in
// registers into lanes = rows. The integer sums are exact, and the float chain
// per sub-block is the tile's, so a token gives bitwise the same output here as
// inside a batch.

/// d[r] holds row r's 16 lanes of 4-element sums; out[L] lane r = sum of 128-bit lane L of d[r]
/// (four 16-element sums per row), or with Sum = false lane r = dword 0 of lane L (a selection).
template <bool Sum>
inline void reduce_transpose16(const __m512i d[16], __m512i out[4]) noexcept {
    __m512i c[8], e[4];
    for (int i = 0; i < 8; ++i) {
        const __m512i lo = _mm512_unpacklo_epi32(d[2 * i], d[2 * i + 1]);
        c[i] = Sum ? _mm512_add_epi32(lo, _mm512_unpackhi_epi32(d[2 * i], d[2 * i + 1])) : lo;
    }
    for (int g = 0; g < 4; ++g) {
        const __m512i lo = _mm512_unpacklo_epi64(c[2 * g], c[2 * g + 1]);
        e[g] = Sum ? _mm512_add_epi32(lo, _mm512_unpackhi_epi64(c[2 * g], c[2 * g + 1])) : lo;
    }
    // e[g] 128-bit lane L, dword q = row 4g + q: a 4x4 transpose of 128-bit lanes
    lanes512::transpose_lanes4(e, out);
}

/// y[lane] for rows [r0, r0 + nr) (nr <= 16) against one quantised token a.
template <class D>
inline void gemv16(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0,
                   std::size_t n_blocks, std::size_t n_slices, const std::uint8_t* a, const act_layout& L,
                   float* y) noexcept {
    using P = packed_layout<D>;
    const std::size_t unit_bytes = is_k<D> ? D::bytes : 2 * D::bytes;
    const std::uint8_t* rp[16];
    for (std::size_t r = 0; r < 16; ++r) rp[r] = W + std::min(r0 + r, rows - 1) * row_bytes;
    const auto* dxp = reinterpret_cast<const float*>(a + L.dx_off());
    const std::uint8_t* aux = a + L.aux_off();
    __m512 acc = _mm512_setzero_ps();
    const std::size_t n_units = n_slices / D::slices;
    // The 16 rows are contiguous (and the next group of this thread follows): one
    // linear cursor keeps the DRAM stream 32 KiB ahead in L2, the per-row prefetch
    // below brings each row's next bytes from there into L1.
    // Measured: +45% decode on 576-wide rows, equal at 2048, slower (-18%) at 4096-wide
    // rows (Q8_0 on a Xeon, session 4), where the 16 per-row streams already keep the bus
    // busy; so short rows only, except:
    const char* pf = reinterpret_cast<const char*>(W + r0 * row_bytes) + gemv_linear_ahead;
    // Q6_K (the only type here on AMD) takes the cursor at every width: 4096 x 4096 from
    // DRAM, 2 threads, 17.3 -> 21.3 GB/s (Zen 4, medians of 3 rounds; 2048-wide rows had it).
    const bool linear = 16 * row_bytes <= gemv_linear_max_group || std::is_same_v<D, dec_q6_K>;
    const std::size_t pf_step = linear ? 16 * row_bytes / n_units : 0;
    for (std::size_t unit = 0; unit < n_units; ++unit) {
        for (std::size_t o = 0; o < pf_step; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
        pf += pf_step;
        typename D::state st[16];
        for (std::size_t r = 0; r < 16; ++r) {
            const char* ahead = reinterpret_cast<const char*>(rp[r]) + unit * unit_bytes + gemv_prefetch;
            _mm_prefetch(ahead, _MM_HINT_T0);
            if constexpr (D::bytes * (is_k<D> ? 1 : 2) > 64) _mm_prefetch(ahead + 64, _MM_HINT_T0);
            if constexpr (D::bytes * (is_k<D> ? 1 : 2) > 128) _mm_prefetch(ahead + 128, _MM_HINT_T0);
            if constexpr (D::bytes * (is_k<D> ? 1 : 2) > 192) _mm_prefetch(ahead + 192, _MM_HINT_T0);
            st[r] = D::prepare(rp[r], unit, n_blocks);
        }
        for (int c = 0; c < D::slices; ++c) {
            const std::size_t p = unit * D::slices + std::size_t(c);
            const __m512i xq = _mm512_load_si512(a + p * 64);
            __m512i d[16], sv[16], mv[16];
            for (std::size_t r = 0; r < 16; ++r) {
                __m512i u;
                __m512 s, m;
                D::slice(st[r], c, u, s, m);
                d[r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xq);
                sv[r] = _mm512_castps_si512(s);
                mv[r] = _mm512_castps_si512(m);
            }
            __m512i is[4], ss[4], ms[4];
            reduce_transpose16<true>(d, is);
            if constexpr (D::f16_scales) {
                // Legacy blocks: the two F16 scales (and mins) of 16 rows straight from
                // memory, converted 16 at a time; same values as the decoders' s and m.
                alignas(32) std::uint16_t h[4][16];
                for (std::size_t r = 0; r < 16; ++r) {
                    const std::uint8_t* b0 = st[r].b0;
                    const std::uint8_t* b1 = st[r].b1;
                    h[0][r] = load_u16(b0);
                    h[1][r] = load_u16(b1);
                    if constexpr (P::zero == 0) {
                        h[2][r] = load_u16(b0 + 2);
                        h[3][r] = load_u16(b1 + 2);
                    }
                }
                auto cvt = [&](int i) {
                    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h[i])));
                };
                ss[0] = _mm512_castps_si512(cvt(0));
                ss[2] = _mm512_castps_si512(cvt(1));
                if constexpr (P::zero == 0) {
                    ms[0] = _mm512_castps_si512(_mm512_sub_ps(_mm512_setzero_ps(), cvt(2)));
                    ms[2] = _mm512_castps_si512(_mm512_sub_ps(_mm512_setzero_ps(), cvt(3)));
                }
            } else {
                reduce_transpose16<false>(sv, ss);
                if constexpr (P::zero == 0) reduce_transpose16<false>(mv, ms);
            }
            for (std::size_t b = 0; b < P::nsb; ++b) {
                const std::size_t sb = p * P::nsb + b;
                // sub = 32: 128-bit lanes 2b and 2b + 1 make sub-block b; sub = 16: lane b
                __m512i ib = P::nsb == 2 ? _mm512_add_epi32(is[2 * b], is[2 * b + 1]) : is[b];
                const __m512 s = _mm512_castsi512_ps(P::nsb == 2 ? ss[2 * b] : ss[b]);
                if constexpr (P::zero != 0) ib = _mm512_add_epi32(ib, bcast4(aux + 4 * sb));
                const __m512 dx = _mm512_set1_ps(dxp[(p * 64 + b * P::sub) / 32]);
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ib), _mm512_mul_ps(s, dx), acc);
                if constexpr (P::zero == 0) {
                    const __m512 m = _mm512_castsi512_ps(P::nsb == 2 ? ms[2 * b] : ms[b]);
                    acc = _mm512_fnmadd_ps(m, _mm512_set1_ps(load_f32(aux + 4 * sb)), acc);
                }
            }
        }
    }
    const std::size_t nr = std::min<std::size_t>(16, rows - r0);
    _mm512_mask_storeu_ps(y + r0, __mmask16((1u << nr) - 1u), acc);
}

} // namespace archetype::quant::vnni::detail

#endif
