#pragma once
// The batch engine's register tile: T tokens x 32 rows of one packed group.
// Output-stationary layout: each fp32 lane of an accumulator is one output
// (row r, token t), so no horizontal reduction is needed and the integer dot
// of a whole sub-block (32 elements, 16 for Q6_K) is accumulated by vpdpbusd
// before any float work. Weights are repacked, 32 rows at a time, from the
// decoders' row-order bytes into "k-group major" panels: zmm j of a 16-row
// panel holds bytes 4j..4j+3 of each of the 16 rows, so one vpdpbusd with a
// broadcast 4-byte activation group advances 16 outputs by 4 elements.
// Per sub-block and output lane the float work is fixed:
//     acc = fma(float(idot), s * dx, acc)        (zero-point types fold -z * sum(xq)
//     acc = fnmadd(m, dx * sum(xq), acc)          into idot; min types add this step)
// and idot is an exact integer, so every output gets bitwise the same value
// whatever the tile, the token batch or the thread split.
#include "archetype/kernels/quant/avx512/level.hpp"
#if defined(ARCHETYPE_QUANT_VNNI)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/avx512/packing.hpp"

namespace archetype::quant::vnni::detail {

inline __m512i bcast4(const std::uint8_t* p) noexcept {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
inline float load_f32(const std::uint8_t* p) noexcept {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}

/// y[t * ldy + lane] for T tokens x 32 rows of a packed group (nr valid rows).
template <class D, int T>
inline void tile(const std::uint8_t* pk, std::size_t n_slices, const std::uint8_t* const* a, const act_layout& L,
                 float* y, std::size_t ldy, std::size_t nr) noexcept {
    using P = packed_layout<D>;
    constexpr int V = 2, kg_per_sub = P::sub / 4;
    __m512 acc[T][V];
    for (int t = 0; t < T; ++t)
        for (int v = 0; v < V; ++v) acc[t][v] = _mm512_setzero_ps();
    for (std::size_t p = 0; p < n_slices; ++p) {
        const std::uint8_t* ps = pk + p * P::slice_bytes;
        const float* sv = reinterpret_cast<const float*>(ps + P::u_bytes);
        for (std::size_t b = 0; b < P::nsb; ++b) {
            const std::size_t sb = p * P::nsb + b; // sub-block index along the row
            __m512i ia[T][V];
            for (int t = 0; t < T; ++t) {
                const __m512i init = P::zero ? bcast4(a[t] + L.aux_off() + 4 * sb) : _mm512_setzero_si512();
                for (int v = 0; v < V; ++v) ia[t][v] = init;
            }
            for (int j = 0; j < kg_per_sub; ++j) {
                const std::size_t kg = b * kg_per_sub + std::size_t(j);
                __m512i w[V];
                for (int v = 0; v < V; ++v) w[v] = _mm512_load_si512(ps + (std::size_t(v) * 16 + kg) * 64);
                for (int t = 0; t < T; ++t) {
                    const __m512i xb = bcast4(a[t] + p * 64 + kg * 4);
                    for (int v = 0; v < V; ++v) ia[t][v] = _mm512_dpbusd_epi32(ia[t][v], w[v], xb);
                }
            }
            const std::size_t blk32 = (p * 64 + b * P::sub) / 32;
            for (int v = 0; v < V; ++v) {
                const __m512 s = _mm512_load_ps(sv + (std::size_t(v) * P::nsb + b) * 16);
                for (int t = 0; t < T; ++t) {
                    const __m512 dx = _mm512_set1_ps(load_f32(a[t] + L.dx_off() + 4 * blk32));
                    acc[t][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[t][v]), _mm512_mul_ps(s, dx), acc[t][v]);
                }
                if constexpr (P::zero == 0) {
                    const __m512 m = _mm512_load_ps(sv + (2 * P::nsb + std::size_t(v) * P::nsb + b) * 16);
                    for (int t = 0; t < T; ++t)
                        acc[t][v] = _mm512_fnmadd_ps(m, _mm512_set1_ps(load_f32(a[t] + L.aux_off() + 4 * sb)), acc[t][v]);
                }
            }
        }
    }
    for (int t = 0; t < T; ++t)
        for (int v = 0; v < V; ++v) {
            const std::size_t lo = std::size_t(v) * 16;
            if (lo >= nr) continue;
            const std::size_t n = std::min<std::size_t>(16, nr - lo);
            _mm512_mask_storeu_ps(y + std::size_t(t) * ldy + lo, __mmask16((1u << n) - 1u), acc[t][v]);
        }
}

inline constexpr int tile_toks = 6;

template <class D, int T>
inline void tokens_tail(const std::uint8_t* pk, std::size_t n_slices, const std::uint8_t* const* a,
                        const act_layout& L, float* y, std::size_t ldy, std::size_t nr, int n) noexcept {
    if constexpr (T > 0) {
        if (n == T) tile<D, T>(pk, n_slices, a, L, y, ldy, nr);
        else tokens_tail<D, T - 1>(pk, n_slices, a, L, y, ldy, nr, n);
    }
}


} // namespace archetype::quant::vnni::detail

#endif
