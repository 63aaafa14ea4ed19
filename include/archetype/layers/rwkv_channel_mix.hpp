#pragma once
// RWKV channel mixing (the feed-forward) of one layer over a batch of rows:
//   x_k = xf + (prev - xf) * maa_k,  x_r = xf + (prev - xf) * maa_r
//   y   = sigmoid(Wr x_r) * (Wv relu(Wk x_k)^2)
// (v5 files store mix coefficients mu; the loader converts them to maa = 1 - mu.)
// RWKV-7's has no receptance (Ffn::receptance false): y = Wv relu(Wk x_k)^2.
#include <cstddef>
#include <span>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/activation.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/layers/rwkv_weights.hpp"
#include "archetype/layers/rwkv_workspace.hpp"

namespace archetype {

/// Channel mix for rows [0, n): reads ws.xn (LN2 output), writes ws.y, updates
/// each segment's ffn shift vector (C floats at `shift_at` from the segment's state).
/// Segments, Workspace: as rwkv_time_mix's (policies/ffn_rwkv.hpp carves the rows from
/// the decoder core's scratch).
template <class Ffn, class Segments, class Workspace>
void rwkv_channel_mix(const rwkv_hparams& hp, std::size_t C, const rwkv_layer_weights& L, const Segments& segs,
                      std::size_t shift_at, std::size_t n, Workspace& ws, thread_pool* pool) {
    const std::size_t F = hp.n_ffn;
    const float* xf = ws.xn.data();
    float* sx = ws.sx.data();
    detail::rwkv_token_shift(segs, 0, shift_at, xf, sx, C);
    float *xk = ws.xk.data(), *xr = ws.xr.data();
    float* hid = ws.hid.data();
    float* y = ws.y.data();
    if constexpr (!Ffn::receptance) {
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < C; ++c) xk[i * C + c] = xf[i * C + c] + sx[i * C + c] * L.ffn_maa_k[c];
        kernels::matmul(L.ffn_k, xk, C, n, hid, F, pool, rwkv_gemm_sum);
        kernels::relu_sq(hid, n * F);
        kernels::matmul(L.ffn_v, hid, F, n, y, C, pool, rwkv_gemm_sum);
        return;
    }
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < C; ++c) {
            const std::size_t e = i * C + c;
            xk[e] = xf[e] + sx[e] * L.ffn_maa_k[c];
            xr[e] = xf[e] + sx[e] * L.ffn_maa_r[c];
        }
    float* rr = ws.r.data();
    // key and receptance share the input size: one dispatch when decoding (see matmul_batch)
    const kernels::matmul_task kr[2] = {{&L.ffn_k, xk, C, hid, F}, {&L.ffn_r, xr, C, rr, C}};
    kernels::matmul_batch(kr, n, pool, rwkv_gemm_sum);
    kernels::relu_sq(hid, n * F);
    kernels::matmul(L.ffn_v, hid, F, n, y, C, pool, rwkv_gemm_sum);
    kernels::sigmoid(rr, n * C);
    for (std::size_t e = 0; e < n * C; ++e) y[e] *= rr[e];
}

} // namespace archetype
