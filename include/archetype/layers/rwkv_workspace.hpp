#pragma once
// Scratch buffers of one RWKV forward pass over up to `rows` tokens, and the
// description of which rows belong to which sequence. Sized once per session
// (rows = the prefill chunk) so the hot path never allocates.
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "archetype/layers/rwkv_weights.hpp"

namespace archetype {

/// Consecutive rows [begin, begin + len) of a batch that continue one sequence,
/// whose recurrent state (all layers, rwkv.cpp layout) starts at `state`.
struct rwkv_segment {
    float* state = nullptr;
    std::size_t begin = 0, len = 0;
};

struct rwkv_workspace {
    std::size_t rows = 0;
    std::vector<float> x, xn, y, sx, xxx, mix, xw, xk, xv, xr, xg, r, k, v, g, w, out, dd, hid, emb_row;
    std::vector<float> xia, ia, kk, v_first; // v7: the a-lerp input, a, kk, layer 0's values

    void reserve(const rwkv_hparams& hp, std::size_t n_rows) {
        if (n_rows <= rows) return;
        rows = n_rows;
        const std::size_t C = hp.n_embd;
        for (auto* b : {&x, &xn, &y, &sx, &xxx, &xw, &xk, &xv, &xr, &xg, &r, &k, &v, &g, &w, &out})
            b->assign(n_rows * C, 0.f);
        mix.assign(n_rows * 5 * hp.n_lora_mix, 0.f);
        // the widest low-rank middle (v7 has four LoRAs, v6 one)
        const std::size_t rank = std::max({hp.n_lora_decay, hp.n_lora_iclr, hp.n_lora_vres, hp.n_lora_gate});
        dd.assign(n_rows * rank, 0.f);
        if (hp.version == 7)
            for (auto* b : {&xia, &ia, &kk, &v_first}) b->assign(n_rows * C, 0.f);
        hid.assign(n_rows * hp.n_ffn, 0.f);
        emb_row.assign(C, 0.f);
    }
};

namespace detail {
/// sx[row] = prev(row) - xn[row], prev being the row before in the same
/// sequence or, for a sequence's first row, the shift vector saved in its state
/// (at `shift_offset` floats into the layer's state); then the state keeps the
/// segment's last xn. Must see all rows of a segment before the state changes.
/// Segments: any range of rwkv_segment values (a span, or a view made on the fly).
template <class Segments>
void rwkv_token_shift(const Segments& segs, std::size_t layer_offset,
                             std::size_t shift_offset, const float* xn, float* sx, std::size_t C) {
    for (const auto& s : segs) {
        if (s.len == 0) continue;
        float* saved = s.state + layer_offset + shift_offset;
        for (std::size_t t = 0; t < s.len; ++t) {
            const std::size_t row = s.begin + t;
            const float* prev = t == 0 ? saved : xn + (row - 1) * C;
            const float* cur = xn + row * C;
            float* o = sx + row * C;
            for (std::size_t c = 0; c < C; ++c) o[c] = prev[c] - cur[c];
        }
        const float* last = xn + (s.begin + s.len - 1) * C;
        for (std::size_t c = 0; c < C; ++c) saved[c] = last[c];
    }
}
} // namespace detail

} // namespace archetype
