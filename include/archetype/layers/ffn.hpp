#pragma once
// Feed-forward blocks at run time, driven by the ffn policy (policies/ffn.hpp):
//
//   SwiGLU   y = down( silu(gate x) * up x )
//   GeGLU    y = down( gelu(gate x) * up x )
//   GeluMLP  y = down( gelu(up x + b_up) ) + b_down        (biases optional)
//   MoE<E,K,FFN>  router logits r = W_r x; softmax over the E experts; the top K
//            (ties: lower index first) weighted by their probabilities divided by
//            the sum of the K selected (Mixtral's renormalisation), each a FFN.
//
// One call handles n_tok rows (prefill: the whole chunk through GEMM; decode: one
// row per sequence). y is overwritten (the caller adds the residual). Buffers
// live in an ffn_workspace owned by the caller: after the first call of a given
// size nothing is allocated. Shared by Decoder and Encoder.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/activation.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/softmax.hpp"
#include "archetype/policies/ffn.hpp"

namespace archetype::layers {

/// Weights of one dense feed-forward block (views into the model file).
struct ffn_weights {
    kernels::weight_view gate{}, up{}, down{}; // gate unused by GeluMLP
    const float* gate_bias = nullptr;           // [n_ff] or null
    const float* up_bias = nullptr;             // [n_ff] or null
    const float* down_bias = nullptr;           // [n_embd] or null
    std::array<float, 4> act{};                 // the policy's per-layer activation parameters (xIELU)
    std::size_t n_ff() const noexcept { return up.rows; }
    std::size_t n_embd() const noexcept { return down.rows; }
};

/// Weights of a mixture of experts: the router and one dense block per expert.
struct moe_weights {
    kernels::weight_view router{};  // [n_expert rows x n_embd]
    std::vector<ffn_weights> experts;
    std::size_t n_used = 1;         // top-k
    std::size_t n_embd() const noexcept { return router.cols; }
};

/// Reusable buffers of the feed-forward computation.
struct ffn_workspace {
    std::vector<float> a, b;            // [n_tok x n_ff] hidden activations
    std::vector<float> logits;          // [n_tok x n_expert]
    std::vector<float> xg, yg;          // gathered rows of one expert
    std::vector<std::size_t> rows;      // token index per gathered row
    std::vector<float> row_w;           // routing weight per gathered row
    std::vector<std::size_t> sel;       // [n_tok x k] selected experts
    std::vector<float> sel_w;           // [n_tok x k] their weights

    static void grow(std::vector<float>& v, std::size_t n) {
        if (v.size() < n) v.resize(n);
    }
};

namespace detail {
template <class T>
inline constexpr bool is_moe_v = false;
template <dim_t E, dim_t K, class F>
inline constexpr bool is_moe_v<MoE<E, K, F>> = true;

inline void add_bias(float* y, std::size_t ld, std::size_t n_tok, const float* b, std::size_t n) noexcept {
    if (!b) return;
    for (std::size_t t = 0; t < n_tok; ++t)
        for (std::size_t i = 0; i < n; ++i) y[t * ld + i] += b[i];
}

/// Dense block; FFN is any dense policy with an ffn_impl (SwiGLU, GeGLU, GeluMLP, a user's).
template <class FFN>
void dense_ffn(const ffn_weights& w, const float* x, std::size_t ldx, std::size_t n_tok, float* y,
               std::size_t ldy, ffn_workspace& ws, thread_pool* pool) {
    const std::size_t n_ff = w.n_ff();
    ffn_workspace::grow(ws.a, n_tok * n_ff);
    float* a = ws.a.data();
    if constexpr (FFN::gated) { // up and gate in one dispatch when decoding one token (see matmul_batch)
        ffn_workspace::grow(ws.b, n_tok * n_ff);
        const kernels::matmul_task ug[] = {{&w.up, x, ldx, a, n_ff}, {&w.gate, x, ldx, ws.b.data(), n_ff}};
        kernels::matmul_batch(ug, n_tok, pool);
    } else {
        kernels::matmul(w.up, x, ldx, n_tok, a, n_ff, pool);
    }
    add_bias(a, n_ff, n_tok, w.up_bias, n_ff);
    if constexpr (FFN::gated) {
        float* g = ws.b.data();
        add_bias(g, n_ff, n_tok, w.gate_bias, n_ff);
        ffn_impl<FFN>::apply(g, a, n_tok * n_ff);
        a = g;
    } else if constexpr (requires { ffn_impl<FFN>::apply(w.act, a, n_tok * n_ff); }) {
        ffn_impl<FFN>::apply(w.act, a, n_tok * n_ff); // an activation with per-layer parameters
    } else {
        ffn_impl<FFN>::apply(a, n_tok * n_ff);
    }
    kernels::matmul(w.down, a, n_ff, n_tok, y, ldy, pool);
    add_bias(y, ldy, n_tok, w.down_bias, w.n_embd());
}
} // namespace detail

/// The weights type a feed-forward policy needs.
template <class FFN>
using ffn_weights_t = std::conditional_t<detail::is_moe_v<FFN>, moe_weights, ffn_weights>;

/// y[n_tok x n_embd] = FFN(x[n_tok x n_embd]) for the policy FFN.
template <class FFN>
void feed_forward(const ffn_weights_t<FFN>& w, const float* x, std::size_t ldx, std::size_t n_tok, float* y,
                  std::size_t ldy, ffn_workspace& ws, thread_pool* pool = nullptr) {
    if constexpr (!detail::is_moe_v<FFN>) {
        detail::dense_ffn<FFN>(w, x, ldx, n_tok, y, ldy, ws, pool);
    } else {
        using Expert = typename FFN::expert;
        const std::size_t E = w.experts.size(), K = w.n_used, n_embd = w.n_embd();
        ffn_workspace::grow(ws.logits, n_tok * E);
        kernels::matmul(w.router, x, ldx, n_tok, ws.logits.data(), E, pool);
        if (ws.sel.size() < n_tok * K) ws.sel.resize(n_tok * K);
        ffn_workspace::grow(ws.sel_w, n_tok * K);
        for (std::size_t t = 0; t < n_tok; ++t) {
            float* r = ws.logits.data() + t * E;
            kernels::softmax(r, E);
            // top K by probability, lower index first on ties
            for (std::size_t k = 0; k < K; ++k) {
                std::size_t best = E;
                for (std::size_t e = 0; e < E; ++e) {
                    bool taken = false;
                    for (std::size_t q = 0; q < k; ++q) taken |= ws.sel[t * K + q] == e;
                    if (!taken && (best == E || r[e] > r[best])) best = e;
                }
                ws.sel[t * K + k] = best;
            }
            float sum = 0.f;
            for (std::size_t k = 0; k < K; ++k) sum += r[ws.sel[t * K + k]];
            for (std::size_t k = 0; k < K; ++k) ws.sel_w[t * K + k] = r[ws.sel[t * K + k]] / sum;
        }
        for (std::size_t t = 0; t < n_tok; ++t) std::fill(y + t * ldy, y + t * ldy + n_embd, 0.f);
        // run each expert once over all the rows routed to it
        ffn_workspace::grow(ws.xg, n_tok * n_embd);
        ffn_workspace::grow(ws.yg, n_tok * n_embd);
        if (ws.rows.size() < n_tok) ws.rows.resize(n_tok);
        ffn_workspace::grow(ws.row_w, n_tok);
        for (std::size_t e = 0; e < E; ++e) {
            std::size_t m = 0;
            for (std::size_t t = 0; t < n_tok; ++t)
                for (std::size_t k = 0; k < K; ++k)
                    if (ws.sel[t * K + k] == e) {
                        std::copy(x + t * ldx, x + t * ldx + n_embd, ws.xg.data() + m * n_embd);
                        ws.rows[m] = t;
                        ws.row_w[m] = ws.sel_w[t * K + k];
                        ++m;
                    }
            if (m == 0) continue;
            detail::dense_ffn<Expert>(w.experts[e], ws.xg.data(), n_embd, m, ws.yg.data(), n_embd, ws, pool);
            for (std::size_t r = 0; r < m; ++r)
                kernels::axpy(n_embd, ws.row_w[r], ws.yg.data() + r * n_embd, y + ws.rows[r] * ldy);
        }
    }
}

} // namespace archetype::layers
