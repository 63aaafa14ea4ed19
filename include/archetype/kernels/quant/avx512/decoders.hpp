#pragma once
// The AVX-512 block decoders: every weight type decoded 64 elements at a time into
// unsigned bytes u, per-lane scales s and offsets m with weight = s * u - m
// (engine.hpp states the whole scheme). One struct per type; the engine, the
// packing and the single-token kernels share them.
#include "archetype/kernels/quant/avx512/level.hpp"
#if defined(ARCHETYPE_QUANT_VNNI)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/blocks.hpp"

namespace archetype::quant::vnni::detail {

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
    static constexpr bool f16_scales = true; // each block's scale is the fp16 at its byte 0 (gemv16 reads them so)
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
    static constexpr bool f16_scales = false;
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

// Q2_K and Q3_K: 16-element sub-blocks like Q6_K. Slice c is half h = c / 2 of the
// 2-bit quants, shifts 4 * (c % 2) (its first 32 elements) and 4 * (c % 2) + 2 (the next).
inline __m512i k_low2(const std::uint8_t* qs, int c) noexcept {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (c / 2)));
    const int sh = 4 * (c % 2);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(q, sh)),
                                            _mm256_srli_epi16(q, sh + 2), 1);
    return _mm512_and_si512(both, _mm512_set1_epi8(3));
}
inline __m512i quad_index(int c) noexcept { // lane i takes sub-block 4c + i / 4
    return _mm512_add_epi32(_mm512_set1_epi32(4 * c),
                            _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0));
}
struct dec_q2_K {
    static constexpr int slices = 4;
    static constexpr bool f16_scales = false;
    static constexpr std::size_t bytes = 84;
    struct state { const std::uint8_t* b; __m512 sm, mm; }; // d * scale_k, dmin * min_k
    static state prepare(const std::uint8_t* row, std::size_t unit, std::size_t) noexcept {
        const std::uint8_t* b = row + unit * bytes;
        const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
        const __m128i m4 = _mm_set1_epi8(0x0F);
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(sc, m4)));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(sc, 4), m4)));
        return {b, _mm512_mul_ps(lo, _mm512_set1_ps(load_f16(b + 80))), _mm512_mul_ps(hi, _mm512_set1_ps(load_f16(b + 82)))};
    }
    static void slice(const state& st, int c, __m512i& u, __m512& s, __m512& m) noexcept {
        u = k_low2(st.b + 16, c);
        s = _mm512_permutexvar_ps(quad_index(c), st.sm);
        m = _mm512_permutexvar_ps(quad_index(c), st.mm);
    }
};
struct dec_q3_K : k_base {
    static constexpr std::size_t bytes = 110;
    // sm holds the 16 signed sub-block scales (scale - 32) times d; u = q + 4.
    static state prepare(const std::uint8_t* row, std::size_t unit, std::size_t) noexcept {
        const std::uint8_t* b = row + unit * bytes;
        alignas(16) std::uint8_t raw[16];
        q3_K_scales(b + 96, raw);
        const __m512i sc = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(raw))),
                                            _mm512_set1_epi32(32));
        return {b, _mm512_mul_ps(_mm512_cvtepi32_ps(sc), _mm512_set1_ps(load_f16(b + 108)))};
    }
    static void slice(const state& st, int c, __m512i& u, __m512& s, __m512& m) noexcept {
        const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st.b));
        const int bit = 4 * (c / 2) + 2 * (c % 2); // hmask bit of the slice's first 32 elements
        const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(hm, bit)),
                                              _mm256_srli_epi16(hm, bit + 1), 1);
        u = _mm512_or_si512(k_low2(st.b + 32, c), _mm512_slli_epi16(_mm512_and_si512(hb, _mm512_set1_epi8(1)), 2));
        s = _mm512_permutexvar_ps(quad_index(c), st.sm);
        m = _mm512_mul_ps(s, _mm512_set1_ps(4.f));
    }
};

// The non-linear types: u = the code's table value + 128 (vpshufb on the nibbles),
// zero point 128, as Q8_0's u = q ^ 0x80.
inline __m512i code_table(const std::int8_t* t) noexcept { // t + 128 in all four 128-bit lanes
    const __m128i v = _mm_add_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(t)), _mm_set1_epi8(char(0x80)));
    return _mm512_broadcast_i32x4(v);
}
struct dec_iq4_nl : legacy_base<dec_iq4_nl> {
    static constexpr std::size_t bytes = 18;
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        u = _mm512_shuffle_epi8(code_table(ggml_tables::kvalues_iq4nl), nibbles2_adj<18>(b0 + 2, b1 + 2));
        s = two_scales(b0, b1);
        m = _mm512_mul_ps(s, _mm512_set1_ps(128.f));
    }
};
struct dec_mxfp4 : legacy_base<dec_mxfp4> {
    static constexpr std::size_t bytes = 17;
    static constexpr bool f16_scales = false; // E8M0
    static void decode(const std::uint8_t* b0, const std::uint8_t* b1, __m512i& u, __m512& s, __m512& m) noexcept {
        u = _mm512_shuffle_epi8(code_table(ggml_tables::kvalues_mxfp4), nibbles2_adj<17>(b0 + 1, b1 + 1));
        // the zero block after an odd count has e = 0: a scale of 2^-128 times u = 128 - 128
        s = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(e8m0_to_fp32_half(b0[0])),
                                 _mm512_set1_ps(e8m0_to_fp32_half(b1[0])));
        m = _mm512_mul_ps(s, _mm512_set1_ps(128.f));
    }
};
struct dec_iq4_xs : k_base {
    static constexpr std::size_t bytes = 136;
    // sm lanes 0-7: the 8 signed sub-block scales (ls - 32) times d
    static state prepare(const std::uint8_t* row, std::size_t unit, std::size_t) noexcept {
        const std::uint8_t* b = row + unit * bytes;
        alignas(64) float sc[16] = {};
        const float d = load_f16(b);
        for (std::size_t i = 0; i < 8; ++i) sc[i] = d * float(int(iq4_xs_scale(b, i)) - 32);
        return {b, _mm512_load_ps(sc)};
    }
    static void slice(const state& st, int c, __m512i& u, __m512& s, __m512& m) noexcept {
        const std::uint8_t* qs = st.b + 8 + 32 * c; // sub-blocks 2c and 2c + 1
        u = _mm512_shuffle_epi8(code_table(ggml_tables::kvalues_iq4nl), nibbles2(qs, qs + 16));
        s = _mm512_permutexvar_ps(pair_index(2 * c), st.sm);
        m = _mm512_mul_ps(s, _mm512_set1_ps(128.f));
    }
};

template <class D>
inline constexpr bool is_k = D::slices == 4;

} // namespace archetype::quant::vnni::detail

#endif
