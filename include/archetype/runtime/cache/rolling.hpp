#pragma once
// RollingCache and SinkCache<S>: on each windowed layer a ring of S + W cells per
// sequence (W = the mask's window): positions < S keep cells 0..S-1, later
// positions p go to cell S + (p - S) mod W. Each ring cell remembers the position
// it holds (the kv_cache's tracked cells, shared by all ring layers of the
// sequence), so RoPE and the mask stay right. Global layers of an Interleave
// pattern keep a full cache (full.hpp). Memory is constant in the sequence length.
//
// Prefill runs in chunks of at most W tokens: a chunk attends over the ring as it
// was before the chunk plus the chunk itself (as the Mistral reference describes),
// then is written into the ring; one token writes first (the cell it takes holds
// position p - W, which it cannot see) and attends over the ring in place.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "archetype/kernels/convert.hpp"
#include "archetype/runtime/cache/full.hpp"

namespace archetype {
namespace runtime {

template <dim_t Sink>
struct ring_cache_impl {
    /// The session's copy of a ring plus a chunk (a chunk attends over both).
    struct scratch {
        std::vector<bool> ring; // per layer
        std::size_t cells = 0;  // S + W
        std::vector<float> k, v;
        std::vector<std::uint16_t> k16, v16;
        std::vector<std::int64_t> pos;
    };

    static bool any_ring(const cache_geometry& g) {
        return std::find(g.windowed->begin(), g.windowed->end(), true) != g.windowed->end();
    }
    static std::size_t chunk_limit(const cache_geometry& g) {
        return any_ring(g) ? g.window : std::numeric_limits<std::size_t>::max();
    }
    static kv_layout layout(const cache_geometry& g) {
        kv_layout L{g.n_layer, g.n_head_kv, g.head_dim, {}, 0, g.half};
        for (std::size_t il = 0; il < g.n_layer; ++il) L.cells.push_back((*g.windowed)[il] ? Sink + g.window : g.n_ctx);
        if (any_ring(g)) L.tracked = Sink + g.window;
        return L;
    }
    /// g.n_ubatch: the session's chunk (≤ chunk_limit).
    static void init(const cache_geometry& g, scratch& sc) {
        sc.ring = *g.windowed;
        sc.cells = Sink + g.window;
        if (!any_ring(g)) return;
        const std::size_t n = g.n_head_kv * (sc.cells + g.n_ubatch) * g.head_dim;
        if (g.half) {
            sc.k16.assign(n, 0);
            sc.v16.assign(n, 0);
        } else {
            sc.k.assign(n, 0.f);
            sc.v.assign(n, 0.f);
        }
        sc.pos.assign(sc.cells + g.n_ubatch, -1);
    }
    static std::size_t attention_keys(const cache_geometry& g) noexcept {
        return std::max(g.n_ctx, Sink + g.window + g.n_ubatch);
    }

    /// Ring cell of position p for a window of W.
    static std::size_t ring_cell(std::int64_t p, std::size_t W) noexcept {
        const auto S = static_cast<std::int64_t>(Sink);
        return static_cast<std::size_t>(p < S ? p : S + (p - S) % static_cast<std::int64_t>(W));
    }

    template <class Run>
    static void attend(kv_cache& c, scratch& sc, attend_step& st, Run&& run) {
        if (!sc.ring[st.layer]) return attend_full(c, st, run);
        const std::size_t hd = c.layout().head_dim, G = c.layout().n_head_kv;
        const std::size_t s = st.seq, il = st.layer, m = st.n, kw = st.ld;
        const std::size_t W = sc.cells - Sink;
        const std::int64_t p0 = st.p0;
        const layers::causal_rule rule{st.window, std::int64_t(Sink)};
        const float* kr = st.k;
        const float* vr = st.v;
        auto& p = st.params;
        const std::size_t cells = c.cells(il);
        const std::int64_t* rp = c.cell_positions(s);
        if (m == 1) {
            // one token: the cell it takes holds a position the token cannot see
            // (p - W), so write first and attend over the ring in place
            const std::size_t cell = ring_cell(p0, W);
            for (std::size_t g = 0; g < G; ++g) c.store(s, il, g, cell, kr + g * hd, vr + g * hd);
            point_at_cells(p, c, s, il, 0);
            p.n_kv = cells;
            auto key_pos = [&](std::size_t j) { return j == cell ? p0 : rp[j]; };
            run(p, [&](std::size_t, std::size_t j) { return rule(p0, key_pos(j)); }, kernels::all_keys{}, key_pos);
            return;
        }
        // a chunk: attend over the ring as it was plus the chunk's own rows, then
        // write the chunk into the ring
        const std::size_t n_kv = cells + m;
        for (std::size_t g = 0; g < G; ++g) {
            if (c.half()) {
                std::uint16_t* ck = sc.k16.data() + g * n_kv * hd;
                std::uint16_t* cv = sc.v16.data() + g * n_kv * hd;
                std::memcpy(ck, c.k16(s, il, g), cells * hd * sizeof(std::uint16_t));
                std::memcpy(cv, c.v16(s, il, g), cells * hd * sizeof(std::uint16_t));
                for (std::size_t i = 0; i < m; ++i) {
                    kernels::f32_to_f16(kr + i * kw + g * hd, ck + (cells + i) * hd, hd);
                    kernels::f32_to_f16(vr + i * kw + g * hd, cv + (cells + i) * hd, hd);
                }
                continue;
            }
            float* ck = sc.k.data() + g * n_kv * hd;
            float* cv = sc.v.data() + g * n_kv * hd;
            std::memcpy(ck, c.k(s, il, g), cells * hd * sizeof(float));
            std::memcpy(cv, c.v(s, il, g), cells * hd * sizeof(float));
            for (std::size_t i = 0; i < m; ++i) {
                std::memcpy(ck + (cells + i) * hd, kr + i * kw + g * hd, hd * sizeof(float));
                std::memcpy(cv + (cells + i) * hd, vr + i * kw + g * hd, hd * sizeof(float));
            }
        }
        for (std::size_t j = 0; j < cells; ++j) sc.pos[j] = rp[j];
        for (std::size_t i = 0; i < m; ++i) sc.pos[cells + i] = p0 + std::int64_t(i);
        if (c.half()) {
            p.k16 = sc.k16.data();
            p.v16 = sc.v16.data();
        } else {
            p.k = sc.k.data();
            p.v = sc.v.data();
        }
        p.ldkv = hd;
        p.kv_head_stride = n_kv * hd;
        p.n_kv = n_kv;
        const std::int64_t* cp = sc.pos.data();
        // the chunk's own rows after row i1 - 1 are in its future
        auto keys = [&](std::size_t, std::size_t i1, std::size_t n) {
            return std::pair<std::size_t, std::size_t>(0, std::min(n, cells + i1));
        };
        run(p, [&](std::size_t i, std::size_t j) { return rule(p0 + std::int64_t(i), cp[j]); }, keys,
            [&](std::size_t j) { return cp[j]; });
        for (std::size_t i = 0; i < m; ++i) {
            const std::size_t cell = ring_cell(p0 + std::int64_t(i), W);
            for (std::size_t g = 0; g < G; ++g) c.store(s, il, g, cell, kr + i * kw + g * hd, vr + i * kw + g * hd);
        }
    }

    /// After all layers of a pass (the ring layers attended over the positions as
    /// they were): record the positions the new cells hold.
    static void commit(kv_cache& c, std::size_t s, std::size_t n) {
        if (const std::size_t T = c.layout().tracked) {
            std::int64_t* pos = c.cell_positions(s);
            for (std::size_t i = 0; i < n; ++i) {
                const std::int64_t p = c.n_past(s) + std::int64_t(i);
                pos[ring_cell(p, T - Sink)] = p;
            }
        }
        c.advance(s, n);
    }
    /// A ring has overwritten the positions a cut-back sequence would attend to: only a
    /// cache without ring layers (no windowed layer) can be truncated; a ring sequence
    /// goes back through a snapshot taken at that position.
    static bool can_truncate(const kv_cache& c) noexcept { return c.layout().tracked == 0; }
};

} // namespace runtime

template <>
struct cache_impl<RollingCache> : runtime::ring_cache_impl<0> {};
template <dim_t S>
struct cache_impl<SinkCache<S>> : runtime::ring_cache_impl<S> {};

} // namespace archetype
