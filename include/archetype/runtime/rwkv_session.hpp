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
#include "archetype/core/thread_pool.hpp"
#include "archetype/layers/rwkv_workspace.hpp"
#include "archetype/models/rwkv.hpp"

#include "archetype/runtime/cache/recurrent.hpp"
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
    using memory_type = typename cache_impl<typename Arch::cache>::memory;
    /// Magic of a saved state buffer ("RWKVSTA1" little-endian) and its header size.
    static constexpr std::uint64_t state_magic = 0x31415453564b5752ull;
    static constexpr std::size_t state_header_bytes = 8 + 6 * 8;

    rwkv_session(const rwkv_model<Arch>& model, const rwkv_session_options& opt)
        : model_(&model), W_(&model.weights), opt_(opt) {
        if (opt.max_sequences == 0 || opt.max_sequences > 65536)
            throw argument_error("max_sequences " + std::to_string(opt.max_sequences) + " is outside 1..65536");
        if (opt.prefill_chunk == 0) throw argument_error("prefill_chunk must be positive");
        pool_ = std::make_unique<thread_pool>(std::max<std::size_t>(1, opt.n_threads));
        spf_ = W_->hp.state_floats_per_layer() * W_->stage().count; // a stage keeps its own layers' state
        states_ = memory_type(spf_, opt.max_sequences);
        ws_.reserve(W_->hp, std::max(opt.prefill_chunk, opt.max_sequences));
    }

    const rwkv_hparams& hparams() const noexcept { return W_->hp; }
    std::size_t n_vocab() const noexcept { return W_->hp.n_vocab; }
    std::size_t max_sequences() const noexcept { return opt_.max_sequences; }
    /// Bytes of recurrent state per sequence (independent of its length).
    std::size_t state_bytes() const noexcept { return spf_ * sizeof(float); }
    /// The per-sequence memory (runtime/cache/memory.hpp's concept).
    const memory_type& memory() const noexcept { return states_; }
    std::size_t n_threads() const noexcept { return pool_->size(); }

    /// Feeds `tokens` to sequence `s`. logits: nullptr (none), or
    /// tokens.size() x n_vocab floats (which == all), or n_vocab (which == last).
    void prefill(seq_id s, std::span<const std::int32_t> tokens, float* logits = nullptr,
                 rwkv_logits which = rwkv_logits::all) {
        check_whole_model("prefill");
        check_seq(s);
        check_tokens(tokens);
        const std::size_t V = n_vocab();
        const std::size_t T = tokens.size();
        std::vector<std::size_t> rows;
        for (std::size_t b = 0; b < T; b += opt_.prefill_chunk) {
            const std::size_t n = std::min(opt_.prefill_chunk, T - b);
            const rwkv_segment seg{state_ptr(s), 0, n};
            rows.clear();
            float* out = nullptr;
            if (logits && which == rwkv_logits::all) {
                for (std::size_t i = 0; i < n; ++i) rows.push_back(i);
                out = logits + b * V;
            } else if (logits && b + n == T) {
                rows.push_back(n - 1);
                out = logits;
            }
            rwkv_forward<Arch>(*W_, std::span(&seg, 1), tokens.data() + b, n, rows, out, ws_, pool_.get());
        }
    }

    /// One token for each of several distinct sequences, in one batch:
    /// logits (if not null) receives seqs.size() x n_vocab floats, in order.
    void decode(std::span<const seq_id> seqs, std::span<const std::int32_t> tokens, float* logits) {
        check_whole_model("decode");
        runtime::check_decode_batch(seqs, tokens, opt_.max_sequences, n_vocab());
        const std::size_t n = seqs.size();
        if (n == 0) return;
        ws_.reserve(W_->hp, n);
        // reused across calls: no allocation per decoded token once the batch size was seen
        auto& segs = segs_;
        auto& rows = rows_;
        segs.resize(n);
        rows.resize(logits ? n : 0);
        for (std::size_t i = 0; i < n; ++i) {
            segs[i] = rwkv_segment{state_ptr(seqs[i]), i, 1};
            if (logits) rows[i] = i;
        }
        rwkv_forward<Arch>(*W_, std::span<const rwkv_segment>(segs), tokens.data(), n,
                           std::span<const std::size_t>(rows), logits, ws_, pool_.get());
    }

    /// Convenience: one token for one sequence.
    void decode(seq_id s, std::int32_t token, float* logits) {
        decode(std::span<const seq_id>(&s, 1), std::span<const std::int32_t>(&token, 1), logits);
    }

    /// Back to the zero state (an empty sequence).
    void reset(seq_id s) {
        check_seq(s);
        states_.clear(std::size_t(s));
    }
    /// The same as reset (the decoder sessions' name).
    void remove_sequence(seq_id s) { reset(s); }

    // ---- pipeline stages (distributed/pipeline.hpp), as decoder_session's ----------
    const rwkv_session_options& options() const noexcept { return opt_; }
    layer_range layers() const noexcept { return W_->stage(); }
    std::size_t n_layer() const noexcept { return W_->hp.n_layer; }
    std::size_t n_embd() const noexcept { return W_->hp.n_embd; }
    bool has_embedding() const noexcept { return W_->has_embedding(); }
    bool has_head() const noexcept { return W_->has_head(); }
    std::size_t chunk_rows() const noexcept { return opt_.prefill_chunk; }
    std::size_t max_rows() const noexcept { return std::max(opt_.prefill_chunk, opt_.max_sequences); }
    /// A recurrent state has no context limit.
    std::size_t context_limit() const noexcept { return ~std::size_t(0); }
    void check_feed(seq_id s, std::span<const std::int32_t> tokens) const {
        check_seq(s);
        if (has_embedding()) check_tokens(tokens);
    }
    void on_each_layer(void (*hook)(void*), void* context) noexcept {
        hook_ = hook;
        hook_context_ = context;
    }
    /// One pass of this session's layers over `groups` (distinct sequences, rows
    /// concatenated), as decoder_session::run_stage: tokens at the first stage, x_in
    /// elsewhere; x_out unless the stage ends the model; logits of rows
    /// out_first .. out_first + out_n - 1 at the last stage (hidden: not kept by RWKV, null).
    void run_stage(std::span<const stage_rows> groups, const std::int32_t* tokens, const float* x_in, float* x_out,
                   std::size_t out_first, std::size_t out_n, float* logits, float* hidden = nullptr) {
        if (hidden) throw argument_error("run_stage: an RWKV stage gives logits, not hidden rows");
        const std::size_t n = runtime::check_stage_pass(groups, opt_.max_sequences, max_rows(), max_rows(), out_first,
                                                        out_n, layers(), n_layer(), tokens, x_in, x_out);
        if (n == 0) return;
        if (has_embedding()) check_tokens(std::span<const std::int32_t>(tokens, n));
        ws_.reserve(W_->hp, n);
        segs_.clear();
        std::size_t row = 0;
        for (const auto& g : groups) {
            segs_.push_back(rwkv_segment{state_ptr(g.seq), row, g.n});
            row += g.n;
        }
        rows_.clear();
        if (logits)
            for (std::size_t i = 0; i < out_n; ++i) rows_.push_back(out_first + i);
        rwkv_forward<Arch>(*W_, std::span<const rwkv_segment>(segs_), tokens, n, std::span<const std::size_t>(rows_),
                           logits, ws_, pool_.get(), x_in, hook_, hook_context_);
        if (!has_head()) std::memcpy(x_out, ws_.x.data(), n * n_embd() * sizeof(float));
    }
    /// dst continues exactly as src would (fork).
    void copy_sequence(seq_id src, seq_id dst) {
        check_seq(src);
        check_seq(dst);
        states_.copy(std::size_t(src), std::size_t(dst));
    }
    /// The raw state of s: n_layer x (2 + N) x C floats, per layer [ffn shift, att shift, wkv (H, N, N)].
    std::span<const float> state(seq_id s) const {
        check_seq(s);
        return {states_.state(std::size_t(s)), spf_};
    }

    /// A self-describing copy of s's state (header with the dimensions, then the floats).
    std::vector<std::byte> save_state(seq_id s) const {
        check_seq(s);
        std::vector<std::byte> out(state_header_bytes + state_bytes());
        const auto& hp = W_->hp;
        const std::uint64_t h[7] = {state_magic, std::uint64_t(hp.version), hp.n_layer, hp.n_embd, hp.head_size,
                                    hp.n_vocab, spf_};
        std::memcpy(out.data(), h, sizeof h);
        std::memcpy(out.data() + state_header_bytes, states_.state(std::size_t(s)), state_bytes());
        return out;
    }
    /// Replaces s's state with one saved by save_state from a model of the same shape.
    void restore_state(seq_id s, std::span<const std::byte> bytes) {
        check_seq(s);
        if (bytes.size() != state_header_bytes + state_bytes())
            throw argument_error("restore_state: buffer of " + std::to_string(bytes.size()) + " bytes, expected " +
                                 std::to_string(state_header_bytes + state_bytes()));
        std::uint64_t h[7];
        std::memcpy(h, bytes.data(), sizeof h);
        const auto& hp = W_->hp;
        if (h[0] != state_magic) throw argument_error("restore_state: not a saved RWKV state (bad magic)");
        const char* what[] = {"", "version", "n_layer", "n_embd", "head size", "n_vocab", "state size"};
        const std::uint64_t want[7] = {state_magic, std::uint64_t(hp.version), hp.n_layer, hp.n_embd, hp.head_size,
                                       hp.n_vocab, spf_};
        for (int i = 1; i < 7; ++i)
            if (h[i] != want[i])
                throw argument_error(std::string("restore_state: saved ") + what[i] + " " + std::to_string(h[i]) +
                                     " differs from this model's " + std::to_string(want[i]));
        std::memcpy(state_ptr(s), bytes.data() + state_header_bytes, state_bytes());
    }

private:
    void check_seq(seq_id s) const { runtime::check_sequence(s, opt_.max_sequences); }
    void check_whole_model(const char* what) const { runtime::check_whole_model(what, layers(), n_layer()); }
    void check_tokens(std::span<const std::int32_t> tokens) const { runtime::check_tokens(tokens, n_vocab()); }
    float* state_ptr(seq_id s) { return states_.state(std::size_t(s)); }

    const rwkv_model<Arch>* model_;
    const rwkv_weights* W_;
    rwkv_session_options opt_;
    std::unique_ptr<thread_pool> pool_;
    std::size_t spf_ = 0;
    memory_type states_; ///< the cache policy's store (cache_impl<RecurrentState>, runtime/cache/recurrent.hpp)
    rwkv_workspace ws_;
    std::vector<rwkv_segment> segs_; ///< decode's batch description, kept to avoid per-token allocation
    std::vector<std::size_t> rows_;
    void (*hook_)(void*) = nullptr; ///< on_each_layer
    void* hook_context_ = nullptr;
};

/// A session over a loaded RWKV model (the model must outlive it).
template <class Arch>
rwkv_session<Arch> session(const rwkv_model<Arch>& model, const rwkv_session_options& opt = {}) {
    return rwkv_session<Arch>(model, opt);
}

} // namespace archetype
