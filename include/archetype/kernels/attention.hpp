#pragma once
// Scaled dot-product attention for a block of query rows against a set of
// key/value rows, per head, with grouped-query head mapping:
//
//   out[i, h] = softmax_j( scale * q[i, h] . k[j, g(h)] + bias[h, i, j] , j visible from i ) . v[j, g(h)]
//   g(h) = h / (n_head / n_head_kv)   (consecutive query heads share a key/value head)
//
// The kernel knows no model: which key a query may see is a predicate over
// (query index, key index) supplied by the caller (which closes over positions,
// sequences, windows); an optional additive bias (ALiBi, T5 relative bias, a
// precomputed 0/-inf mask) is a [n_q x n_kv] matrix per head (head stride 0 =
// one matrix for all heads). Layouts are free: head h of query row i is at
// q + i*ldq + h*head_dim; key j of kv head g at k + g*kv_head_stride + j*ldkv,
// so a token-major projection output (ldkv = n_head_kv*head_dim, head stride =
// head_dim) and a head-major cache (ldkv = head_dim, head stride = cells*head_dim)
// both work without copies.
//
// Work is split over (head, block of query rows) tasks handed out dynamically
// (rows of a causal mask differ in length); each output element is computed by
// one task with one instruction sequence, so results do not depend on the
// thread count. A row that sees no key gives zeros.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/softmax.hpp"

namespace archetype::kernels {

struct attention_params {
    std::size_t n_head = 0, n_head_kv = 0, head_dim = 0;
    float scale = 1.f;
    // queries [n_q rows], head h of row i at q + i*ldq + h*head_dim
    const float* q = nullptr;
    std::size_t ldq = 0, n_q = 0;
    // keys / values [n_kv rows], kv head g of row j at k + g*kv_head_stride + j*ldkv
    const float* k = nullptr;
    const float* v = nullptr;
    std::size_t ldkv = 0, kv_head_stride = 0, n_kv = 0;
    // output, head h of row i at out + i*ldo + h*head_dim (may not alias q, k, v)
    float* out = nullptr;
    std::size_t ldo = 0;
    // optional additive bias: bias[h*bias_head_stride + i*ld_bias + j]
    const float* bias = nullptr;
    std::size_t ld_bias = 0, bias_head_stride = 0;
};

/// Every key visible (bidirectional, or a mask given only as a bias).
struct all_visible {
    constexpr bool operator()(std::size_t, std::size_t) const noexcept { return true; }
};

namespace detail {
// Per-thread scores buffer: grows to the largest block seen, then is reused,
// so steady-state decode allocates nothing.
inline std::vector<float>& attention_scratch() {
    thread_local std::vector<float> buf;
    return buf;
}
inline constexpr std::size_t attention_q_block = 16;
} // namespace detail

/// Attention of p.n_q query rows over p.n_kv key/value rows; `visible(i, j)`
/// says whether query row i may attend to key row j.
template <class Visible>
void attention(const attention_params& p, Visible&& visible, thread_pool* pool = nullptr) {
    if (p.n_q == 0 || p.n_head == 0) return;
    const std::size_t hd = p.head_dim;
    const std::size_t group = p.n_head / p.n_head_kv;
    const std::size_t qb = detail::attention_q_block;
    const std::size_t n_blocks = (p.n_q + qb - 1) / qb;
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();

    auto task = [&](std::size_t t) {
        const std::size_t h = t % p.n_head, blk = t / p.n_head;
        const std::size_t i0 = blk * qb, i1 = std::min(p.n_q, i0 + qb), m = i1 - i0;
        const std::size_t g = h / group;
        const float* kh = p.k + g * p.kv_head_stride;
        const float* vh = p.v + g * p.kv_head_stride;
        auto& buf = detail::attention_scratch();
        if (buf.size() < m * p.n_kv) buf.resize(m * p.n_kv);
        float* s = buf.data();
        // scores for the whole block in one GEMM (one GEMV for a single row)
        if (m == 1)
            gemv(kh, p.ldkv, p.q + i0 * p.ldq + h * hd, s, p.n_kv, hd);
        else
            gemm_nt(p.q + i0 * p.ldq + h * hd, p.ldq, kh, p.ldkv, s, p.n_kv, m, p.n_kv, hd);
        for (std::size_t r = 0; r < m; ++r) {
            const std::size_t i = i0 + r;
            float* row = s + r * p.n_kv;
            const float* b = p.bias ? p.bias + h * p.bias_head_stride + i * p.ld_bias : nullptr;
            for (std::size_t j = 0; j < p.n_kv; ++j)
                row[j] = visible(i, j) ? row[j] * p.scale + (b ? b[j] : 0.f) : neg_inf;
            softmax(row, p.n_kv);
            float* o = p.out + i * p.ldo + h * hd;
            std::fill(o, o + hd, 0.f);
            for (std::size_t j = 0; j < p.n_kv; ++j)
                if (row[j] != 0.f) axpy(hd, row[j], vh + j * p.ldkv, o);
        }
    };
    const std::size_t n_tasks = p.n_head * n_blocks;
    if (pool)
        pool->for_each_task(n_tasks, task);
    else
        for (std::size_t t = 0; t < n_tasks; ++t) task(t);
}

/// Attention with a mask given only as the additive bias (0 / -inf entries).
inline void attention(const attention_params& p, thread_pool* pool = nullptr) {
    attention(p, all_visible{}, pool);
}

} // namespace archetype::kernels
