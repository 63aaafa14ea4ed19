#pragma once
// NoCache: nothing outlives a pass. A pass's rows of a sequence are all its keys and
// values, at positions 0 .. n-1 (every pass starts the sequence afresh), and a query
// sees each of them (Bidirectional) or those within w/2 positions on a windowed layer
// (SymmetricWindow, llama.cpp's symmetric SWA). This is an encoder's memory: the
// Decoder pairs NoCache with the bidirectional masks only (models/decoder.hpp), and
// the session refuses a sequence that does not fit one pass (whole_sequences) and
// decode, whose one row would see nothing but itself.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/encoder_attention.hpp"
#include "archetype/policies/cache.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/runtime/cache/attend_step.hpp"

namespace archetype {
namespace runtime {

/// The band |i - j| <= half of a symmetric window over one pass's rows.
struct symmetric_band {
    std::int64_t half = 0;
    constexpr bool operator()(std::size_t i, std::size_t j) const noexcept {
        const auto d = std::int64_t(i) - std::int64_t(j);
        return (d < 0 ? -d : d) <= half;
    }
};

} // namespace runtime

template <>
struct cache_impl<NoCache> {
    struct scratch {};
    /// A pass must hold each of its sequences whole: a bidirectional query sees keys that a
    /// later pass would bring, and no cell keeps an earlier pass's.
    static constexpr bool whole_sequences = true;
    /// No cache: decode's single row would attend to itself alone.
    static constexpr bool decodes = false;
    static std::size_t chunk_limit(const runtime::cache_geometry&) noexcept { return std::size_t(-1); }
    static runtime::kv_layout layout(const runtime::cache_geometry& g) {
        runtime::kv_layout L{g.n_layer, g.n_head_kv, g.head_dim, {}, 0, false};
        L.cells.assign(g.n_layer, 0); // no cell on any layer
        return L;
    }
    static void init(const runtime::cache_geometry&, scratch&) {}
    /// Most key rows one attend() passes to attention: one pass's rows.
    static std::size_t attention_keys(const runtime::cache_geometry& g) noexcept { return g.n_ubatch; }
    /// The step's own rows are the keys and values (kv head g of row j at k + j*ld + g*head_dim).
    template <class Run>
    static void attend(runtime::kv_cache& c, scratch&, runtime::attend_step& st, Run&& run) {
        auto& p = st.params;
        p.k = st.k;
        p.v = st.v;
        p.k16 = nullptr;
        p.v16 = nullptr;
        p.ldkv = st.ld;
        p.kv_head_stride = c.layout().head_dim;
        p.n_kv = st.n;
        auto key_pos = [&](std::size_t j) { return st.p0 + std::int64_t(j); };
        // every key visible (no window, or one that spans the sequence) and nothing to add to
        // the scores: the dense kernel, one task per head (the encoder's kernel since round 1)
        const bool sees_all = st.window == 0 || std::int64_t(st.n) - 1 <= st.window / 2;
        if (sees_all && st.plain && kernels::dense_attention_supported(p.head_dim)) {
            auto head = [&](std::size_t h) { kernels::dense_attention_head(p, h); };
            if (st.pool) st.pool->for_each_task(p.n_head, head);
            else for (std::size_t h = 0; h < p.n_head; ++h) head(h);
        } else if (st.window == 0) {
            run(p, kernels::all_visible{}, kernels::all_keys{}, key_pos);
        } else {
            // (all keys scored, the band masked: the encoder's order of sums, bitwise)
            run(p, runtime::symmetric_band{st.window / 2}, kernels::all_keys{}, key_pos);
        }
    }
    /// Nothing is kept: the sequence's next pass starts at position 0 again.
    static void commit(runtime::kv_cache&, std::size_t, std::size_t) noexcept {}
    static bool can_truncate(const runtime::kv_cache&) noexcept { return true; }
};

} // namespace archetype
