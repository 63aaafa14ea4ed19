#pragma once
// Scalar reference dequantisation: element i of a row, computed straight from
// the block layout (blocks.hpp's table), one element at a time. Deliberately a
// different shape of code from dequantize.hpp (which walks blocks) so the two
// check each other; the float expressions follow ggml-quants.c's order of
// operations so both are bit-exact with llama.cpp's dequantize_row_*.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/kernels/quant/blocks.hpp"

namespace archetype::quant::reference {

/// Element i of a row stored as `type` starting at `row`.
inline float element(ggml_type type, const void* row, std::size_t i) {
    const auto* base = static_cast<const std::uint8_t*>(row);
    const auto tr = traits_of(type);
    const std::uint8_t* b = base + (i / tr.block_size) * tr.type_size; // the block holding i
    const std::size_t j = i % tr.block_size;                           // index inside it
    switch (type) {
    case ggml_type::F32: {
        float f;
        std::memcpy(&f, b, 4);
        return f;
    }
    case ggml_type::F16: return fp16_to_fp32(load_u16(b));
    case ggml_type::BF16: return bf16_to_fp32(load_u16(b));
    case ggml_type::Q8_0: {
        const float d = load_f16(b);
        return float(static_cast<std::int8_t>(b[2 + j])) * d;
    }
    case ggml_type::Q4_0: {
        const float d = load_f16(b);
        const std::uint8_t byte = b[2 + j % 16];
        const int q = (j < 16 ? byte & 0xF : byte >> 4) - 8;
        return float(q) * d;
    }
    case ggml_type::Q4_1: {
        const float d = load_f16(b), m = load_f16(b + 2);
        const std::uint8_t byte = b[4 + j % 16];
        const int q = j < 16 ? byte & 0xF : byte >> 4;
        return float(q) * d + m;
    }
    case ggml_type::Q5_0: {
        const float d = load_f16(b);
        const std::uint32_t qh = load_u32(b + 2);
        const std::uint8_t byte = b[6 + j % 16];
        const int lo = j < 16 ? byte & 0xF : byte >> 4;
        const int q = (lo | int((qh >> j) & 1u) << 4) - 16;
        return float(q) * d;
    }
    case ggml_type::Q5_1: {
        const float d = load_f16(b), m = load_f16(b + 2);
        const std::uint32_t qh = load_u32(b + 4);
        const std::uint8_t byte = b[8 + j % 16];
        const int lo = j < 16 ? byte & 0xF : byte >> 4;
        const int q = lo | int((qh >> j) & 1u) << 4;
        return float(q) * d + m;
    }
    case ggml_type::Q4_K:
    case ggml_type::Q5_K: {
        const bool five = type == ggml_type::Q5_K;
        const float d = load_f16(b), dmin = load_f16(b + 2);
        const std::size_t sub = j / 32;  // sub-block 0..7 (its own scale and min)
        const std::size_t chunk = j / 64; // 64 elements share 32 bytes of qs
        const std::size_t l = j % 32;
        const std::uint8_t* qs = b + (five ? 48 : 16);
        const std::uint8_t byte = qs[32 * chunk + l];
        int q = (sub % 2 == 0) ? byte & 0xF : byte >> 4;
        if (five) q += ((b[16 + l] >> sub) & 1) ? 16 : 0;
        std::uint8_t sc, m;
        scale_min_k4(sub, b + 4, sc, m);
        const float d1 = d * float(sc), m1 = dmin * float(m);
        return d1 * float(q) - m1;
    }
    case ggml_type::Q6_K: {
        const std::size_t h = j / 128, r = j % 128, quarter = r / 32, l = r % 32;
        const std::uint8_t* ql = b + 64 * h;
        const std::uint8_t* qh = b + 128 + 32 * h;
        const std::uint8_t lbyte = ql[l + (quarter % 2 ? 32 : 0)];
        const int low = quarter < 2 ? lbyte & 0xF : lbyte >> 4;
        const int high = (qh[l] >> (2 * quarter)) & 3;
        const auto q = static_cast<std::int8_t>((low | high << 4) - 32);
        const auto sc = static_cast<std::int8_t>(b[192 + j / 16]);
        const float d = load_f16(b + 208);
        return d * float(sc) * float(q);
    }
    default:
        throw argument_error("reference dequantisation: type " + std::string(type_name(type)) +
                             " is not supported");
    }
}

/// The whole row through element(): n elements, n a multiple of the block size.
inline void dequantize_row(ggml_type type, const void* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = element(type, src, i);
}

} // namespace archetype::quant::reference
