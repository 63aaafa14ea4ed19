#pragma once
// s[r][j] = q[r] . k[j] for a few rows q (R <= 4) against many rows k: the
// scores of one decode step, where the query heads that share a kv head meet
// every cached key of that head.
//
// Why not the row-dot GEMM engine: at head_dim 64 each dot product is only four
// 16-lane FMAs long, and the engine's per-group reduction (xsimd haddp, then a
// scalar lane gather and store per element) cost more than the FMAs (decode at
// depth 2048, F16 cache: 15% of the step in scores, 2.3x slower per byte than
// P.V). Here sixteen keys' accumulators are folded into one vector of sixteen
// sums by a four-level in-register transpose-add (45 shuffles/adds per sixteen
// scores), stored with one (masked) store per query row, and no query row is
// padded (the engine ran GQA's groups of 3 as 4).
//
// AVX-512 only (16 lanes) and hd a multiple of 16: `row_scores_fits(hd)` says
// when; elsewhere callers use the GEMM engines (row_scores still computes the
// right values there, with plain loops). Keys are read as stored: float, or IEEE half widened in
// registers (so a half store gives bitwise what a float store holding the same
// values gives). Each score is computed by the same instruction sequence
// wherever its key falls in a block (a partial block reads its last key again
// and drops those lanes), so results do not depend on how callers chunk keys
// at multiples of 16.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/simd_util.hpp"

// The fold tree must be one straight-line block with every accumulator in a
// register: GCC 12 otherwise keeps the recursion as calls that return the
// vectors through the stack (2x slower).
#if defined(__GNUC__)
#define ARCHETYPE_ROW_SCORES_INLINE inline __attribute__((always_inline))
#else
#define ARCHETYPE_ROW_SCORES_INLINE inline
#endif

namespace archetype::kernels {

namespace detail {
/// The same scores with plain loops (targets without AVX-512, or hd not a multiple of 16).
template <class TB>
inline void row_scores_plain(const float* q, std::size_t ldq, std::size_t m, const TB* k, std::size_t ldk,
                             std::size_t n, std::size_t hd, float* s, std::size_t lds) noexcept {
    for (std::size_t r = 0; r < m; ++r)
        for (std::size_t j = 0; j < n; ++j) {
            float t = 0.f;
            for (std::size_t d = 0; d < hd; ++d) t += q[r * ldq + d] * b_elem<TB>::scalar(k[j * ldk + d]);
            s[r * lds + j] = t;
        }
}
} // namespace detail

#if XSIMD_WITH_AVX512F
constexpr bool row_scores_fits(std::size_t hd) noexcept { return hd % 16 == 0; }

namespace detail {

/// Folds two vectors that hold the partial sums of 2^(L-1) keys each (segments of
/// 32 >> L lanes) into one holding 2^L keys' partial sums in segments half as wide.
template <int L>
ARCHETYPE_ROW_SCORES_INLINE __m512 fold(__m512 a, __m512 b) noexcept {
    if constexpr (L == 1) // 256-bit halves
        return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    else if constexpr (L == 2) // 128-bit blocks
        return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
    else if constexpr (L == 3) // 64-bit pairs within each block
        return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b))),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b))));
    else // single lanes
        return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

/// R query rows of hd = 16 * C elements held in registers across all keys
/// (C = 0: any multiple of 16, read from memory at every key).
template <std::size_t R, std::size_t C>
struct query_rows {
    __m512 v[R][C];
    query_rows(const float* q, std::size_t ldq, std::size_t) noexcept {
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t c = 0; c < C; ++c) v[r][c] = _mm512_loadu_ps(q + r * ldq + 16 * c);
    }
    static constexpr std::size_t chunks() noexcept { return C; }
    __m512 at(std::size_t r, std::size_t c) const noexcept { return v[r][c]; }
};
template <std::size_t R>
struct query_rows<R, 0> {
    const float* q;
    std::size_t ldq, hd;
    std::size_t chunks() const noexcept { return hd / 16; }
    __m512 at(std::size_t r, std::size_t c) const noexcept { return _mm512_loadu_ps(q + r * ldq + 16 * c); }
};

template <std::size_t R>
struct vectors {
    __m512 v[R];
};

/// Accumulators of keys k[0 .. 2^L) for the R rows, folded to level L.
template <int L, class TB, std::size_t R, class Q>
ARCHETYPE_ROW_SCORES_INLINE vectors<R> fold_keys(const Q& q, const TB* const* k) noexcept {
    vectors<R> out;
    if constexpr (L == 0) {
        for (std::size_t r = 0; r < R; ++r) out.v[r] = _mm512_setzero_ps();
        for (std::size_t c = 0; c < q.chunks(); ++c) {
            const __m512 kv = b_elem<TB>::load(k[0] + 16 * c).data;
            for (std::size_t r = 0; r < R; ++r) out.v[r] = _mm512_fmadd_ps(q.at(r, c), kv, out.v[r]);
        }
    } else {
        const auto a = fold_keys<L - 1, TB, R>(q, k);
        const auto b = fold_keys<L - 1, TB, R>(q, k + (std::size_t(1) << (L - 1)));
        for (std::size_t r = 0; r < R; ++r) out.v[r] = fold<L>(a.v[r], b.v[r]);
    }
    return out;
}

/// Lane of the folded vector that holds key i of the sixteen: measured once by
/// folding sixteen constant vectors, rather than derived by hand.
inline __m512i row_scores_order() noexcept {
    static const std::array<std::int32_t, 16> idx = [] {
        __m512 v[16];
        for (int j = 0; j < 16; ++j) v[j] = _mm512_set1_ps(float(j));
        __m512 l1[8], l2[4], l3[2];
        for (int i = 0; i < 8; ++i) l1[i] = fold<1>(v[2 * i], v[2 * i + 1]);
        for (int i = 0; i < 4; ++i) l2[i] = fold<2>(l1[2 * i], l1[2 * i + 1]);
        for (int i = 0; i < 2; ++i) l3[i] = fold<3>(l2[2 * i], l2[2 * i + 1]);
        alignas(64) float s[16];
        _mm512_store_ps(s, fold<4>(l3[0], l3[1]));
        std::array<std::int32_t, 16> o{};
        for (int lane = 0; lane < 16; ++lane) o[std::size_t(s[lane] / 16.f + 0.5f)] = lane;
        return o;
    }();
    return _mm512_loadu_si512(idx.data());
}

template <class TB, std::size_t R, std::size_t C>
inline void row_scores_rows(const float* q, std::size_t ldq, const TB* k, std::size_t ldk, std::size_t n,
                            std::size_t hd, float* s, std::size_t lds) noexcept {
    const __m512i order = row_scores_order();
    const query_rows<R, C> qr{q, ldq, hd};
    for (std::size_t j0 = 0; j0 < n; j0 += 16) {
        const TB* kp[16];
        for (std::size_t j = 0; j < 16; ++j) kp[j] = k + std::min(j0 + j, n - 1) * ldk;
        const auto f = fold_keys<4, TB, R>(qr, kp);
        const __mmask16 valid = n - j0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j0)) - 1);
        for (std::size_t r = 0; r < R; ++r)
            _mm512_mask_storeu_ps(s + r * lds + j0, valid, _mm512_permutexvar_ps(order, f.v[r]));
    }
}

/// Rows four at a time; query rows in registers for head_dim 64 (C = 4), where
/// R x C fits the register file beside the accumulators (one thread, F16 keys in
/// L2: 5.2 vs 6.5 ns per key for 3 rows, 13 vs 17 for 8, over the runtime-hd loop).
template <class TB, std::size_t C>
inline void row_scores_all(const float* q, std::size_t ldq, std::size_t m, const TB* k, std::size_t ldk,
                           std::size_t n, std::size_t hd, float* s, std::size_t lds) noexcept {
    for (std::size_t r = 0; r < m;) {
        switch (std::min<std::size_t>(m - r, 4)) {
        case 4: row_scores_rows<TB, 4, C>(q + r * ldq, ldq, k, ldk, n, hd, s + r * lds, lds); r += 4; break;
        case 3: row_scores_rows<TB, 3, C>(q + r * ldq, ldq, k, ldk, n, hd, s + r * lds, lds); r += 3; break;
        case 2: row_scores_rows<TB, 2, C>(q + r * ldq, ldq, k, ldk, n, hd, s + r * lds, lds); r += 2; break;
        default: row_scores_rows<TB, 1, C>(q + r * ldq, ldq, k, ldk, n, hd, s + r * lds, lds); r += 1; break;
        }
    }
}

} // namespace detail

/// s[r * lds + j] = q[r * ldq ..] . k[j * ldk ..] for r < m, j < n, over hd
/// elements. Rows are taken four at a time.
template <class TB>
inline void row_scores(const float* q, std::size_t ldq, std::size_t m, const TB* k, std::size_t ldk,
                       std::size_t n, std::size_t hd, float* s, std::size_t lds) noexcept {
    if (n == 0) return;
    if (!row_scores_fits(hd)) return detail::row_scores_plain(q, ldq, m, k, ldk, n, hd, s, lds);
    if (hd == 64)
        detail::row_scores_all<TB, 4>(q, ldq, m, k, ldk, n, hd, s, lds);
    else
        detail::row_scores_all<TB, 0>(q, ldq, m, k, ldk, n, hd, s, lds);
}
#else
constexpr bool row_scores_fits(std::size_t) noexcept { return false; }
template <class TB>
inline void row_scores(const float* q, std::size_t ldq, std::size_t m, const TB* k, std::size_t ldk, std::size_t n,
                       std::size_t hd, float* s, std::size_t lds) noexcept {
    detail::row_scores_plain(q, ldq, m, k, ldk, n, hd, s, lds);
}
#endif

} // namespace archetype::kernels
