#pragma once
// Portable matmul for every stored type: each weight row is dequantised into a
// row-sized scratch buffer (one row, never the matrix) and dotted with every
// token while it is hot in L1. The fallback when the CPU lacks both AVX-512 VNNI
// and AVX2 + FMA + F16C, and a second implementation the tests compare the fast
// paths against.
//
// Block types use llama.cpp's numerics, as the VNNI engine does: each token is
// first rounded the way ggml's CPU backend quantises activations for the weight
// type (docs/weights.md, "Numerics"), then dotted in float; for Q4_1 / Q5_1 the
// min's term is corrected to ggml's fp16 block sum s. Float types are exact. The types
// of quant/unpack.hpp (ternary, grid), Q1_0 and Q2_0 are dotted in integers instead
// (matmul_unpacked, matmul_levels).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/dequantize.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"
#include "archetype/kernels/quant/unpack.hpp"

namespace archetype::quant::generic {

namespace detail {

enum class act { exact, q8_0, q8_1, q8_K };

inline act activations_for(ggml_type type) noexcept {
    switch (type) {
    case ggml_type::Q8_0: case ggml_type::Q4_0: case ggml_type::Q5_0: return act::q8_0;
    case ggml_type::Q4_1: case ggml_type::Q5_1: return act::q8_1;
    case ggml_type::Q4_K: case ggml_type::Q5_K: case ggml_type::Q6_K: return act::q8_K;
    case ggml_type::Q2_K: case ggml_type::Q3_K: case ggml_type::IQ4_XS: return act::q8_K;
    case ggml_type::IQ4_NL: case ggml_type::MXFP4: case ggml_type::Q1_0: case ggml_type::Q2_0: return act::q8_0;
    case ggml_type::TQ1_0: case ggml_type::TQ2_0: return act::q8_K;
    case ggml_type::IQ2_XXS: case ggml_type::IQ2_XS: case ggml_type::IQ2_S: case ggml_type::IQ3_XXS:
    case ggml_type::IQ3_S: case ggml_type::IQ1_S: case ggml_type::IQ1_M: return act::q8_K;
    default: return act::exact;
    }
}

inline float fp16_round(float f) noexcept { return fp16_to_fp32(fp32_to_fp16(f)); }

/// x[0, n) rounded to int8 and back (xq = q * d), per 32 (Q8_0 / Q8_1: d in fp16)
/// or 256 (Q8_K: d = 1 / (127 / amax)) elements; for Q8_1, corr[b] = s - d * sum(q)
/// with ggml's s = fp16(amax / 127 * sum(q)).
inline void round_activations(act a, const float* x, std::size_t n, float* xq, float* corr) noexcept {
    const std::size_t blk = a == act::q8_K ? 256 : 32;
    for (std::size_t b = 0; b < n / blk; ++b) {
        const float* v = x + b * blk;
        float amax = 0.f;
        for (std::size_t j = 0; j < blk; ++j) amax = std::max(amax, std::abs(v[j]));
        const float mul = amax != 0.f ? 127.f / amax : 0.f;
        const float d = a == act::q8_K ? (amax != 0.f ? 1.f / mul : 0.f) : fp16_round(amax / 127.f);
        int sum = 0;
        for (std::size_t j = 0; j < blk; ++j) {
            const int q = int(std::nearbyint(v[j] * mul)); // round to nearest even
            sum += q;
            xq[b * blk + j] = float(q) * d;
        }
        if (a == act::q8_1) corr[b] = fp16_round(amax / 127.f * float(sum)) - d * float(sum);
    }
}

/// The types of quant/unpack.hpp: ggml's numerics in integers, as the int8 engines
/// (int8/row_dot.hpp) compute them: each block unpacked once per row, its signed
/// integers dotted with every token's int8 activations per sub-block, times d * dx.
/// (Dequantising and dotting in float, as for the other types, loses the 1e-12 NMSE
/// against ggml's numerics where these zero-mean weights' outputs cancel.)
inline void matmul_unpacked(ggml_type type, const std::uint8_t* w, std::size_t rows, std::size_t cols,
                            const float* x, std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy,
                            thread_pool* pool) {
    const auto t = traits_of(type);
    const std::size_t nb = cols / 256, row_bytes = nb * t.type_size;
    const unpack::unpacker fn = unpack::unpacker_of(type);
    int8::act_buffer acts(int8::act_format::q8_K, cols, n_tok);
    for (std::size_t k = 0; k < n_tok; ++k) acts.quantize(k, x + k * ldx);
    auto work = [&](std::size_t b, std::size_t e) {
        std::vector<float> acc(n_tok);
        unpack::block256 u;
        for (std::size_t r = b; r < e; ++r) {
            std::fill(acc.begin(), acc.end(), 0.f);
            for (std::size_t blk = 0; blk < nb; ++blk) {
                const std::uint8_t* p = w + r * row_bytes + blk * t.type_size;
                fn(p, u);
                for (std::size_t k = 0; k < n_tok; ++k) {
                    const int8::act_row a = acts.row(k);
                    const std::int8_t* q = a.q + 256 * blk;
                    std::int32_t isum = 0;
                    for (std::size_t sb = 0; sb < 16; ++sb) {
                        std::int32_t s = 0;
                        for (std::size_t j = 16 * sb; j < 16 * sb + 16; ++j) s += std::int32_t(u.v[j]) * q[j];
                        isum += s * u.scale[sb];
                    }
                    acc[k] = std::fma(float(isum), u.d * a.d[blk], acc[k]);
                }
            }
            for (std::size_t k = 0; k < n_tok; ++k) y[k * ldy + r] = acc[k];
        }
    };
    if (pool) pool->parallel_for(rows, work); else work(0, rows);
}

/// Q1_0 and Q2_0 the same way (their zero-mean levels cancel as those types' do): the
/// signed levels of each 32 elements dotted with Q8_0 activations in integers, times d * dx.
inline void matmul_levels(ggml_type type, const std::uint8_t* w, std::size_t rows, std::size_t cols,
                          const float* x, std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy,
                          thread_pool* pool) {
    const auto t = traits_of(type);
    const std::size_t nb = cols / t.block_size, subs = t.block_size / 32, row_bytes = nb * t.type_size;
    int8::act_buffer acts(int8::act_format::q8_0, cols, n_tok);
    for (std::size_t k = 0; k < n_tok; ++k) acts.quantize(k, x + k * ldx);
    auto work = [&](std::size_t b, std::size_t e) {
        std::vector<float> acc(n_tok);
        std::int8_t v[128];
        for (std::size_t r = b; r < e; ++r) {
            std::fill(acc.begin(), acc.end(), 0.f);
            for (std::size_t blk = 0; blk < nb; ++blk) {
                const std::uint8_t* p = w + r * row_bytes + blk * t.type_size;
                for (std::size_t j = 0; j < t.block_size; ++j)
                    v[j] = std::int8_t(type == ggml_type::Q1_0 ? q1_0_level(p, j) : q2_0_level(p, j));
                const float d = load_f16(p);
                for (std::size_t k = 0; k < n_tok; ++k) {
                    const int8::act_row a = acts.row(k);
                    for (std::size_t sb = 0; sb < subs; ++sb) {
                        const std::int8_t* q = a.q + 32 * (subs * blk + sb);
                        std::int32_t s = 0;
                        for (std::size_t j = 0; j < 32; ++j) s += std::int32_t(v[32 * sb + j]) * q[j];
                        acc[k] = std::fma(float(s), d * a.d[subs * blk + sb], acc[k]);
                    }
                }
            }
            for (std::size_t k = 0; k < n_tok; ++k) y[k * ldy + r] = acc[k];
        }
    };
    if (pool) pool->parallel_for(rows, work); else work(0, rows);
}

} // namespace detail

inline void matmul(ggml_type type, const void* W, std::size_t rows, std::size_t cols, const float* x,
                   std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto t = traits_of(type);
    const std::size_t row_bytes = cols / t.block_size * t.type_size;
    const auto* w = static_cast<const std::uint8_t*>(W);
    if (unpack::unpacks(type)) return detail::matmul_unpacked(type, w, rows, cols, x, ldx, n_tok, y, ldy, pool);
    if (type == ggml_type::Q1_0 || type == ggml_type::Q2_0)
        return detail::matmul_levels(type, w, rows, cols, x, ldx, n_tok, y, ldy, pool);
    const detail::act a = detail::activations_for(type);
    std::vector<float> xq, corr;
    const float* xs = x;
    std::size_t lds = ldx;
    if (a != detail::act::exact) {
        xq.resize(n_tok * cols);
        corr.resize(n_tok * (cols / 32));
        for (std::size_t k = 0; k < n_tok; ++k)
            detail::round_activations(a, x + k * ldx, cols, xq.data() + k * cols, corr.data() + k * (cols / 32));
        xs = xq.data();
        lds = cols;
    }
    auto work = [&](std::size_t b, std::size_t e) {
        std::vector<float> buf(cols);
        for (std::size_t r = b; r < e; ++r) {
            const std::uint8_t* row = w + r * row_bytes;
            dequantize_row(type, row, buf.data(), cols);
            for (std::size_t k = 0; k < n_tok; ++k) {
                float v = kernels::dot(xs + k * lds, buf.data(), cols);
                if (a == detail::act::q8_1) // the min (bytes 2-3 of each block) times Q8_1's s, not d * sum(q)
                    for (std::size_t blk = 0; blk < cols / 32; ++blk)
                        v += load_f16(row + blk * t.type_size + 2) * corr[k * (cols / 32) + blk];
                y[k * ldy + r] = v;
            }
        }
    };
    if (pool) pool->parallel_for(rows, work); else work(0, rows);
}

} // namespace archetype::quant::generic
