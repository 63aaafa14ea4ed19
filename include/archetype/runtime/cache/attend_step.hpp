#pragma once
// What a decoder session hands its cache policy (cache_impl<C>::attend) for one
// layer and one sequence's rows: the new key / value rows to keep, the queries
// and output (in `params`), and the mask's window for this layer. The policy
// stores the rows where it keeps them, points `params` at the keys a query may
// see and calls `run(params, visible, range, key_pos)` — the session's attention
// with its position bias — where visible(i, j) says whether query row i sees key
// row j, range(i0, i1, n_kv) bounds the key rows of query rows [i0, i1), and
// key_pos(j) is the position of key row j.
#include <cstddef>
#include <cstdint>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/attention.hpp"
#include "archetype/runtime/cache/kv_cache.hpp"

namespace archetype::runtime {

/// What a cache policy sizes its memory from (cache_impl<C>::layout / init).
struct cache_geometry {
    std::size_t n_layer = 0, n_head_kv = 0, head_dim = 0;
    std::size_t n_ctx = 0;                      // positions 0 .. n_ctx-1 are allowed
    std::size_t window = 0;                     // the mask's window (0 = none)
    const std::vector<bool>* windowed = nullptr; // per layer: the mask windows it
    std::size_t n_ubatch = 0;                   // most tokens the session puts in one pass
    bool half = false;                          // IEEE half elements
};

struct attend_step {
    std::size_t seq = 0, layer = 0;
    std::int64_t p0 = 0;      // query / new row i is at position p0 + i
    std::size_t n = 0;        // rows
    const float* k = nullptr; // new key rows: kv head g of row i at k + i*ld + g*head_dim
    const float* v = nullptr;
    std::size_t ld = 0;
    std::int64_t window = 0;  // the mask's window on this layer (0 = plain causal)
    kernels::attention_params params; // heads, scale, q, out set; keys for the policy to set
    /// No position bias, score cap or sinks: a policy may run a kernel that knows none of
    /// them when every key is visible (NoCache's dense path), on the session's pool.
    bool plain = false;
    thread_pool* pool = nullptr;
};

/// Points attention at the cache of (sequence, layer) from cell c0 on.
inline void point_at_cells(kernels::attention_params& p, kv_cache& c, std::size_t s, std::size_t il, std::size_t c0) {
    const std::size_t hd = c.layout().head_dim;
    if (c.half()) {
        p.k16 = c.k16(s, il, 0) + c0 * hd;
        p.v16 = c.v16(s, il, 0) + c0 * hd;
    } else {
        p.k = c.k(s, il, 0) + c0 * hd;
        p.v = c.v(s, il, 0) + c0 * hd;
    }
    p.ldkv = hd;
    p.kv_head_stride = c.head_stride(il);
}

} // namespace archetype::runtime
