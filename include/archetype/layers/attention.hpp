#pragma once
// The self-attention block of a transformer layer at run time, apart from the
// cache: the Q/K/V projections (+ optional biases), the QK RMSNorm (per head or over the row),
// RoPE, and the output projection. Where keys and values come from (a cache,
// a ring, the chunk itself) is the runtime's business; the scaled-dot-product
// part is kernels::attention.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/layers/rope.hpp"
#include "archetype/policies/mask.hpp"

namespace archetype::layers {

struct attention_weights {
    kernels::weight_view wq{}, wk{}, wv{}, wo{};
    const float* bq = nullptr; const float* bk = nullptr; const float* bv = nullptr; const float* bo = nullptr;
    const float* q_norm = nullptr; // RMSNorm weight of Q (QK-norm), or null: [head_dim] per head,
    const float* k_norm = nullptr; // or the whole projection row when qk_norm_whole (K: [kv_width])
    bool qk_norm_whole = false;    // OLMo 2: one RMSNorm over all heads of a row
    bool qk_layer_norm = false;    // Cohere: a LayerNorm (no bias) per head, with each head's own
                                   // weights: q_norm [n_head x head_dim], k_norm [n_head_kv x head_dim]
    bool qk_norm_after_rope = false; // Hunyuan: the QK norm applies to the rotated Q and K
    const float* sinks = nullptr;    // gpt-oss: attn_sinks [n_head], one more logit per head
};

struct attention_dims {
    std::size_t n_head = 0, n_head_kv = 0, head_dim = 0;
    float scale = 1.f;  // usually 1/sqrt(head_dim)
    float norm_eps = 1e-5f;
    std::size_t q_width() const noexcept { return n_head * head_dim; }
    std::size_t kv_width() const noexcept { return n_head_kv * head_dim; }
};

namespace detail {
inline void add_row_bias(float* y, std::size_t ld, std::size_t n, const float* b, std::size_t w) noexcept {
    if (!b) return;
    for (std::size_t t = 0; t < n; ++t)
        for (std::size_t i = 0; i < w; ++i) y[t * ld + i] += b[i];
}
} // namespace detail

/// q[n x q_width], k/v[n x kv_width] from h[n x n_embd]; QK-norm and RoPE applied
/// (rope may be null for position policies without rotation; cos/sin per row).
inline void project_qkv(const attention_weights& w, const attention_dims& d, const float* h, std::size_t ldh,
                        std::size_t n, float* q, float* k, float* v, const rope_params* rope, const float* cos,
                        const float* sin, thread_pool* pool) {
    const std::size_t qw = d.q_width(), kw = d.kv_width(), hd = d.head_dim;
    // one dispatch for the three when decoding one token (see matmul_batch)
    const kernels::matmul_task qkv[] = {{&w.wq, h, ldh, q, qw}, {&w.wk, h, ldh, k, kw}, {&w.wv, h, ldh, v, kw}};
    kernels::matmul_batch(qkv, n, pool);
    detail::add_row_bias(q, qw, n, w.bq, qw);
    detail::add_row_bias(k, kw, n, w.bk, kw);
    detail::add_row_bias(v, kw, n, w.bv, kw);
    auto qk_norms = [&] {
        if (w.qk_layer_norm) { // per head, with that head's weights
            for (std::size_t r = 0; r < n * d.n_head; ++r)
                kernels::layer_norm(q + r * hd, w.q_norm + (r % d.n_head) * hd, nullptr, q + r * hd, hd, d.norm_eps);
            for (std::size_t r = 0; r < n * d.n_head_kv; ++r)
                kernels::layer_norm(k + r * hd, w.k_norm + (r % d.n_head_kv) * hd, nullptr, k + r * hd, hd, d.norm_eps);
        } else {
            // per head: rows of hd; whole: one row of all heads per token
            const std::size_t qn = w.qk_norm_whole ? qw : hd, kn = w.qk_norm_whole ? kw : hd;
            if (w.q_norm)
                for (std::size_t r = 0; r < n * qw / qn; ++r)
                    kernels::rms_norm(q + r * qn, w.q_norm, q + r * qn, qn, d.norm_eps);
            if (w.k_norm)
                for (std::size_t r = 0; r < n * kw / kn; ++r)
                    kernels::rms_norm(k + r * kn, w.k_norm, k + r * kn, kn, d.norm_eps);
        }
    };
    if (!w.qk_norm_after_rope) qk_norms();
    if (rope) {
        apply_rope(*rope, q, qw, n, d.n_head, hd, cos, sin);
        apply_rope(*rope, k, kw, n, d.n_head_kv, hd, cos, sin);
    }
    if (w.qk_norm_after_rope) qk_norms();
}

/// Causal visibility of a key at position pk from a query at pq for one layer:
/// window 0 = plain causal; sink S > 0 keeps positions < S visible besides the window.
struct causal_rule {
    std::int64_t window = 0; // 0: none
    std::int64_t sink = 0;
    constexpr bool operator()(pos_t pq, pos_t pk) const noexcept {
        if (pk < 0 || pk > pq) return false;
        if (window == 0) return true;
        return SlidingWindow<>::visible(pq, pk, window) || pk < sink;
    }
    /// The positions pq sees as one interval [lo, hi), when they are one: [0, pq],
    /// the window [pq - W + 1, pq], or the window joined to the sink [0, S).
    /// exact = false when the sink and the window are apart (two intervals).
    constexpr kernels::key_span positions(pos_t pq) const noexcept {
        if (pq < 0) return {0, 0, true};
        pos_t lo = window ? std::max<pos_t>(0, pq - window + 1) : 0;
        if (window && sink > 0) {
            if (sink < lo) return {0, 0, false};
            lo = 0;
        }
        return {std::size_t(lo), std::size_t(pq + 1), true};
    }
};

/// causal_rule over consecutive cells: query row i at position p0 + i, key row
/// j at position j0 + j (a full cache, where a cell is its position). Gives the
/// attention kernel the visible keys of a row as a range (kernels::key_span).
struct cell_visibility {
    causal_rule rule;
    pos_t p0 = 0, j0 = 0;
    constexpr bool operator()(std::size_t i, std::size_t j) const noexcept {
        return rule(p0 + pos_t(i), j0 + pos_t(j));
    }
    constexpr kernels::key_span row_span(std::size_t i) const noexcept {
        kernels::key_span sp = rule.positions(p0 + pos_t(i));
        if (!sp.exact) return sp;
        auto key = [&](std::size_t pos) { return pos_t(pos) > j0 ? std::size_t(pos_t(pos) - j0) : std::size_t(0); };
        return {key(sp.lo), key(sp.hi), true};
    }
};

} // namespace archetype::layers
