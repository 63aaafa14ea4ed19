#pragma once
// llama.cpp's quantised block layouts (ggml-common.h), byte for byte.
//
// A row of `cols` elements is cols / QK consecutive blocks; nothing in a block
// is aligned beyond 2 bytes (an F16 field), and rows of an 18-byte type start
// at any even offset. So the code reads fields from byte pointers (memcpy for
// the halves) instead of casting to these structs: the structs document the
// layout and let static_assert pin the offsets and sizes against dtype.hpp.
//
// Element order inside a block (the part that is easy to get wrong):
//   Q4_0/Q4_1   qs[j] low nibble = element j, high nibble = element j + 16
//   Q5_0/Q5_1   as Q4, plus bit j of the little-endian u32 qh = 5th bit of element j
//   Q8_0        qs[j] = element j (int8)
//   Q4_K        256 = 4 chunks of 64; chunk c: qs[32c + l] low nibble = element
//               64c + l (sub-block 2c), high nibble = element 64c + 32 + l (sub-block 2c + 1);
//               8 six-bit scales and mins packed in scales[12] (get_scale_min_k4)
//   Q5_K        as Q4_K, 5th bit of element 64c + l is bit 2c of qh[l], of
//               element 64c + 32 + l bit 2c + 1 of qh[l]
//   Q6_K        256 = 2 halves of 128; half h, l < 32 (ql += 64h, qh += 32h):
//               element 128h + l      = ql[l] & 15      | (qh[l] >> 0 & 3) << 4
//               element 128h + 32 + l = ql[l + 32] & 15 | (qh[l] >> 2 & 3) << 4
//               element 128h + 64 + l = ql[l] >> 4      | (qh[l] >> 4 & 3) << 4
//               element 128h + 96 + l = ql[l + 32] >> 4 | (qh[l] >> 6 & 3) << 4
//               value = d * scales[element / 16] * (q - 32)
//   Q2_K        256 = 2 halves of 128; half h, element 128h + 32j + l (j < 4, l < 32):
//               q = qs[32h + l] >> 2j & 3; sub-block k = element / 16 (16 of 16),
//               scales[k] low nibble = scale, high nibble = min:
//               value = d * (scales[k] & 15) * q - dmin * (scales[k] >> 4)
//   Q3_K        as Q2_K for the low 2 bits (qs), plus bit 4h + j of hmask[l] (set: +0,
//               clear: -4): q = (qs[32h + l] >> 2j & 3) - (bit ? 0 : 4), in -4..3;
//               16 six-bit scales packed in scales[12] (q3_K_scale):
//               value = d * (scale_k - 32) * q
//   IQ4_NL      as Q4_0's nibbles; value = d * kvalues_iq4nl[code] (ggml_tables.hpp)
//   IQ4_XS      8 sub-blocks of 32: qs[16i + l] low nibble = element 32i + l, high nibble =
//               element 32i + 16 + l; 6-bit scale ls_i = (scales_l[i / 2] >> 4(i % 2) & 15) |
//               (scales_h >> 2i & 3) << 4; value = d * (ls_i - 32) * kvalues_iq4nl[code]
//   MXFP4       e (E8M0, one byte) then Q4_0's nibbles; value = kvalues_mxfp4[code] * 2^(e - 128)
//               (the table holds the E2M1 values doubled, e8m0_to_fp32_half halves the scale)
//   Q1_0        d, qs[16] (128 elements): bit j % 8 of qs[j / 8] set: +d, clear: -d
//   Q2_0        d, qs[16] (64 elements): code (qs[j / 4] >> 2(j % 4)) & 3, value = d * (code - 1)
//   TQ2_0       qs[64] then d: as Q2_K's quants, element 128h + 32j + l = (qs[32h + l] >> 2j & 3) - 1
//   TQ1_0       qs[48], qh[4], d: base-3 bytes, trit n of a byte (tq1_trit) is element
//               32n + l of qs[l] (l < 32), 160 + 16n + l of qs[32 + l] (l < 16, n < 5),
//               240 + 4n + l of qh[l] (l < 4, n < 4); value = d * (trit - 1)
//   AWQ4        archetype's own (not ggml's): d (F16), z (a byte: its low 4 bits, 0..15), then Q4_0's
//               nibbles: value = d * (q - z), exact in float (|q - z| <= 15 times an F16 needs
//               15 bits). AutoAWQ's groups repacked at load (io/hf_awq.hpp); 19 bytes, so
//               nothing in it is aligned: fields are read through memcpy as everywhere here
// The grid types (tables: iq_grids.hpp): 256 = 8 groups ib of 32 = 32 groups of 8; a
// group's 8 magnitudes are one grid entry (IQ3: two entries of 4), its signs a byte
// (bit j negates element j; IQ2_XXS / IQ2_XS / IQ3_XXS store 7 bits, ksigns_iq2xs adds
// the parity bit). Group l (0..3) of ib:
//   IQ2_XXS     d, then per ib 8 bytes: 4 grid indices, u32 w: signs (w >> 7l & 127),
//               scale w >> 28: value = d * (0.5 + ls) * 0.25 * grid * sign
//   IQ2_XS      d, u16 qs[32]: index qs[4ib + l] & 511, signs qs >> 9; scales[ib] nibble
//               l / 2: value = d * (0.5 + ls) * 0.25 * grid * sign
//   IQ2_S       d, qs[32] indices low 8 bits, qs[32..63] sign bytes, qh[ib] bits 2l..2l+1
//               the index's bits 8-9, scales[ib] nibble l / 2 (as IQ2_XS)
//   IQ3_XXS     d, qs[64] indices (qs[8ib + 2l], qs[8ib + 2l + 1]: 4 magnitudes each),
//               u32 w at 64 + 4ib: signs, ls = w >> 28: value = d * (0.5 + ls) * 0.5 * ...
//   IQ3_S       d, qs[64] indices low 8 bits, qh[ib] bit 2l / 2l + 1 the 9th, signs[4ib + l],
//               scales[ib / 2] nibble ib % 2: value = d * (1 + 2 s) * grid * sign
//   IQ1_S       d, qs[32] indices low 8 bits, u16 qh[ib]: bits 3l..3l+2 the index's high 3,
//               bits 12-14 s, bit 15 the delta's sign: value = d * (2s + 1) * (grid + delta),
//               grid -1 / 0 / 1, delta = +-1/8
//   IQ1_M       no d field: qs[32], qh[16], scales[8] (u16 sc[4]); the fp16 d is the top
//               nibbles of sc[0..3]; per 16 elements a 3-bit scale (sc[ib / 2] >> 6(ib % 2)
//               (+3)); qh[2ib + l / 2] nibble l % 2: the index's 3 high bits and the delta's sign
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/core/dtype.hpp"
#include "archetype/core/half.hpp"
#include "archetype/kernels/quant/ggml_tables.hpp"

namespace archetype::quant {

inline constexpr std::size_t qk = 32;    // elements per block of the legacy types
inline constexpr std::size_t qk_k = 256; // elements per super-block of the K types
inline constexpr std::size_t k_scale_size = 12;

struct block_q4_0 { std::uint16_t d; std::uint8_t qs[16]; };
struct block_q4_1 { std::uint16_t d, m; std::uint8_t qs[16]; };
struct block_q5_0 { std::uint16_t d; std::uint8_t qh[4]; std::uint8_t qs[16]; };
struct block_q5_1 { std::uint16_t d, m; std::uint8_t qh[4]; std::uint8_t qs[16]; };
struct block_q8_0 { std::uint16_t d; std::int8_t qs[32]; };
struct block_q4_K { std::uint16_t d, dmin; std::uint8_t scales[k_scale_size]; std::uint8_t qs[128]; };
struct block_q5_K {
    std::uint16_t d, dmin;
    std::uint8_t scales[k_scale_size];
    std::uint8_t qh[32];
    std::uint8_t qs[128];
};
struct block_q6_K { std::uint8_t ql[128]; std::uint8_t qh[64]; std::int8_t scales[16]; std::uint16_t d; };
struct block_q2_K { std::uint8_t scales[16]; std::uint8_t qs[64]; std::uint16_t d, dmin; };
struct block_q3_K { std::uint8_t hmask[32]; std::uint8_t qs[64]; std::uint8_t scales[12]; std::uint16_t d; };
struct block_iq4_nl { std::uint16_t d; std::uint8_t qs[16]; };
struct block_iq4_xs { std::uint16_t d, scales_h; std::uint8_t scales_l[4]; std::uint8_t qs[128]; };
struct block_mxfp4 { std::uint8_t e; std::uint8_t qs[16]; };
struct block_q1_0 { std::uint16_t d; std::uint8_t qs[16]; };
struct block_q2_0 { std::uint16_t d; std::uint8_t qs[16]; };
struct block_tq1_0 { std::uint8_t qs[48]; std::uint8_t qh[4]; std::uint16_t d; };
struct block_tq2_0 { std::uint8_t qs[64]; std::uint16_t d; };
struct block_iq2_xxs { std::uint16_t d; std::uint16_t qs[32]; };
struct block_iq2_xs { std::uint16_t d; std::uint16_t qs[32]; std::uint8_t scales[8]; };
struct block_iq2_s { std::uint16_t d; std::uint8_t qs[64]; std::uint8_t qh[8]; std::uint8_t scales[8]; };
struct block_iq3_xxs { std::uint16_t d; std::uint8_t qs[96]; };
struct block_iq3_s { std::uint16_t d; std::uint8_t qs[64]; std::uint8_t qh[8]; std::uint8_t signs[32]; std::uint8_t scales[4]; };
struct block_iq1_s { std::uint16_t d; std::uint8_t qs[32]; std::uint16_t qh[8]; };
struct block_iq1_m { std::uint8_t qs[32]; std::uint8_t qh[16]; std::uint8_t scales[8]; };
#pragma pack(push, 1)
struct block_awq4 { std::uint16_t d; std::uint8_t z; std::uint8_t qs[16]; };
#pragma pack(pop)
static_assert(sizeof(block_awq4) == 19 && offsetof(block_awq4, qs) == 3 &&
              traits_of(ggml_type::AWQ4).type_size == sizeof(block_awq4));

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22 &&
              sizeof(block_q5_1) == 24 && sizeof(block_q8_0) == 34 && sizeof(block_q4_K) == 144 &&
              sizeof(block_q5_K) == 176 && sizeof(block_q6_K) == 210 && sizeof(block_q2_K) == 84 &&
              sizeof(block_q3_K) == 110 && sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136 &&
              sizeof(block_mxfp4) == 17);
static_assert(traits_of(ggml_type::IQ4_NL).type_size == sizeof(block_iq4_nl) &&
              traits_of(ggml_type::IQ4_XS).type_size == sizeof(block_iq4_xs) &&
              traits_of(ggml_type::MXFP4).type_size == sizeof(block_mxfp4) && offsetof(block_iq4_xs, qs) == 8);
static_assert(traits_of(ggml_type::Q1_0).type_size == sizeof(block_q1_0) &&
              traits_of(ggml_type::Q2_0).type_size == sizeof(block_q2_0));
static_assert(traits_of(ggml_type::TQ1_0).type_size == sizeof(block_tq1_0) && offsetof(block_tq1_0, d) == 52 &&
              traits_of(ggml_type::TQ2_0).type_size == sizeof(block_tq2_0) && offsetof(block_tq2_0, d) == 64);
static_assert(traits_of(ggml_type::IQ2_XXS).type_size == sizeof(block_iq2_xxs) &&
              traits_of(ggml_type::IQ2_XS).type_size == sizeof(block_iq2_xs) && offsetof(block_iq2_xs, scales) == 66 &&
              traits_of(ggml_type::IQ2_S).type_size == sizeof(block_iq2_s) && offsetof(block_iq2_s, qh) == 66 &&
              offsetof(block_iq2_s, scales) == 74 && traits_of(ggml_type::IQ3_XXS).type_size == sizeof(block_iq3_xxs) &&
              traits_of(ggml_type::IQ3_S).type_size == sizeof(block_iq3_s) && offsetof(block_iq3_s, qh) == 66 &&
              offsetof(block_iq3_s, signs) == 74 && offsetof(block_iq3_s, scales) == 106 &&
              traits_of(ggml_type::IQ1_S).type_size == sizeof(block_iq1_s) && offsetof(block_iq1_s, qh) == 34 &&
              traits_of(ggml_type::IQ1_M).type_size == sizeof(block_iq1_m) && offsetof(block_iq1_m, scales) == 48);
static_assert(traits_of(ggml_type::Q4_0).type_size == sizeof(block_q4_0) &&
              traits_of(ggml_type::Q4_1).type_size == sizeof(block_q4_1) &&
              traits_of(ggml_type::Q5_0).type_size == sizeof(block_q5_0) &&
              traits_of(ggml_type::Q5_1).type_size == sizeof(block_q5_1) &&
              traits_of(ggml_type::Q8_0).type_size == sizeof(block_q8_0) &&
              traits_of(ggml_type::Q4_K).type_size == sizeof(block_q4_K) &&
              traits_of(ggml_type::Q5_K).type_size == sizeof(block_q5_K) &&
              traits_of(ggml_type::Q6_K).type_size == sizeof(block_q6_K) &&
              traits_of(ggml_type::Q2_K).type_size == sizeof(block_q2_K) &&
              traits_of(ggml_type::Q3_K).type_size == sizeof(block_q3_K));
static_assert(offsetof(block_q5_0, qs) == 6 && offsetof(block_q5_1, qs) == 8 &&
              offsetof(block_q4_K, qs) == 16 && offsetof(block_q5_K, qh) == 16 &&
              offsetof(block_q5_K, qs) == 48 && offsetof(block_q6_K, qh) == 128 &&
              offsetof(block_q6_K, scales) == 192 && offsetof(block_q6_K, d) == 208 &&
              offsetof(block_q2_K, qs) == 16 && offsetof(block_q2_K, d) == 80 && offsetof(block_q3_K, qs) == 32 &&
              offsetof(block_q3_K, scales) == 96 && offsetof(block_q3_K, d) == 108);

/// Little-endian u16 / u32 at any address (the files are little-endian; so is x86).
inline std::uint16_t load_u16(const std::uint8_t* p) noexcept {
    std::uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}
inline std::uint32_t load_u32(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline float load_f16(const std::uint8_t* p) noexcept { return fp16_to_fp32(load_u16(p)); }
inline void store_u16(std::uint8_t* p, std::uint16_t v) noexcept { std::memcpy(p, &v, 2); }
inline void store_f16(std::uint8_t* p, float f) noexcept { store_u16(p, fp32_to_fp16(f)); }

/// Six-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block:
/// j < 4 sit in the low 6 bits of scales[j] / scales[j + 4]; j >= 4 take their
/// low 4 bits from a nibble of scales[j + 4] and their top 2 bits from the
/// spare high bits of scales[j - 4] / scales[j].
inline void scale_min_k4(std::size_t j, const std::uint8_t* s, std::uint8_t& sc, std::uint8_t& m) noexcept {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = std::uint8_t((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        m = std::uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/// The sixteen 6-bit scales of a Q3_K super-block (0..63; the value uses scale - 32),
/// from its 12 bytes s: scale k < 8 takes its low 4 bits from the low nibble of s[k],
/// k >= 8 from the high nibble of s[k - 8]; its top 2 bits are bits 2 * (k / 4) and
/// 2 * (k / 4) + 1 of s[8 + k % 4] (ggml's kmask1 / kmask2 unpacking).
inline void q3_K_scales(const std::uint8_t* s, std::uint8_t out[16]) noexcept {
    for (std::size_t k = 0; k < 16; ++k) {
        const unsigned low = k < 8 ? s[k] & 15u : unsigned(s[k - 8]) >> 4;
        const unsigned high = (unsigned(s[8 + k % 4]) >> (2 * (k / 4))) & 3u;
        out[k] = std::uint8_t(low | high << 4);
    }
}

/// 6-bit scale of sub-block i (0..7) of an IQ4_XS block b (the value uses it - 32).
inline unsigned iq4_xs_scale(const std::uint8_t* b, std::size_t i) noexcept {
    return ((unsigned(b[4 + i / 2]) >> (4 * (i % 2))) & 15u) | ((unsigned(load_u16(b + 2)) >> (2 * i)) & 3u) << 4;
}

/// MXFP4's block scale: half of the E8M0 value 2^(e - 127), as ggml's
/// ggml_e8m0_to_fp32_half builds it (e < 2: the subnormals 2^-128, 2^-127).
inline float e8m0_to_fp32_half(std::uint8_t e) noexcept {
    const std::uint32_t bits = e < 2 ? 0x00200000u << e : std::uint32_t(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

/// Trit n (0..4) of a TQ1_0 byte: 0, 1 or 2 (the value is trit - 1). The byte holds
/// ceil(256 * t / 243) for the base-3 number t of its trits, first trit most
/// significant: times 3^n (mod 256) brings trit n to the top, times 3 >> 8 reads it
/// (ggml's dequantize_row_tq1_0).
inline unsigned tq1_trit(std::uint8_t byte, unsigned n) noexcept {
    static constexpr std::uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const auto q = static_cast<std::uint8_t>(byte * pow3[n]);
    return (unsigned(q) * 3u) >> 8;
}

/// Where element j (0..255) of a TQ1_0 block lives: its byte (qs, then qh at 48) and trit.
inline void tq1_position(std::size_t j, std::size_t& byte, unsigned& trit) noexcept {
    if (j < 160) byte = j % 32, trit = unsigned(j / 32);
    else if (j < 240) byte = 32 + (j - 160) % 16, trit = unsigned((j - 160) / 16);
    else byte = 48 + (j - 240) % 4, trit = unsigned((j - 240) / 4);
}

/// IQ1_M's fp16 block scale, spread over the top nibbles of its four u16 scale words.
inline float iq1_m_d(const std::uint8_t* b) noexcept {
    const std::uint16_t s0 = load_u16(b + 48), s1 = load_u16(b + 50), s2 = load_u16(b + 52), s3 = load_u16(b + 54);
    return fp16_to_fp32(std::uint16_t((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000)));
}

/// Element j of a Q1_0 (128) or Q2_0 (64) block as its signed level: Q1_0 -1 / +1,
/// Q2_0 -1..2 (the value is d times it).
inline int q1_0_level(const std::uint8_t* b, std::size_t j) noexcept { return (b[2 + j / 8] >> (j % 8)) & 1 ? 1 : -1; }
inline int q2_0_level(const std::uint8_t* b, std::size_t j) noexcept { return int((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1; }

/// True for the types this module can dequantise and multiply.
constexpr bool is_supported(ggml_type t) noexcept {
    switch (t) {
    case ggml_type::F32: case ggml_type::F16: case ggml_type::BF16:
    case ggml_type::Q8_0: case ggml_type::Q4_0: case ggml_type::Q4_1: case ggml_type::Q5_0:
    case ggml_type::Q5_1: case ggml_type::Q4_K: case ggml_type::Q5_K: case ggml_type::Q6_K:
    case ggml_type::Q2_K: case ggml_type::Q3_K: case ggml_type::IQ4_NL: case ggml_type::IQ4_XS:
    case ggml_type::MXFP4: case ggml_type::TQ1_0: case ggml_type::TQ2_0: case ggml_type::IQ2_XXS:
    case ggml_type::IQ2_XS: case ggml_type::IQ2_S: case ggml_type::IQ3_XXS: case ggml_type::IQ3_S:
    case ggml_type::IQ1_S: case ggml_type::IQ1_M: case ggml_type::Q1_0: case ggml_type::Q2_0:
    case ggml_type::AWQ4:
        return true;
    default:
        return false;
    }
}

} // namespace archetype::quant
