#pragma once
// How the int8 GEMM tiles of the row-engine levels (avx2/tile.hpp, neon/tile.hpp) walk
// a matrix, the same at every level: the rows in groups of GroupPanels panels of
// PanelRows rows, the groups split over the threads; each panel of a group packed once
// per call (the level's layout), then TileTokens tokens at a time run over every panel
// of the group, their activations then in L1. A row's outputs come from its own panel
// alone, whatever the group, the thread or the token tile: bitwise the same on any
// thread count.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"

namespace archetype::quant::int8 {

/// The rows of W (rows x nb blocks, row_bytes apart) by panels: pack(W, row_bytes, r0,
/// nr, nb, panel) packs rows [r0, r0 + nr) (nr <= PanelRows) into panel_bytes; run(panel,
/// nb, a, y, ldy, nr, n) writes the outputs of n (<= TileTokens) tokens a[0, n) for the
/// panel's nr rows at y (token k at y + k * ldy).
template <std::size_t PanelRows, std::size_t GroupPanels, int TileTokens, class Pack, class Run>
inline void gemm_groups(const std::uint8_t* W, std::size_t rows, std::size_t nb, std::size_t row_bytes,
                        std::size_t panel_bytes, const act_buffer& acts, std::size_t n_tok, float* y,
                        std::size_t ldy, thread_pool* pool, const Pack& pack, const Run& run) {
    constexpr std::size_t G = PanelRows * GroupPanels;
    constexpr int NT = TileTokens;
    const std::size_t groups = (rows + G - 1) / G;
    auto work = [&](std::size_t gb, std::size_t ge) {
        static thread_local std::vector<std::uint8_t> panel;
        panel.resize(GroupPanels * panel_bytes);
        act_row a[NT];
        for (std::size_t g = gb; g < ge; ++g) {
            const std::size_t r0 = g * G, n_panels = (std::min(G, rows - r0) + PanelRows - 1) / PanelRows;
            for (std::size_t o = 0; o < n_panels; ++o)
                pack(W, row_bytes, r0 + PanelRows * o, std::min(PanelRows, rows - r0 - PanelRows * o), nb,
                     panel.data() + o * panel_bytes);
            for (std::size_t t = 0; t < n_tok; t += NT) {
                const int n = int(std::min<std::size_t>(NT, n_tok - t));
                for (int i = 0; i < n; ++i) a[i] = acts.row(t + std::size_t(i));
                for (std::size_t o = 0; o < n_panels; ++o)
                    run(panel.data() + o * panel_bytes, nb, a, y + t * ldy + r0 + PanelRows * o, ldy,
                        std::min(PanelRows, rows - r0 - PanelRows * o), n);
            }
        }
    };
    if (pool) pool->parallel_for(groups, work);
    else work(0, groups);
}

} // namespace archetype::quant::int8
