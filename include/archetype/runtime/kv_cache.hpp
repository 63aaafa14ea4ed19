#pragma once
// Key/value cache of a decoder session: per sequence, per layer, per kv head a
// contiguous [cells x head_dim] block of K and one of V, so attention of one head
// streams one block. Elements are float32, or IEEE half when the layout says so
// (half the memory and half the bytes attention reads; llama.cpp's default). A layer's cells are either
//
//   full    one cell per position 0 .. n_ctx-1 (cell = position), or
//   rolling a ring of sink + window cells: positions < sink keep cells 0..sink-1,
//           later positions p go to cell sink + (p - sink) mod window. Each ring
//           cell remembers the position it holds (-1 = empty), shared by all
//           rolling layers of the sequence, so RoPE and the mask stay right.
//
// A sequence's memory is allocated when the sequence is first written and kept
// for reuse (remove_sequence only forgets its positions).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"

namespace archetype::runtime {

struct kv_layout {
    std::size_t n_layer = 0, n_head_kv = 0, head_dim = 0;
    std::size_t n_ctx = 0;          // positions 0 .. n_ctx-1 are allowed
    std::size_t window = 0, sink = 0;
    std::vector<bool> rolling;      // per layer: ring of sink + window cells
    bool half = false;              // elements are IEEE half instead of float32
    std::size_t cells(std::size_t il) const noexcept { return rolling[il] ? sink + window : n_ctx; }
};

class kv_cache {
public:
    kv_cache() = default;
    kv_cache(kv_layout layout, std::size_t max_sequences) : layout_(std::move(layout)), seqs_(max_sequences) {
        std::size_t off = 0;
        for (std::size_t il = 0; il < layout_.n_layer; ++il) {
            offsets_.push_back(off);
            off += 2 * layout_.n_head_kv * layout_.cells(il) * layout_.head_dim;
        }
        floats_per_seq_ = off;
        has_rolling_ = std::find(layout_.rolling.begin(), layout_.rolling.end(), true) != layout_.rolling.end();
    }

    const kv_layout& layout() const noexcept { return layout_; }
    std::size_t max_sequences() const noexcept { return seqs_.size(); }
    /// Cells of layer il per sequence.
    std::size_t cells(std::size_t il) const noexcept { return layout_.cells(il); }
    bool rolling(std::size_t il) const noexcept { return layout_.rolling[il]; }
    bool has_rolling() const noexcept { return has_rolling_; }
    bool half() const noexcept { return layout_.half; }
    std::size_t element_bytes() const noexcept { return layout_.half ? 2 : 4; }
    /// Bytes one sequence's cache occupies once used.
    std::size_t bytes_per_sequence() const noexcept { return floats_per_seq_ * element_bytes(); }
    /// Bytes allocated now, over all sequences.
    std::size_t allocated_bytes() const noexcept {
        std::size_t n = 0;
        for (const auto& s : seqs_) n += s.data.capacity() * sizeof(float) + s.data16.capacity() * sizeof(std::uint16_t);
        return n;
    }

    /// Next position of sequence s (= number of tokens it holds).
    std::int64_t n_past(std::size_t s) const noexcept { return seqs_[s].n_past; }

    /// K block of (sequence, layer, kv head): [cells x head_dim] (float layout).
    float* k(std::size_t s, std::size_t il, std::size_t g) noexcept {
        return seqs_[s].data.data() + offsets_[il] + g * cells(il) * layout_.head_dim;
    }
    float* v(std::size_t s, std::size_t il, std::size_t g) noexcept {
        return k(s, il, g) + layout_.n_head_kv * cells(il) * layout_.head_dim;
    }
    /// The same blocks in the half layout.
    std::uint16_t* k16(std::size_t s, std::size_t il, std::size_t g) noexcept {
        return seqs_[s].data16.data() + offsets_[il] + g * cells(il) * layout_.head_dim;
    }
    std::uint16_t* v16(std::size_t s, std::size_t il, std::size_t g) noexcept {
        return k16(s, il, g) + layout_.n_head_kv * cells(il) * layout_.head_dim;
    }
    /// Stride between kv heads of layer il.
    std::size_t head_stride(std::size_t il) const noexcept { return cells(il) * layout_.head_dim; }

    /// Ring cell of position p.
    std::size_t ring_cell(std::int64_t p) const noexcept {
        const auto S = static_cast<std::int64_t>(layout_.sink), W = static_cast<std::int64_t>(layout_.window);
        return static_cast<std::size_t>(p < S ? p : S + (p - S) % W);
    }
    /// Position held by ring cell c of sequence s (-1 = empty).
    const std::int64_t* ring_positions(std::size_t s) const noexcept { return seqs_[s].ring_pos.data(); }

    /// Allocates sequence s's memory if needed (called before a forward pass writes it).
    void ensure(std::size_t s) {
        auto& q = seqs_[s];
        if (layout_.half) {
            if (q.data16.empty()) q.data16.assign(floats_per_seq_, 0);
        } else if (q.data.empty())
            q.data.assign(floats_per_seq_, 0.f);
        if (has_rolling_ && q.ring_pos.empty()) q.ring_pos.assign(layout_.sink + layout_.window, -1);
    }
    /// Records that positions n_past .. n_past+n-1 of s are written.
    void commit(std::size_t s, std::size_t n) {
        auto& q = seqs_[s];
        if (has_rolling_)
            for (std::size_t i = 0; i < n; ++i) {
                const std::int64_t p = q.n_past + static_cast<std::int64_t>(i);
                q.ring_pos[ring_cell(p)] = p;
            }
        q.n_past += static_cast<std::int64_t>(n);
    }
    void clear(std::size_t s) {
        auto& q = seqs_[s];
        q.n_past = 0;
        std::fill(q.ring_pos.begin(), q.ring_pos.end(), -1);
    }
    void copy(std::size_t src, std::size_t dst) {
        if (src == dst) return;
        ensure(dst);
        auto& a = seqs_[src];
        auto& b = seqs_[dst];
        if (a.data.empty() && a.data16.empty()) {
            clear(dst);
            return;
        }
        std::copy(a.data.begin(), a.data.end(), b.data.begin());
        std::copy(a.data16.begin(), a.data16.end(), b.data16.begin());
        b.ring_pos = a.ring_pos;
        b.n_past = a.n_past;
    }

private:
    struct sequence {
        std::int64_t n_past = 0;
        std::vector<float> data;            // float layout
        std::vector<std::uint16_t> data16;  // half layout
        std::vector<std::int64_t> ring_pos;
    };
    kv_layout layout_;
    std::vector<std::size_t> offsets_;
    std::size_t floats_per_seq_ = 0; // elements per sequence
    bool has_rolling_ = false;
    std::vector<sequence> seqs_;
};

} // namespace archetype::runtime
