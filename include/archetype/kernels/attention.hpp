#pragma once
// Scaled dot-product attention for a block of query rows against a set of
// key/value rows, per head, with grouped-query head mapping:
//
//   out[i, h] = softmax_j( cap(scale * q[i, h] . k[j, g(h)]) + bias[h, i, j] , j visible from i ) . v[j, g(h)]
//   (with attention sinks, params.sinks: exp(sinks[h]) joins each denominator, gpt-oss)
//   cap(s) = s, or softcap * tanh(s / softcap) when params.softcap != 0 (Gemma 2)
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
#include <concepts>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/compiled.hpp"
#include "archetype/kernels/row_scores.hpp"
#include "archetype/kernels/simd_util.hpp"
#include "archetype/kernels/softmax.hpp"

namespace archetype::kernels {

struct attention_params {
    std::size_t n_head = 0, n_head_kv = 0, head_dim = 0;
    float scale = 1.f;
    // soft cap of the scaled scores before bias and mask: s = softcap * tanh(s / softcap)
    // (Gemma 2); 0 = none
    float softcap = 0.f;
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
    // alternatively keys / values stored as IEEE half (an F16 KV cache): set k16 / v16
    // instead of k / v, same strides (in elements). The score GEMM and P.V widen them in
    // registers, so the cache is read at half the bytes and the arithmetic stays float32.
    const std::uint16_t* k16 = nullptr;
    const std::uint16_t* v16 = nullptr;
    // optional attention sinks [n_head] (gpt-oss): head h's softmax denominator gains
    // exp(sinks[h]), one more logit with no value row
    const float* sinks = nullptr;
    // width of a value row and of an output head when it differs from head_dim (0: head_dim);
    // multi-head latent attention reads its values as the first v_dim floats of each key row
    std::size_t v_dim = 0;
    std::size_t value_dim() const noexcept { return v_dim ? v_dim : head_dim; }
};

/// softmax of a row whose denominator also holds exp(sink) (an attention sink): the row's
/// probabilities sum to less than one. A fully masked row gives zeros.
inline void softmax_with_sink(float* row, std::size_t n, float sink) noexcept {
    const softmax_part sp = softmax_unnormalised(row, n);
    if (!(sp.max > -std::numeric_limits<float>::infinity())) return;
    const float M = std::max(sp.max, sink), a = std::exp(sp.max - M);
    const float inv = a / (sp.sum * a + std::exp(sink - M));
    for (std::size_t j = 0; j < n; ++j) row[j] *= inv;
}

/// Every key visible (bidirectional, or a mask given only as a bias).
struct all_visible {
    constexpr bool operator()(std::size_t, std::size_t) const noexcept { return true; }
};

/// No position bias beyond p.bias (the default of attention()'s `pos_bias`).
struct no_bias {
    constexpr float operator()(std::size_t, std::size_t, std::size_t) const noexcept { return 0.f; }
};

/// Every key row may be visible (no range known in advance).
struct all_keys {
    constexpr std::pair<std::size_t, std::size_t> operator()(std::size_t, std::size_t, std::size_t n_kv) const noexcept {
        return {0, n_kv};
    }
};

/// What a Visible functor may also say about a query row: `row_span(i)` returns
/// the keys [lo, hi) row i sees when they are exactly one interval (`exact`; a
/// causal or sliding-window mask), so the kernel masks by ranges instead of
/// calling the predicate per key (26 of 43 ms of the masking and softmax of a
/// 512-token SmolLM2 prefill went to the per-key predicate), and P.V stops at the
/// last visible key of a row tile. Not exact: the predicate decides, as without it.
struct key_span {
    std::size_t lo = 0, hi = 0;
    bool exact = false;
};
template <class V>
concept has_row_span = requires(const V& v, std::size_t i) {
    { v.row_span(i) } -> std::same_as<key_span>;
};

namespace detail {
// Per-thread scores buffer: grows to the largest block seen, then is reused,
// so steady-state decode allocates nothing.
inline std::vector<float>& attention_scratch() {
    thread_local std::vector<float> buf;
    return buf;
}
// Query rows per (head, block) task: four micro-tile heights (56 on AVX-512), so
// the block's scores go through the packed GEMM engine (use_packed) instead of the
// row-dot engine, whose per-element horizontal reductions dominate at head_dim 64.
// SmolLM2-135M shape, F32, 512-token prefill, 2 threads (AMD Zen 4): +11% over
// blocks of 16 (28: +8%, 42: +9%); larger blocks compute more masked scores on
// the causal diagonal.
inline constexpr std::size_t attention_q_block = 4 * MR;

/// Scores s[m x n] = Q[m x hd] . K[n x hd]^T for keys [j0, j0 + n) of kv head g, the
/// keys read where they are stored: float rows, or half rows widened in registers
/// by the same engines (so a half store gives bitwise what a float store holding
/// the same values gives). A few rows (a decode step's query heads of one kv head)
/// go through row_scores; more through the GEMM engines.
inline constexpr std::size_t row_scores_max_rows = 8;

ARCHETYPE_KERNEL_ENTRY void scores(const attention_params& p, const float* q, std::size_t ldq, std::size_t m,
                                   std::size_t g, std::size_t j0, std::size_t n, float* s);
#if ARCHETYPE_KERNEL_BODIES
ARCHETYPE_KERNEL_ENTRY void scores(const attention_params& p, const float* q, std::size_t ldq, std::size_t m,
                                   std::size_t g, std::size_t j0, std::size_t n, float* s) {
    const std::size_t hd = p.head_dim, off = g * p.kv_head_stride + j0 * p.ldkv;
    if (m <= row_scores_max_rows && row_scores_fits(hd)) {
        if (p.k16)
            row_scores(q, ldq, m, p.k16 + off, p.ldkv, n, hd, s, n);
        else
            row_scores(q, ldq, m, p.k + off, p.ldkv, n, hd, s, n);
        return;
    }
    if (p.k16) {
        if (m == 1)
            gemv_f16(p.k16 + off, p.ldkv, q, s, n, hd);
        else
            gemm_nt_f16(q, ldq, p.k16 + off, p.ldkv, s, n, m, n, hd);
    } else if (m == 1)
        gemv(p.k + off, p.ldkv, q, s, n, hd);
    else
        gemm_nt(q, ldq, p.k + off, p.ldkv, s, n, m, n, hd);
}
#endif

/// o[r] (+)= sum_j p[r][j] * v[j] for R rows and C full vectors of columns
/// starting at column c0: R x C accumulators stay in registers over all keys
/// (one pass over V per R rows, instead of a load/store of o per key). Keys
/// are added in ascending order with one FMA each, as axpy does.
template <std::size_t R, std::size_t C, class TV>
inline void pv_tile(const float* p, std::size_t ldp, std::size_t n, const TV* v, std::size_t ldv, float* o,
                    std::size_t ldo) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    fbatch acc[R][C];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < C; ++c) acc[r][c] = fbatch(0.f);
    for (std::size_t j = 0; j < n; ++j) {
        fbatch x[C];
        for (std::size_t c = 0; c < C; ++c) x[c] = b_elem<TV>::load(v + j * ldv + c * W);
#pragma GCC unroll 16
        for (std::size_t r = 0; r < R; ++r) {
            const fbatch a(p[r * ldp + j]);
            for (std::size_t c = 0; c < C; ++c) acc[r][c] = xsimd::fma(a, x[c], acc[r][c]);
        }
    }
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < C; ++c) acc[r][c].store_unaligned(o + r * ldo + c * W);
}

template <std::size_t R, class TV>
inline void pv_rows(const float* p, std::size_t ldp, std::size_t n, const TV* v, std::size_t ldv, float* o,
                    std::size_t ldo, std::size_t hd) noexcept {
    constexpr std::size_t W = simd::W, C = 4;
    std::size_t c0 = 0;
    for (; c0 + C * W <= hd; c0 += C * W) pv_tile<R, C>(p, ldp, n, v + c0, ldv, o + c0, ldo);
    for (; c0 + W <= hd; c0 += W) pv_tile<R, 1>(p, ldp, n, v + c0, ldv, o + c0, ldo);
    if (c0 < hd)
        for (std::size_t r = 0; r < R; ++r) {
            float* orow = o + r * ldo;
            for (std::size_t c = c0; c < hd; ++c) orow[c] = 0.f;
            for (std::size_t j = 0; j < n; ++j) {
                const float a = p[r * ldp + j];
                for (std::size_t c = c0; c < hd; ++c) orow[c] += a * b_elem<TV>::scalar(v[j * ldv + c]);
            }
        }
}

/// out[m x hd] = P[m x n] . V[n x hd] (V float, or half widened in registers).
/// Whole MR-row tiles (a prefill's query blocks) take pv_tile<MR, nr_vec>, the
/// GEMM micro-kernel's register tile (14 x 32 on AVX-512), when hd is a multiple
/// of NR: per key it loads 2 vectors of V for 28 FMAs where pv_tile<4, 4> loads
/// 4 for 16, so V (re-read from L2 per row tile) costs a third of the traffic.
/// SmolLM2-135M F16 512-token prefill, 1 thread: P.V from 5.8% of the time
/// (~57 GFLOP/s) to 3.5%, +1.5-2.5% overall (alternating A/B). The rest (and a
/// decode step's few rows) by pv_rows. Every tile sums each output over the keys
/// in ascending order, one FMA each from zero, so the split changes no bit.
/// row_n (optional): row r's probabilities are exactly zero from key row_n[r] on,
/// so a row tile stops at its rows' largest row_n (the zero products change no sum).
template <class TV>
inline void pv(const float* p, std::size_t ldp, std::size_t m, std::size_t n, const TV* v, std::size_t ldv,
               float* o, std::size_t ldo, std::size_t hd, const std::size_t* row_n = nullptr) noexcept {
    auto keys = [&](std::size_t r0, std::size_t rows) {
        if (!row_n) return n;
        std::size_t k = 0;
        for (std::size_t r = r0; r < r0 + rows; ++r) k = std::max(k, row_n[r]);
        return std::min(k, n);
    };
    std::size_t r = 0;
    if (hd % NR == 0)
        for (; r + MR <= m; r += MR) {
            const std::size_t k = keys(r, MR);
            for (std::size_t c0 = 0; c0 < hd; c0 += NR)
                pv_tile<MR, nr_vec>(p + r * ldp, ldp, k, v + c0, ldv, o + r * ldo + c0, ldo);
        }
    for (; r + 4 <= m; r += 4) pv_rows<4>(p + r * ldp, ldp, keys(r, 4), v, ldv, o + r * ldo, ldo, hd);
    switch (m - r) {
    case 3: pv_rows<3>(p + r * ldp, ldp, keys(r, 3), v, ldv, o + r * ldo, ldo, hd); break;
    case 2: pv_rows<2>(p + r * ldp, ldp, keys(r, 2), v, ldv, o + r * ldo, ldo, hd); break;
    case 1: pv_rows<1>(p + r * ldp, ldp, keys(r, 1), v, ldv, o + r * ldo, ldo, hd); break;
    default: break;
    }
}

/// out[m x hd] = P[m x n] . V for values [j0, j0 + n) of kv head g, float or half.
ARCHETYPE_KERNEL_ENTRY void values(const attention_params& p, const float* P, std::size_t m, std::size_t g,
                                   std::size_t j0, std::size_t n, float* o, std::size_t ldo,
                                   const std::size_t* row_n = nullptr) noexcept;
#if ARCHETYPE_KERNEL_BODIES
ARCHETYPE_KERNEL_ENTRY void values(const attention_params& p, const float* P, std::size_t m, std::size_t g,
                                   std::size_t j0, std::size_t n, float* o, std::size_t ldo,
                                   const std::size_t* row_n) noexcept {
    const std::size_t off = g * p.kv_head_stride + j0 * p.ldkv;
    if (p.v16)
        pv(P, n, m, n, p.v16 + off, p.ldkv, o, ldo, p.value_dim(), row_n);
    else
        pv(P, n, m, n, p.v + off, p.ldkv, o, ldo, p.value_dim(), row_n);
}
#endif

/// A scaled score through the soft cap (cap 0: unchanged).
inline float capped(float s, float cap) noexcept { return cap != 0.f ? cap * std::tanh(s / cap) : s; }

/// row[j] = row[j] * scale (+ b[j]) for j in [a, e), the scaled score soft-capped first
/// when cap != 0: a loop of its own vectorises (the mask, a predicate call per key,
/// comes after it).
inline void scale_scores(float* row, std::size_t a, std::size_t e, float scale, const float* b, float cap) noexcept {
    if (cap != 0.f)
        for (std::size_t j = a; j < e; ++j) row[j] = capped(row[j] * scale, cap) + (b ? b[j] : 0.f);
    else if (b)
        for (std::size_t j = a; j < e; ++j) row[j] = row[j] * scale + b[j];
    else
        for (std::size_t j = a; j < e; ++j) row[j] *= scale;
}

// Per-thread row key counts of a prefill block (see pv's row_n).
inline std::vector<std::size_t>& row_keys_scratch() {
    thread_local std::vector<std::size_t> buf;
    return buf;
}

/// One query row (decode): the query heads that share a kv head are one block
/// of rows, so K and V are read once per kv head, and the keys are split into
/// chunks of decode_chunk (a function of the key count only, so results do not
/// depend on the thread count) for parallelism; each chunk keeps its row max
/// and exp-sum and the chunks merge exactly as one softmax would.
inline constexpr std::size_t decode_chunk = 256;

inline std::vector<float>& decode_scratch() {
    thread_local std::vector<float> buf;
    return buf;
}

template <class Visible, class Bias>
void attention_decode(const attention_params& p, Visible& visible, Bias& pos_bias,
                      std::pair<std::size_t, std::size_t> keys, thread_pool* pool) {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t hd = p.head_dim, vd = p.value_dim(), group = p.n_head / p.n_head_kv;
    const std::size_t hi = std::min(keys.second, p.n_kv), lo = std::min(keys.first, hi), n = hi - lo;
    if (n == 0) {
        std::fill(p.out, p.out + p.n_head * vd, 0.f);
        return;
    }
    const std::size_t n_chunks = (n + decode_chunk - 1) / decode_chunk;
    // per (head, chunk): vd partial outputs, then max and sum
    const std::size_t part = vd + 2;
    auto& buf = decode_scratch();
    if (buf.size() < p.n_head * n_chunks * part) buf.resize(p.n_head * n_chunks * part);
    float* parts = buf.data();
    auto task = [&](std::size_t t) {
        const std::size_t g = t / n_chunks, c = t % n_chunks;
        const std::size_t j0 = lo + c * decode_chunk, nc = std::min(decode_chunk, hi - j0);
        const std::size_t h0 = g * group;
        auto& sbuf = attention_scratch();
        if (sbuf.size() < group * nc + group * vd) sbuf.resize(group * nc + group * vd);
        float* s = sbuf.data();
        float* o = s + group * nc;
        const float* q = p.q + h0 * hd;
        scores(p, q, hd, group, g, j0, nc, s);
        for (std::size_t r = 0; r < group; ++r) {
            float* row = s + r * nc;
            const float* b = p.bias ? p.bias + (h0 + r) * p.bias_head_stride + j0 : nullptr;
            if constexpr (std::is_same_v<std::decay_t<Bias>, no_bias>) {
                // the common case as two simple loops (the scaling vectorises; the mask
                // is a predicate call per key): 1-2% of a decode step at depth 2048
                scale_scores(row, 0, nc, p.scale, b, p.softcap);
                for (std::size_t j = 0; j < nc; ++j)
                    if (!visible(std::size_t(0), j0 + j)) row[j] = neg_inf;
            } else {
                for (std::size_t j = 0; j < nc; ++j)
                    row[j] = visible(std::size_t(0), j0 + j)
                                 ? capped(row[j] * p.scale, p.softcap) + (b ? b[j] : 0.f) + pos_bias(h0 + r, std::size_t(0), j0 + j)
                                 : neg_inf;
            }
            const softmax_part sp = softmax_unnormalised(row, nc);
            float* dst = parts + ((h0 + r) * n_chunks + c) * part;
            dst[vd] = sp.max;
            dst[vd + 1] = sp.sum;
        }
        values(p, s, group, g, j0, nc, o, vd);
        for (std::size_t r = 0; r < group; ++r)
            std::copy(o + r * vd, o + (r + 1) * vd, parts + ((h0 + r) * n_chunks + c) * part);
    };
    const std::size_t n_tasks = p.n_head_kv * n_chunks;
    if (pool)
        pool->for_each_task(n_tasks, task);
    else
        for (std::size_t t = 0; t < n_tasks; ++t) task(t);
    for (std::size_t h = 0; h < p.n_head; ++h) {
        const float* ph = parts + h * n_chunks * part;
        float M = neg_inf;
        for (std::size_t c = 0; c < n_chunks; ++c) M = std::max(M, ph[c * part + vd]);
        float* out = p.out + h * vd;
        std::fill(out, out + vd, 0.f);
        if (!(M > neg_inf)) continue; // sees no key: zeros
        float total = 0.f;
        if (p.sinks) { // the sink's logit joins the denominator
            M = std::max(M, p.sinks[h]);
            total = std::exp(p.sinks[h] - M);
        }
        for (std::size_t c = 0; c < n_chunks; ++c) {
            const float m = ph[c * part + vd];
            if (!(m > neg_inf)) continue;
            const float w = std::exp(m - M);
            total += w * ph[c * part + vd + 1];
            axpy(vd, w, ph + c * part, out);
        }
        const float inv = 1.f / total;
        for (std::size_t d = 0; d < vd; ++d) out[d] *= inv;
    }
}
} // namespace detail

/// Attention of p.n_q query rows over p.n_kv key/value rows; `visible(i, j)`
/// says whether query row i may attend to key row j, and `range(i0, i1, n_kv)`
/// gives [lo, hi): a superset of the keys rows i0..i1-1 may see (keys outside it
/// are never read; a causal mask halves the work of a prefill this way).
/// `pos_bias(h, i, j)` is added to the scaled score of head h, row i, key j (ALiBi,
/// T5 buckets: computed where needed instead of a stored [n_q x n_kv] matrix).
template <class Visible, class Range, class Bias>
void attention(const attention_params& p, Visible&& visible, Range&& range, thread_pool* pool, Bias&& pos_bias) {
    if (p.n_q == 0 || p.n_head == 0) return;
    const std::size_t hd = p.head_dim, vd = p.value_dim();
    const std::size_t group = p.n_head / p.n_head_kv;
    const std::size_t qb = detail::attention_q_block;
    const std::size_t n_blocks = (p.n_q + qb - 1) / qb;
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();

    if (p.n_q == 1) {
        detail::attention_decode(p, visible, pos_bias, range(0, 1, p.n_kv), pool);
        return;
    }
    auto task = [&](std::size_t t) {
        const std::size_t h = t % p.n_head, blk = t / p.n_head;
        const std::size_t i0 = blk * qb, i1 = std::min(p.n_q, i0 + qb), m = i1 - i0;
        const std::size_t g = h / group;
        const auto [lo_, hi_] = range(i0, i1, p.n_kv);
        const std::size_t hi = std::min(hi_, p.n_kv), lo = std::min(lo_, hi), n = hi - lo;
        float* o0 = p.out + i0 * p.ldo + h * vd;
        if (n == 0) {
            for (std::size_t r = 0; r < m; ++r) std::fill(o0 + r * p.ldo, o0 + r * p.ldo + vd, 0.f);
            return;
        }
        auto& buf = detail::attention_scratch();
        if (buf.size() < m * n) buf.resize(m * n);
        float* s = buf.data();
        // scores for the whole block in one GEMM (one GEMV for a single row)
        detail::scores(p, p.q + i0 * p.ldq + h * hd, p.ldq, m, g, lo, n, s);
        constexpr bool spans = has_row_span<std::decay_t<Visible>> && std::is_same_v<std::decay_t<Bias>, no_bias>;
        std::size_t* row_n = nullptr;
        if constexpr (spans) {
            auto& rn = detail::row_keys_scratch();
            if (rn.size() < m) rn.resize(m);
            row_n = rn.data();
        }
        for (std::size_t r = 0; r < m; ++r) {
            const std::size_t i = i0 + r;
            float* row = s + r * n;
            const float* b = p.bias ? p.bias + h * p.bias_head_stride + i * p.ld_bias + lo : nullptr;
            if constexpr (spans) {
                const key_span sp = visible.row_span(i);
                if (!sp.exact) {
                    row_n = nullptr; // this block's rows go the predicate way: all keys to P.V
                } else {
                    const std::size_t a = std::clamp(sp.lo, lo, hi) - lo, e = std::max(std::clamp(sp.hi, lo, hi) - lo, a);
                    detail::scale_scores(row, a, e, p.scale, b, p.softcap);
                    std::fill(row, row + a, neg_inf);
                    std::fill(row + e, row + n, neg_inf);
                    if (row_n) row_n[r] = e;
                    if (p.sinks) softmax_with_sink(row, n, p.sinks[h]);
                    else softmax(row, n);
                    continue;
                }
            }
            if constexpr (std::is_same_v<std::decay_t<Bias>, no_bias>) {
                // as in attention_decode: the scaling as its own loop vectorises
                detail::scale_scores(row, 0, n, p.scale, b, p.softcap);
                for (std::size_t j = 0; j < n; ++j)
                    if (!visible(i, lo + j)) row[j] = neg_inf;
            } else {
                for (std::size_t j = 0; j < n; ++j)
                    row[j] = visible(i, lo + j) ? detail::capped(row[j] * p.scale, p.softcap) + (b ? b[j] : 0.f) + pos_bias(h, i, lo + j) : neg_inf;
            }
            if (p.sinks) softmax_with_sink(row, n, p.sinks[h]);
            else softmax(row, n);
        }
        detail::values(p, s, m, g, lo, n, o0, p.ldo, row_n);
    };
    const std::size_t n_tasks = p.n_head * n_blocks;
    if (pool)
        pool->for_each_task(n_tasks, task);
    else
        for (std::size_t t = 0; t < n_tasks; ++t) task(t);
}

template <class Visible, class Range>
void attention(const attention_params& p, Visible&& visible, Range&& range, thread_pool* pool = nullptr) {
    attention(p, std::forward<Visible>(visible), std::forward<Range>(range), pool, no_bias{});
}

template <class Visible>
void attention(const attention_params& p, Visible&& visible, thread_pool* pool = nullptr) {
    attention(p, std::forward<Visible>(visible), all_keys{}, pool, no_bias{});
}

/// Attention with a mask given only as the additive bias (0 / -inf entries).
inline void attention(const attention_params& p, thread_pool* pool = nullptr) {
    attention(p, all_visible{}, pool);
}

} // namespace archetype::kernels
