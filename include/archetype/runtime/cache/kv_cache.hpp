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
    bool k_only = false;            // keys only: a value row is a prefix of its key row (MLA's latent cache)
    std::size_t blocks() const noexcept { return k_only ? 1 : 2; } // K (and V) blocks per kv head
};

/// A copy of one sequence's cells (kv_cache::save), to restore later into the same
/// sequence or another (kv_cache::restore): per layer, the cells that hold something —
/// the first n_past cells of a layer whose cells are its positions, the whole ring of
/// a ring layer — so a snapshot of a short prefix is small.
struct kv_snapshot {
    std::int64_t n_past = 0;
    bool half = false;
    std::vector<std::size_t> live;       // per layer: cells saved
    std::vector<float> data;             // float layout: per layer, K then V of each kv head, live cells each
    std::vector<std::uint16_t> data16;   // half layout
    std::vector<std::int64_t> cell_pos;  // tracked cells' positions
    std::size_t bytes() const noexcept {
        return data.size() * sizeof(float) + data16.size() * sizeof(std::uint16_t) +
               cell_pos.size() * sizeof(std::int64_t);
    }
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
            off += layout_.blocks() * layout_.n_head_kv * layout_.cells[il] * layout_.head_dim;
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
        return layout_.k_only ? k(s, il, g) : k(s, il, g) + layout_.n_head_kv * cells(il) * layout_.head_dim;
    }
    /// The same blocks in the half layout.
    std::uint16_t* k16(std::size_t s, std::size_t il, std::size_t g) noexcept {
        return seqs_[s].data16.data() + offsets_[il] + g * cells(il) * layout_.head_dim;
    }
    std::uint16_t* v16(std::size_t s, std::size_t il, std::size_t g) noexcept {
        return layout_.k_only ? k16(s, il, g) : k16(s, il, g) + layout_.n_head_kv * cells(il) * layout_.head_dim;
    }
    /// Stride between kv heads of layer il.
    std::size_t head_stride(std::size_t il) const noexcept { return cells(il) * layout_.head_dim; }

    /// Writes one key row and one value row into cell c of (sequence, layer, kv head),
    /// rounding to half for a half cache (a K-only cache writes the key row only).
    void store(std::size_t s, std::size_t il, std::size_t g, std::size_t c, const float* k_row, const float* v_row) {
        const std::size_t hd = layout_.head_dim;
        if (layout_.half) {
            kernels::f32_to_f16(k_row, k16(s, il, g) + c * hd, hd);
            if (!layout_.k_only) kernels::f32_to_f16(v_row, v16(s, il, g) + c * hd, hd);
        } else {
            std::memcpy(k(s, il, g) + c * hd, k_row, hd * sizeof(float));
            if (!layout_.k_only) std::memcpy(v(s, il, g) + c * hd, v_row, hd * sizeof(float));
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

    /// Forgets positions n .. n_past-1 of s (0 <= n <= n_past): valid where a layer's cells
    /// are its positions (the cache policy says when: cache_impl<C>::can_truncate).
    void truncate(std::size_t s, std::int64_t n) {
        auto& q = seqs_[s];
        if (n < 0 || n > q.n_past)
            throw argument_error("truncate: position " + std::to_string(n) + " is outside 0.." + std::to_string(q.n_past) +
                                 " (sequence " + std::to_string(s) + " holds " + std::to_string(q.n_past) + " positions)");
        q.n_past = n;
    }

    /// A copy of sequence s's cells that hold something.
    kv_snapshot save(std::size_t s) const {
        const auto& q = seqs_[s];
        kv_snapshot out;
        out.half = layout_.half;
        out.n_past = q.n_past;
        out.cell_pos = q.cell_pos;
        const bool used = !q.data.empty() || !q.data16.empty();
        for (std::size_t il = 0; il < layout_.n_layer; ++il) out.live.push_back(used ? live_cells(il, q.n_past) : 0);
        auto gather = [&](const auto& src, auto& dst) {
            for (std::size_t il = 0; il < layout_.n_layer; ++il)
                for (std::size_t kv = 0; kv < layout_.blocks() * layout_.n_head_kv; ++kv) { // K of each head, then V of each
                    const auto* b = src.data() + offsets_[il] + kv * cells(il) * layout_.head_dim;
                    dst.insert(dst.end(), b, b + out.live[il] * layout_.head_dim);
                }
        };
        if (used) {
            if (layout_.half) gather(q.data16, out.data16);
            else gather(q.data, out.data);
        }
        return out;
    }
    /// Makes sequence s what `snap` saved (argument_error, before any change, when the
    /// snapshot does not fit this cache: other layers, head shape, element type, rings).
    void restore(std::size_t s, const kv_snapshot& snap) {
        auto refuse = [](const std::string& why) { throw argument_error("restore: the snapshot " + why); };
        if (snap.live.size() != layout_.n_layer)
            refuse("holds " + std::to_string(snap.live.size()) + " layers, this cache " + std::to_string(layout_.n_layer));
        if (snap.half != layout_.half)
            refuse(std::string("holds ") + (snap.half ? "half" : "float32") + " cells, this cache " +
                   (layout_.half ? "half" : "float32") + " ones (kv_type)");
        if (snap.cell_pos.size() != layout_.tracked) refuse("was taken from a cache with other ring layers");
        std::size_t elements = 0;
        for (std::size_t il = 0; il < layout_.n_layer; ++il) {
            if (snap.live[il] > cells(il))
                refuse("holds " + std::to_string(snap.live[il]) + " cells of layer " + std::to_string(il) +
                       ", which has " + std::to_string(cells(il)) + " here (n_ctx)");
            elements += layout_.blocks() * layout_.n_head_kv * snap.live[il] * layout_.head_dim;
        }
        if ((layout_.half ? snap.data16.size() : snap.data.size()) != elements)
            refuse("has " + std::to_string(layout_.half ? snap.data16.size() : snap.data.size()) +
                   " elements where its layers say " + std::to_string(elements) + " (another head shape)");
        if (elements == 0 && snap.n_past == 0) {
            clear(s);
            return;
        }
        ensure(s);
        auto& q = seqs_[s];
        auto scatter = [&](const auto& src, auto& dst) {
            const auto* p = src.data();
            for (std::size_t il = 0; il < layout_.n_layer; ++il)
                for (std::size_t kv = 0; kv < layout_.blocks() * layout_.n_head_kv; ++kv) {
                    const std::size_t n = snap.live[il] * layout_.head_dim;
                    std::copy(p, p + n, dst.begin() + std::ptrdiff_t(offsets_[il] + kv * cells(il) * layout_.head_dim));
                    p += n;
                }
        };
        if (layout_.half) scatter(snap.data16, q.data16);
        else scatter(snap.data, q.data);
        q.cell_pos = snap.cell_pos;
        q.n_past = snap.n_past;
    }

private:
    /// Cells of layer il that hold something after n_past positions: a ring layer's
    /// (its cells are the tracked ones) all of them, another layer's the first n_past.
    std::size_t live_cells(std::size_t il, std::int64_t n_past) const noexcept {
        if (layout_.tracked && cells(il) == layout_.tracked) return cells(il);
        return std::min(cells(il), std::size_t(n_past));
    }
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
