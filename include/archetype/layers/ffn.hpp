#pragma once
// Feed-forward blocks at run time, driven by the ffn policy (policies/ffn.hpp):
//
//   SwiGLU   y = down( silu(gate x) * up x )
//   GeGLU    y = down( gelu(gate x) * up x )
//   GeluMLP  y = down( gelu(up x + b_up) ) + b_down        (biases optional)
//   MoE<E,K,FFN,Router,Shared,Dense>  router logits r = W_r x (+ ffn_gate_inp.bias);
//            the router's gating (moe_weights::gating): softmax over the E experts,
//            a sigmoid per expert, or nothing before the top K (softmax after it,
//            gpt-oss); a selection bias (exp_probs_b) and expert groups choose; the
//            top K (ties: lower index first) weighted by their gated values, divided
//            by the sum of the K (renormalised, clamped >= 6.1e-5 as llama.cpp) when
//            normalise, times scale when it is not 0 or 1; each a FFN; plus a shared
//            expert (sigmoid-gated or not) added unweighted; a layer may be dense.
//            The defaults are Mixtral's: softmax, top K, renormalised.
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
#include "archetype/kernels/batch_activations.hpp"
#include "archetype/kernels/decode_rows.hpp"
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

/// Weights of a mixture of experts: the router and one dense block per expert, the
/// router's rule, an optional shared expert, or (a leading dense layer) one dense block.
struct moe_weights {
    kernels::weight_view router{};  // [n_expert rows x n_embd]
    std::vector<ffn_weights> experts;
    std::size_t n_used = 1;         // top-k
    // the router (defaults: Mixtral's softmax, top k, renormalised)
    moe_gating gating = moe_gating::softmax;
    bool normalise = true;          // weights / their sum
    float scale = 1.f;              // weights * scale (when not 0 or 1)
    std::size_t n_group = 1, n_group_used = 1; // expert groups (DeepSeek-V3): keep the best n_group_used
    const float* router_bias = nullptr;  // ffn_gate_inp.bias [n_expert] added to the logits
    const float* select_bias = nullptr;  // exp_probs_b.bias [n_expert]: added for the choice only
    // a shared expert beside the routed ones (Qwen2-MoE, DeepSeek, GLM-4.5), added unweighted
    bool has_shared = false;
    ffn_weights shared{};
    const float* shared_gate = nullptr;  // [n_embd]: its output times sigmoid(shared_gate . x), or null
    // a dense layer of a model whose first layers are dense (leading_dense_block_count)
    bool dense = false;
    ffn_weights dense_ffn{};
    std::size_t n_embd() const noexcept { return dense ? dense_ffn.n_embd() : router.cols; }
};

/// The widest hidden layer a block runs (its workspace rows).
inline std::size_t hidden_max(const ffn_weights& w) noexcept { return w.n_ff(); }
inline std::size_t hidden_max(const moe_weights& w) noexcept {
    std::size_t m = w.dense ? w.dense_ffn.n_ff() : 0;
    for (const auto& e : w.experts) m = std::max(m, e.n_ff());
    if (w.has_shared) m = std::max(m, w.shared.n_ff());
    return m;
}

/// Reusable buffers of the feed-forward computation.
struct ffn_workspace {
    std::vector<float> a, b;            // [n_tok x n_ff] hidden activations
    std::vector<float> logits;          // [n_tok x n_expert]
    std::vector<float> xg, yg;          // gathered rows of one expert
    std::vector<std::size_t> rows;      // token index per gathered row
    std::vector<float> row_w;           // routing weight per gathered row
    std::vector<std::size_t> sel;       // [n_tok x k] selected experts
    std::vector<float> sel_w;           // [n_tok x k] their weights
    std::vector<float> score;           // [n_expert] selection scores of one token
    std::vector<ffn_workspace> per_expert; // one token: each selected expert's own buffers
    std::vector<float> yk;                 // one token: [k x n_embd] each selected expert's output

    static void grow(std::vector<float>& v, std::size_t n) {
        if (v.size() < n) v.resize(n);
    }
};

namespace detail {
template <class T>
inline constexpr bool is_moe_v = false;
template <dim_t E, dim_t K, class F, class R, class S, class D>
inline constexpr bool is_moe_v<MoE<E, K, F, R, S, D>> = true;

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
    { // the gated product is heavy-tailed: the mixed batch mode runs this product int8x2
        const kernels::batch_activations_scope numerics(
            kernels::for_heavy_tailed_input(kernels::current_batch_activations()));
        kernels::matmul(w.down, a, n_ff, n_tok, y, ldy, pool);
    }
    add_bias(y, ldy, n_tok, w.down_bias, w.n_embd());
}

/// y[t] += (routing weight) x expert(x[t]) for every row t and each of its selected
/// experts (ws.sel, ws.sel_w): each expert once over all the rows routed to it, in
/// ascending expert order.
template <class Expert>
void experts_over_rows(const moe_weights& w, const float* x, std::size_t ldx, std::size_t n_tok, float* y,
                       std::size_t ldy, ffn_workspace& ws, thread_pool* pool) {
    const std::size_t E = w.experts.size(), K = w.n_used, n_embd = w.n_embd();
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
        dense_ffn<Expert>(w.experts[e], ws.xg.data(), n_embd, m, ws.yg.data(), n_embd, ws, pool);
        for (std::size_t r = 0; r < m; ++r)
            kernels::axpy(n_embd, ws.row_w[r], ws.yg.data() + r * n_embd, y + ws.rows[r] * ldy);
    }
}

/// The same for one token (decode), its K experts as K tasks: each expert's FFN on one
/// thread, not K products each split over every thread. A token's experts are small
/// (OLMoE: 3 x 1024 x 2048 each) and a split's fork-join cost more than its share of the
/// product (docs/architectures.md, "Speed of a mixture of experts"); the caller takes this
/// for pools of at most K threads, which K tasks keep busy. A product does not depend on
/// the threads that compute it and the sum runs in ascending expert order, as
/// experts_over_rows's: the same bits.
template <class Expert>
void experts_of_one_token(const moe_weights& w, const float* x, float* y, ffn_workspace& ws, thread_pool* pool) {
    const std::size_t E = w.experts.size(), K = w.n_used, n_embd = w.n_embd();
    ffn_workspace::grow(ws.xg, n_embd);
    std::copy(x, x + n_embd, ws.xg.data());
    ffn_workspace::grow(ws.yk, K * n_embd);
    if (ws.per_expert.size() < K) ws.per_expert.resize(K);
    // the numerics modes are the calling thread's (kernels/batch_activations.hpp,
    // decode_rows.hpp): each task takes them; a matmul inside a task runs on its thread
    const auto numerics = kernels::current_batch_activations();
    const bool invariant = kernels::decode_rows_invariant();
    pool->for_each_task(K, [&](std::size_t k) {
        const kernels::batch_activations_scope a(numerics);
        const kernels::decode_rows_invariant_scope b(invariant);
        dense_ffn<Expert>(w.experts[ws.sel[k]], ws.xg.data(), n_embd, 1, ws.yk.data() + k * n_embd, n_embd,
                          ws.per_expert[k], pool);
    });
    for (std::size_t e = 0; e < E; ++e)
        for (std::size_t k = 0; k < K; ++k)
            if (ws.sel[k] == e) kernels::axpy(n_embd, ws.sel_w[k], ws.yk.data() + k * n_embd, y);
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
        if (w.dense) { // a leading dense layer of the model
            detail::dense_ffn<Expert>(w.dense_ffn, x, ldx, n_tok, y, ldy, ws, pool);
            return;
        }
        const std::size_t E = w.experts.size(), K = w.n_used, n_embd = w.n_embd();
        ffn_workspace::grow(ws.logits, n_tok * E);
        kernels::matmul(w.router, x, ldx, n_tok, ws.logits.data(), E, pool);
        if (ws.sel.size() < n_tok * K) ws.sel.resize(n_tok * K);
        ffn_workspace::grow(ws.sel_w, n_tok * K);
        ffn_workspace::grow(ws.score, E);
        constexpr float neg_inf = -std::numeric_limits<float>::infinity();
        for (std::size_t t = 0; t < n_tok; ++t) {
            float* r = ws.logits.data() + t * E;
            if (w.router_bias)
                for (std::size_t e = 0; e < E; ++e) r[e] += w.router_bias[e];
            if (w.gating == moe_gating::softmax)
                kernels::softmax(r, E);
            else if (w.gating == moe_gating::sigmoid)
                for (std::size_t e = 0; e < E; ++e) r[e] = 1.f / (1.f + std::exp(-r[e]));
            // the selection score: the gated values, plus the selection bias (DeepSeek-V3)
            const float* s = r;
            if (w.select_bias || w.n_group > 1) {
                float* sc = ws.score.data();
                for (std::size_t e = 0; e < E; ++e) sc[e] = r[e] + (w.select_bias ? w.select_bias[e] : 0.f);
                if (w.n_group > 1) { // a group scores the sum of its best two; the others are out
                    const std::size_t per = E / w.n_group;
                    float gs[64];
                    bool keep[64] = {};
                    for (std::size_t g = 0; g < w.n_group; ++g) {
                        float a = neg_inf, b = neg_inf;
                        for (std::size_t e = g * per; e < (g + 1) * per; ++e) {
                            if (sc[e] > a) { b = a; a = sc[e]; }
                            else if (sc[e] > b) b = sc[e];
                        }
                        gs[g] = per >= 2 ? a + b : a;
                    }
                    for (std::size_t k = 0; k < w.n_group_used; ++k) {
                        std::size_t best = w.n_group;
                        for (std::size_t g = 0; g < w.n_group; ++g)
                            if (!keep[g] && (best == w.n_group || gs[g] > gs[best])) best = g;
                        keep[best] = true;
                    }
                    for (std::size_t g = 0; g < w.n_group; ++g)
                        if (!keep[g]) std::fill(sc + g * per, sc + (g + 1) * per, neg_inf);
                }
                s = sc;
            }
            // top K by the selection score, lower index first on ties
            for (std::size_t k = 0; k < K; ++k) {
                std::size_t best = E;
                for (std::size_t e = 0; e < E; ++e) {
                    bool taken = false;
                    for (std::size_t q = 0; q < k; ++q) taken |= ws.sel[t * K + q] == e;
                    if (!taken && (best == E || s[e] > s[best])) best = e;
                }
                ws.sel[t * K + k] = best;
            }
            float* wt = ws.sel_w.data() + t * K;
            for (std::size_t k = 0; k < K; ++k) wt[k] = r[ws.sel[t * K + k]];
            if (w.gating == moe_gating::softmax_of_top_k) kernels::softmax(wt, K);
            if (w.normalise) {
                float sum = 0.f;
                for (std::size_t k = 0; k < K; ++k) sum += wt[k];
                sum = std::max(sum, 6.103515625e-5f); // as llama.cpp: the smallest normal half
                for (std::size_t k = 0; k < K; ++k) wt[k] = wt[k] / sum;
            }
            if (w.scale != 0.f && w.scale != 1.f)
                for (std::size_t k = 0; k < K; ++k) wt[k] *= w.scale;
        }
        for (std::size_t t = 0; t < n_tok; ++t) std::fill(y + t * ldy, y + t * ldy + n_embd, 0.f);
        if (n_tok == 1 && pool && pool->size() > 1 && pool->size() <= K)
            detail::experts_of_one_token<Expert>(w, x, y, ws, pool);
        else
            detail::experts_over_rows<Expert>(w, x, ldx, n_tok, y, ldy, ws, pool);
        if (w.has_shared) { // the shared expert over every row, times its gate when it has one
            ffn_workspace::grow(ws.yg, n_tok * n_embd);
            detail::dense_ffn<Expert>(w.shared, x, ldx, n_tok, ws.yg.data(), n_embd, ws, pool);
            for (std::size_t t = 0; t < n_tok; ++t) {
                float g = 1.f;
                if (w.shared_gate) {
                    float z = 0.f;
                    for (std::size_t i = 0; i < n_embd; ++i) z += w.shared_gate[i] * x[t * ldx + i];
                    g = 1.f / (1.f + std::exp(-z));
                }
                kernels::axpy(n_embd, g, ws.yg.data() + t * n_embd, y + t * ldy);
            }
        }
    }
}

} // namespace archetype::layers
