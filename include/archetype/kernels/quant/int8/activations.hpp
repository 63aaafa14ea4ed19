#pragma once
// One token's activations rounded to int8 the way ggml's CPU backend rounds them
// for the weight type's vec_dot_type (Q8_0, Q8_1 or Q8_K), laid out for the
// single-token int8 kernels of every level (int8/row_gemv.hpp: avx2/, neon/): the
// quants contiguous and 32-byte aligned, one float scale per block, and the integer
// sums the kernels need to fold a weight format's zero point or min out of the
// integer dot product:
//   sum32[b]  sum of the quants of 32-element block b (every format);
//   s[b]      Q8_1's fp16 value of d * sum(q) (ggml's `s`, used with Q4_1 / Q5_1 mins);
//   sum16[i]  sum of the quants of 16-element group i (Q8_K's bsums).
// The rounding is quant::reference::quantize_activations' (and ggml's): scale
// amax / 127 (Q8_K: 1 / (-127 / signed max)), quants rounded to nearest even.
// Plain scalar code: it runs once per token and matrix width, O(cols), beside
// the O(rows x cols) product.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/half.hpp"

namespace archetype::quant::int8 {

enum class act_format { q8_0, q8_1, q8_K };

inline act_format act_format_for(ggml_type t) noexcept {
    switch (t) {
    case ggml_type::Q4_1: case ggml_type::Q5_1: return act_format::q8_1;
    case ggml_type::Q4_K: case ggml_type::Q5_K: case ggml_type::Q6_K: return act_format::q8_K;
    case ggml_type::Q2_K: case ggml_type::Q3_K: case ggml_type::IQ4_XS: return act_format::q8_K;
    case ggml_type::TQ1_0: case ggml_type::TQ2_0: return act_format::q8_K;
    case ggml_type::IQ2_XXS: case ggml_type::IQ2_XS: case ggml_type::IQ2_S: case ggml_type::IQ3_XXS:
    case ggml_type::IQ3_S: case ggml_type::IQ1_S: case ggml_type::IQ1_M: return act_format::q8_K;
    default: return act_format::q8_0;
    }
}

/// The rounded activations of one token (cols elements).
struct act_row {
    const std::int8_t* q = nullptr; // cols quants, 32-byte aligned
    const float* d = nullptr;       // per 32 (Q8_0 / Q8_1) or 256 (Q8_K) elements
    const float* s = nullptr;       // per 32: Q8_1's s
    const std::int32_t* sum32 = nullptr;
    const std::int32_t* sum16 = nullptr;
};

/// Storage for n_tok tokens' act_rows of one width, allocated once per call.
class act_buffer {
public:
    act_buffer(act_format f, std::size_t cols, std::size_t n_tok)
        : f_(f), cols_(cols), nb_(f == act_format::q8_K ? cols / 256 : cols / 32),
          q_(n_tok * cols + 32), d_(n_tok * nb_), s_(n_tok * (cols / 32)), sum32_(n_tok * (cols / 32)),
          sum16_(n_tok * (cols / 16)) {
        // cols is a multiple of 32, so every token's quants stay 32-byte aligned
        const auto p = reinterpret_cast<std::uintptr_t>(q_.data());
        q0_ = q_.data() + (((p + 31) & ~std::uintptr_t(31)) - p);
    }
    act_buffer(const act_buffer&) = delete;
    act_buffer& operator=(const act_buffer&) = delete;

    /// Rounds token k's activations x[0, cols) into its slot.
    void quantize(std::size_t k, const float* x) noexcept {
        std::int8_t* q = q0_ + k * cols_;
        float* d = d_.data() + k * nb_;
        if (f_ == act_format::q8_K) {
            for (std::size_t b = 0; b < nb_; ++b) {
                const float* v = x + 256 * b;
                std::int8_t* qb = q + 256 * b;
                float amax = 0.f, max = 0.f; // the signed element of largest magnitude, first on ties
                for (std::size_t j = 0; j < 256; ++j)
                    if (std::fabs(v[j]) > amax) amax = std::fabs(v[j]), max = v[j];
                if (amax == 0.f) {
                    std::fill(qb, qb + 256, std::int8_t(0));
                    d[b] = 0.f;
                    continue;
                }
                const float iscale = -127.f / max;
                for (std::size_t j = 0; j < 256; ++j)
                    qb[j] = static_cast<std::int8_t>(std::min(127, int(std::nearbyint(iscale * v[j]))));
                d[b] = 1.f / iscale;
            }
        } else {
            float* s = s_.data() + k * (cols_ / 32);
            for (std::size_t b = 0; b < nb_; ++b) {
                const float* v = x + 32 * b;
                std::int8_t* qb = q + 32 * b;
                float amax = 0.f;
                for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
                const float db = amax / 127.f, id = amax != 0.f ? 127.f / amax : 0.f;
                int sum = 0;
                for (std::size_t j = 0; j < 32; ++j) {
                    qb[j] = static_cast<std::int8_t>(std::nearbyint(v[j] * id));
                    sum += qb[j];
                }
                d[b] = fp16_to_fp32(fp32_to_fp16(db));
                s[b] = f_ == act_format::q8_1 ? fp16_to_fp32(fp32_to_fp16(db * float(sum))) : 0.f;
            }
        }
        std::int32_t* s32 = sum32_.data() + k * (cols_ / 32);
        std::int32_t* s16 = sum16_.data() + k * (cols_ / 16);
        for (std::size_t g = 0; g < cols_ / 16; ++g) {
            std::int32_t t = 0;
            for (std::size_t j = 0; j < 16; ++j) t += q[16 * g + j];
            s16[g] = t;
        }
        for (std::size_t b = 0; b < cols_ / 32; ++b) s32[b] = s16[2 * b] + s16[2 * b + 1];
    }

    act_row row(std::size_t k) const noexcept {
        return {q0_ + k * cols_, d_.data() + k * nb_, s_.data() + k * (cols_ / 32),
                sum32_.data() + k * (cols_ / 32), sum16_.data() + k * (cols_ / 16)};
    }

private:
    act_format f_;
    std::size_t cols_, nb_;
    std::vector<std::int8_t> q_;
    std::int8_t* q0_ = nullptr;
    std::vector<float> d_, s_;
    std::vector<std::int32_t> sum32_, sum16_;
};

} // namespace archetype::quant::int8
