#pragma once
// RecurrentState: a fixed block of floats per sequence (RWKV: per layer the
// channel-mix shift, the time-mix shift and the wkv matrices), independent of
// the sequence length. Zero = an empty sequence.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "archetype/policies/impl.hpp"
#include "archetype/policies/rwkv.hpp"
#include "archetype/runtime/cache/memory.hpp"

namespace archetype {
namespace runtime {

class recurrent_states {
public:
    recurrent_states() = default;
    recurrent_states(std::size_t floats_per_sequence, std::size_t max_sequences)
        : per_seq_(floats_per_sequence), n_seq_(max_sequences), data_(floats_per_sequence * max_sequences, 0.f) {}

    std::size_t max_sequences() const noexcept { return n_seq_; }
    std::size_t floats_per_sequence() const noexcept { return per_seq_; }
    std::size_t bytes_per_sequence() const noexcept { return per_seq_ * sizeof(float); }
    std::size_t allocated_bytes() const noexcept { return data_.capacity() * sizeof(float); }
    float* state(std::size_t s) noexcept { return data_.data() + s * per_seq_; }
    const float* state(std::size_t s) const noexcept { return data_.data() + s * per_seq_; }
    void clear(std::size_t s) { std::fill_n(state(s), per_seq_, 0.f); }
    void copy(std::size_t src, std::size_t dst) {
        if (src != dst) std::memcpy(state(dst), state(src), bytes_per_sequence());
    }

private:
    std::size_t per_seq_ = 0, n_seq_ = 0;
    std::vector<float> data_;
};

} // namespace runtime

/// RWKV's cache policy names its store.
template <>
struct cache_impl<RecurrentState> {
    using memory = runtime::recurrent_states;
};

static_assert(runtime::sequence_memory<runtime::recurrent_states>);

} // namespace archetype
