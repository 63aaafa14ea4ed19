#pragma once
// A session runs a loaded RWKV model for several sequences at once. Each
// sequence owns one recurrent state (RecurrentState: per layer the channel-mix
// and time-mix shift vectors and the H x N x N wkv matrix, rwkv.cpp's layout),
// of constant size whatever the sequence length.
//
//   auto model = archetype::load_model<Finch>(path, {.group_norm_eps = 64e-5f});
//   auto sess  = archetype::session(model, {.n_threads = 2, .max_sequences = 4});
//   sess.prefill(0, prompt, logits_all);              // T x n_vocab, or nullptr
//   sess.decode(seqs, next_tokens, logits);           // one token per sequence, batched
//   sess.copy_sequence(0, 1); auto s = sess.save_state(1); sess.restore_state(2, s);
//
// It is RWKV's API over the decoder core's session of Arch::core (runtime/decoder_session.hpp),
// which runs the layers, keeps each sequence's state and checks every argument.
// Prefill batches the GEMMs over the prompt's tokens (in chunks of
// `prefill_chunk` rows) and runs the WKV recurrence token by token, so it
// equals one-token-at-a-time decoding up to float rounding of the GEMMs.
// Every argument is checked before any state changes: a bad token id, sequence
// id or state buffer throws argument_error and leaves all states as they were.
//
// A model loaded with a layer range (a pipeline stage) gives a session whose
// states hold those layers only, driven by run_stage (distributed/pipeline.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/models/rwkv_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/session_args.hpp"

namespace archetype {

struct rwkv_session_options {
    std::size_t n_threads = std::max(1u, std::thread::hardware_concurrency());
    std::size_t max_sequences = 1;
    /// rows per forward pass during prefill (bounds the scratch memory)
    std::size_t prefill_chunk = 128;
};

/// Which rows of a prefill produce logits (the name the RWKV API had before the
/// session front ends were unified: runtime/session_args.hpp).
using rwkv_logits = logits_rows;

template <class Arch>
class rwkv_session {
public:
    using seq_id = archetype::seq_id;
    using core_session = decoder_session<typename Arch::core>;
    /// Magic of a saved state buffer ("RWKVSTA1" little-endian) and its header size.
    static constexpr std::uint64_t state_magic = 0x31415453564b5752ull;
    static constexpr std::size_t state_header_bytes = 8 + 6 * 8;

    rwkv_session(const rwkv_model<Arch>& model, const rwkv_session_options& opt)
        : model_(&model), opt_(opt), s_(model.core, core_options(opt)) {}

    const rwkv_hparams& hparams() const noexcept { return model_->hp; }
    std::size_t n_vocab() const noexcept { return model_->hp.n_vocab; }
    std::size_t max_sequences() const noexcept { return opt_.max_sequences; }
    /// Bytes of recurrent state per sequence (independent of its length).
    std::size_t state_bytes() const noexcept { return s_.recurrent_state_bytes_per_sequence(); }
    std::size_t n_threads() const noexcept { return opt_.n_threads; }
    /// The core's session that runs it (decoder_session of Arch::core).
    const core_session& core() const noexcept { return s_; }

    /// Feeds `tokens` to sequence `s`. logits: nullptr (none), or
    /// tokens.size() x n_vocab floats (which == all), or n_vocab (which == last).
    void prefill(seq_id s, std::span<const std::int32_t> tokens, float* logits = nullptr,
                 rwkv_logits which = rwkv_logits::all) {
        s_.prefill(s, tokens, logits, which);
    }

    /// One token for each of several distinct sequences, in one batch:
    /// logits (if not null) receives seqs.size() x n_vocab floats, in order.
    void decode(std::span<const seq_id> seqs, std::span<const std::int32_t> tokens, float* logits) {
        s_.decode(seqs, tokens, logits);
    }

    /// Convenience: one token for one sequence.
    void decode(seq_id s, std::int32_t token, float* logits) { s_.decode(s, token, logits); }

    /// Back to the zero state (an empty sequence).
    void reset(seq_id s) { s_.remove_sequence(s); }
    /// The same as reset (the decoder sessions' name).
    void remove_sequence(seq_id s) { reset(s); }

    // ---- pipeline stages (distributed/pipeline.hpp), the core session's ----------
    const rwkv_session_options& options() const noexcept { return opt_; }
    layer_range layers() const noexcept { return s_.layers(); }
    std::size_t n_layer() const noexcept { return s_.n_layer(); }
    std::size_t n_embd() const noexcept { return s_.n_embd(); }
    bool has_embedding() const noexcept { return s_.has_embedding(); }
    bool has_head() const noexcept { return s_.has_head(); }
    std::size_t chunk_rows() const noexcept { return s_.chunk_rows(); }
    std::size_t max_rows() const noexcept { return s_.max_rows(); }
    /// A recurrent state has no context limit (the core counts positions up to 2^40).
    std::size_t context_limit() const noexcept { return s_.context_limit(); }
    void check_feed(seq_id s, std::span<const std::int32_t> tokens) const { s_.check_feed(s, tokens); }
    void on_each_layer(void (*hook)(void*), void* context) noexcept { s_.on_each_layer(hook, context); }
    /// One pass of this session's layers over `groups`, as decoder_session::run_stage
    /// (hidden: not kept by RWKV, null).
    void run_stage(std::span<const stage_rows> groups, const std::int32_t* tokens, const float* x_in, float* x_out,
                   std::size_t out_first, std::size_t out_n, float* logits, float* hidden = nullptr) {
        if (hidden) throw argument_error("run_stage: an RWKV stage gives logits, not hidden rows");
        s_.run_stage(groups, tokens, x_in, x_out, out_first, out_n, logits);
    }
    /// dst continues exactly as src would (fork).
    void copy_sequence(seq_id src, seq_id dst) { s_.copy_sequence(src, dst); }
    /// The raw state of s: n_layer x (2 + N) x C floats, per layer [ffn shift, att shift, wkv (H, N, N)].
    std::span<const float> state(seq_id s) const { return s_.recurrent_state(s); }

    /// A self-describing copy of s's state (header with the dimensions, then the floats).
    std::vector<std::byte> save_state(seq_id s) const {
        const auto st = s_.recurrent_state(s);
        std::vector<std::byte> out(state_header_bytes + state_bytes());
        const std::uint64_t h[7] = {state_magic, std::uint64_t(hparams().version), hparams().n_layer, hparams().n_embd,
                                    hparams().head_size, hparams().n_vocab, st.size()};
        std::memcpy(out.data(), h, sizeof h);
        std::memcpy(out.data() + state_header_bytes, st.data(), state_bytes());
        return out;
    }
    /// Replaces s's state with one saved by save_state from a model of the same shape.
    void restore_state(seq_id s, std::span<const std::byte> bytes) {
        const auto st = s_.recurrent_state(s); // checks s
        if (bytes.size() != state_header_bytes + state_bytes())
            throw argument_error("restore_state: buffer of " + std::to_string(bytes.size()) + " bytes, expected " +
                                 std::to_string(state_header_bytes + state_bytes()));
        std::uint64_t h[7];
        std::memcpy(h, bytes.data(), sizeof h);
        const auto& hp = hparams();
        if (h[0] != state_magic) throw argument_error("restore_state: not a saved RWKV state (bad magic)");
        const char* what[] = {"", "version", "n_layer", "n_embd", "head size", "n_vocab", "state size"};
        const std::uint64_t want[7] = {state_magic, std::uint64_t(hp.version), hp.n_layer, hp.n_embd, hp.head_size,
                                       hp.n_vocab, st.size()};
        for (int i = 1; i < 7; ++i)
            if (h[i] != want[i])
                throw argument_error(std::string("restore_state: saved ") + what[i] + " " + std::to_string(h[i]) +
                                     " differs from this model's " + std::to_string(want[i]));
        std::memcpy(s_.recurrent_state(s).data(), bytes.data() + state_header_bytes, state_bytes());
    }

private:
    /// The core's session options for RWKV's: the prefill chunk is the pass size, the
    /// activations are exact floats (RWKV's projections always were: the logits stay the
    /// bits the RWKV stack gave), and positions are only counted.
    static decoder_session_options core_options(const rwkv_session_options& opt) {
        if (opt.max_sequences == 0 || opt.max_sequences > 65536)
            throw argument_error("max_sequences " + std::to_string(opt.max_sequences) + " is outside 1..65536");
        if (opt.prefill_chunk == 0) throw argument_error("prefill_chunk must be positive");
        decoder_session_options o;
        o.n_threads = std::max<std::size_t>(1, opt.n_threads);
        o.max_sequences = opt.max_sequences;
        o.n_ctx = std::size_t(1) << 40;
        o.n_ubatch = opt.prefill_chunk;
        o.batch_activations = kernels::batch_activations::exact;
        return o;
    }

    const rwkv_model<Arch>* model_;
    rwkv_session_options opt_;
    core_session s_;
};

/// A session over a loaded RWKV model (the model must outlive it).
template <class Arch>
rwkv_session<Arch> session(const rwkv_model<Arch>& model, const rwkv_session_options& opt = {}) {
    return rwkv_session<Arch>(model, opt);
}

} // namespace archetype
