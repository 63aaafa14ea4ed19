#pragma once
// Single-token quantised GEMV (decode) for Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, Q4_K,
// Q5_K, IQ4_XS and Q8_0 rows under 4 KiB (q8_group_dot) on AVX-512 VNNI + VBMI + GFNI:
// y[r] = sum_k W[r][k] * x[k] with x already
// quantised to int8 (per 32-block scale dx, per block auxiliary word;
// activations.hpp's act_layout).
//
// Why a separate kernel from the batch engine: one token reads every weight byte
// once, so the decode cost per byte is all that matters. A row is consumed 128
// elements (four 32-element blocks) at a time (legacy types; K types below):
//   * one or two plain loads and one vpermt2b gather the four blocks' quants
//     (skipping the interleaved F16 scales) into one register, in stored order:
//     byte 16j + i of it is byte i of block j's quants;
//   * the activations are re-laid out once per call to match: per 128-element
//     group, `lo` holds elements 0-15 of each block and `hi` elements 16-31
//     (the low and high nibbles of a byte), so the nibbles need no per-row
//     shuffle, just an and and one GF(2) affine (the code-table types, IQ4_NL
//     and MXFP4, then look the nibbles up: one vpshufb each, u = value + 128);
//   * two vpdpbusd, started at a precomputed per-lane -zero * sum(xq), leave
//     128-bit lane j = four partial sums of block j (zero point included);
//   * 16 rows are then reduced and transposed into lanes = rows, through int16
//     (vpackssdw + vpmaddwd) where the sums provably fit.
// Rows are read a few at a time front to back (a few sequential streams, which
// the prefetchers follow); each group's partials and scale records wait in a
// small scratch until the 16 rows are done. The float work per block and output
// is then the batch engine's exactly:
//     acc = fma(float(idot), s * dx, acc)          (idot includes -z * sum(xq))
//     acc = fnmadd(-min, aux, acc)                  (min types, after the first step)
// with idot an exact integer and the blocks taken in order, so a token gives
// bitwise the same output here as inside a batch (tests/quant asserts it).
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__AVX512BITALG__) && defined(__GFNI__) && defined(__F16C__)
#define ARCHETYPE_QUANT_GEMV_VNNI 1

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "archetype/kernels/quant/ggml_tables.hpp"
#include "archetype/kernels/quant/interleaved.hpp"
#include "archetype/kernels/quant/avx512/lanes.hpp"

namespace archetype::quant::vnni::gemv {

/// q2_K and q3_K: gemv_k16.hpp's kernel (16-element sub-blocks).
enum class format { q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4, q4_K, q5_K, iq4_xs, q2_K, q3_K };

/// Block geometry: bytes per 32-block, offset of the quants, of the 32 high bits
/// (5-bit types; -1 none), zero point z (w = s * (u - z); 0: a min follows the
/// scale at byte 2 instead), and `packs`: how many of the two pairwise steps of the
/// per-block reduction stay within int16 (|x| <= 127), which then run as
/// vpackssdw + vpmaddwd instead of two shuffles and an add.
template <format F> struct geometry;
// Q8_0: signed quants read as unsigned u = q ^ 0x80, so w = u - 128 (zero point 128);
// |u - 128| * 127 * 8 per dword lane does not fit int16: no packs.
template <> struct geometry<format::q8_0> { static constexpr int bytes = 34, qs = 2, qh = -1, zero = 128, packs = 0; };
template <> struct geometry<format::q4_0> { static constexpr int bytes = 18, qs = 2, qh = -1, zero = 8, packs = 2; };   // |u - 8| <= 8: 32 * 8 * 127 < 2^15
template <> struct geometry<format::q4_1> { static constexpr int bytes = 20, qs = 4, qh = -1, zero = 0, packs = 1; };   // 16 * 15 * 127
template <> struct geometry<format::q5_0> { static constexpr int bytes = 22, qs = 6, qh = 2, zero = 16, packs = 1; };   // 16 * 16 * 127
template <> struct geometry<format::q5_1> { static constexpr int bytes = 24, qs = 8, qh = 4, zero = 0, packs = 0; };
// The code-table types: the nibble is an index into 16 int8 values v (code_table),
// read as u = v + 128 (zero point 128, as Q8_0). IQ4_NL: |v| <= 127, 8 * 127 * 127
// per dword lane does not fit int16. MXFP4 (an E8M0 scale byte, then the nibbles):
// |v| <= 12, the int16 steps hold sums of 8 and 16 products, 16 * 12 * 127 < 2^15.
template <> struct geometry<format::iq4_nl> { static constexpr int bytes = 18, qs = 2, qh = -1, zero = 128, packs = 0; };
template <> struct geometry<format::mxfp4> { static constexpr int bytes = 17, qs = 1, qh = -1, zero = 128, packs = 2; };

/// The 16 values of a code-table type's nibbles (nullptr: the nibble is the quant).
template <format F> inline constexpr const std::int8_t* code_table = nullptr;
template <> inline constexpr const std::int8_t* code_table<format::iq4_nl> = ggml_tables::kvalues_iq4nl;
template <> inline constexpr const std::int8_t* code_table<format::mxfp4> = ggml_tables::kvalues_mxfp4;
template <> inline constexpr const std::int8_t* code_table<format::iq4_xs> = ggml_tables::kvalues_iq4nl;
// Whether F has a code table: a plain bool for `if constexpr` (g++ 12 with -fsanitize=undefined,
// the ASan stage, does not take code_table<F> != nullptr as a constant expression).
template <format F>
inline constexpr bool has_code_table = F == format::iq4_nl || F == format::mxfp4 || F == format::iq4_xs;

// Rows read side by side in the first pass (legacy types; 2, 4, 8 and 16 measured
// alike from DRAM under load, 16 costs registers).
inline constexpr std::size_t rows_in_flight = 4;
// Distance of the linear L2 prefetch cursor of the legacy types' rows (bytes).
inline constexpr std::size_t linear_ahead = 32768;
// Bytes the cursor advances per group during the second pass (fold16): measured +2-5%
// on Q4_0 / Q8_0 from DRAM over 0 (128 > 256 > 512, which was slower than 0).
inline constexpr std::size_t fold_ahead = 128;

/// Bytes of the re-laid-out activations for n_groups groups.
inline constexpr std::size_t split_bytes(std::size_t n_groups) noexcept { return n_groups * 192; }

/// Re-lays the int8 quants q (n_valid bytes, multiple of 64; zero beyond) into
/// per group [lo | hi | init]: lo = elements 0-15 of each of the four blocks,
/// hi = 16-31, init = per dword lane -zero * (the 8 quants lo and hi put in that
/// lane): the zero point folded into vpdpbusd's start value (its lanes add up to
/// the block's -zero * sum(xq), the act_layout aux word, exactly).
inline void split_halves(const std::uint8_t* q, std::size_t n_valid, std::size_t n_groups, int zero,
                         std::uint8_t* out) noexcept {
    const __m512i ones = _mm512_set1_epi8(1);
    for (std::size_t g = 0; g < n_groups; ++g) {
        const std::size_t o = g * 128;
        const __m512i a = o < n_valid ? _mm512_loadu_si512(q + o) : _mm512_setzero_si512();
        const __m512i b = o + 64 < n_valid ? _mm512_loadu_si512(q + o + 64) : _mm512_setzero_si512();
        const __m512i lo = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i hi = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        const __m512i sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, lo), ones, hi);
        _mm512_store_si512(out + g * 192, lo);
        _mm512_store_si512(out + g * 192 + 64, hi);
        _mm512_store_si512(out + g * 192 + 128, _mm512_mullo_epi32(sum, _mm512_set1_epi32(-zero)));
    }
}

/// Q8_0: per group [elements 0-63 | 64-127 | unused] (plain order, zero beyond n_valid).
inline void split_plain(const std::uint8_t* q, std::size_t n_valid, std::size_t n_groups, std::uint8_t* out) noexcept {
    for (std::size_t g = 0; g < n_groups; ++g) {
        const std::size_t o = g * 128;
        _mm512_store_si512(out + g * 192, o < n_valid ? _mm512_loadu_si512(q + o) : _mm512_setzero_si512());
        _mm512_store_si512(out + g * 192 + 64, o + 64 < n_valid ? _mm512_loadu_si512(q + o + 64) : _mm512_setzero_si512());
    }
}

namespace detail {

/// vpermt2b index: output byte k takes group byte src(k) from two 64-byte loads at o0 and o1.
template <class Src>
constexpr std::array<std::uint8_t, 64> gather_index(Src src, int o0, int o1) {
    std::array<std::uint8_t, 64> idx{};
    for (int k = 0; k < 64; ++k) {
        const int s = src(k);
        idx[std::size_t(k)] = static_cast<std::uint8_t>(s < o0 + 64 ? s - o0 : s - o1 + 64);
    }
    return idx;
}

template <format F> struct layout {
    using G = geometry<F>;
    static constexpr int group_bytes = 4 * G::bytes;
    // 4-bit types: the four blocks' 16 quant bytes; loads at 0 and group_bytes - 64 (in bounds).
    static constexpr int o1 = group_bytes - 64;
    alignas(64) static constexpr std::array<std::uint8_t, 64> quants =
        gather_index([](int k) { return (k / 16) * G::bytes + G::qs + k % 16; }, 0, o1);
    // 5-bit types: qword lanes 2j and 2j + 1 = the high bits of block j (twice in each qword).
    alignas(64) static constexpr std::array<std::uint8_t, 64> high =
        gather_index([](int k) { return (k / 16) * G::bytes + (G::qh < 0 ? 0 : G::qh) + k % 4; }, 0, o1);
    // Scales (and mins): per row and group a record of K bytes, F16 word f = scale of
    // block f (f < 4) or min of block f - 4, stored in the first pass; the second
    // pass transposes 16 records to lanes = rows with vpermt2b.
    static constexpr bool min = G::zero == 0;
    static constexpr int K = min ? 16 : 8;
    static constexpr int field(int f) { return f < 4 ? G::bytes * f : G::bytes * (f - 4) + 2; }
    // Whether every field lies in the first 64 bytes of the group (else a per-row gather first).
    static constexpr bool direct = field(min ? 7 : 3) + 2 <= 64;
    // the record in bytes 0..K-1, from the row's first load (direct) or both
    alignas(64) static constexpr std::array<std::uint8_t, 64> rec0 =
        gather_index([](int k) { return field((k % K) / 2) + k % 2; }, 0, o1);
    // min types: eight rows' scale words (8 bytes each) from two vectors of four
    // records; `off` 8 picks the mins.
    static constexpr std::array<std::uint8_t, 64> lvl3(int off) {
        std::array<std::uint8_t, 64> a{};
        for (int k = 0; k < 64; ++k) {
            const int rec = k / 8;
            a[std::size_t(k)] = static_cast<std::uint8_t>((rec < 4 ? 0 : 64) + (rec % 4) * K + off + k % 8);
        }
        return a;
    }
    alignas(64) static constexpr std::array<std::uint8_t, 64> lvl3s = lvl3(0), lvl3m = lvl3(8);
    // final: blocks 2t, 2t + 1 of 16 rows (32 bytes each) from two 8-row vectors
    static constexpr std::array<std::uint8_t, 64> fin(int t) {
        std::array<std::uint8_t, 64> a{};
        for (int k = 0; k < 64; ++k) {
            const int j = 2 * t + k / 32, r = (k % 32) / 2;
            a[std::size_t(k)] = static_cast<std::uint8_t>((r < 8 ? 0 : 64) + (r % 8) * 8 + 2 * j + k % 2);
        }
        return a;
    }
    alignas(64) static constexpr std::array<std::uint8_t, 64> fin0 = fin(0), fin1 = fin(1);
};

/// Bit selectors for vpshufbitqmb: byte 16j + i picks bit i (lo) or 16 + i (hi) of its qword.
alignas(64) inline constexpr std::array<std::uint8_t, 64> bit_lo = [] {
    std::array<std::uint8_t, 64> a{};
    for (int k = 0; k < 64; ++k) a[std::size_t(k)] = static_cast<std::uint8_t>(k % 16);
    return a;
}();
alignas(64) inline constexpr std::array<std::uint8_t, 64> bit_hi = [] {
    std::array<std::uint8_t, 64> a{};
    for (int k = 0; k < 64; ++k) a[std::size_t(k)] = static_cast<std::uint8_t>(16 + k % 16);
    return a;
}();

inline __m512i load_idx(const std::array<std::uint8_t, 64>& a) noexcept { return _mm512_load_si512(a.data()); }
inline __m512i perm2(__m512i a, const std::array<std::uint8_t, 64>& idx, __m512i b) noexcept {
    return _mm512_permutex2var_epi8(a, load_idx(idx), b);
}

/// A code table as u = value + 128, in all four 128-bit lanes (vpshufb's operand).
inline __m512i table_u(const std::int8_t* values) noexcept {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values));
    return _mm512_broadcast_i32x4(_mm_add_epi8(v, _mm_set1_epi8(static_cast<char>(0x80))));
}

/// 16 MXFP4 scales (the E8M0 bytes, in the low byte of 16-bit words) as blocks.hpp's
/// e8m0_to_fp32_half makes them: 2^(e - 128), the subnormals 2^-128 and 2^-127 for e < 2.
inline __m512 e8m0_half16(__m256i words) noexcept {
    const __m512i e = _mm512_and_si512(_mm512_cvtepu16_epi32(words), _mm512_set1_epi32(0xFF));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, sub));
}

/// One row's group: d = 128-bit lane j holds the four partial sums of block j;
/// rec = the row's scale record in bytes 0..K-1.
struct row_part { __m512i d, rec; };

/// 64 bytes at p + o; Tail: only the bytes below `valid` (the rest zero, never read:
/// masked loads do not fault), so a row's last, partial group needs no copy.
template <bool Tail>
inline __m512i load64(const std::uint8_t* p, int o, int valid) noexcept {
    if constexpr (Tail) {
        const int v = std::clamp(valid - o, 0, 64);
        return _mm512_maskz_loadu_epi8(v == 64 ? ~__mmask64(0) : (__mmask64(1) << v) - 1, p + o);
    } else {
        (void)valid;
        return _mm512_loadu_si512(p + o);
    }
}

template <format F, bool Tail = false>
inline row_part group_dot(const std::uint8_t* p, __m512i xlo, __m512i xhi, __m512i init, int valid = 0) noexcept {
    using Lt = layout<F>;
    {
        const __m512i z0 = load64<Tail>(p, 0, valid), z1 = load64<Tail>(p, Lt::o1, valid);
        const __m512i v = perm2(z0, Lt::quants, z1);
        const __m512i m4 = _mm512_set1_epi8(0x0F);
        // high nibbles by one GF(2) affine map (bit i <- bit i + 4) instead of shift + and
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(0x1020408000000000ll), 0);
        if constexpr (has_code_table<F>) {
            const __m512i t = table_u(code_table<F>);
            lo = _mm512_shuffle_epi8(t, lo);
            hi = _mm512_shuffle_epi8(t, hi);
        }
        if constexpr (geometry<F>::qh >= 0) {
            const __m512i h = perm2(z0, Lt::high, z1);
            const __m512i sixteen = _mm512_set1_epi8(16);
            lo = _mm512_mask_add_epi8(lo, _mm512_bitshuffle_epi64_mask(h, load_idx(bit_lo)), lo, sixteen);
            hi = _mm512_mask_add_epi8(hi, _mm512_bitshuffle_epi64_mask(h, load_idx(bit_hi)), hi, sixteen);
        }
        const __m512i d = _mm512_dpbusd_epi32(init, lo, xlo);
        if constexpr (Lt::direct) return {_mm512_dpbusd_epi32(d, hi, xhi), _mm512_permutexvar_epi8(load_idx(Lt::rec0), z0)};
        else return {_mm512_dpbusd_epi32(d, hi, xhi), perm2(z0, Lt::rec0, z1)};
    }
}

/// Q8_0, one row's group (four 34-byte blocks): 128-bit lane j = four partial sums
/// of block j, without the zero point (fold16 adds -128 * sum(xq) per block, the
/// act_layout aux word). The quants are already in element order, so the activations
/// stay in plain order (x0 = elements 0-63, x1 = 64-127) and two 32-byte loads per
/// register replace the byte gathers of the 4-bit types (vpermt2b costs two cycles on
/// port 5, which the 4-bit kernel saturates; Q8_0 has twice the bytes per element).
/// Tail: only the first `valid` bytes exist (whole blocks); the rest read as zero.
template <bool Tail>
inline __m512i q8_group_dot(const std::uint8_t* p, __m512i x0, __m512i x1, int valid) noexcept {
    auto l32 = [&](int o) {
        if constexpr (Tail) {
            const int v = std::clamp(valid - o, 0, 32);
            return _mm256_maskz_loadu_epi8(v == 32 ? ~__mmask32(0) : (__mmask32(1) << v) - 1, p + o);
        } else {
            (void)valid;
            return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + o));
        }
    };
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80)); // u = q + 128
    const __m512i a = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(l32(2)), l32(36), 1), flip);
    const __m512i b = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(l32(70)), l32(104), 1), flip);
    const __m512i da = _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, x0);
    const __m512i db = _mm512_dpbusd_epi32(_mm512_setzero_si512(), b, x1);
    // lanes of da: block 0, 0, 1, 1; of db: 2, 2, 3, 3
    return _mm512_add_epi32(_mm512_shuffle_i64x2(da, db, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i64x2(da, db, _MM_SHUFFLE(3, 1, 3, 1)));
}

/// Q8_0: the four F16 scales of a group into a row's 8-byte record (plain 16-bit
/// copies: no vector port); missing blocks of a tail group get scale 0.
template <bool Tail>
inline void q8_record(const std::uint8_t* p, std::uint8_t* rec, int valid) noexcept {
    for (int j = 0; j < 4; ++j) {
        if (!Tail || 34 * j < valid) std::memcpy(rec + 2 * j, p + 34 * j, 2);
        else std::memset(rec + 2 * j, 0, 2);
    }
}

/// The reduction of 16 rows' lane partials (128-bit lane j of row r: block j) to
/// out[j] lane r = the block's sum, in two steps. Packs: how many pairwise steps
/// may go through int16 (geometry::packs).
/// Step 1, rows a and b: per 128-bit lane, Packs >= 1: [a a b b] (partial sums), else [a b a b].
template <int Packs>
inline __m512i reduce_pair(__m512i a, __m512i b) noexcept {
    if constexpr (Packs >= 1) return _mm512_madd_epi16(_mm512_packs_epi32(a, b), _mm512_set1_epi16(1));
    else return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
/// Step 2: c[i] = reduce_pair(row 2i, row 2i + 1).
template <int Packs>
inline void reduce_transpose16(const __m512i c[8], __m512i out[4]) noexcept {
    const __m512i ones = _mm512_set1_epi16(1);
    __m512i e[4];
    for (int g = 0; g < 4; ++g) {
        const __m512i a = c[2 * g], b = c[2 * g + 1];
        if constexpr (Packs >= 2) {
            e[g] = _mm512_madd_epi16(_mm512_packs_epi32(a, b), ones);
        } else if constexpr (Packs == 1) {
            const __m512 fa = _mm512_castsi512_ps(a), fb = _mm512_castsi512_ps(b);
            e[g] = _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(fa, fb, _MM_SHUFFLE(2, 0, 2, 0))),
                                    _mm512_castps_si512(_mm512_shuffle_ps(fa, fb, _MM_SHUFFLE(3, 1, 3, 1))));
        } else {
            e[g] = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
        }
    }
    // e[g] 128-bit lane L, dword q = row 4g + q: a 4x4 transpose of 128-bit lanes
    lanes512::transpose_lanes4(e, out);
}

/// Second pass for one group: the 8 row pairs' partials D (8 x 64 bytes, reduce_pair)
/// and records S (16 x K bytes) folded into acc for n_fold (<= 4) sub-blocks from sb.
template <format F>
inline __m512 fold16(const std::uint8_t* D, const std::uint8_t* S, const float* dx, const std::uint8_t* aux,
                     std::size_t sb, std::size_t n_fold, __m512 acc) noexcept {
    using G = geometry<F>;
    using Lt = layout<F>;
    __m512i c[8];
    for (int i = 0; i < 8; ++i) c[i] = _mm512_load_si512(D + 64 * i);
    __m512i is[4];
    reduce_transpose16<G::packs>(c, is);
    __m512i sc[2], mn[2];
    if constexpr (Lt::min) {
        __m512i q[4];
        for (int i = 0; i < 4; ++i) q[i] = _mm512_load_si512(S + 64 * i);
        const __m512i s0 = perm2(q[0], Lt::lvl3s, q[1]), s1 = perm2(q[2], Lt::lvl3s, q[3]);
        const __m512i m0 = perm2(q[0], Lt::lvl3m, q[1]), m1 = perm2(q[2], Lt::lvl3m, q[3]);
        sc[0] = perm2(s0, Lt::fin0, s1);
        sc[1] = perm2(s0, Lt::fin1, s1);
        mn[0] = perm2(m0, Lt::fin0, m1);
        mn[1] = perm2(m0, Lt::fin1, m1);
    } else {
        const __m512i s0 = _mm512_load_si512(S), s1 = _mm512_load_si512(S + 64);
        sc[0] = perm2(s0, Lt::fin0, s1);
        sc[1] = perm2(s0, Lt::fin1, s1);
    }
    // the scale (or min) words of sub-block j of 16 rows as floats; MXFP4: the low
    // byte of the word (the rest is its first quant byte) is the E8M0 scale
    auto half = [](__m512i v, std::size_t j) {
        const __m256i w = j % 2 ? _mm512_extracti64x4_epi64(v, 1) : _mm512_castsi512_si256(v);
        if constexpr (F == format::mxfp4) return e8m0_half16(w);
        else return _mm512_cvtph_ps(w);
    };
    for (std::size_t j = 0; j < n_fold; ++j) {
        const __m512 s = half(sc[j / 2], j);
        if constexpr (F == format::q8_0) { // the zero point: -128 * sum(xq) of the block
            std::int32_t z;
            std::memcpy(&z, aux + 4 * (sb + j), 4);
            is[j] = _mm512_add_epi32(is[j], _mm512_set1_epi32(z));
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[j]), _mm512_mul_ps(s, _mm512_set1_ps(dx[sb + j])), acc);
        if constexpr (Lt::min) {
            const __m512 m = _mm512_sub_ps(_mm512_setzero_ps(), half(mn[j / 2], j));
            float a;
            std::memcpy(&a, aux + 4 * (sb + j), 4);
            acc = _mm512_fnmadd_ps(m, _mm512_set1_ps(a), acc);
        }
    }
    return acc;
}

} // namespace detail

/// Scratch bytes rows16 needs for a row of n_blocks blocks.
inline constexpr std::size_t rows16_scratch(std::size_t n_blocks) noexcept { return (n_blocks + 3) / 4 * 16 * (32 + 16); }

/// y[r] for rows [r0, r0 + 16) clipped to rows. n_blocks per row; n_sub = the
/// number of 32-blocks the activations hold (n_blocks rounded up to even: the
/// batch engine folds a zero block after an odd count, and so do we, for
/// identical results). xs from split_halves; dx, aux per 32-block; scratch
/// (64-byte aligned) of rows16_scratch(n_blocks) bytes.
///
/// Two passes: the first reads the 16 rows four at a time, front to back (four
/// sequential streams, prefetched; 16 interleaved row streams without the
/// scratch were slower from DRAM), and keeps per group each row pair's 64-byte
/// lane partials and the scale records in scratch (L1/L2); the second reduces
/// and folds them group by group in lanes = rows.
template <format F>
inline void rows16(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0, std::size_t n_blocks,
                   std::size_t n_sub, const std::uint8_t* xs, const float* dx, const std::uint8_t* aux, float* y,
                   std::uint8_t* scratch) noexcept {
    using Lt = detail::layout<F>;
    constexpr std::size_t bb = geometry<F>::bytes, gb = 4 * bb, K = Lt::K;
    const std::size_t full = n_blocks / 4, n_groups = (n_sub + 3) / 4;
    std::uint8_t* D = scratch;                     // [group][row pair] 64 bytes
    std::uint8_t* S = scratch + n_groups * 8 * 64; // [group][row] K bytes
    auto store_rec = [&](std::uint8_t* o, __m512i rec) {
        if constexpr (K == 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(o), _mm512_castsi512_si128(rec));
        else _mm_store_si128(reinterpret_cast<__m128i*>(o), _mm512_castsi512_si128(rec));
    };
    // rows in flight (row pairs i .. i + R / 2), for memory-level parallelism
    constexpr std::size_t R = rows_in_flight;
    const char* pf = reinterpret_cast<const char*>(W + r0 * row_bytes) + linear_ahead;
    for (std::size_t i = 0; i < 8; i += R / 2) {
        const std::uint8_t* rr[R];
        for (std::size_t k = 0; k < R; ++k) rr[k] = W + std::min(r0 + 2 * i + k, rows - 1) * row_bytes;
        auto four = [&](auto tail, const std::uint8_t* const p[R], std::size_t g, int valid) {
            const std::uint8_t* x = xs + g * 192;
            const __m512i xlo = _mm512_load_si512(x), xhi = _mm512_load_si512(x + 64);
            const __m512i init = Lt::min || F == format::q8_0 ? _mm512_setzero_si512() : _mm512_load_si512(x + 128);
            constexpr bool T = decltype(tail)::value;
            detail::row_part part[R];
            for (std::size_t k = 0; k < R; ++k) {
                if constexpr (F == format::q8_0) {
                    part[k].d = detail::q8_group_dot<T>(p[k], xlo, xhi, valid);
                    detail::q8_record<T>(p[k], S + (g * 16 + 2 * i + k) * K, valid);
                } else {
                    part[k] = detail::group_dot<F, T>(p[k], xlo, xhi, init, valid);
                    store_rec(S + (g * 16 + 2 * i + k) * K, part[k].rec);
                }
            }
            for (std::size_t k = 0; k < R / 2; ++k)
                _mm512_store_si512(D + (g * 8 + i + k) * 64,
                                   detail::reduce_pair<geometry<F>::packs>(part[2 * k].d, part[2 * k + 1].d));
        };
        for (std::size_t g = 0; g < full; ++g) {
            const std::uint8_t* p[R];
            for (std::size_t k = 0; k < R; ++k) p[k] = rr[k] + g * gb;
            // One linear cursor over the group's rows (contiguous in memory, and
            // followed by the next group this thread takes), linear_ahead bytes
            // ahead into L2, advancing by the bytes this step consumes.
            for (std::size_t o = 0; o < R * gb; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
            pf += R * gb;
            four(std::false_type{}, p, g, 0);
        }
        if (full < n_groups) {
            // The last blocks (fewer than four): masked loads, no read past the row, and
            // zero bytes (zero scales) for the missing blocks. (A copy into a zeroed
            // buffer cost ~15% on 576-wide rows: the wide loads right after the narrow
            // copy stores cannot be forwarded.)
            const std::uint8_t* p[R];
            for (std::size_t k = 0; k < R; ++k) p[k] = rr[k] + full * gb;
            four(std::true_type{}, p, full, int((n_blocks - 4 * full) * bb));
        }
    }
    __m512 acc = _mm512_setzero_ps();
    for (std::size_t g = 0; g < n_groups; ++g) {
        // The fold reads no weights: keep the DRAM stream moving meanwhile with the
        // cursor's next lines (the next call's first steps then find them in L2).
        for (std::size_t o = 0; o < fold_ahead; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
        pf += fold_ahead;
        acc = detail::fold16<F>(D + g * 8 * 64, S + g * 16 * K, dx, aux, 4 * g, std::min<std::size_t>(4, n_sub - 4 * g), acc);
    }
    const std::size_t nr = std::min<std::size_t>(16, rows - r0);
    _mm512_mask_storeu_ps(y + r0, __mmask16((1u << nr) - 1u), acc);
}


// ---------------------------------------------------------------- Q4_K, Q5_K
// A 144-byte Q4_K super-block: d, dmin (F16), twelve bytes of 6-bit scales and
// mins, then 128 bytes of nibbles: 32 bytes per 64 elements, low nibbles = the
// first 32 (sub-block 2c), high = the next 32 (2c + 1). Q5_K (176 bytes) has 32
// bytes of fifth bits between: bit 2c (low) or 2c + 1 (high) of qh[l] for l. A 128-element group is 64
// contiguous quant bytes; with the activations laid out [x0..31, x64..95] (lo) and
// [x32..63, x96..127] (hi), the two vpdpbusd give 128-bit lanes (sub-block)
// lo: 0 0 2 2, hi: 1 1 3 3, recombined by two vpermt2q and an add.

/// Per 128-element group [lo | hi] (128 bytes) for Q4_K and Q5_K.
inline void split_q4_K(const std::uint8_t* q, std::size_t n_valid, std::size_t n_groups, std::uint8_t* out) noexcept {
    for (std::size_t g = 0; g < n_groups; ++g) {
        const std::size_t o = g * 128;
        const __m512i a = o < n_valid ? _mm512_loadu_si512(q + o) : _mm512_setzero_si512();
        const __m512i b = o + 64 < n_valid ? _mm512_loadu_si512(q + o + 64) : _mm512_setzero_si512();
        _mm512_store_si512(out + g * 192, _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)));
        _mm512_store_si512(out + g * 192 + 64, _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
    }
}

namespace detail {

/// 16 rows' 16-byte records (d, dmin, scales) -> out[j] lane r = dword j of row r's record.
inline void transpose_records(const std::uint8_t* S, __m512i out[4]) noexcept {
    __m512i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm512_load_si512(S + 64 * i); // rows 4i..4i+3
    // x: dwords j0 (rows 0-7 from a, b), then j1 (rows 0-7)
    auto pick = [](int j0, int j1) {
        alignas(64) std::int32_t v[16];
        for (int k = 0; k < 16; ++k) {
            const int j = k < 8 ? j0 : j1, row = k % 8; // row within the 8 of (a, b)
            v[k] = (row < 4 ? 0 : 16) + (row % 4) * 4 + j;
        }
        return _mm512_load_si512(v);
    };
    const __m512i i01 = pick(0, 1), i23 = pick(2, 3);
    const __m512i x01 = _mm512_permutex2var_epi32(q[0], i01, q[1]), y01 = _mm512_permutex2var_epi32(q[2], i01, q[3]);
    const __m512i x23 = _mm512_permutex2var_epi32(q[0], i23, q[1]), y23 = _mm512_permutex2var_epi32(q[2], i23, q[3]);
    const __m512i lo = _mm512_set_epi32(23, 22, 21, 20, 19, 18, 17, 16, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i hi = _mm512_set_epi32(31, 30, 29, 28, 27, 26, 25, 24, 15, 14, 13, 12, 11, 10, 9, 8);
    out[0] = _mm512_permutex2var_epi32(x01, lo, y01);
    out[1] = _mm512_permutex2var_epi32(x01, hi, y01);
    out[2] = _mm512_permutex2var_epi32(x23, lo, y23);
    out[3] = _mm512_permutex2var_epi32(x23, hi, y23);
}

} // namespace detail

namespace detail {
/// Q5_K bit selectors for vpshufbitqmb over qh twice: byte k of half h picks bit 2c (+1 for
/// the high nibbles) of qh[k % 32], c = 2h + k / 32.
template <int H, int Hi>
alignas(64) inline constexpr std::array<std::uint8_t, 64> qh_select = [] {
    std::array<std::uint8_t, 64> a{};
    for (int k = 0; k < 64; ++k) a[std::size_t(k)] = static_cast<std::uint8_t>(8 * (k % 8) + 2 * (2 * H + k / 32) + Hi);
    return a;
}();
} // namespace detail

/// The first pass of the super-block rows16 kernels (rows16_k, rows16_iq4_xs,
/// gemv_k16.hpp): the group's 16 rows (from r0; the last row repeated past `rows`) two at
/// a time, super-block by super-block, visit(pa, pb, u, i) getting super-block u of rows
/// 2i and 2i + 1. One linear cursor over the group's rows (contiguous in memory) runs
/// linear_ahead bytes ahead into L2, advancing by the two super-blocks each step reads.
/// It replaced per-row prefetches 2 KiB ahead into L1, which left the DRAM stream short of
/// misses in flight: 4096 x 4096 from DRAM, 2 threads, Q4_K 16.5 -> 26.4 GB/s, Q5_K 16.5 ->
/// 29.0, 5632 x 2048 Q4_K 18.5 -> 30.8 (medians of 3-4 interleaved rounds); from L3 on one
/// thread 26.1 -> 26.9. Returns the cursor, for a second pass that keeps the stream moving.
template <class Visit>
inline const char* walk_row_pairs(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0,
                           std::size_t n_super, std::size_t sbytes, Visit&& visit) noexcept {
    const char* pf = reinterpret_cast<const char*>(W + r0 * row_bytes) + linear_ahead;
    for (std::size_t i = 0; i < 8; ++i) {
        const std::uint8_t* ra = W + std::min(r0 + 2 * i, rows - 1) * row_bytes;
        const std::uint8_t* rb = W + std::min(r0 + 2 * i + 1, rows - 1) * row_bytes;
        for (std::size_t u = 0; u < n_super; ++u) {
            for (std::size_t o = 0; o < 2 * sbytes; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
            pf += 2 * sbytes;
            visit(ra + u * sbytes, rb + u * sbytes, u, i);
        }
    }
    return pf;
}

/// rows16 for Q4_K / Q5_K: n_super super-blocks per row; n_sub = 8 * n_super sub-blocks.
template <bool Q5>
inline void rows16_k(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0,
                     std::size_t n_super, const std::uint8_t* xs, const float* dx, const std::uint8_t* aux, float* y,
                     std::uint8_t* scratch) noexcept {
    constexpr std::size_t sbytes = Q5 ? 176 : 144, qs = Q5 ? 48 : 16;
    const std::size_t n_groups = 2 * n_super;
    std::uint8_t* D = scratch;                     // [group][row pair] 64 bytes
    std::uint8_t* S = scratch + n_groups * 8 * 64; // [super][row] 16 bytes
    const __m512i m4 = _mm512_set1_epi8(0x0F), zero = _mm512_setzero_si512();
    const __m512i hi_nib = _mm512_set1_epi64(0x1020408000000000ll);
    const __m512i ia = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), ib = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    auto dot = [&](const std::uint8_t* sb, std::size_t h, __m512i xlo, __m512i xhi) {
        const __m512i v = _mm512_loadu_si512(sb + qs + 64 * h);
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_gf2p8affine_epi64_epi8(v, hi_nib, 0);
        if constexpr (Q5) {
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16)));
            const __m512i sixteen = _mm512_set1_epi8(16);
            const auto& sl = h ? detail::qh_select<1, 0> : detail::qh_select<0, 0>;
            const auto& sh = h ? detail::qh_select<1, 1> : detail::qh_select<0, 1>;
            lo = _mm512_mask_add_epi8(lo, _mm512_bitshuffle_epi64_mask(qh, detail::load_idx(sl)), lo, sixteen);
            hi = _mm512_mask_add_epi8(hi, _mm512_bitshuffle_epi64_mask(qh, detail::load_idx(sh)), hi, sixteen);
        }
        const __m512i dl = _mm512_dpbusd_epi32(zero, lo, xlo);
        const __m512i dh = _mm512_dpbusd_epi32(zero, hi, xhi);
        // lanes lo 0 0 2 2, hi 1 1 3 3 -> halves [0 1 2 3] + [0 1 2 3]
        return _mm512_add_epi32(_mm512_permutex2var_epi64(dl, ia, dh), _mm512_permutex2var_epi64(dl, ib, dh));
    };
    walk_row_pairs(W, row_bytes, rows, r0, n_super, sbytes,
                   [&](const std::uint8_t* pa, const std::uint8_t* pb, std::size_t u, std::size_t i) {
        _mm_store_si128(reinterpret_cast<__m128i*>(S + (u * 16 + 2 * i) * 16), _mm_loadu_si128(reinterpret_cast<const __m128i*>(pa)));
        _mm_store_si128(reinterpret_cast<__m128i*>(S + (u * 16 + 2 * i + 1) * 16), _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb)));
        for (std::size_t h = 0; h < 2; ++h) {
            const std::size_t g = 2 * u + h;
            const std::uint8_t* x = xs + g * 192;
            const __m512i xlo = _mm512_load_si512(x), xhi = _mm512_load_si512(x + 64);
            const __m512i a = dot(pa, h, xlo, xhi), b = dot(pb, h, xlo, xhi);
            // Q4_K: 16 * 15 * 127 < 2^15 (int16 step); Q5_K: 16 * 31 * 127 is not
            _mm512_store_si512(D + (g * 8 + i) * 64, detail::reduce_pair<Q5 ? 0 : 1>(a, b));
        }
    });
    __m512 acc = _mm512_setzero_ps();
    const __m512i m6 = _mm512_set1_epi32(0x3F3F3F3F), m2 = _mm512_set1_epi32(0x03030303), n4 = _mm512_set1_epi32(0x0F0F0F0F);
    for (std::size_t u = 0; u < n_super; ++u) {
        // the scales and mins of 16 rows, as blocks.hpp's scale_min_k4 unpacks them
        __m512i t[4];
        detail::transpose_records(S + u * 16 * 16, t);
        const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(t[0]));
        const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(t[0], 16)));
        const __m512i sc03 = _mm512_and_si512(t[1], m6), mn03 = _mm512_and_si512(t[2], m6);
        const __m512i sc47 = _mm512_or_si512(_mm512_and_si512(t[3], n4),
                                             _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(t[1], 6), m2), 4));
        const __m512i mn47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(t[3], 4), n4),
                                             _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(t[2], 6), m2), 4));
        auto byte = [](__m512i v, int k) {
            return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(v, 8 * k), _mm512_set1_epi32(0xFF)));
        };
        for (std::size_t h = 0; h < 2; ++h) {
            const std::size_t g = 2 * u + h;
            __m512i c[8];
            for (int i = 0; i < 8; ++i) c[i] = _mm512_load_si512(D + (g * 8 + i) * 64);
            __m512i is[4];
            detail::reduce_transpose16<Q5 ? 0 : 1>(c, is);
            for (int j = 0; j < 4; ++j) {
                const int k = 4 * int(h) + j; // sub-block within the super-block
                const std::size_t sb = 8 * u + std::size_t(k);
                const __m512 s = _mm512_mul_ps(k < 4 ? byte(sc03, k) : byte(sc47, k - 4), d);
                const __m512 m = _mm512_mul_ps(k < 4 ? byte(mn03, k) : byte(mn47, k - 4), dmin);
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[j]), _mm512_mul_ps(s, _mm512_set1_ps(dx[sb])), acc);
                float a;
                std::memcpy(&a, aux + 4 * sb, 4);
                acc = _mm512_fnmadd_ps(m, _mm512_set1_ps(a), acc);
            }
        }
    }
    const std::size_t nr = std::min<std::size_t>(16, rows - r0);
    _mm512_mask_storeu_ps(y + r0, __mmask16((1u << nr) - 1u), acc);
}

// ---------------------------------------------------------------- IQ4_XS
// A 136-byte IQ4_XS super-block: d (F16), scales_h (16 bits), scales_l (4 bytes), then
// eight 32-element blocks of 16 bytes laid out as Q4_0's / IQ4_NL's quants (low nibbles
// = elements 0-15, high = 16-31) without the per-block scales: a 128-element group is
// 64 contiguous bytes, one plain load where the legacy types need a gather, against
// split_halves' activations (zero 128). Sub-block k's scale is d * (ls_k - 32), ls_k
// = bits 4k..4k+3 of scales_l | bits 2k, 2k + 1 of scales_h << 4 (blocks.hpp's
// iq4_xs_scale): 16 rows' 8-byte headers are unpacked in lanes = rows.

/// rows16 for IQ4_XS: n_super super-blocks per row.
inline void rows16_iq4_xs(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0,
                          std::size_t n_super, const std::uint8_t* xs, const float* dx, float* y,
                          std::uint8_t* scratch) noexcept {
    constexpr std::size_t sbytes = 136, qs = 8;
    const std::size_t n_groups = 2 * n_super;
    std::uint8_t* D = scratch;                     // [group][row pair] 64 bytes
    std::uint8_t* S = scratch + n_groups * 8 * 64; // [super][row] 8 bytes
    const __m512i m4 = _mm512_set1_epi8(0x0F), tbl = detail::table_u(code_table<format::iq4_xs>);
    const __m512i hi_nib = _mm512_set1_epi64(0x1020408000000000ll);
    auto dot = [&](const std::uint8_t* sb, std::size_t h, __m512i xlo, __m512i xhi, __m512i init) {
        const __m512i v = _mm512_loadu_si512(sb + qs + 64 * h);
        const __m512i lo = _mm512_shuffle_epi8(tbl, _mm512_and_si512(v, m4));
        const __m512i hi = _mm512_shuffle_epi8(tbl, _mm512_gf2p8affine_epi64_epi8(v, hi_nib, 0));
        // 128-bit lane j: block 4h + j (the zero point in init), as group_dot's
        return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(init, lo, xlo), hi, xhi);
    };
    const char* pf = walk_row_pairs(W, row_bytes, rows, r0, n_super, sbytes,
                                    [&](const std::uint8_t* pa, const std::uint8_t* pb, std::size_t u, std::size_t i) {
        std::memcpy(S + (u * 16 + 2 * i) * 8, pa, 8);
        std::memcpy(S + (u * 16 + 2 * i + 1) * 8, pb, 8);
        for (std::size_t h = 0; h < 2; ++h) {
            const std::size_t g = 2 * u + h;
            const std::uint8_t* x = xs + g * 192;
            const __m512i xlo = _mm512_load_si512(x), xhi = _mm512_load_si512(x + 64), init = _mm512_load_si512(x + 128);
            // |v| <= 127: no int16 step
            _mm512_store_si512(D + (g * 8 + i) * 64, detail::reduce_pair<0>(dot(pa, h, xlo, xhi, init), dot(pb, h, xlo, xhi, init)));
        }
    });
    __m512 acc = _mm512_setzero_ps();
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (std::size_t u = 0; u < n_super; ++u) {
        // the fold reads no weights: the cursor moves on meanwhile, fold_ahead per group
        // as in rows16 (from DRAM, 2 threads, 5632 x 2048: 17.5-18.2 -> 19.3-19.5 GB/s)
        for (std::size_t o = 0; o < 2 * fold_ahead; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
        pf += 2 * fold_ahead;
        // lane r: row r's header, dword 0 (d | scales_h << 16) and dword 1 (scales_l)
        const __m512i q0 = _mm512_load_si512(S + u * 128), q1 = _mm512_load_si512(S + u * 128 + 64);
        const __m512i w0 = _mm512_permutex2var_epi32(q0, even, q1), w1 = _mm512_permutex2var_epi32(q0, odd, q1);
        const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w0));
        const __m512i sh = _mm512_srli_epi32(w0, 16);
        for (std::size_t h = 0; h < 2; ++h) {
            const std::size_t g = 2 * u + h;
            __m512i c[8];
            for (int i = 0; i < 8; ++i) c[i] = _mm512_load_si512(D + (g * 8 + i) * 64);
            __m512i is[4];
            detail::reduce_transpose16<0>(c, is);
            for (unsigned j = 0; j < 4; ++j) {
                const unsigned k = 4 * unsigned(h) + j; // sub-block within the super-block
                const __m512i ls = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w1, 4 * k), _mm512_set1_epi32(15)),
                                                   _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * k), _mm512_set1_epi32(3)), 4));
                // d * float(ls - 32): the decoder's scale (decoders.hpp's dec_iq4_xs)
                const __m512 s = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(ls, _mm512_set1_epi32(32))));
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[j]), _mm512_mul_ps(s, _mm512_set1_ps(dx[8 * u + k])), acc);
            }
        }
    }
    const std::size_t nr = std::min<std::size_t>(16, rows - r0);
    _mm512_mask_storeu_ps(y + r0, __mmask16((1u << nr) - 1u), acc);
}

/// The activation layout rows16<F> reads (split_bytes(n_groups) bytes at out).
template <format F>
inline void split(const std::uint8_t* q, std::size_t n_valid, std::size_t n_groups, std::uint8_t* out) noexcept {
    if constexpr (F == format::q4_K || F == format::q5_K) split_q4_K(q, n_valid, n_groups, out);
    else if constexpr (F == format::q8_0) split_plain(q, n_valid, n_groups, out);
    else if constexpr (F == format::iq4_xs) split_halves(q, n_valid, n_groups, 128, out);
    else split_halves(q, n_valid, n_groups, geometry<F>::zero, out);
}

// ---------------------------------------------------------------- Q4_0 and Q8_0, x16 layouts
/// 16 rows of Q4_0 or Q8_0 stored in an x16 layout (kernels/quant/interleaved.hpp):
/// G is the group's first byte, n_blocks its blocks per row; xq the token's int8
/// quants (act_layout order, plain), dx and aux per 32-block (aux = -z * sum(xq) of
/// the block, z = 8 for Q4_0, 128 for Q8_0: act_layout's word). Returns lane r =
/// row r's output.
///
/// Lane r of each 64-byte quant vector already is row r, so one vpdpbusd against
/// four broadcast activation bytes advances all 16 rows, with no gather, no
/// transpose and no second pass (rows16 needs all three for the row layout). Q4_0:
/// 1.4-1.55x rows16's speed per core from L2/L3 (bench_quant: 36-41 vs 25-26 GB/s,
/// 1024 x 4096); from DRAM both keep up with the bus. Q8_0's bytes are stored as
/// u = q + 128, which vpdpbusd takes as they are.
/// The float step per block is rows16's, blocks in order,
///     acc = fma(float(idot), s * dx, acc)        (idot includes -z * sum(xq)),
/// and an odd block count folds the zero block rows16 and the batch engine fold
/// (fma(0, 0, acc): only the sign of a zero can change), so every output is
/// bitwise what the row layout gives.
template <weight_layout L>
inline __m512 rows16_x16(const std::uint8_t* G, std::size_t n_blocks, const std::uint8_t* xq, const float* dx,
                         const std::uint8_t* aux) noexcept {
    static_assert(L == weight_layout::q4_0_x16 || L == weight_layout::q8_0_x16);
    constexpr std::size_t gbb = x16::of(L).group_block_bytes(), sb = x16::scales_bytes;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc = _mm512_setzero_ps();
    const std::uint8_t* p = G;
    // No software prefetch: a group is one contiguous stream, which the hardware
    // prefetchers follow (Q4_0: distances 1-16 KiB, T0 and T1, measured flat from DRAM).
    for (std::size_t b = 0; b < n_blocks; ++b, p += gbb) {
        std::int32_t z, xb[8];
        std::memcpy(&z, aux + 4 * b, 4);
        std::memcpy(xb, xq + 32 * b, 32);
        // two chains for the two vpdpbusd ports (Q4_0: the low and the high nibbles;
        // Q8_0: elements 0-15 and 16-31); integer sums are exact, so how they are
        // split changes nothing
        __m512i i0 = _mm512_set1_epi32(z), i1 = _mm512_setzero_si512();
        for (int t = 0; t < 4; ++t) {
            const __m512i v = _mm512_loadu_si512(p + sb + 64 * t);
            if constexpr (L == weight_layout::q4_0_x16) {
                i0 = _mm512_dpbusd_epi32(i0, _mm512_and_si512(v, m4), _mm512_set1_epi32(xb[t]));
                i1 = _mm512_dpbusd_epi32(i1, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4), _mm512_set1_epi32(xb[4 + t]));
            } else {
                i0 = _mm512_dpbusd_epi32(i0, v, _mm512_set1_epi32(xb[t]));
                i1 = _mm512_dpbusd_epi32(i1, _mm512_loadu_si512(p + sb + 64 * (4 + t)), _mm512_set1_epi32(xb[4 + t]));
            }
        }
        const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(i0, i1)), _mm512_mul_ps(s, _mm512_set1_ps(dx[b])), acc);
    }
    if (n_blocks % 2) acc = _mm512_add_ps(acc, _mm512_setzero_ps()); // the zero block: fma(0, 0, acc)
    return acc;
}

/// Dispatch: rows16 (legacy types, n_blocks 32-blocks), rows16_k or rows16_iq4_xs (n_blocks super-blocks).
template <format F>
inline void run16(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0, std::size_t n_blocks,
                  std::size_t n_sub, const std::uint8_t* xs, const float* dx, const std::uint8_t* aux, float* y,
                  std::uint8_t* scratch) noexcept {
    if constexpr (F == format::q4_K || F == format::q5_K)
        rows16_k<F == format::q5_K>(W, row_bytes, rows, r0, n_blocks, xs, dx, aux, y, scratch);
    else if constexpr (F == format::iq4_xs) rows16_iq4_xs(W, row_bytes, rows, r0, n_blocks, xs, dx, y, scratch);
    else rows16<F>(W, row_bytes, rows, r0, n_blocks, n_sub, xs, dx, aux, y, scratch);
}

} // namespace archetype::quant::vnni::gemv

#endif
