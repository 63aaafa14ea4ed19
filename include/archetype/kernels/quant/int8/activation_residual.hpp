#pragma once
// The rounding error of ggml's int8 activations: r = x - d * q, where q and d are the
// quants and block scale that the int8 kernels give x for a weight `type`
// (act_buffer::quantize: Q8_0 / Q8_1 / Q8_K, ggml's rounding). Feeding r through the
// same int8 kernels as a second product and adding the two results gives a product with
// about 15-bit activations for twice the int8 work: kernels::matmul's int8x2 batch mode
// (kernels/batch_activations.hpp). Its accuracy rests on q and d here being the kernels'
// own, so this uses the engines' quantiser rather than a copy of its rules.
#include <cstddef>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"

namespace archetype::quant::int8 {

/// r[t * cols + i] = x[t * ldx + i] - its int8 rounding for `type`, over n_tok tokens of
/// cols elements (cols a multiple of the activation block: kernels::matmul checks it).
inline void activation_residual(ggml_type type, const float* x, std::size_t ldx, std::size_t n_tok, std::size_t cols,
                                float* r, thread_pool* pool) {
    const act_format f = act_format_for(type);
    const std::size_t block = f == act_format::q8_K ? 256 : 32;
    act_buffer acts(f, cols, n_tok);
    auto residual = [&](std::size_t b, std::size_t e) {
        for (std::size_t k = b; k < e; ++k) {
            acts.quantize(k, x + k * ldx);
            const act_row a = acts.row(k);
            const float* xk = x + k * ldx;
            float* rk = r + k * cols;
            for (std::size_t i = 0; i < cols; ++i) rk[i] = xk[i] - a.d[i / block] * float(a.q[i]);
        }
    };
    if (pool && n_tok > 1) pool->parallel_for(n_tok, residual); // each token its own slot
    else residual(0, n_tok);
}

} // namespace archetype::quant::int8
