#pragma once
// What the three session families (decoder, RWKV, encoder) share at their front:
// the sequence-id type, the row selector of prefill, and the argument checks.
// Every check runs before any state changes and throws argument_error naming
// the value.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "archetype/core/error.hpp"

namespace archetype {

/// A sequence of a session: 0 .. max_sequences - 1.
using seq_id = std::int32_t;

/// Which rows of a prefill produce logits (and hidden states).
enum class logits_rows { all, last };

/// Rows of one sequence in one pass of a pipeline stage (run_stage): they follow
/// the sequence's cached positions.
struct stage_rows {
    seq_id seq = 0;
    std::size_t n = 0;
};

namespace runtime {

/// s is one of the session's sequences.
inline void check_sequence(seq_id s, std::size_t max_sequences) {
    if (s < 0 || std::size_t(s) >= max_sequences)
        throw argument_error("unknown sequence " + std::to_string(s) + ": sequence ids are 0.." +
                             std::to_string(max_sequences - 1) + " (max_sequences = " + std::to_string(max_sequences) +
                             ")");
}

/// Every token id is in the vocabulary (seq >= 0: the message names the sequence too).
inline void check_tokens(std::span<const std::int32_t> t, std::size_t n_vocab, std::ptrdiff_t seq = -1) {
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t[i] < 0 || std::size_t(t[i]) >= n_vocab)
            throw argument_error("token id " + std::to_string(t[i]) + " at index " + std::to_string(i) +
                                 (seq >= 0 ? " of sequence " + std::to_string(seq) : std::string()) +
                                 " is outside the vocabulary (n_vocab = " + std::to_string(n_vocab) + ")");
}

/// A batched decode: one token per sequence, distinct known sequences, at most max_sequences.
inline void check_decode_batch(std::span<const seq_id> seqs, std::span<const std::int32_t> tokens,
                               std::size_t max_sequences, std::size_t n_vocab) {
    if (seqs.size() != tokens.size())
        throw argument_error("decode: " + std::to_string(seqs.size()) + " sequences but " +
                             std::to_string(tokens.size()) + " tokens (one token per sequence)");
    if (seqs.size() > max_sequences)
        throw argument_error("decode: " + std::to_string(seqs.size()) +
                             " sequences in one batch, more than max_sequences = " + std::to_string(max_sequences));
    check_tokens(tokens, n_vocab);
    for (std::size_t i = 0; i < seqs.size(); ++i) {
        check_sequence(seqs[i], max_sequences);
        for (std::size_t j = 0; j < i; ++j)
            if (seqs[j] == seqs[i])
                throw argument_error("decode: sequence " + std::to_string(seqs[i]) +
                                     " appears twice in one batch (feed several tokens of one sequence with prefill)");
    }
}

} // namespace runtime
} // namespace archetype
