#pragma once
// FullCache: one cell per position 0 .. n_ctx-1 (cell = position) on every layer.
// Also the way the ring caches (rolling.hpp) keep their global layers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "archetype/layers/attention.hpp"
#include "archetype/policies/cache.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/runtime/cache/attend_step.hpp"

namespace archetype {
namespace runtime {

/// A layer whose cells are its positions: writes the step's rows at their
/// positions, then attends over the cells a query of the step can see (the
/// window's, when the layer has one).
template <class Run>
void attend_full(kv_cache& c, attend_step& st, Run&& run) {
    const std::size_t hd = c.layout().head_dim, G = c.layout().n_head_kv;
    const std::size_t s = st.seq, il = st.layer, m = st.n;
    const std::int64_t p0 = st.p0;
    const layers::causal_rule rule{st.window, 0};
    for (std::size_t g = 0; g < G; ++g)
        for (std::size_t i = 0; i < m; ++i)
            c.store(s, il, g, std::size_t(p0 + std::int64_t(i)), st.k + i * st.ld + g * hd, st.v + i * st.ld + g * hd);
    const std::int64_t j0 = rule.window ? std::max<std::int64_t>(0, p0 - rule.window + 1) : 0;
    auto& p = st.params;
    point_at_cells(p, c, s, il, std::size_t(j0));
    p.n_kv = std::size_t(p0 - j0) + m;
    // keys a block of rows [i0, i1) can see: causal bound p0 + i1 - 1, window lower bound
    auto keys = [&](std::size_t i0, std::size_t i1, std::size_t n_kv) {
        std::int64_t lo = 0;
        if (rule.window) lo = std::max<std::int64_t>(0, p0 + std::int64_t(i0) - rule.window + 1 - j0);
        const std::int64_t hi = std::min<std::int64_t>(std::int64_t(n_kv), p0 + std::int64_t(i1) - j0);
        return std::pair<std::size_t, std::size_t>(std::size_t(std::min(lo, hi)), std::size_t(hi));
    };
    run(p, layers::cell_visibility{rule, p0, j0}, keys, [&](std::size_t j) { return j0 + std::int64_t(j); });
}

} // namespace runtime

template <>
struct cache_impl<FullCache> {
    struct scratch {};
    /// Most tokens one forward pass may carry: any number.
    static std::size_t chunk_limit(const runtime::cache_geometry&) noexcept {
        return std::numeric_limits<std::size_t>::max();
    }
    static runtime::kv_layout layout(const runtime::cache_geometry& g) {
        runtime::kv_layout L{g.n_layer, g.n_head_kv, g.head_dim, {}, 0, g.half};
        L.cells.assign(g.n_layer, g.n_ctx);
        return L;
    }
    static void init(const runtime::cache_geometry&, scratch&) {}
    /// Most key rows one attend() passes to attention.
    static std::size_t attention_keys(const runtime::cache_geometry& g) noexcept { return g.n_ctx; }
    template <class Run>
    static void attend(runtime::kv_cache& c, scratch&, runtime::attend_step& st, Run&& run) {
        runtime::attend_full(c, st, run);
    }
    /// After all layers of a pass: the sequence's next n positions are written.
    static void commit(runtime::kv_cache& c, std::size_t s, std::size_t n) { c.advance(s, n); }
    /// Cells are positions: a sequence can be cut back to any earlier position.
    static bool can_truncate(const runtime::kv_cache&) noexcept { return true; }
};

} // namespace archetype
