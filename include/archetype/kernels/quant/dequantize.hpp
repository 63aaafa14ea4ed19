#pragma once
// Row dequantisation, bit-exact with llama.cpp's dequantize_row_* (same float
// operations in the same order). Both are contracted alike: g++ fuses a * b + c
// into one FMA wherever the target has FMA (-ffp-contract=fast is its default in
// C++, -std=c++20 included, and in ggml's GNU C), so `q * d + m` rounds once on
// an FMA build and twice on a baseline x86-64 one, in both code bases.
// Used for embedding lookups, tools and tests; the matmul never dequantises a
// whole matrix (see kernels/matmul.hpp).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/iq_dequantize.hpp"

namespace archetype::quant {

namespace detail {

inline void check_row(ggml_type type, std::size_t n, const char* what) {
    if (!is_supported(type))
        throw argument_error(std::string(what) + ": type " + std::string(type_name(type)) +
                             " is not supported");
    const std::size_t bs = traits_of(type).block_size;
    if (n % bs != 0)
        throw argument_error(std::string(what) + ": " + std::to_string(n) +
                             " elements is not a multiple of the " + std::string(type_name(type)) +
                             " block size " + std::to_string(bs));
}

inline void dq_q8_0(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t j = 0; j < 32; ++j) y[j] = float(static_cast<std::int8_t>(b[2 + j])) * d;
}
inline void dq_q4_0(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t j = 0; j < 16; ++j) {
        y[j] = float((b[2 + j] & 0xF) - 8) * d;
        y[j + 16] = float((b[2 + j] >> 4) - 8) * d;
    }
}
/// AWQ4: d * (q - z), exact (no rounding: |q - z| <= 15 times an F16 fits a float).
inline void dq_awq4(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    const int z = b[2] & 15; // the zero point: the low 4 bits of its byte
    for (std::size_t j = 0; j < 16; ++j) {
        y[j] = float((b[3 + j] & 0xF) - z) * d;
        y[j + 16] = float((b[3 + j] >> 4) - z) * d;
    }
}
inline void dq_q4_1(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b), m = load_f16(b + 2);
    for (std::size_t j = 0; j < 16; ++j) {
        y[j] = float(b[4 + j] & 0xF) * d + m;
        y[j + 16] = float(b[4 + j] >> 4) * d + m;
    }
}
inline void dq_q5_0(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    const std::uint32_t qh = load_u32(b + 2);
    for (std::size_t j = 0; j < 16; ++j) {
        const int h0 = int((qh >> j) << 4 & 0x10), h1 = int((qh >> (j + 12)) & 0x10);
        y[j] = float(((b[6 + j] & 0xF) | h0) - 16) * d;
        y[j + 16] = float(((b[6 + j] >> 4) | h1) - 16) * d;
    }
}
inline void dq_q5_1(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b), m = load_f16(b + 2);
    const std::uint32_t qh = load_u32(b + 4);
    for (std::size_t j = 0; j < 16; ++j) {
        const int h0 = int((qh >> j) << 4 & 0x10), h1 = int((qh >> (j + 12)) & 0x10);
        y[j] = float((b[8 + j] & 0xF) | h0) * d + m;
        y[j + 16] = float((b[8 + j] >> 4) | h1) * d + m;
    }
}
// Q4_K and Q5_K share the scale packing; `qh` is null for Q4_K.
inline void dq_k45(const std::uint8_t* b, const std::uint8_t* qh, const std::uint8_t* q, float* y) noexcept {
    const float d = load_f16(b), dmin = load_f16(b + 2);
    for (std::size_t c = 0; c < 4; ++c, q += 32, y += 64) {
        std::uint8_t sc, m;
        scale_min_k4(2 * c, b + 4, sc, m);
        const float d1 = d * float(sc), m1 = dmin * float(m);
        scale_min_k4(2 * c + 1, b + 4, sc, m);
        const float d2 = d * float(sc), m2 = dmin * float(m);
        const unsigned u1 = 1u << (2 * c), u2 = 2u << (2 * c);
        for (std::size_t l = 0; l < 32; ++l) {
            const int h1 = qh && (qh[l] & u1) ? 16 : 0, h2 = qh && (qh[l] & u2) ? 16 : 0;
            y[l] = d1 * float((q[l] & 0xF) + h1) - m1;
            y[l + 32] = d2 * float((q[l] >> 4) + h2) - m2;
        }
    }
}
inline void dq_q6_K(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b + 208);
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    for (std::size_t h = 0; h < 2; ++h, ql += 64, qh += 32, sc += 8, y += 128) {
        for (std::size_t l = 0; l < 32; ++l) {
            const std::size_t is = l / 16;
            const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0 & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2 & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
            y[l] = d * float(sc[is + 0]) * float(q1);
            y[l + 32] = d * float(sc[is + 2]) * float(q2);
            y[l + 64] = d * float(sc[is + 4]) * float(q3);
            y[l + 96] = d * float(sc[is + 6]) * float(q4);
        }
    }
}

// Q2_K and Q3_K: 2 halves of 128 = 4 groups of 32 each (the shift 2j of the quant byte),
// each group two 16-element sub-blocks with their own scale (ggml's walk, the same order).
inline void dq_q2_K(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b + 80), dmin = load_f16(b + 82);
    const std::uint8_t* sc = b;
    const std::uint8_t* q = b + 16;
    for (std::size_t h = 0; h < 2; ++h, q += 32)
        for (unsigned j = 0; j < 4; ++j)
            for (std::size_t half = 0; half < 2; ++half, ++sc, y += 16) {
                const float dl = d * float(*sc & 0xF), ml = dmin * float(*sc >> 4);
                for (std::size_t l = 0; l < 16; ++l) y[l] = dl * float((q[16 * half + l] >> (2 * j)) & 3) - ml;
            }
}
inline void dq_q3_K(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b + 108);
    std::uint8_t sc[16];
    q3_K_scales(b + 96, sc);
    const std::uint8_t* hm = b;
    const std::uint8_t* q = b + 32;
    std::size_t k = 0;
    for (std::size_t h = 0; h < 2; ++h, q += 32)
        for (unsigned j = 0; j < 4; ++j) {
            const unsigned bit = 1u << (4 * h + j);
            for (std::size_t half = 0; half < 2; ++half, ++k, y += 16) {
                const float dl = d * float(int(sc[k]) - 32);
                for (std::size_t l = 16 * half; l < 16 * half + 16; ++l) {
                    const int v = int((q[l] >> (2 * j)) & 3) - ((hm[l] & bit) ? 0 : 4);
                    y[l - 16 * half] = dl * float(v);
                }
            }
        }
}

// The non-linear types: each 4-bit code indexes a table (ggml_tables.hpp).
inline void dq_iq4_nl(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    const std::int8_t* kv = ggml_tables::kvalues_iq4nl;
    for (std::size_t j = 0; j < 16; ++j) {
        y[j] = d * float(kv[b[2 + j] & 0xF]);
        y[j + 16] = d * float(kv[b[2 + j] >> 4]);
    }
}
inline void dq_iq4_xs(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    const std::int8_t* kv = ggml_tables::kvalues_iq4nl;
    for (std::size_t i = 0; i < 8; ++i, y += 32) {
        const float dl = d * float(int(iq4_xs_scale(b, i)) - 32);
        const std::uint8_t* qs = b + 8 + 16 * i;
        for (std::size_t j = 0; j < 16; ++j) {
            y[j] = dl * float(kv[qs[j] & 0xF]);
            y[j + 16] = dl * float(kv[qs[j] >> 4]);
        }
    }
}
inline void dq_mxfp4(const std::uint8_t* b, float* y) noexcept {
    const float d = e8m0_to_fp32_half(b[0]);
    const std::int8_t* kv = ggml_tables::kvalues_mxfp4;
    for (std::size_t j = 0; j < 16; ++j) {
        y[j] = float(kv[b[1 + j] & 0xF]) * d;
        y[j + 16] = float(kv[b[1 + j] >> 4]) * d;
    }
}

// The 2026 low-bit types (ggml's dequantize_row_q1_0 / _q2_0).
inline void dq_q1_0(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b), neg_d = -d;
    for (std::size_t j = 0; j < 128; ++j) y[j] = (b[2 + j / 8] >> (j % 8)) & 1 ? d : neg_d;
}
inline void dq_q2_0(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t j = 0; j < 64; ++j) y[j] = float(int((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
}

// The ternary types: value = (trit - 1) * d, trits in ggml's order (blocks.hpp).
inline void dq_tq1_0(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b + 52);
    for (std::size_t n = 0; n < 5; ++n, y += 32)
        for (std::size_t m = 0; m < 32; ++m) y[m] = float(int(tq1_trit(b[m], unsigned(n))) - 1) * d;
    for (std::size_t n = 0; n < 5; ++n, y += 16)
        for (std::size_t m = 0; m < 16; ++m) y[m] = float(int(tq1_trit(b[32 + m], unsigned(n))) - 1) * d;
    for (std::size_t n = 0; n < 4; ++n, y += 4)
        for (std::size_t m = 0; m < 4; ++m) y[m] = float(int(tq1_trit(b[48 + m], unsigned(n))) - 1) * d;
}
inline void dq_tq2_0(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b + 64);
    for (std::size_t h = 0; h < 2; ++h)
        for (unsigned l = 0; l < 4; ++l, y += 32)
            for (std::size_t m = 0; m < 32; ++m) y[m] = float(int((b[32 * h + m] >> (2 * l)) & 3) - 1) * d;
}

} // namespace detail

/// dst[0, n) = the first n elements of a row stored as `type` at src.
/// argument_error when the type has no dequantiser or n is not a whole number of blocks.
inline void dequantize_row(ggml_type type, const void* src, float* dst, std::size_t n) {
    detail::check_row(type, n, "dequantize_row");
    const auto* s = static_cast<const std::uint8_t*>(src);
    const auto tr = traits_of(type);
    const std::size_t nb = n / tr.block_size;
    switch (type) {
    case ggml_type::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case ggml_type::F16: {
        // src may be only 2-byte aligned: convert through an aligned copy in chunks.
        std::uint16_t tmp[256];
        for (std::size_t i = 0; i < n; i += 256) {
            const std::size_t m = n - i < 256 ? n - i : 256;
            std::memcpy(tmp, s + 2 * i, 2 * m);
            kernels::f16_to_f32(tmp, dst + i, m);
        }
        return;
    }
    case ggml_type::BF16: {
        std::uint16_t tmp[256];
        for (std::size_t i = 0; i < n; i += 256) {
            const std::size_t m = n - i < 256 ? n - i : 256;
            std::memcpy(tmp, s + 2 * i, 2 * m);
            kernels::bf16_to_f32(tmp, dst + i, m);
        }
        return;
    }
    default: break;
    }
    for (std::size_t i = 0; i < nb; ++i, s += tr.type_size, dst += tr.block_size) {
        switch (type) {
        case ggml_type::Q8_0: detail::dq_q8_0(s, dst); break;
        case ggml_type::Q4_0: detail::dq_q4_0(s, dst); break;
        case ggml_type::Q4_1: detail::dq_q4_1(s, dst); break;
        case ggml_type::Q5_0: detail::dq_q5_0(s, dst); break;
        case ggml_type::Q5_1: detail::dq_q5_1(s, dst); break;
        case ggml_type::Q4_K: detail::dq_k45(s, nullptr, s + 16, dst); break;
        case ggml_type::Q5_K: detail::dq_k45(s, s + 16, s + 48, dst); break;
        case ggml_type::Q6_K: detail::dq_q6_K(s, dst); break;
        case ggml_type::Q2_K: detail::dq_q2_K(s, dst); break;
        case ggml_type::Q3_K: detail::dq_q3_K(s, dst); break;
        case ggml_type::IQ4_NL: detail::dq_iq4_nl(s, dst); break;
        case ggml_type::IQ4_XS: detail::dq_iq4_xs(s, dst); break;
        case ggml_type::MXFP4: detail::dq_mxfp4(s, dst); break;
        case ggml_type::Q1_0: detail::dq_q1_0(s, dst); break;
        case ggml_type::Q2_0: detail::dq_q2_0(s, dst); break;
        case ggml_type::TQ1_0: detail::dq_tq1_0(s, dst); break;
        case ggml_type::TQ2_0: detail::dq_tq2_0(s, dst); break;
        case ggml_type::IQ2_XXS: detail::dq_iq2_xxs(s, dst); break;
        case ggml_type::IQ2_XS: detail::dq_iq2_xs(s, dst); break;
        case ggml_type::IQ2_S: detail::dq_iq2_s(s, dst); break;
        case ggml_type::IQ3_XXS: detail::dq_iq3_xxs(s, dst); break;
        case ggml_type::IQ3_S: detail::dq_iq3_s(s, dst); break;
        case ggml_type::IQ1_S: detail::dq_iq1_s(s, dst); break;
        case ggml_type::IQ1_M: detail::dq_iq1_m(s, dst); break;
        case ggml_type::AWQ4: detail::dq_awq4(s, dst); break;
        default: break; // unreachable: check_row refused it
        }
    }
}

} // namespace archetype::quant
