#pragma once
// RWKV time mixing ("attention") of one layer over a batch of rows, v5.2 or v6
// chosen at compile time by the mixer policy. The projections run as GEMMs over
// all rows at once; the WKV recurrence runs per sequence segment, token by token.
//   v5.2: x_c = xa + (prev - xa) * maa_c                 (maa = 1 - time_mix)
//   v6:   xxx = xa + sx * maa_x;  m = tanh(xxx W1) (5 x D_MIX)
//         x_c = xa + sx * (maa_c + m_c W2_c),  c in (w, k, v, r, g)
//         w   = exp(-exp(w0 + tanh(x_w Wd1) Wd2))
//   r, k, v = W x;  g = silu(Wg x_g);  out = GroupNorm_H(wkv(r, k, v, w, u)) * g;  y = Wo out
#include <cmath>
#include <cstddef>
#include <span>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/activation.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/kernels/wkv.hpp"
#include "archetype/layers/rwkv_weights.hpp"
#include "archetype/layers/rwkv_workspace.hpp"
#include "archetype/policies/rwkv.hpp"

namespace archetype {

namespace detail {
/// ln_x: LayerNorm of each head's slice of x (in place), then w, b. Mean and
/// variance are summed in double: a head's outputs can be nearly equal (spread
/// far below eps), and then the float rounding of the mean, multiplied by
/// 1/sqrt(var + eps), is what reaches the logits. (kernels::group_norm sums in
/// float, which is right for its other users.)
inline void rwkv_group_norm(float* x, const float* w, const float* b, std::size_t C, std::size_t H,
                            float eps) noexcept {
    const std::size_t N = C / H;
    for (std::size_t h = 0; h < H; ++h) {
        float* xh = x + h * N;
        double s = 0;
        for (std::size_t j = 0; j < N; ++j) s += xh[j];
        const double mean = s / double(N);
        double v = 0;
        for (std::size_t j = 0; j < N; ++j) v += (xh[j] - mean) * (xh[j] - mean);
        const double scale = 1.0 / std::sqrt(v / double(N) + double(eps));
        for (std::size_t j = 0; j < N; ++j)
            xh[j] = float((xh[j] - mean) * scale) * w[h * N + j] + b[h * N + j];
    }
}
} // namespace detail

/// Where a layer's time-mix state lies, in floats from a segment's `state`: the
/// token-shift vector [C] and the H x N x N wkv matrix (v5.2, v6 and v7 alike).
struct rwkv_state_at {
    std::size_t shift = 0, wkv = 0;
};

/// Time mix of layer `L` for rows [0, n): reads ws.xn (LN1 output), writes ws.y
/// (the residual update), updates each segment's att shift and wkv state (at `at`).
/// C and N are passed resolved (static when the model type fixes them).
/// Segments: a range of rwkv_segment. Workspace: any struct with the members read below
/// (xn, y, sx, xw, xk, ...) whose data() gives the rows (the decoder core's mixer carves
/// them from its scratch, policies/mixers/rwkv_v5_v6.hpp).
template <class Mixer, class Segments, class Workspace>
void rwkv_time_mix(const rwkv_hparams& hp, std::size_t C, std::size_t N, const rwkv_layer_weights& L,
                   const Segments& segs, rwkv_state_at at, std::size_t n, Workspace& ws, thread_pool* pool) {
    static_assert(detail::rwkv_time_mix<Mixer>, "archetype: rwkv_time_mix needs Rwkv5TimeMix or Rwkv6TimeMix");
    const std::size_t H = C / N;
    const float* xa = ws.xn.data();
    float* sx = ws.sx.data();
    detail::rwkv_token_shift(segs, 0, at.shift, xa, sx, C);

    float* xs[5] = {ws.xw.data(), ws.xk.data(), ws.xv.data(), ws.xr.data(), ws.xg.data()};
    if constexpr (Mixer::ddlerp) {
        const std::size_t DM = hp.n_lora_mix;
        float* xxx = ws.xxx.data();
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < C; ++c) xxx[i * C + c] = xa[i * C + c] + sx[i * C + c] * L.maa_x[c];
        float* m = ws.mix.data();
        kernels::matmul(L.maa_w1, xxx, C, n, m, 5 * DM, pool, rwkv_gemm_sum);
        kernels::tanh(m, n * 5 * DM);
        kernels::matmul_task w2[5];
        for (std::size_t mc = 0; mc < 5; ++mc) w2[mc] = {&L.maa_w2[mc], m + mc * DM, 5 * DM, xs[mc], C};
        kernels::matmul_batch(w2, n, pool, rwkv_gemm_sum); // xc = m_c W2_c
        for (std::size_t mc = 0; mc < 5; ++mc) {
            float* xc = xs[mc];
            const float* maa = L.maa[mc];
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < C; ++c)
                    xc[i * C + c] = xa[i * C + c] + sx[i * C + c] * (maa[c] + xc[i * C + c]);
        }
    } else {
        for (std::size_t mc = mix_k; mc < 5; ++mc) {
            float* xc = xs[mc];
            const float* maa = L.maa[mc];
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < C; ++c) xc[i * C + c] = xa[i * C + c] + sx[i * C + c] * maa[c];
        }
    }

    float *r = ws.r.data(), *k = ws.k.data(), *v = ws.v.data(), *g = ws.g.data();
    // one dispatch for the four C x C projections when decoding (see matmul_batch)
    const kernels::matmul_task rkvg[4] = {{&L.wr, xs[mix_r], C, r, C}, {&L.wk, xs[mix_k], C, k, C},
                                          {&L.wv, xs[mix_v], C, v, C}, {&L.wg, xs[mix_g], C, g, C}};
    kernels::matmul_batch(rkvg, n, pool, rwkv_gemm_sum);
    kernels::silu(g, n * C);

    const float* w = L.decay;
    std::size_t ldw = 0;
    if constexpr (Mixer::dynamic_decay) {
        const std::size_t DD = hp.n_lora_decay;
        float* dd = ws.dd.data();
        kernels::matmul(L.decay_w1, xs[mix_w], C, n, dd, DD, pool, rwkv_gemm_sum);
        kernels::tanh(dd, n * DD);
        float* wt = ws.w.data();
        kernels::matmul(L.decay_w2, dd, DD, n, wt, C, pool, rwkv_gemm_sum);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < C; ++c) wt[i * C + c] = L.decay[c] + wt[i * C + c];
        kernels::exp(wt, n * C);
        for (std::size_t i = 0; i < n * C; ++i) wt[i] = -wt[i];
        kernels::exp(wt, n * C);
        w = wt;
        ldw = C;
    }

    float* out = ws.out.data();
    for (const auto& s : segs) {
        if (s.len == 0) continue;
        const std::size_t o = s.begin * C;
        kernels::wkv(s.len, H, N, r + o, k + o, v + o, w + s.begin * ldw, C, ldw, L.u,
                     s.state + at.wkv, out + o, C, pool);
    }
    for (std::size_t i = 0; i < n; ++i) {
        float* oi = out + i * C;
        detail::rwkv_group_norm(oi, L.lnx_w, L.lnx_b, C, H, hp.gn_eps);
        const float* gi = g + i * C;
        for (std::size_t c = 0; c < C; ++c) oi[c] *= gi[c];
    }
    kernels::matmul(L.wo, out, C, n, ws.y.data(), C, pool, rwkv_gemm_sum);
}

} // namespace archetype
