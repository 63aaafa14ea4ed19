#pragma once
// Key/value storage of a decoder session: per sequence, per layer, per kv head a
// contiguous [cells x head_dim] block of K and one of V, so attention of one head
// streams one block. Elements are float32, or IEEE half when the layout says so
// (half the memory and half the bytes attention reads; llama.cpp's default).
//
// How many cells a layer has, which cell a position goes to and how attention
// reads them is the cache policy's (cache_impl<C>, runtime/cache/full.hpp,
// rolling.hpp): this class only holds the memory. A policy whose cells do not
// equal positions asks for `tracked` cells per sequence, in which it records the
// position each cell holds (-1 = empty; shared by all layers of the sequence).
//
// A sequence's memory is allocated when the sequence is first written and kept
// for reuse (clear only forgets its positions).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/runtime/cache/memory.hpp"

namespace archetype::runtime {

struct kv_layout {
    std::size_t n_layer = 0, n_head_kv = 0, head_dim = 0;
    std::vector<std::size_t> cells; // per layer: cells per sequence
    std::size_t tracked = 0;        // cells per sequence whose held position is recorded (0 = none)
    bool half = false;              // elements are IEEE half instead of float32
};

class kv_cache {
public:
    kv_cache() = default;
    kv_cache(kv_layout layout, std::size_t max_sequences) : layout_(std::move(layout)), seqs_(max_sequences) {
        if (layout_.cells.size() != layout_.n_layer)
            throw argument_error("kv_layout: " + std::to_string(layout_.cells.size()) + " cell counts for " +
                                 std::to_string(layout_.n_layer) + " layers");
        std::size_t off = 0;
        for (std::size_t il = 0; il < layout_.n_layer; ++il) {
            offsets_.push_back(off);
            off += 2 * layout_.n_head_kv * layout_.cells[il] * layout_.head_dim;
        }
        elements_per_seq_ = off;
    }

    const kv_layout& layout() const noexcept { return layout_; }
    std::size_t max_sequences() const noexcept { return seqs_.size(); }
    /// Cells of layer il per sequence.
    std::size_t cells(std::size_t il) const noexcept { return layout_.cells[il]; }
    bool half() const noexcept { return layout_.half; }
    std::size_t element_bytes() const noexcept { return layout_.half ? 2 : 4; }
    /// Bytes one sequence's cache occupies once used.
    std::size_t bytes_per_sequence() const noexcept { return elements_per_seq_ * element_bytes(); }
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

    /// Writes one key row and one value row into cell c of (sequence, layer, kv head),
    /// rounding to half for a half cache.
    void store(std::size_t s, std::size_t il, std::size_t g, std::size_t c, const float* k_row, const float* v_row) {
        const std::size_t hd = layout_.head_dim;
        if (layout_.half) {
            kernels::f32_to_f16(k_row, k16(s, il, g) + c * hd, hd);
            kernels::f32_to_f16(v_row, v16(s, il, g) + c * hd, hd);
        } else {
            std::memcpy(k(s, il, g) + c * hd, k_row, hd * sizeof(float));
            std::memcpy(v(s, il, g) + c * hd, v_row, hd * sizeof(float));
        }
    }

    /// Position held by tracked cell c of sequence s (-1 = empty).
    const std::int64_t* cell_positions(std::size_t s) const noexcept { return seqs_[s].cell_pos.data(); }
    std::int64_t* cell_positions(std::size_t s) noexcept { return seqs_[s].cell_pos.data(); }

    /// Allocates sequence s's memory if needed (called before a forward pass writes it).
    void ensure(std::size_t s) {
        auto& q = seqs_[s];
        if (layout_.half) {
            if (q.data16.empty()) q.data16.assign(elements_per_seq_, 0);
        } else if (q.data.empty())
            q.data.assign(elements_per_seq_, 0.f);
        if (layout_.tracked && q.cell_pos.empty()) q.cell_pos.assign(layout_.tracked, -1);
    }
    /// Records that positions n_past .. n_past+n-1 of s are written.
    void advance(std::size_t s, std::size_t n) noexcept { seqs_[s].n_past += static_cast<std::int64_t>(n); }
    void clear(std::size_t s) {
        auto& q = seqs_[s];
        q.n_past = 0;
        std::fill(q.cell_pos.begin(), q.cell_pos.end(), -1);
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
        b.cell_pos = a.cell_pos;
        b.n_past = a.n_past;
    }

private:
    struct sequence {
        std::int64_t n_past = 0;
        std::vector<float> data;            // float layout
        std::vector<std::uint16_t> data16;  // half layout
        std::vector<std::int64_t> cell_pos; // tracked cells' positions
    };
    kv_layout layout_;
    std::vector<std::size_t> offsets_;
    std::size_t elements_per_seq_ = 0;
    std::vector<sequence> seqs_;
};

static_assert(sequence_memory<kv_cache>);

} // namespace archetype::runtime
