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
// Elements stay in row order in u. The engine (below, "engine") repacks the
// decoded bytes of 32 rows so that each fp32 accumulator lane is one output and
// whole sub-blocks are summed in int32 by vpdpbusd before one float step per
// sub-block; a single token skips the repacking (gemv_vnni.hpp; gemv16 for
// Q6_K and for Q8_0 rows of 4 KiB and more). All give every output
// the same exact integer sums and the same float chain, so results do not
// depend on the thread count or on how many tokens are batched.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)
#define ARCHETYPE_QUANT_VNNI 1

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/lanes512.hpp"
#include "archetype/kernels/quant/gemv_vnni.hpp"
#include "archetype/kernels/quant/interleaved.hpp"

namespace archetype::quant::vnni {

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

// Same result for two adjacent blocks (q1 == q0 + Bytes): one masked load (no read
// past the second block) and one vpermb instead of two loads and two lane shuffles.
template <std::size_t Bytes>
inline __m512i nibbles2_adj(const std::uint8_t* q0, const std::uint8_t* q1) noexcept {
#if defined(__AVX512VBMI__)
    if (q1 == q0 + Bytes) {
        const __m512i z = _mm512_maskz_loadu_epi8((__mmask64(1) << (Bytes + 16)) - 1, q0);
        // bytes 0-15, 0-15, Bytes..Bytes+15, Bytes..Bytes+15
        alignas(64) static constexpr std::uint8_t idx[64] = {
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            Bytes + 0, Bytes + 1, Bytes + 2, Bytes + 3, Bytes + 4, Bytes + 5, Bytes + 6, Bytes + 7,
            Bytes + 8, Bytes + 9, Bytes + 10, Bytes + 11, Bytes + 12, Bytes + 13, Bytes + 14, Bytes + 15,
            Bytes + 0, Bytes + 1, Bytes + 2, Bytes + 3, Bytes + 4, Bytes + 5, Bytes + 6, Bytes + 7,
            Bytes + 8, Bytes + 9, Bytes + 10, Bytes + 11, Bytes + 12, Bytes + 13, Bytes + 14, Bytes + 15};
        const __m512i t = _mm512_permutexvar_epi8(_mm512_load_si512(idx), z);
        // high nibbles in 128-bit lanes 1 and 3
        const __m512i sh = _mm512_srlv_epi16(t, _mm512_set_epi64(4 * 0x0001000100010001ll, 4 * 0x0001000100010001ll, 0, 0,
                                                                 4 * 0x0001000100010001ll, 4 * 0x0001000100010001ll, 0, 0));
        return _mm512_and_si512(sh, _mm512_set1_epi8(0x0F));
    }
#endif
    return nibbles2(q0, q1);
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
        u = nibbles2_adj<18>(b0 + 2, b1 + 2);
        s = two_scales(b0, b1);
        m = _mm512_mul_ps(s, _mm512_set1_ps(8.f));
    }
};
struct dec_q4_1 : legacy_base<dec_q4_1> {
    static constexpr std::size_t bytes = 20;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        u = nibbles2_adj<20>(b0 + 4, b1 + 4);
        s = two_scales(b0, b1);
        m = _mm512_sub_ps(_mm512_setzero_ps(), two_scales(b0 + 2, b1 + 2));
    }
};
struct dec_q5_0 : legacy_base<dec_q5_0> {
    static constexpr std::size_t bytes = 22;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        const __m512i n = nibbles2_adj<22>(b0 + 6, b1 + 6);
        u = _mm512_mask_add_epi8(n, high_bits2(b0 + 2, b1 + 2), n, _mm512_set1_epi8(16));
        s = two_scales(b0, b1);
        m = _mm512_mul_ps(s, _mm512_set1_ps(16.f));
    }
};
struct dec_q5_1 : legacy_base<dec_q5_1> {
    static constexpr std::size_t bytes = 24;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        const __m512i n = nibbles2_adj<24>(b0 + 8, b1 + 8);
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

// ---------------------------------------------------------------- engine
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

/// Sub-block length (elements sharing one weight scale) and zero point z
/// (w = s * (u - z); 0 = the type has a stored min instead: w = s * u - m).
/// act: how the activations are quantised, ggml's vec_dot_type for the weight type
/// (ggml-cpu.c's type_traits_cpu; on x86 the repacked Q4_K path quantises to Q8_K too).
enum class act_format { q8_0, q8_1, q8_K };
template <class D> struct sub_traits;
template <> struct sub_traits<dec_q8_0> { static constexpr int sub = 32, zero = 128; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_q4_0> { static constexpr int sub = 32, zero = 8; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_q5_0> { static constexpr int sub = 32, zero = 16; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_q4_1> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_1; };
template <> struct sub_traits<dec_q5_1> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_1; };
template <> struct sub_traits<dec_q4_K> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_K; };
template <> struct sub_traits<dec_q5_K> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_K; };
template <> struct sub_traits<dec_q6_K> { static constexpr int sub = 16, zero = 32; static constexpr act_format act = act_format::q8_K; };

inline constexpr std::size_t group_rows = 32; // two 16-row panels per group
inline constexpr std::size_t prefetch_distance = 4096;
inline constexpr std::size_t gemv_prefetch = 512; // per row, 16 rows in flight
inline constexpr std::size_t gemv_linear_ahead = 32768; // linear L2 cursor over a 16-row group
inline constexpr std::size_t gemv_linear_max_group = 49152; // ... used when the group is at most this many bytes
inline constexpr std::size_t gemv16_min_row_bytes_q8_0 = 4096; // on Intel, Q8_0 rows at least this long use gemv16

/// Activations of one token: int8 quants, per-32 scale dx, per sub-block an
/// auxiliary word: -z * sum(xq) (int32, zero-point types) or the float that
/// multiplies the stored min (min types: dx * sum(xq); Q8_1: its fp16 s).
struct act_layout {
    std::size_t n_slices, nsb, stride; // stride: bytes per token, multiple of 64
    std::size_t dx_off() const noexcept { return n_slices * 64; }
    std::size_t aux_off() const noexcept { return n_slices * 64 + n_slices * 2 * 4; }
};
inline act_layout make_act_layout(std::size_t n_slices, int sub) noexcept {
    const std::size_t nsb = 64 / std::size_t(sub);
    const std::size_t bytes = n_slices * (64 + 8 + 4 * nsb);
    return {n_slices, nsb, (bytes + 63) / 64 * 64};
}

inline float fp16_round(float f) noexcept { return _cvtsh_ss(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }

/// Quantises one token (cols valid, the rest of the n_slices * 64 zero) the way
/// ggml's CPU backend quantises src1 for the weight type's vec_dot_type, so the
/// integer dots see the same int8 values and the same scales as llama.cpp:
///   q8_0: per 32-block amax, q = rne(x * (127 / amax)), dx = fp16(amax / 127);
///   q8_1: the same, and the min types' aux = fp16(amax / 127 * sum(q)) (ggml's s,
///         from the unrounded d);
///   q8_K: one scale per 256 elements: q = rne(x * (127 / amax)), dx = 1 / (127 / amax)
///         in float (ggml picks the sign from the extreme element; sign-symmetric
///         rounding makes dx * q identical).
inline void quantize_token(const float* x, std::size_t cols, const act_layout& L, act_format f, int sub, int zero,
                           std::uint8_t* out) noexcept {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    auto* q = reinterpret_cast<std::int8_t*>(out);
    auto* dx = reinterpret_cast<float*>(out + L.dx_off());
    auto* aux = out + L.aux_off();
    const std::size_t n_blocks = L.n_slices * 2;
    const std::size_t group = f == act_format::q8_K ? 8 : 1; // 32-blocks sharing one scale
    alignas(64) float tmp[32] = {};
    auto block = [&](std::size_t b) { // the zero block after a row of 32 * odd elements
        return 32 * b + 32 > cols ? static_cast<const float*>(tmp) : x + 32 * b;
    };
    for (std::size_t g = 0; g < n_blocks; g += group) {
        const std::size_t ge = std::min(n_blocks, g + group);
        __m512 vmax = _mm512_setzero_ps();
        for (std::size_t b = g; b < ge; ++b) {
            const float* v = block(b);
            vmax = _mm512_max_ps(vmax, _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(v), absmask),
                                                     _mm512_and_ps(_mm512_loadu_ps(v + 16), absmask)));
        }
        const float amax = _mm512_reduce_max_ps(vmax);
        const float mul = amax != 0.f ? 127.f / amax : 0.f;
        const float d = f == act_format::q8_K ? (amax != 0.f ? 1.f / mul : 0.f) : amax / 127.f;
        const float ds = f == act_format::q8_K ? d : fp16_round(d);
        const __m512 idv = _mm512_set1_ps(mul);
        for (std::size_t b = g; b < ge; ++b) {
            const float* v = block(b);
            // vcvtps2dq rounds to nearest even, as ggml's _mm256_round_ps / nearest_int
            const __m128i a = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v), idv)));
            const __m128i c = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v + 16), idv)));
            const __m256i q8 = _mm256_inserti128_si256(_mm256_castsi128_si256(a), c, 1);
            _mm256_store_si256(reinterpret_cast<__m256i*>(q + 32 * b), q8);
            dx[b] = ds;
            // sums of 4 quants (8 lanes), then per sub-block
            alignas(32) std::int32_t s4[8];
            _mm256_store_si256(reinterpret_cast<__m256i*>(s4),
                               _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q8));
            const int per = sub / 4, nsub = 32 / sub;
            for (int h = 0; h < nsub; ++h) {
                std::int32_t s = 0;
                for (int i = 0; i < per; ++i) s += s4[h * per + i];
                const std::size_t idx = b * std::size_t(nsub) + std::size_t(h);
                if (zero != 0) {
                    const std::int32_t z = -zero * s;
                    std::memcpy(aux + 4 * idx, &z, 4);
                } else {
                    const float m = f == act_format::q8_1 ? fp16_round(d * float(s)) : ds * float(s);
                    std::memcpy(aux + 4 * idx, &m, 4);
                }
            }
        }
    }
}

/// 16x16 transpose of 32-bit lanes: out[j] lane i = in[i] lane j.
inline void transpose16(__m512i r[16]) noexcept {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    // u[4g + q] 128-bit lane L = rows 4g..4g+3 of dword 4L + q
    for (int q = 0; q < 4; ++q) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[q], u[4 + q], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i v1 = _mm512_shuffle_i32x4(u[q], u[4 + q], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i v3 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], _MM_SHUFFLE(3, 2, 3, 2));
        r[0 + q] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(2, 0, 2, 0));
        r[4 + q] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(3, 1, 3, 1));
        r[8 + q] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + q] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/// Packed group: per slice, 2 panels x 16 k-group vectors of u, then
/// 2 panels x nsb scale vectors, then (min types) 2 panels x nsb min vectors.
template <class D>
struct packed_layout {
    static constexpr int sub = sub_traits<D>::sub, zero = sub_traits<D>::zero;
    static constexpr std::size_t nsb = 64 / sub;
    static constexpr std::size_t u_bytes = 2 * 16 * 64;
    static constexpr std::size_t slice_bytes = u_bytes + 2 * nsb * 64 * (zero ? 1 : 2);
};

/// Decodes rows [r0, r0 + 32) (clamped to rows - 1) and packs them; tmp holds
/// 32 rows of n_slices * 64 bytes (row order, sequential reads of the weights).
template <class D>
inline void pack_group(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0,
                       std::size_t n_blocks, std::size_t n_slices, std::uint8_t* tmp, std::uint8_t* out) noexcept {
    using P = packed_layout<D>;
    const std::size_t n_units = n_slices / D::slices;
    const std::size_t rs = n_slices * 64;
    const std::size_t unit_bytes = is_k<D> ? D::bytes : 2 * D::bytes;
    for (std::size_t r = 0; r < group_rows; ++r) {
        const std::uint8_t* row = W + std::min(r0 + r, rows - 1) * row_bytes;
        const std::size_t panel = r / 16, lane = r % 16;
        for (std::size_t unit = 0; unit < n_units; ++unit) {
            // The group's rows are one contiguous range read front to back: prefetch
            // a few KiB ahead so the single stream keeps enough misses in flight
            // (a prefetch past the end of the matrix is harmless).
            const char* ahead = reinterpret_cast<const char*>(row) + unit * unit_bytes + prefetch_distance;
            for (std::size_t o = 0; o < unit_bytes; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
            const typename D::state st = D::prepare(row, unit, n_blocks);
            for (int c = 0; c < D::slices; ++c) {
                const std::size_t p = unit * D::slices + std::size_t(c);
                __m512i u;
                __m512 s, m;
                D::slice(st, c, u, s, m);
                _mm512_store_si512(tmp + r * rs + p * 64, u);
                alignas(64) float sv[16], mv[16];
                _mm512_store_ps(sv, s);
                float* so = reinterpret_cast<float*>(out + p * P::slice_bytes + P::u_bytes);
                for (std::size_t b = 0; b < P::nsb; ++b) so[(panel * P::nsb + b) * 16 + lane] = sv[b * (P::sub / 4)];
                if constexpr (P::zero == 0) {
                    _mm512_store_ps(mv, m);
                    float* mo = so + 2 * P::nsb * 16;
                    for (std::size_t b = 0; b < P::nsb; ++b) mo[(panel * P::nsb + b) * 16 + lane] = mv[b * (P::sub / 4)];
                }
            }
        }
    }
    for (std::size_t p = 0; p < n_slices; ++p)
        for (std::size_t panel = 0; panel < 2; ++panel) {
            __m512i v[16];
            for (std::size_t i = 0; i < 16; ++i) v[i] = _mm512_load_si512(tmp + (panel * 16 + i) * rs + p * 64);
            transpose16(v);
            std::uint8_t* o = out + p * P::slice_bytes + panel * 16 * 64;
            for (std::size_t j = 0; j < 16; ++j) _mm512_store_si512(o + j * 64, v[j]);
        }
}

/// The x16 layout of D's blocks (D = dec_q4_0 or dec_q8_0).
template <class D>
inline constexpr quant::weight_layout x16_layout_of =
    std::is_same_v<D, dec_q8_0> ? quant::weight_layout::q8_0_x16 : quant::weight_layout::q4_0_x16;

/// pack_group's result for rows [r0, r0 + 32) of a Q4_0 or Q8_0 matrix in its x16
/// layout (kernels/quant/interleaved.hpp; rows % 16 == 0): the two 16-row panels
/// are two x16 groups, whose 64-byte quant vectors already hold 4 bytes per row and
/// lane, so each k-group vector is one and (Q4_0 low nibbles), shift and and (high
/// nibbles) or plain copy (Q8_0, stored as q + 128 = pack_group's u) away: no
/// decode into row order, no transpose. A last group of 16 rows packs its panel
/// twice (the second panel's outputs are never stored). Same bytes and scales as
/// pack_group<D> on the row layout, except in the zero block after an odd count
/// (u = 0 here, Q8_0's pack_group has 128 there), which multiplies activations of 0.
template <class D>
inline void pack_group_x16(const std::uint8_t* W, std::size_t rows, std::size_t r0, std::size_t n_blocks,
                           std::size_t n_slices, std::uint8_t* out) noexcept {
    using P = packed_layout<D>;
    constexpr auto& X = quant::x16::of(x16_layout_of<D>);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (std::size_t panel = 0; panel < 2; ++panel) {
        const std::size_t g = std::min(r0 + 16 * panel, rows - 16) / 16;
        const std::uint8_t* G = W + g * X.group_bytes(n_blocks);
        for (std::size_t p = 0; p < n_slices; ++p) {
            std::uint8_t* ps = out + p * P::slice_bytes;
            for (std::size_t h = 0; h < 2; ++h) {
                const std::size_t b = 2 * p + h;
                std::uint8_t* o = ps + (panel * 16 + 8 * h) * 64; // k-groups 8h .. 8h + 7 of the slice
                float* so = reinterpret_cast<float*>(ps + P::u_bytes) + (panel * P::nsb + h) * 16;
                if (b >= n_blocks) { // the zero block after an odd count: u = 0, scale 0
                    for (int j = 0; j < 8; ++j) _mm512_store_si512(o + 64 * j, _mm512_setzero_si512());
                    _mm512_store_ps(so, _mm512_setzero_ps());
                    continue;
                }
                const std::uint8_t* blk = G + b * X.group_block_bytes();
                for (std::size_t o2 = 0; o2 < X.group_block_bytes(); o2 += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(blk) + prefetch_distance + o2, _MM_HINT_T0);
                if constexpr (std::is_same_v<D, dec_q8_0>) {
                    for (int t = 0; t < 8; ++t)
                        _mm512_store_si512(o + 64 * t, _mm512_loadu_si512(blk + quant::x16::scales_bytes + 64 * t));
                } else {
                    for (int t = 0; t < 4; ++t) {
                        const __m512i v = _mm512_loadu_si512(blk + quant::x16::scales_bytes + 64 * t);
                        _mm512_store_si512(o + 64 * t, _mm512_and_si512(v, m4));                             // elements 4t..
                        _mm512_store_si512(o + 64 * (4 + t), _mm512_and_si512(_mm512_srli_epi16(v, 4), m4)); // 16 + 4t..
                    }
                }
                _mm512_store_ps(so, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk))));
            }
        }
    }
}

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

// ---------------------------------------------------------------- decode (1 token)
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
            if constexpr (D::slices == 1) {
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

/// A grow-only 64-byte aligned byte buffer (per thread; no allocation per call once warm).
struct byte_scratch {
    struct free_deleter { void operator()(std::uint8_t* p) const noexcept { std::free(p); } };
    std::unique_ptr<std::uint8_t, free_deleter> p;
    std::size_t cap = 0;
    std::uint8_t* get(std::size_t n) {
        if (n > cap) {
            p.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64)));
            if (!p) throw std::bad_alloc();
            cap = n;
        }
        return p.get();
    }
};

// Decode of the legacy types, Q4_K and Q5_K: gemv_vnni.hpp's 128-element kernel
// (same results as gemv16, which Q6_K still uses).
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
template <class D> inline constexpr int gemv_format = -1;
template <> inline constexpr int gemv_format<dec_q8_0> = int(gemv::format::q8_0);
template <> inline constexpr int gemv_format<dec_q4_0> = int(gemv::format::q4_0);
template <> inline constexpr int gemv_format<dec_q4_1> = int(gemv::format::q4_1);
template <> inline constexpr int gemv_format<dec_q5_0> = int(gemv::format::q5_0);
template <> inline constexpr int gemv_format<dec_q5_1> = int(gemv::format::q5_1);
template <> inline constexpr int gemv_format<dec_q4_K> = int(gemv::format::q4_K);
template <> inline constexpr int gemv_format<dec_q5_K> = int(gemv::format::q5_K);

/// One matrix of a fused single-token GEMV: rows x (shared cols) weights, output y.
struct gemv_part {
    const std::uint8_t* W;
    std::size_t rows;
    float* y;
};

/// Single-token GEMVs of n matrices over the same activations (quantised and laid
/// out by the caller) in one pool dispatch: the 16-row groups of all matrices in
/// order, contiguous ranges per thread. A decode step's q/k/v (or gate/up) then pay
/// one fork-join and one cold start of the weight stream instead of three (two);
/// each output is bitwise what a separate call gives.
template <class D>
inline void gemv_legacy(const gemv_part* parts, std::size_t n, std::size_t row_bytes, std::size_t n_blocks,
                        const std::uint8_t* act, const act_layout& L, thread_pool* pool) {
    const std::size_t n_groups = (2 * L.n_slices + 3) / 4;
    static thread_local byte_scratch split_buf;
    std::uint8_t* xs = split_buf.get(gemv::split_bytes(n_groups));
    constexpr auto F = gemv::format(gemv_format<D>);
    gemv::split<F>(act, L.n_slices * 64, n_groups, xs);
    const auto* dx = reinterpret_cast<const float*>(act + L.dx_off());
    const std::uint8_t* aux = act + L.aux_off();
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += (parts[i].rows + 15) / 16;
    auto dec = [&](std::size_t gb, std::size_t ge) {
        static thread_local byte_scratch part_buf;
        std::uint8_t* part = part_buf.get(gemv::rows16_scratch(2 * L.n_slices));
        std::size_t i = 0, first = 0; // matrix i holds groups [first, first + its groups)
        for (std::size_t g = gb; g < ge; ++g) {
            while (g - first >= (parts[i].rows + 15) / 16) first += (parts[i++].rows + 15) / 16;
            gemv::run16<F>(parts[i].W, row_bytes, parts[i].rows, (g - first) * 16, n_blocks, 2 * L.n_slices, xs, dx,
                           aux, parts[i].y, part);
        }
    };
    if (pool) pool->parallel_for(total, dec); else dec(0, total);
}

/// Whether a single-token product of D with rows of row_bytes runs on gemv_legacy.
template <class D>
inline bool uses_gemv_legacy(std::size_t row_bytes) noexcept {
    if constexpr (!std::is_same_v<D, dec_q8_0>) {
        (void)row_bytes;
        return gemv_format<D> >= 0;
    } else {
        // Q8_0 by CPU. AMD Zen 4 (512-bit operations split in two): rows16 at every
        // width; gemv16's 16 row streams cost more compute than the cores have to
        // spare (2048 x 5632, 1 thread, cache-resident: 44.7 GB/s on rows16 vs 28.1;
        // from DRAM, 2 threads: +8%). Intel Xeon (session 4): rows of 4 KiB and
        // more stay with gemv16, which read them ~10% faster from DRAM (0.94 vs
        // 0.85 of the probe on 2048 x 5632); shorter rows go 15-25% faster through rows16.
        static const bool amd = __builtin_cpu_is("amd");
        return amd || row_bytes < gemv16_min_row_bytes_q8_0;
    }
}

/// gemv_legacy over n matrices of type D, cols wide, one token x; false (nothing
/// done) when D's rows of that width do not run on it.
template <class D>
inline bool gemv_many(const gemv_part* parts, std::size_t n, std::size_t cols, const float* x, thread_pool* pool) {
    if constexpr (gemv_format<D> < 0) {
        (void)parts, (void)n, (void)cols, (void)x, (void)pool;
        return false;
    } else {
        using P = packed_layout<D>;
        const std::size_t n_blocks = cols / (is_k<D> ? 256 : 32), row_bytes = n_blocks * D::bytes;
        if (!uses_gemv_legacy<D>(row_bytes)) return false;
        const act_layout L = make_act_layout((cols + 63) / 64, P::sub);
        static thread_local byte_scratch act_buf;
        std::uint8_t* act = act_buf.get(L.stride);
        quantize_token(x, cols, L, sub_traits<D>::act, P::sub, P::zero, act);
        gemv_legacy<D>(parts, n, row_bytes, n_blocks, act, L, pool);
        return true;
    }
}

/// Single-token products of n Q4_0 or Q8_0 matrices (D) in their x16 layout
/// (rows % 16 == 0), cols wide, over one x: gemv_legacy's dispatch (16-row groups
/// of all matrices in order, contiguous ranges per thread) on gemv::rows16_x16. A
/// group is one contiguous range of memory, read front to back.
template <class D>
inline void gemv_many_x16(const gemv_part* parts, std::size_t n, std::size_t cols, const float* x, thread_pool* pool) {
    using P = packed_layout<D>;
    constexpr auto L = x16_layout_of<D>;
    const std::size_t n_blocks = cols / 32;
    const act_layout AL = make_act_layout((cols + 63) / 64, P::sub);
    static thread_local byte_scratch act_buf;
    std::uint8_t* act = act_buf.get(AL.stride);
    quantize_token(x, cols, AL, sub_traits<D>::act, P::sub, P::zero, act);
    const auto* dx = reinterpret_cast<const float*>(act + AL.dx_off());
    const std::uint8_t* aux = act + AL.aux_off();
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += parts[i].rows / 16;
    auto dec = [&](std::size_t gb, std::size_t ge) {
        std::size_t i = 0, first = 0; // matrix i holds groups [first, first + its groups)
        for (std::size_t g = gb; g < ge; ++g) {
            while (g - first >= parts[i].rows / 16) first += parts[i++].rows / 16;
            const std::size_t k = g - first;
            _mm512_storeu_ps(parts[i].y + 16 * k, gemv::rows16_x16<L>(parts[i].W + k * quant::x16::of(L).group_bytes(n_blocks),
                                                                      n_blocks, act, dx, aux));
        }
    };
    if (pool) pool->parallel_for(total, dec); else dec(0, total);
}
#endif

/// X16: W is in D's x16 layout (D = dec_q4_0 or dec_q8_0).
template <class D, bool X16 = false>
inline void run(const std::uint8_t* W, std::size_t rows, std::size_t cols, const float* x, std::size_t ldx,
                std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    static_assert(!X16 || std::is_same_v<D, dec_q4_0> || std::is_same_v<D, dec_q8_0>);
    using P = packed_layout<D>;
    const std::size_t block = is_k<D> ? 256 : 32;
    const std::size_t n_blocks = cols / block;
    const std::size_t row_bytes = n_blocks * D::bytes;
    const std::size_t n_slices = (cols + 63) / 64;
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
    if (n_tok == 1) { // the single-token kernel (rows16), where it serves this type and width
        const gemv_part part{W, rows, y};
        if constexpr (X16) {
            gemv_many_x16<D>(&part, 1, cols, x, pool);
            return;
        } else if (gemv_many<D>(&part, 1, cols, x, pool)) return;
    }
#endif
    const act_layout L = make_act_layout(n_slices, P::sub);
    static thread_local byte_scratch act_buf;
    std::uint8_t* act = act_buf.get(n_tok * L.stride);
    auto quant = [&](std::size_t b, std::size_t e) {
        for (std::size_t t = b; t < e; ++t) quantize_token(x + t * ldx, cols, L, sub_traits<D>::act, P::sub, P::zero, act + t * L.stride);
    };
    if (pool && n_tok > 1) pool->parallel_for(n_tok, quant); else quant(0, n_tok);
    if (n_tok == 1) {
        const std::size_t groups16 = (rows + 15) / 16;
        auto dec = [&](std::size_t gb, std::size_t ge) {
            for (std::size_t g = gb; g < ge; ++g) gemv16<D>(W, row_bytes, rows, g * 16, n_blocks, n_slices, act, L, y);
        };
        if (pool) pool->parallel_for(groups16, dec); else dec(0, groups16);
        return;
    }
    const std::size_t groups = (rows + group_rows - 1) / group_rows;
    auto work = [&](std::size_t gb, std::size_t ge) {
        static thread_local byte_scratch tmp_buf, pk_buf;
        std::uint8_t* tmp = tmp_buf.get(group_rows * n_slices * 64);
        std::uint8_t* pk = pk_buf.get(n_slices * P::slice_bytes);
        for (std::size_t g = gb; g < ge; ++g) {
            const std::size_t r0 = g * group_rows, nr = std::min(group_rows, rows - r0);
            if constexpr (X16) pack_group_x16<D>(W, rows, r0, n_blocks, n_slices, pk);
            else pack_group<D>(W, row_bytes, rows, r0, n_blocks, n_slices, tmp, pk);
            const std::uint8_t* a[tile_toks];
            std::size_t t = 0;
            for (; t + tile_toks <= n_tok; t += tile_toks) {
                for (int i = 0; i < tile_toks; ++i) a[i] = act + (t + std::size_t(i)) * L.stride;
                tile<D, tile_toks>(pk, n_slices, a, L, y + t * ldy + r0, ldy, nr);
            }
            if (t < n_tok) {
                const int n = int(n_tok - t);
                for (int i = 0; i < n; ++i) a[i] = act + (t + std::size_t(i)) * L.stride;
                tokens_tail<D, tile_toks - 1>(pk, n_slices, a, L, y + t * ldy + r0, ldy, nr, n);
            }
        }
    };
    if (pool) pool->parallel_for(groups, work); else work(0, groups);
}

} // namespace detail

#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
/// Single-token products of n matrices of one block type and width `cols` over the
/// same x, in one dispatch (detail::gemv_legacy); false (nothing done) when this type
/// and width have no fused kernel. Each y is bitwise what matmul gives.
inline bool gemv_many(ggml_type type, const detail::gemv_part* parts, std::size_t n, std::size_t cols, const float* x,
                      thread_pool* pool) {
    switch (type) {
    case ggml_type::Q8_0: return detail::gemv_many<detail::dec_q8_0>(parts, n, cols, x, pool);
    case ggml_type::Q4_0: return detail::gemv_many<detail::dec_q4_0>(parts, n, cols, x, pool);
    case ggml_type::Q4_1: return detail::gemv_many<detail::dec_q4_1>(parts, n, cols, x, pool);
    case ggml_type::Q5_0: return detail::gemv_many<detail::dec_q5_0>(parts, n, cols, x, pool);
    case ggml_type::Q5_1: return detail::gemv_many<detail::dec_q5_1>(parts, n, cols, x, pool);
    case ggml_type::Q4_K: return detail::gemv_many<detail::dec_q4_K>(parts, n, cols, x, pool);
    case ggml_type::Q5_K: return detail::gemv_many<detail::dec_q5_K>(parts, n, cols, x, pool);
    default: return false;
    }
}
#endif

#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
/// The x16 layouts' fused single-token products (detail::gemv_many_x16) of n
/// matrices in layout L.
inline void gemv_many_x16(weight_layout L, const detail::gemv_part* parts, std::size_t n, std::size_t cols,
                          const float* x, thread_pool* pool) {
    if (L == weight_layout::q8_0_x16) detail::gemv_many_x16<detail::dec_q8_0>(parts, n, cols, x, pool);
    else detail::gemv_many_x16<detail::dec_q4_0>(parts, n, cols, x, pool);
}
/// Quantised matmul of a matrix in an x16 layout L (Q4_0 or Q8_0, rows % 16 == 0):
/// bitwise what matmul gives on the row layout, for any n_tok.
inline void matmul_x16(weight_layout L, const void* W, std::size_t rows, std::size_t cols, const float* x,
                       std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto* w = static_cast<const std::uint8_t*>(W);
    if (L == weight_layout::q8_0_x16) detail::run<detail::dec_q8_0, true>(w, rows, cols, x, ldx, n_tok, y, ldy, pool);
    else detail::run<detail::dec_q4_0, true>(w, rows, cols, x, ldx, n_tok, y, ldy, pool);
}
#endif

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
