#pragma once
// Which rows of a pass belong to which sequence (rwkv_segment), and RWKV's token shift
// over them. The layers' scratch rows are views of the decoder core's scratch
// (policies/mixers/rwkv*.hpp, policies/ffn_rwkv.hpp), sized once per session.
#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "archetype/layers/rwkv_weights.hpp"

namespace archetype {

/// Consecutive rows [begin, begin + len) of a batch that continue one sequence,
/// whose recurrent state (all layers, rwkv.cpp layout) starts at `state`.
struct rwkv_segment {
    float* state = nullptr;
    std::size_t begin = 0, len = 0;
};

/// The sequences of one pass of the decoder core as RWKV segments, made as they are
/// visited (nothing allocated): Groups is a range of {seq, row, n} (decoder_session's),
/// state(seq) gives that sequence's state for the layer at hand. (A plain iterator rather
/// than std::views::transform, which clang 14 cannot compile over libstdc++ 12's ranges.)
template <class Groups, class StateOf>
class rwkv_segments_of {
public:
    rwkv_segments_of(const Groups& groups, StateOf state) : groups_(groups), state_(state) {}
    class iterator {
    public:
        iterator(typename Groups::const_iterator it, const StateOf* state) : it_(it), state_(state) {}
        rwkv_segment operator*() const { return {(*state_)(it_->seq), it_->row, it_->n}; }
        iterator& operator++() {
            ++it_;
            return *this;
        }
        bool operator!=(const iterator& o) const { return it_ != o.it_; }

    private:
        typename Groups::const_iterator it_;
        const StateOf* state_;
    };
    iterator begin() const { return {groups_.begin(), &state_}; }
    iterator end() const { return {groups_.end(), &state_}; }

private:
    const Groups& groups_;
    StateOf state_;
};

/// A block of rows the layer functions read through data() (a workspace's member).
template <class T>
struct rwkv_rows {
    T* p = nullptr;
    T* data() const noexcept { return p; }
};

/// Hands out consecutive buffers of one scratch block (the decoder core's, sized once per
/// session by the mixer's or feed-forward's scratch_floats): the workspaces' rows.
class rwkv_scratch {
public:
    explicit rwkv_scratch(float* p) noexcept : p_(p) {}
    rwkv_rows<float> take(std::size_t floats) noexcept { return {std::exchange(p_, p_ + floats)}; }

private:
    float* p_;
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
