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
#include "archetype/models/layer_range.hpp"

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

/// The decoder and RWKV sessions' whole-model calls (prefill, decode) on a pipeline
/// stage: refused, naming the stage's layers.
inline void check_whole_model(const char* what, const layer_range& r, std::size_t n_layer) {
    if (!r.starts_model() || !r.ends_model(n_layer))
        throw argument_error(std::string(what) + ": this session holds layers " + r.to_string() + " of " +
                             std::to_string(n_layer) + " (a pipeline stage): run it with run_stage (distributed/pipeline.hpp)");
}

/// One pass of a pipeline stage (run_stage of the decoder and RWKV sessions): distinct
/// known sequences of 1..max_group rows each, at most max_rows in all, output rows
/// inside the pass, and the rows in and out that the stage's place in the model needs
/// (tokens at the first stage, x_in elsewhere; x_out unless it ends the model). The
/// rows in all.
inline std::size_t check_stage_pass(std::span<const stage_rows> groups, std::size_t max_sequences, std::size_t max_group,
                                    std::size_t max_rows, std::size_t out_first, std::size_t out_n,
                                    const layer_range& r, std::size_t n_layer, const void* tokens, const float* x_in,
                                    const float* x_out) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const auto& g = groups[i];
        check_sequence(g.seq, max_sequences);
        for (std::size_t j = 0; j < i; ++j)
            if (groups[j].seq == g.seq)
                throw argument_error("run_stage: sequence " + std::to_string(g.seq) + " appears twice in one pass");
        if (g.n == 0 || g.n > max_group)
            throw argument_error("run_stage: " + std::to_string(g.n) + " rows of sequence " + std::to_string(g.seq) +
                                 " in one pass; 1.." + std::to_string(max_group) + " (chunk_rows)");
        n += g.n;
    }
    if (n > max_rows)
        throw argument_error("run_stage: " + std::to_string(n) + " rows in one pass, more than max_rows = " +
                             std::to_string(max_rows));
    if (out_first + out_n > n)
        throw argument_error("run_stage: output rows " + std::to_string(out_first) + ".." +
                             std::to_string(out_first + out_n) + " of a pass of " + std::to_string(n));
    if (n == 0) return 0;
    if (r.starts_model() && !tokens) throw argument_error("run_stage: the first stage needs the tokens");
    if (!r.starts_model() && !x_in)
        throw argument_error("run_stage: stage " + r.to_string() + " needs the previous stage's rows (x_in)");
    if (!r.ends_model(n_layer) && !x_out)
        throw argument_error("run_stage: stage " + r.to_string() + " must pass its rows on (x_out)");
    return n;
}

} // namespace runtime
} // namespace archetype
