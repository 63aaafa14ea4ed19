#pragma once
// Quantisation of F32 rows into llama.cpp block formats, bit-exact with
// ggml-quants.c's quantize_row_*_ref (the deterministic reference llama.cpp's
// own quantizer uses when no importance matrix is given): the same absmax /
// min-max scale choice, the same rounding (roundf for Q8_0, truncation of
// x + 8.5 for Q4_0 ...), the same F16 rounding of the scales.
// Supported targets: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, TQ1_0, TQ2_0, Q1_0, Q2_0, Q2_K, Q3_K,
// IQ4_NL, IQ4_XS, MXFP4 (quantize_search.hpp), and the plain F32, F16, BF16.
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/quantize_search.hpp"

namespace archetype::quant {

namespace detail {

inline void q_q8_0(const float* x, std::uint8_t* b) noexcept {
    float amax = 0.f;
    for (std::size_t j = 0; j < 32; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_f16(b, d);
    for (std::size_t j = 0; j < 32; ++j)
        b[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[j] * id)));
}

// The value of largest magnitude, keeping its sign (first one on ties).
inline float signed_absmax(const float* x) noexcept {
    float amax = 0.f, max = 0.f;
    for (std::size_t j = 0; j < 32; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}
inline void min_max(const float* x, float& mn, float& mx) noexcept {
    mn = FLT_MAX;
    mx = -FLT_MAX;
    for (std::size_t j = 0; j < 32; ++j) {
        if (x[j] < mn) mn = x[j];
        if (x[j] > mx) mx = x[j];
    }
}
// ggml truncates towards zero through int8_t, then clamps from above only.
inline std::uint8_t trunc_clamp(float v, int hi) noexcept {
    const int t = static_cast<std::int8_t>(v);
    return static_cast<std::uint8_t>(t < hi ? t : hi);
}

inline void q_q4_0(const float* x, std::uint8_t* b) noexcept {
    const float d = signed_absmax(x) / -8.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_f16(b, d);
    for (std::size_t j = 0; j < 16; ++j) {
        const std::uint8_t lo = trunc_clamp(x[j] * id + 8.5f, 15);
        const std::uint8_t hi = trunc_clamp(x[j + 16] * id + 8.5f, 15);
        b[2 + j] = static_cast<std::uint8_t>(lo | hi << 4);
    }
}
inline void q_q4_1(const float* x, std::uint8_t* b) noexcept {
    float mn, mx;
    min_max(x, mn, mx);
    const float d = (mx - mn) / 15.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_f16(b, d);
    store_f16(b + 2, mn);
    for (std::size_t j = 0; j < 16; ++j) {
        const std::uint8_t lo = trunc_clamp((x[j] - mn) * id + 0.5f, 15);
        const std::uint8_t hi = trunc_clamp((x[j + 16] - mn) * id + 0.5f, 15);
        b[4 + j] = static_cast<std::uint8_t>(lo | hi << 4);
    }
}
inline void q_q5_0(const float* x, std::uint8_t* b) noexcept {
    const float d = signed_absmax(x) / -16.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_f16(b, d);
    std::uint32_t qh = 0;
    for (std::size_t j = 0; j < 16; ++j) {
        const std::uint8_t q0 = trunc_clamp(x[j] * id + 16.5f, 31);
        const std::uint8_t q1 = trunc_clamp(x[j + 16] * id + 16.5f, 31);
        b[6 + j] = static_cast<std::uint8_t>((q0 & 0xF) | (q1 & 0xF) << 4);
        qh |= std::uint32_t(q0 >> 4 & 1) << j;
        qh |= std::uint32_t(q1 >> 4 & 1) << (j + 16);
    }
    std::memcpy(b + 2, &qh, 4);
}
inline void q_q5_1(const float* x, std::uint8_t* b) noexcept {
    float mn, mx;
    min_max(x, mn, mx);
    const float d = (mx - mn) / 31.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_f16(b, d);
    store_f16(b + 2, mn);
    std::uint32_t qh = 0;
    for (std::size_t j = 0; j < 16; ++j) {
        // ggml casts straight to uint8_t here (no clamp): the value is in [0, 31.5].
        const auto q0 = static_cast<std::uint8_t>((x[j] - mn) * id + 0.5f);
        const auto q1 = static_cast<std::uint8_t>((x[j + 16] - mn) * id + 0.5f);
        b[8 + j] = static_cast<std::uint8_t>((q0 & 0xF) | (q1 & 0xF) << 4);
        qh |= std::uint32_t(q0 >> 4 & 1) << j;
        qh |= std::uint32_t(q1 >> 4 & 1) << (j + 16);
    }
    std::memcpy(b + 4, &qh, 4);
}

// The ternary types (quantize_row_tq1_0_ref / _tq2_0_ref): d = the block's absolute
// max, each element rounded (half away from zero, lroundf) to -1, 0 or 1 of d.
inline float abs_max(const float* x, std::size_t n) noexcept {
    float amax = 0.f;
    for (std::size_t j = 0; j < n; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    return amax;
}
inline int trit_of(float v, float id) noexcept { return int(std::lround(v * id)) + 1; } // 0, 1, 2
/// TQ1_0's byte for the base-3 number q of its trits: ceil(256 q / 243).
inline std::uint8_t tq1_byte(unsigned q) noexcept { return static_cast<std::uint8_t>((q * 256 + 242) / 243); }
inline void q_tq1_0(const float* x, std::uint8_t* b) noexcept {
    const float d = abs_max(x, 256), id = d != 0.f ? 1.f / d : 0.f;
    store_f16(b + 52, d);
    // 5 trits per byte: qs[m] over 32 bytes (elements m + 32n), qs[32 + m] over 16
    // (160 + m + 16n), the first trit most significant
    for (std::size_t m = 0; m < 32; ++m) {
        unsigned q = 0;
        for (std::size_t n = 0; n < 5; ++n) q = q * 3 + unsigned(trit_of(x[m + 32 * n], id));
        b[m] = tq1_byte(q);
    }
    for (std::size_t m = 0; m < 16; ++m) {
        unsigned q = 0;
        for (std::size_t n = 0; n < 5; ++n) q = q * 3 + unsigned(trit_of(x[160 + m + 16 * n], id));
        b[32 + m] = tq1_byte(q);
    }
    // 4 trits in qh[j] (240 + j + 4n), shifted up one trit
    for (std::size_t j = 0; j < 4; ++j) {
        unsigned q = 0;
        for (std::size_t n = 0; n < 4; ++n) q = q * 3 + unsigned(trit_of(x[240 + j + 4 * n], id));
        b[48 + j] = tq1_byte(q * 3);
    }
}
inline void q_tq2_0(const float* x, std::uint8_t* b) noexcept {
    const float d = abs_max(x, 256), id = d != 0.f ? 1.f / d : 0.f;
    store_f16(b + 64, d);
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t m = 0; m < 32; ++m) {
            unsigned q = 0;
            for (std::size_t n = 0; n < 4; ++n) q |= unsigned(trit_of(x[128 * h + m + 32 * n], id) & 3) << (2 * n);
            b[32 * h + m] = static_cast<std::uint8_t>(q);
        }
}

// The 2026 low-bit types (quantize_row_q1_0_ref / _q2_0_ref).
inline void q_q1_0(const float* x, std::uint8_t* b) noexcept {
    float sum_abs = 0.f;
    for (std::size_t j = 0; j < 128; ++j) sum_abs += std::fabs(x[j]);
    store_f16(b, sum_abs / 128);
    for (std::size_t j = 0; j < 16; ++j) b[2 + j] = 0;
    for (std::size_t j = 0; j < 128; ++j)
        if (x[j] >= 0.0f) b[2 + j / 8] = static_cast<std::uint8_t>(b[2 + j / 8] | 1u << (j % 8));
}
inline void q_q2_0(const float* x, std::uint8_t* b) noexcept {
    const float d = abs_max(x, 64), id = d > 0.0f ? 1.0f / d : 0.0f;
    store_f16(b, d);
    for (std::size_t j = 0; j < 16; ++j) b[2 + j] = 0;
    for (std::size_t j = 0; j < 64; ++j) {
        int q = int(std::round(x[j] * id)) + 1;
        q = q < 0 ? 0 : q > 3 ? 3 : q;
        b[2 + j / 4] = static_cast<std::uint8_t>(b[2 + j / 4] | unsigned(q) << (2 * (j % 4)));
    }
}

} // namespace detail

/// True when quantize_row can produce `type`.
constexpr bool can_quantize(ggml_type t) noexcept {
    switch (t) {
    case ggml_type::F32: case ggml_type::F16: case ggml_type::BF16: case ggml_type::Q8_0:
    case ggml_type::Q4_0: case ggml_type::Q4_1: case ggml_type::Q5_0: case ggml_type::Q5_1:
    case ggml_type::TQ1_0: case ggml_type::TQ2_0: case ggml_type::Q2_K: case ggml_type::Q3_K:
    case ggml_type::MXFP4: case ggml_type::IQ4_NL: case ggml_type::IQ4_XS: case ggml_type::Q1_0:
    case ggml_type::Q2_0:
        return true;
    default:
        return false;
    }
}

/// Encodes n floats (a multiple of the type's block size) as `type` into dst,
/// which holds n / block_size * type_size bytes. argument_error naming the type
/// when it cannot be produced, or naming n when it is not whole blocks.
inline void quantize_row(ggml_type type, const float* src, void* dst, std::size_t n) {
    if (!can_quantize(type))
        throw argument_error("quantize_row: cannot quantise to type " + std::string(type_name(type)));
    const auto tr = traits_of(type);
    if (n % tr.block_size != 0)
        throw argument_error("quantize_row: " + std::to_string(n) + " elements is not a multiple of the " +
                             std::string(type_name(type)) + " block size " + std::to_string(tr.block_size));
    auto* d = static_cast<std::uint8_t*>(dst);
    switch (type) {
    case ggml_type::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case ggml_type::F16:
        for (std::size_t i = 0; i < n; ++i) store_u16(d + 2 * i, fp32_to_fp16(src[i]));
        return;
    case ggml_type::BF16:
        for (std::size_t i = 0; i < n; ++i) store_u16(d + 2 * i, fp32_to_bf16(src[i]));
        return;
    default: break;
    }
    for (std::size_t i = 0; i < n / tr.block_size; ++i, src += tr.block_size, d += tr.type_size) {
        switch (type) {
        case ggml_type::Q8_0: detail::q_q8_0(src, d); break;
        case ggml_type::Q4_0: detail::q_q4_0(src, d); break;
        case ggml_type::Q4_1: detail::q_q4_1(src, d); break;
        case ggml_type::Q5_0: detail::q_q5_0(src, d); break;
        case ggml_type::Q5_1: detail::q_q5_1(src, d); break;
        case ggml_type::TQ1_0: detail::q_tq1_0(src, d); break;
        case ggml_type::TQ2_0: detail::q_tq2_0(src, d); break;
        case ggml_type::Q2_K: detail::q_q2_K(src, d); break;
        case ggml_type::Q3_K: detail::q_q3_K(src, d); break;
        case ggml_type::MXFP4: detail::q_mxfp4(src, d); break;
        case ggml_type::IQ4_NL: detail::q_iq4(src, d, false); break;
        case ggml_type::IQ4_XS: detail::q_iq4(src, d, true); break;
        case ggml_type::Q1_0: detail::q_q1_0(src, d); break;
        case ggml_type::Q2_0: detail::q_q2_0(src, d); break;
        default: break;
        }
    }
}

} // namespace archetype::quant
