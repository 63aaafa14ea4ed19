#pragma once
// What every family's per-sequence memory offers a session (in the spirit of
// llama.cpp's llama_memory_i): the KV cells of a decoder (kv_cache.hpp) and the
// recurrent state of RWKV (recurrent.hpp) both satisfy it, so the session front
// ends forget, fork and account for a sequence the same way.
#include <concepts>
#include <cstddef>

namespace archetype::runtime {

template <class M>
concept sequence_memory = requires(M& m, const M& cm, std::size_t s) {
    { cm.max_sequences() } -> std::convertible_to<std::size_t>;
    { cm.bytes_per_sequence() } -> std::convertible_to<std::size_t>; ///< once a sequence is used
    { cm.allocated_bytes() } -> std::convertible_to<std::size_t>;    ///< now, over all sequences
    m.clear(s);                                                       ///< back to an empty sequence
    m.copy(s, s);                                                     ///< dst continues as src would
};

} // namespace archetype::runtime
