#pragma once
// RWKV-7 "Goose" time mixing of one layer over a batch of rows (ChatRWKV's
// RWKV_x070_TMix, rwkv.cpp and llama.cpp's rwkv7 graph; ../shared/fixtures/README.md §4):
//   x_c = xa + (prev - xa) * lerp_c                   c in (r, w, k, v, a, g)
//   r, k, v = W x_c
//   w  = exp(-e^-0.5 * sigmoid(w0 + tanh(x_w W1w) W2w))   per channel and token
//   a  = sigmoid(a0 + (x_a W1a) W2a)                      in-context learning rate
//   g  = sigmoid(x_g W1g) W2g                             output gate
//   kk = normalize_per_head(k * k_k);  k = k * (1 + (a - 1) * k_a)
//   layer 0: v_first = v;  later: v = v + (v_first - v) * sigmoid(v0 + (x_v W1v) W2v)
//   out = GroupNorm_H(wkv7(r, w, k, v, -kk, kk * a)) + (sum_head r k r_k) v
//   y   = Wo (out * g)
// v_first lives in the workspace for the rows of one forward pass: it is carried
// across the layers of a token, not across tokens, and is not part of the state.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/activation.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/wkv7.hpp"
#include "archetype/layers/rwkv_time_mix.hpp"
#include "archetype/layers/rwkv_weights.hpp"
#include "archetype/layers/rwkv_workspace.hpp"

namespace archetype {

/// Where a layer's v7 time-mix state lies (the same places as v5.2's and v6's).
using rwkv7_state_at = rwkv_state_at;

/// v7 time mix of layer `L` (the model's first RWKV-7 layer when `first_layer`) for
/// rows [0, n): reads ws.xn (the normed input), writes ws.y, updates each segment's
/// att shift and wkv state (at `at`), and reads (or, at the first layer, writes)
/// ws.v_first. Segments: a range of rwkv_segment. Workspace: any struct with the members read below
/// whose data() gives rows x C floats (the decoder core's mixer carves them from its scratch,
/// policies/mixers/rwkv7.hpp).
template <class Segments, class Workspace>
void rwkv7_time_mix(const rwkv_hparams& hp, std::size_t C, std::size_t N, const rwkv_layer_weights& L,
                    const Segments& segs, rwkv7_state_at at, std::size_t n, bool first_layer,
                    Workspace& ws, thread_pool* pool) {
    const std::size_t H = C / N;
    const float* xa = ws.xn.data();
    float* sx = ws.sx.data();
    detail::rwkv_token_shift(segs, 0, at.shift, xa, sx, C);
    float* xs[6] = {ws.xr.data(), ws.xw.data(), ws.xk.data(), ws.xv.data(), ws.xia.data(), ws.xg.data()};
    for (std::size_t mc = 0; mc < 6; ++mc) {
        float* xc = xs[mc];
        const float* mu = L.lerp7[mc];
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < C; ++c) xc[i * C + c] = xa[i * C + c] + sx[i * C + c] * mu[c];
    }
    float *r = ws.r.data(), *k = ws.k.data(), *v = ws.v.data();
    const kernels::matmul_task rkv[3] = {{&L.wr, xs[mix7_r], C, r, C}, {&L.wk, xs[mix7_k], C, k, C},
                                         {&L.wv, xs[mix7_v], C, v, C}};
    kernels::matmul_batch(rkv, n, pool, rwkv_gemm_sum);

    // a low-rank path: out[n x C] = W2 f(W1 x), f applied in place to the rank-D middle
    float* mid = ws.dd.data();
    auto lora = [&](const kernels::weight_view& w1, const kernels::weight_view& w2, const float* x, float* out,
                    void (*f)(float*, std::size_t) noexcept) {
        const std::size_t D = w1.rows;
        kernels::matmul(w1, x, C, n, mid, D, pool, rwkv_gemm_sum);
        if (f) f(mid, n * D);
        kernels::matmul(w2, mid, D, n, out, C, pool, rwkv_gemm_sum);
    };
    float* w = ws.w.data();
    lora(L.decay_w1, L.decay_w2, xs[mix7_w], w, kernels::tanh);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < C; ++c) w[i * C + c] += L.decay[c];
    kernels::sigmoid(w, n * C);
    for (std::size_t e = 0; e < n * C; ++e) w[e] *= -0.606531f; // -e^-0.5, as the reference and llama.cpp
    kernels::exp(w, n * C);
    float* a = ws.ia.data();
    lora(L.iclr_w1, L.iclr_w2, xs[mix7_a], a, nullptr);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < C; ++c) a[i * C + c] += L.iclr0[c];
    kernels::sigmoid(a, n * C);
    float* g = ws.g.data();
    lora(L.gate_w1, L.gate_w2, xs[mix7_g], g, kernels::sigmoid);

    float* vf = ws.v_first.data();
    if (first_layer) {
        std::copy(v, v + n * C, vf);
    } else {
        float* mix = ws.out.data(); // free until the wkv writes it
        lora(L.vres_w1, L.vres_w2, xs[mix7_v], mix, nullptr);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < C; ++c) mix[i * C + c] += L.vres0[c];
        kernels::sigmoid(mix, n * C);
        for (std::size_t e = 0; e < n * C; ++e) v[e] += (vf[e] - v[e]) * mix[e];
    }

    // kk = k * k_k normalised per head (L2, eps 1e-12 as torch's F.normalize); then the
    // wkv's removal key -kk (in xs[mix7_r]'s place: x_r is read) and its write-back kk * a
    float* kk = ws.kk.data();
    float* neg_kk = xs[mix7_r];
    float* kka = xs[mix7_w];
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t o = i * C + h * N;
            double ss = 0;
            for (std::size_t j = 0; j < N; ++j) {
                kk[o + j] = k[o + j] * L.k_k[h * N + j];
                ss += double(kk[o + j]) * double(kk[o + j]);
            }
            const float inv = float(1.0 / std::max(std::sqrt(ss), 1e-12));
            for (std::size_t j = 0; j < N; ++j) {
                kk[o + j] *= inv;
                neg_kk[o + j] = -kk[o + j];
                kka[o + j] = kk[o + j] * a[o + j];
            }
        }
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < C; ++c) k[i * C + c] *= 1.f + (a[i * C + c] - 1.f) * L.k_a[c];

    float* out = ws.out.data();
    for (const auto& s : segs) {
        if (s.len == 0) continue;
        const std::size_t o = s.begin * C;
        kernels::wkv7(s.len, H, N, r + o, w + o, k + o, v + o, neg_kk + o, kka + o, C,
                      s.state + at.wkv, out + o, C, pool);
    }
    for (std::size_t i = 0; i < n; ++i) {
        float* oi = out + i * C;
        detail::rwkv_group_norm(oi, L.lnx_w, L.lnx_b, C, H, hp.gn_eps);
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t o = i * C + h * N;
            double bonus = 0; // sum over the head of r k r_k
            for (std::size_t j = 0; j < N; ++j) bonus += double(r[o + j]) * double(k[o + j]) * double(L.r_k[h * N + j]);
            for (std::size_t j = 0; j < N; ++j) oi[h * N + j] += float(bonus) * v[o + j];
        }
        const float* gi = g + i * C;
        for (std::size_t c = 0; c < C; ++c) oi[c] *= gi[c];
    }
    kernels::matmul(L.wo, out, C, n, ws.y.data(), C, pool, rwkv_gemm_sum);
}

} // namespace archetype
