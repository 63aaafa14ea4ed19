#pragma once
// Quantised matmul on AVX-512 VNNI: y[t][r] = sum_k W[r][k] * x[t][k] computed
// on the stored blocks, never on a dequantised matrix.
//
// The scheme (llama.cpp's, in our own shape): the activations are quantised
// once per call to int8 in blocks of 32 (scale dx per block), and every weight
// type is decoded, 64 elements at a time, into
//     u : 64 unsigned bytes (the stored quants, made non-negative),
//     s : per 32-bit lane (4 elements) the float scale of the block holding them,
//     m : per lane the block's offset,
// so that weight = s * u - m. Then one `vpdpbusd` gives 16 lanes of 4-element
// integer dots and
//     acc += float(dot(u, xq)) * (s * dx)  -  m * (dx * sum(xq))
// where dx * sum(xq) per lane is precomputed with the activations. Zero-point
// types (Q4_0: q - 8, Q8_0 stored signed: u = q ^ 0x80 so offset 128 ...) use
// m = zero * s; min types (Q4_1, Q4_K ...) use their stored min. One code path
// for all types; only the 64-element decoders differ.
//
// Elements stay in row order in u, so the activation panel is type-agnostic.
// A tile of R weight rows x T tokens is computed per pass over the row's
// slices, so weight bytes are decoded once per T tokens and activations loaded
// once per R rows. Each output is accumulated by one fixed sequence of
// operations whatever R, T and the thread split are: results do not depend on
// the thread count or on how many tokens are batched.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)
#define ARCHETYPE_QUANT_VNNI 1

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/blocks.hpp"

namespace archetype::quant::vnni {

/// 64 activations quantised: int8 quants, per-lane block scale, per-lane dx * sum of 4 quants.
struct alignas(64) act_slice {
    std::int8_t q[64];
    float d[16];
    float s[16];
};
static_assert(sizeof(act_slice) == 192);

/// Quantises n_slices * 64 activations (cols valid, the rest zero) into out.
inline void quantize_activations(const float* x, std::size_t cols, act_slice* out, std::size_t n_slices) noexcept {
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    for (std::size_t p = 0; p < n_slices; ++p) {
        alignas(64) float tmp[64];
        const float* src = x + 64 * p;
        if (64 * p + 64 > cols) { // the last slice of a row of 32 * odd elements
            const std::size_t have = cols > 64 * p ? cols - 64 * p : 0;
            std::memset(tmp, 0, sizeof tmp);
            std::memcpy(tmp, src, have * sizeof(float));
            src = tmp;
        }
        // One 32-block: its scale and 32 quants (x * 127 / amax, rounded to nearest).
        auto block = [&](const float* v, float& d) {
            const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
            const float amax =
                _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(v0, absmask), _mm512_and_ps(v1, absmask)));
            d = amax / 127.f;
            const __m512 idv = _mm512_set1_ps(d != 0.f ? 1.f / d : 0.f);
            const __m128i a = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, idv)));
            const __m128i c = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, idv)));
            return _mm256_inserti128_si256(_mm256_castsi128_si256(a), c, 1);
        };
        float d0, d1;
        const __m256i lo = block(src, d0), hi = block(src + 32, d1);
        const __m512i q8 = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        const __m512 dv = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
        const __m512i sum4 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, q8);
        _mm512_store_si512(out[p].q, q8);
        _mm512_store_ps(out[p].d, dv);
        _mm512_store_ps(out[p].s, _mm512_mul_ps(_mm512_cvtepi32_ps(sum4), dv));
    }
}

namespace detail {

// A block of zeros stands in for the missing second block of a row of 32 * odd elements.
alignas(64) inline constexpr std::uint8_t zero_block[64] = {};

inline __m512 two_scales(const std::uint8_t* h0, const std::uint8_t* h1) noexcept {
    const std::uint32_t bits = std::uint32_t(load_u16(h0)) | std::uint32_t(load_u16(h1)) << 16;
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(bits)));
    return _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
                                 _mm512_castps128_ps512(f));
}

// 16 packed bytes per block -> 32 nibbles in element order (low nibbles = 0..15, high = 16..31).
inline __m512i nibbles2(const std::uint8_t* q0, const std::uint8_t* q1) noexcept {
    const __m256i q = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)), 1);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    const __m512i t = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); // lo0 lo1 hi0 hi1
    return _mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(3, 1, 2, 0));                // lo0 hi0 lo1 hi1
}

inline __mmask64 high_bits2(const std::uint8_t* h0, const std::uint8_t* h1) noexcept {
    return _cvtu64_mask64(std::uint64_t(load_u32(h0)) | std::uint64_t(load_u32(h1)) << 32);
}

// Every decoder works in units (legacy: a pair of 32-blocks; K: one 256
// super-block) of `slices` 64-element slices: prepare(unit) once per row and
// unit does the per-unit work (scale unpacking), slice(c) yields slice c.
// Legacy 32-element blocks: a unit is two blocks, one slice.
template <class D>
struct legacy_base {
    static constexpr int slices = 1;
    struct state { const std::uint8_t *b0, *b1; };
    static state prepare(const std::uint8_t* row, std::size_t unit, std::size_t n_blocks) noexcept {
        const std::uint8_t* b0 = row + 2 * unit * D::bytes;
        return {b0, 2 * unit + 1 < n_blocks ? b0 + D::bytes : zero_block};
    }
    static void slice(const state& st, int, __m512i& u, __m512& s, __m512& m) noexcept {
        D::decode(st.b0, st.b1, u, s, m);
    }
};

struct dec_q8_0 : legacy_base<dec_q8_0> {
    static constexpr std::size_t bytes = 34;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        const __m512i q = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2)), 1);
        u = _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
        s = two_scales(b0, b1);
        m = _mm512_mul_ps(s, _mm512_set1_ps(128.f));
    }
};
struct dec_q4_0 : legacy_base<dec_q4_0> {
    static constexpr std::size_t bytes = 18;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        u = nibbles2(b0 + 2, b1 + 2);
        s = two_scales(b0, b1);
        m = _mm512_mul_ps(s, _mm512_set1_ps(8.f));
    }
};
struct dec_q4_1 : legacy_base<dec_q4_1> {
    static constexpr std::size_t bytes = 20;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        u = nibbles2(b0 + 4, b1 + 4);
        s = two_scales(b0, b1);
        m = _mm512_sub_ps(_mm512_setzero_ps(), two_scales(b0 + 2, b1 + 2));
    }
};
struct dec_q5_0 : legacy_base<dec_q5_0> {
    static constexpr std::size_t bytes = 22;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        const __m512i n = nibbles2(b0 + 6, b1 + 6);
        u = _mm512_mask_add_epi8(n, high_bits2(b0 + 2, b1 + 2), n, _mm512_set1_epi8(16));
        s = two_scales(b0, b1);
        m = _mm512_mul_ps(s, _mm512_set1_ps(16.f));
    }
};
struct dec_q5_1 : legacy_base<dec_q5_1> {
    static constexpr std::size_t bytes = 24;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        const __m512i n = nibbles2(b0 + 8, b1 + 8);
        u = _mm512_mask_add_epi8(n, high_bits2(b0 + 4, b1 + 4), n, _mm512_set1_epi8(16));
        s = two_scales(b0, b1);
        m = _mm512_sub_ps(_mm512_setzero_ps(), two_scales(b0 + 2, b1 + 2));
    }
};

// K types: a 256-element super-block is four 64-element slices; `c` picks one.
// Eight 6-bit scales and mins, unpacked four at a time with 32-bit masks
// (the layout of blocks.hpp's scale_min_k4), as [sc0..7, m0..7] floats.
inline __m512 k4_scales_mins(const std::uint8_t* b) noexcept {
    const std::uint32_t a = load_u32(b + 4), bm = load_u32(b + 8), c = load_u32(b + 12);
    const std::uint32_t sc03 = a & 0x3F3F3F3Fu, m03 = bm & 0x3F3F3F3Fu;
    const std::uint32_t sc47 = (c & 0x0F0F0F0Fu) | ((a >> 6) & 0x03030303u) << 4;
    const std::uint32_t m47 = ((c >> 4) & 0x0F0F0F0Fu) | ((bm >> 6) & 0x03030303u) << 4;
    const __m128i packed = _mm_set_epi32(static_cast<int>(m47), static_cast<int>(m03),
                                         static_cast<int>(sc47), static_cast<int>(sc03));
    const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(packed));
    const float d = load_f16(b), dmin = load_f16(b + 2);
    return _mm512_mul_ps(f, _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d), _mm512_set1_ps(dmin)));
}
inline __m512i pair_index(int i) noexcept { // lanes 0-7 take i, lanes 8-15 take i + 1
    return _mm512_add_epi32(_mm512_set1_epi32(i), _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0));
}

struct k_base {
    static constexpr int slices = 4;
    struct state { const std::uint8_t* b; __m512 sm; };
};
struct dec_q4_K : k_base {
    static constexpr std::size_t bytes = 144;
    static state prepare(const std::uint8_t* row, std::size_t unit, std::size_t) noexcept {
        const std::uint8_t* b = row + unit * bytes;
        return {b, k4_scales_mins(b)};
    }
    static void slice(const state& st, int c, __m512i& u, __m512& s, __m512& m) noexcept {
        const std::uint8_t* b = st.b;
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * c));
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, m4)),
                               _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), 1);
        s = _mm512_permutexvar_ps(pair_index(2 * c), st.sm);
        m = _mm512_permutexvar_ps(pair_index(8 + 2 * c), st.sm);
    }
};
struct dec_q5_K : k_base {
    static constexpr std::size_t bytes = 176;
    static state prepare(const std::uint8_t* row, std::size_t unit, std::size_t) noexcept {
        const std::uint8_t* b = row + unit * bytes;
        return {b, k4_scales_mins(b)};
    }
    static void slice(const state& st, int c, __m512i& u, __m512& s, __m512& m) noexcept {
        const std::uint8_t* b = st.b;
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 48 + 32 * c));
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        const __m512i n = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, m4)),
                                             _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), 1);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
        const __m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), qh, 1);
        const __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * c))),
                                               _mm256_set1_epi8(static_cast<char>(2 << (2 * c))), 1);
        u = _mm512_mask_add_epi8(n, _mm512_test_epi8_mask(qh2, sel), n, _mm512_set1_epi8(16));
        s = _mm512_permutexvar_ps(pair_index(2 * c), st.sm);
        m = _mm512_permutexvar_ps(pair_index(8 + 2 * c), st.sm);
    }
};
struct dec_q6_K : k_base {
    static constexpr std::size_t bytes = 210;
    // sm holds the 16 sub-block scales times d.
    static state prepare(const std::uint8_t* row, std::size_t unit, std::size_t) noexcept {
        const std::uint8_t* b = row + unit * bytes;
        const __m512 sc = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192))));
        return {b, _mm512_mul_ps(sc, _mm512_set1_ps(load_f16(b + 208)))};
    }
    static void slice(const state& st, int c, __m512i& u, __m512& s, __m512& m) noexcept {
        const std::uint8_t* b = st.b;
        const int h = c / 2, odd = c % 2;
        const __m512i ql = _mm512_loadu_si512(b + 64 * h);
        const __m512i m4 = _mm512_set1_epi8(0x0F);
        const __m512i lo = odd ? _mm512_and_si512(_mm512_srli_epi16(ql, 4), m4) : _mm512_and_si512(ql, m4);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
        // first 32 elements take bits 4*odd + 0..1 of qh[l], the next 32 bits 4*odd + 2..3
        const __m256i h0 = _mm256_srli_epi16(qh, 4 * odd), h1 = _mm256_srli_epi16(qh, 4 * odd + 2);
        const __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
        const __m512i hi = _mm512_slli_epi16(_mm512_and_si512(hh, _mm512_set1_epi8(3)), 4);
        u = _mm512_or_si512(lo, hi);
        const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(4 * c),
                                             _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0));
        s = _mm512_permutexvar_ps(idx, st.sm);
        m = _mm512_mul_ps(s, _mm512_set1_ps(32.f));
    }
};

template <class D>
inline constexpr bool is_k = D::slices == 4;

/// y[t * ldy + r] for r in [0, R), t in [0, T): rows w[0..R) against tokens a[0..T).
template <class D, int R, int T>
inline void tile(const std::uint8_t* const* w, std::size_t n_blocks, const act_slice* const* a,
                 std::size_t n_slices, float* y, std::size_t ldy) noexcept {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const std::size_t n_units = n_slices / D::slices;
    for (std::size_t unit = 0; unit < n_units; ++unit) {
        typename D::state st[R];
        for (int r = 0; r < R; ++r) st[r] = D::prepare(w[r], unit, n_blocks);
        for (int c = 0; c < D::slices; ++c) {
            const std::size_t p = unit * D::slices + std::size_t(c);
            __m512i u[R];
            __m512 s[R], m[R];
            for (int r = 0; r < R; ++r) D::slice(st[r], c, u[r], s[r], m[r]);
            for (int t = 0; t < T; ++t) {
                const act_slice& x = a[t][p];
                const __m512i xq = _mm512_load_si512(x.q);
                const __m512 dx = _mm512_load_ps(x.d), xs = _mm512_load_ps(x.s);
                for (int r = 0; r < R; ++r) {
                    const __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[r], xq);
                    acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(s[r], dx), acc[r][t]);
                    acc[r][t] = _mm512_fnmadd_ps(m[r], xs, acc[r][t]);
                }
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[std::size_t(t) * ldy + std::size_t(r)] = _mm512_reduce_add_ps(acc[r][t]);
}

inline constexpr int tile_rows = 4;
inline constexpr int tile_toks = 3;

/// Rows [r0, r1) of W against the n_tok tokens of the panel (token stride n_slices).
template <class D, int R>
inline void rows_against_panel(const std::uint8_t* W, std::size_t row_bytes, std::size_t r0, std::size_t n_blocks,
                               const act_slice* panel, std::size_t n_slices, std::size_t n_tok, float* y,
                               std::size_t ldy) noexcept {
    const std::uint8_t* w[R];
    for (int r = 0; r < R; ++r) w[r] = W + (r0 + std::size_t(r)) * row_bytes;
    std::size_t t = 0;
    const act_slice* a[tile_toks];
    for (; t + tile_toks <= n_tok; t += tile_toks) {
        for (int k = 0; k < tile_toks; ++k) a[k] = panel + (t + std::size_t(k)) * n_slices;
        tile<D, R, tile_toks>(w, n_blocks, a, n_slices, y + t * ldy + r0, ldy);
    }
    for (; t < n_tok; ++t) {
        a[0] = panel + t * n_slices;
        tile<D, R, 1>(w, n_blocks, a, n_slices, y + t * ldy + r0, ldy);
    }
}

template <class D>
inline void run(const std::uint8_t* W, std::size_t rows, std::size_t cols, const float* x, std::size_t ldx,
                std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const std::size_t block = is_k<D> ? 256 : 32;
    const std::size_t n_blocks = cols / block;
    const std::size_t row_bytes = n_blocks * D::bytes;
    const std::size_t n_slices = (cols + 63) / 64;
    // Tokens go in chunks whose quantised activations stay in L2 while every
    // weight row of this thread streams past them once.
    const std::size_t per_tok = n_slices * sizeof(act_slice);
    std::size_t chunk = std::max<std::size_t>(tile_toks, (std::size_t(768) << 10) / per_tok);
    chunk = std::min(n_tok, chunk - chunk % tile_toks);
    thread_local std::vector<act_slice> buf;
    if (buf.size() < chunk * n_slices) buf.resize(chunk * n_slices);
    act_slice* panel = buf.data();
    const std::size_t groups = (rows + tile_rows - 1) / tile_rows;
    for (std::size_t t0 = 0; t0 < n_tok; t0 += chunk) {
        const std::size_t nt = std::min(chunk, n_tok - t0);
        auto quant = [&](std::size_t b, std::size_t e) {
            for (std::size_t t = b; t < e; ++t)
                quantize_activations(x + (t0 + t) * ldx, cols, panel + t * n_slices, n_slices);
        };
        if (pool && nt > 1) pool->parallel_for(nt, quant); else quant(0, nt);
        float* yc = y + t0 * ldy;
        auto work = [&](std::size_t gb, std::size_t ge) {
            for (std::size_t g = gb; g < ge; ++g) {
                const std::size_t r0 = g * tile_rows;
                if (r0 + tile_rows <= rows) {
                    rows_against_panel<D, tile_rows>(W, row_bytes, r0, n_blocks, panel, n_slices, nt, yc, ldy);
                } else {
                    for (std::size_t r = r0; r < rows; ++r)
                        rows_against_panel<D, 1>(W, row_bytes, r, n_blocks, panel, n_slices, nt, yc, ldy);
                }
            }
        };
        if (pool) pool->parallel_for(groups, work); else work(0, groups);
    }
}

} // namespace detail

/// Quantised matmul for the block types; false when `type` has no VNNI kernel here.
inline bool matmul(ggml_type type, const void* W, std::size_t rows, std::size_t cols, const float* x,
                   std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto* w = static_cast<const std::uint8_t*>(W);
    switch (type) {
    case ggml_type::Q8_0: detail::run<detail::dec_q8_0>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q4_0: detail::run<detail::dec_q4_0>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q4_1: detail::run<detail::dec_q4_1>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q5_0: detail::run<detail::dec_q5_0>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q5_1: detail::run<detail::dec_q5_1>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q4_K: detail::run<detail::dec_q4_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q5_K: detail::run<detail::dec_q5_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q6_K: detail::run<detail::dec_q6_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    default: return false;
    }
}

} // namespace archetype::quant::vnni

#endif
