#pragma once
// Scalar reference dequantisation: element i of a row, computed straight from
// the block layout (blocks.hpp's table), one element at a time. Deliberately a
// different shape of code from dequantize.hpp (which walks blocks) so the two
// check each other; the float expressions follow ggml-quants.c's order of
// operations so both are bit-exact with llama.cpp's dequantize_row_*.
//
// Also the scalar twin of the quantised matmul's numerics (quantize_activations,
// dot_row): the activations rounded to int8 the way ggml's CPU backend does for
// the weight type's vec_dot_type, written after ggml-quants.c's reference
// functions, and the dot product evaluated in double.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/iq_grids.hpp"

namespace archetype::quant::reference {

namespace detail {
/// Byte k of entry i of a grid of 8-byte (or 4-byte) entries, by shifts of the entry.
inline unsigned grid_byte(const std::uint64_t* g, std::size_t i, std::size_t k) { return unsigned(g[i] >> (8 * k)) & 255u; }
inline unsigned grid_byte(const std::uint32_t* g, std::size_t i, std::size_t k) { return unsigned(g[i] >> (8 * k)) & 255u; }
inline bool negated(std::uint8_t signs, std::size_t k) { return (signs >> k) & 1u; }
} // namespace detail

/// Element j (0..255) of a grid-type block b (blocks.hpp's table): group ib = j / 32,
/// l = j % 32 / 8, k = j % 8; ggml's float expression for that element.
inline float grid_element(ggml_type type, const std::uint8_t* b, std::size_t j) {
    using namespace iq_grids;
    const std::size_t ib = j / 32, l = j % 32 / 8, k = j % 8;
    switch (type) {
    case ggml_type::IQ2_XXS: {
        const std::uint32_t w = load_u32(b + 2 + 8 * ib + 4);
        const float db = load_f16(b) * (0.5f + float(w >> 28)) * 0.25f;
        const unsigned g = detail::grid_byte(iq2xxs_grid, b[2 + 8 * ib + l], k);
        return db * float(g) * (detail::negated(ksigns_iq2xs[(w >> (7 * l)) & 127], k) ? -1.f : 1.f);
    }
    case ggml_type::IQ2_XS: case ggml_type::IQ2_S: {
        const std::uint8_t sc = b[(type == ggml_type::IQ2_XS ? 66 : 74) + ib];
        const float db = load_f16(b) * (0.5f + float(l < 2 ? sc & 0xf : sc >> 4)) * 0.25f;
        unsigned g;
        std::uint8_t signs;
        if (type == ggml_type::IQ2_XS) {
            const std::uint16_t q = load_u16(b + 2 + 2 * (4 * ib + l));
            g = detail::grid_byte(iq2xs_grid, q & 511, k);
            signs = ksigns_iq2xs[q >> 9];
        } else {
            const unsigned hi = (unsigned(b[66 + ib]) >> (2 * l)) & 3;
            g = detail::grid_byte(iq2s_grid, b[2 + 4 * ib + l] | hi << 8, k);
            signs = b[34 + 4 * ib + l];
        }
        return db * float(g) * (detail::negated(signs, k) ? -1.f : 1.f);
    }
    case ggml_type::IQ3_XXS: {
        const std::uint32_t w = load_u32(b + 66 + 4 * ib);
        const float db = load_f16(b) * (0.5f + float(w >> 28)) * 0.5f;
        const unsigned g = detail::grid_byte(iq3xxs_grid, b[2 + 8 * ib + 2 * l + k / 4], k % 4);
        return db * float(g) * (detail::negated(ksigns_iq2xs[(w >> (7 * l)) & 127], k) ? -1.f : 1.f);
    }
    case ggml_type::IQ3_S: {
        const float db = load_f16(b) * float(1 + 2 * ((b[106 + ib / 2] >> (4 * (ib % 2))) & 0xf));
        const std::size_t e = 2 * l + k / 4; // which of the group's two 4-entries
        const unsigned hi = (unsigned(b[66 + ib]) >> e) & 1;
        const unsigned g = detail::grid_byte(iq3s_grid, b[2 + 8 * ib + e] | hi << 8, k % 4);
        return db * float(g) * (detail::negated(b[74 + 4 * ib + l], k) ? -1.f : 1.f);
    }
    case ggml_type::IQ1_S: {
        const unsigned qh = load_u16(b + 34 + 2 * ib);
        const float dl = load_f16(b) * float(2 * ((qh >> 12) & 7) + 1);
        const float delta = qh & 0x8000 ? -0.125f : 0.125f;
        const auto g = static_cast<std::int8_t>(detail::grid_byte(iq1s_grid, b[2 + 4 * ib + l] | ((qh >> (3 * l)) & 7) << 8, k));
        return dl * (float(g) + delta);
    }
    case ggml_type::IQ1_M: {
        const unsigned sc = load_u16(b + 48 + 2 * (ib / 2));
        const float dl = iq1_m_d(b) * float(2 * ((sc >> (6 * (ib % 2) + 3 * (l / 2))) & 7) + 1);
        const unsigned nib = unsigned(b[32 + 2 * ib + l / 2]) >> (4 * (l % 2));
        const float delta = nib & 8 ? -0.125f : 0.125f;
        const auto g = static_cast<std::int8_t>(detail::grid_byte(iq1s_grid, b[4 * ib + l] | (nib & 7) << 8, k));
        return dl * (float(g) + delta);
    }
    default:
        throw argument_error("grid_element: type " + std::string(type_name(type)) + " has no grid");
    }
}

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
    case ggml_type::Q2_K:
    case ggml_type::Q3_K: {
        // element j: half h, group g (the quant byte's shift 2g), l within the 32 bytes
        const std::size_t h = j / 128, g = j % 128 / 32, l = j % 32, k = j / 16;
        if (type == ggml_type::Q2_K) {
            const int q = (b[16 + 32 * h + l] >> (2 * g)) & 3;
            const std::uint8_t sc = b[k];
            const float dl = load_f16(b + 80) * float(sc & 0xF), ml = load_f16(b + 82) * float(sc >> 4);
            return dl * float(q) - ml;
        }
        const int low = (b[32 + 32 * h + l] >> (2 * g)) & 3;
        const bool high = (b[l] >> (4 * h + g)) & 1;
        std::uint8_t sc[16];
        q3_K_scales(b + 96, sc);
        return load_f16(b + 108) * float(int(sc[k]) - 32) * float(low - (high ? 0 : 4));
    }
    case ggml_type::IQ4_NL:
    case ggml_type::MXFP4: {
        const bool nl = type == ggml_type::IQ4_NL;
        const std::uint8_t byte = b[(nl ? 2 : 1) + j % 16];
        const unsigned code = j < 16 ? byte & 0xFu : unsigned(byte) >> 4;
        if (nl) return load_f16(b) * float(ggml_tables::kvalues_iq4nl[code]);
        return float(ggml_tables::kvalues_mxfp4[code]) * e8m0_to_fp32_half(b[0]);
    }
    case ggml_type::IQ4_XS: {
        const std::size_t sub = j / 32, l = j % 32;
        const std::uint8_t byte = b[8 + 16 * sub + l % 16];
        const unsigned code = l < 16 ? byte & 0xFu : unsigned(byte) >> 4;
        const float dl = load_f16(b) * float(int(iq4_xs_scale(b, sub)) - 32);
        return dl * float(ggml_tables::kvalues_iq4nl[code]);
    }
    case ggml_type::Q1_0: { // the sign bit alone: +d or -d (no multiply)
        const float d = load_f16(b);
        return ((b[2 + j / 8] >> (j % 8)) & 1) ? d : -d;
    }
    case ggml_type::Q2_0: {
        const int code = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
        return float(code - 1) * load_f16(b);
    }
    case ggml_type::TQ1_0: {
        std::size_t byte;
        unsigned trit;
        tq1_position(j, byte, trit);
        return float(int(tq1_trit(b[byte], trit)) - 1) * load_f16(b + 52);
    }
    case ggml_type::TQ2_0: {
        const std::size_t h = j / 128, g = j % 128 / 32, l = j % 32;
        return float(int((b[32 * h + l] >> (2 * g)) & 3) - 1) * load_f16(b + 64);
    }
    case ggml_type::IQ2_XXS: case ggml_type::IQ2_XS: case ggml_type::IQ2_S: case ggml_type::IQ3_XXS:
    case ggml_type::IQ3_S: case ggml_type::IQ1_S: case ggml_type::IQ1_M:
        return grid_element(type, b, j);
    default:
        throw argument_error("reference dequantisation: type " + std::string(type_name(type)) +
                             " is not supported");
    }
}

/// The whole row through element(): n elements, n a multiple of the block size.
inline void dequantize_row(ggml_type type, const void* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = element(type, src, i);
}

/// ggml's vec_dot_type of a block weight type on the CPU backend (ggml-cpu.c's
/// type_traits_cpu): the format the activations are quantised to.
enum class act_type { q8_0, q8_1, q8_K };
inline act_type activation_type(ggml_type type) {
    switch (type) {
    case ggml_type::Q8_0: case ggml_type::Q4_0: case ggml_type::Q5_0: return act_type::q8_0;
    case ggml_type::Q4_1: case ggml_type::Q5_1: return act_type::q8_1;
    case ggml_type::Q4_K: case ggml_type::Q5_K: case ggml_type::Q6_K: return act_type::q8_K;
    case ggml_type::Q2_K: case ggml_type::Q3_K: case ggml_type::IQ4_XS: return act_type::q8_K;
    case ggml_type::IQ4_NL: case ggml_type::MXFP4: return act_type::q8_0;
    case ggml_type::Q1_0: case ggml_type::Q2_0: return act_type::q8_0;
    case ggml_type::TQ1_0: case ggml_type::TQ2_0: return act_type::q8_K;
    case ggml_type::IQ2_XXS: case ggml_type::IQ2_XS: case ggml_type::IQ2_S: case ggml_type::IQ3_XXS:
    case ggml_type::IQ3_S: case ggml_type::IQ1_S: case ggml_type::IQ1_M: return act_type::q8_K;
    default:
        throw argument_error("reference activation quantisation: type " + std::string(type_name(type)) +
                             " has no int8 activation format");
    }
}

/// One activation row quantised: q[i] * d[i / block] is element i; s[b] is
/// Q8_1's fp16 value of d * sum(q) over block b (0 for the other formats).
struct quantized_activations {
    act_type type = act_type::q8_0;
    std::size_t block = 32;
    std::vector<std::int8_t> q;
    std::vector<float> d, s;
};

/// x[0, n) quantised as ggml quantises src1 for weights of `type`
/// (quantize_row_q8_0/_q8_1 and quantize_row_q8_K_ref), n a multiple of the block.
inline quantized_activations quantize_activations(ggml_type type, const float* x, std::size_t n) {
    quantized_activations a;
    a.type = activation_type(type);
    a.block = a.type == act_type::q8_K ? 256 : 32;
    if (n % a.block != 0)
        throw argument_error("reference activation quantisation: " + std::to_string(n) +
                             " elements is not a multiple of " + std::to_string(a.block));
    const std::size_t nb = n / a.block;
    a.q.resize(n);
    a.d.assign(nb, 0.f);
    a.s.assign(nb, 0.f);
    for (std::size_t b = 0; b < nb; ++b) {
        const float* v = x + b * a.block;
        std::int8_t* q = a.q.data() + b * a.block;
        if (a.type == act_type::q8_K) {
            // the signed element of largest magnitude (the first one on ties)
            float amax = 0.f, max = 0.f;
            for (std::size_t j = 0; j < a.block; ++j)
                if (std::fabs(v[j]) > amax) amax = std::fabs(v[j]), max = v[j];
            if (amax == 0.f) {
                std::fill(q, q + a.block, std::int8_t(0));
                continue;
            }
            const float iscale = -127.f / max;
            for (std::size_t j = 0; j < a.block; ++j)
                q[j] = static_cast<std::int8_t>(std::min(127, int(std::nearbyint(iscale * v[j]))));
            a.d[b] = 1.f / iscale;
        } else {
            float amax = 0.f;
            for (std::size_t j = 0; j < a.block; ++j) amax = std::max(amax, std::fabs(v[j]));
            const float d = amax / 127.f, id = amax != 0.f ? 127.f / amax : 0.f;
            int sum = 0;
            for (std::size_t j = 0; j < a.block; ++j) {
                q[j] = static_cast<std::int8_t>(std::nearbyint(v[j] * id));
                sum += q[j];
            }
            a.d[b] = fp16_to_fp32(fp32_to_fp16(d));
            if (a.type == act_type::q8_1) a.s[b] = fp16_to_fp32(fp32_to_fp16(d * float(sum)));
        }
    }
    return a;
}

/// One output of ggml's quantised dot product, in double: the dequantised
/// weights times q * d, except that for Q8_1 the min's term is m * s with the
/// stored s (ggml_vec_dot_q4_1_q8_1 / _q5_1_q8_1), not m * d * sum(q).
inline double dot_row(ggml_type type, const void* row, const quantized_activations& a, std::size_t n) {
    const auto* base = static_cast<const std::uint8_t*>(row);
    const auto tr = traits_of(type);
    double acc = 0.0;
    if (a.type == act_type::q8_1) {
        for (std::size_t b = 0; b < n / 32; ++b) {
            const std::uint8_t* blk = base + b * tr.type_size;
            const double m = load_f16(blk + 2);
            double dot = 0.0;
            for (std::size_t j = 0; j < 32; ++j)
                dot += (double(element(type, row, 32 * b + j)) - m) * a.q[32 * b + j];
            acc += dot * a.d[b] + m * a.s[b];
        }
        return acc;
    }
    for (std::size_t i = 0; i < n; ++i) acc += double(element(type, row, i)) * a.q[i] * a.d[i / a.block];
    return acc;
}

} // namespace archetype::quant::reference
