#pragma once
// A saved sequence of a decoder session (decoder_session::save_sequence): the memory of
// each of its layers as that layer's mixer keeps it — the KV cells that hold something
// (runtime/cache/kv_cache.hpp: kv_snapshot) and the recurrent mixers' state — to restore
// later into the same sequence (going back to the position it was taken at) or another
// (a fork from a common prefix). It belongs to the loaded model it was taken from:
// restore_sequence refuses it in a session of another model.
//
// Truncation is the cheap way back where the memory allows it (a full KV cache); a ring
// of a rolling cache has overwritten old positions and a recurrent state has folded them
// in, so those go back only through a snapshot taken at that position.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "archetype/runtime/cache/kv_cache.hpp"

namespace archetype {

struct sequence_snapshot {
    const void* model = nullptr;  ///< the decoder_model it was taken from
    runtime::kv_snapshot kv;      ///< the KV cells of the attention layers
    std::vector<float> state;     ///< the recurrent mixers' state (conv, shift, wkv ...)

    /// Positions it holds (the sequence's next position after restore).
    std::int64_t n_past() const noexcept { return kv.n_past; }
    /// Memory it holds.
    std::size_t bytes() const noexcept { return kv.bytes() + state.size() * sizeof(float); }
};

} // namespace archetype
