#pragma once
// A decoder session: several sequences, each with its own cache cells, driven
// by prefill (any number of tokens of one sequence) and decode (one token for
// each of several sequences, one batch).
//
//   auto model = archetype::load_model<Mistral>("mistral.gguf");
//   auto sess  = archetype::session(model, {.n_threads = 2, .max_sequences = 4, .n_ctx = 4096});
//   sess.prefill(0, prompt, logits);                 // logits [n x n_vocab] (or last row only)
//   sess.decode(seqs, next_tokens, logits);          // logits [seqs x n_vocab]
//
// Prefill runs in chunks of at most n_ubatch tokens (and at most what the cache
// policy allows: a ring of W cells takes chunks of ≤ W). Where keys and values
// are kept and how a layer attends over them is the cache policy's
// (cache_impl<C>, runtime/cache/); the session computes the rows. Every projection of a chunk is one GEMM; decode runs each
// projection once for all sequences (n_tok = number of sequences); attention is
// split over heads on the thread pool. All buffers are allocated when the
// session is made (and a sequence's cache when it is first written): decode
// allocates nothing.
//
// A model loaded with a layer range (a pipeline stage, models/layer_range.hpp)
// gives a session that keeps the cache of those layers only and is driven by
// run_stage(): hidden rows in, hidden rows (or, at the last stage, logits) out;
// distributed/pipeline.hpp chains such sessions over MPI ranks.
//
// Errors (argument_error / capacity_error) are raised before any state changes:
// a token id outside the vocabulary, a sequence id outside 0..max_sequences-1,
// a position at or past n_ctx. No BOS or other token is ever added.
#include <algorithm>
#include <cmath>
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
#include "archetype/kernels/batch_activations.hpp"
#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/decode_rows.hpp"
#include "archetype/kernels/embedding_row.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/quant/dequantize.hpp"
#include "archetype/layers/attention.hpp"
#include "archetype/layers/ffn.hpp"
#include "archetype/layers/norm.hpp"
#include "archetype/layers/positions.hpp"
#include "archetype/layers/rope.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/cache/full.hpp"
#include "archetype/runtime/cache/none.hpp"
#include "archetype/runtime/cache/rolling.hpp"
#include "archetype/runtime/kv_cache_type.hpp"
#include "archetype/runtime/sequence_snapshot.hpp"
#include "archetype/runtime/session_args.hpp"

namespace archetype {


/// The context a session gets when decoder_session_options::n_ctx is 0, if the file
/// allows that many positions.
inline constexpr std::size_t default_n_ctx = 4096;

struct decoder_session_options {
    std::size_t n_threads = std::max(1u, std::thread::hardware_concurrency());
    std::size_t max_sequences = 1;
    /// positions 0..n_ctx-1 per sequence; 0 = min(default_n_ctx, the file's context_length):
    /// a Llama-3 file trains on 131072 positions, whose KV cache per sequence would be
    /// gigabytes. Ask for more explicitly (up to the file's context_length).
    std::size_t n_ctx = 0;
    std::size_t n_ubatch = 512; ///< largest number of tokens in one forward pass
    kv_cache_type kv_type = kv_cache_type::f32;
    /// How prompt batches meet quantised weights (kernels/batch_activations.hpp): mixed (the
    /// default: int8 activations except the FFN down projection's; closer to the exact model
    /// than llama.cpp, at most of int8's speed), int8 (llama.cpp's rounding in every product)
    /// or exact (float activations: the exact model's products to float rounding, slower).
    kernels::batch_activations batch_activations = kernels::batch_activations::mixed;
    /// decode: every sequence's row bitwise what it gets decoded alone, whatever the batch
    /// (kernels/decode_rows.hpp; a serving scheduler turns it on). Off: batches of
    /// quant::panels::min_tokens rows or more take the float panels, faster on some CPUs.
    bool batch_invariant_decode = false;
};


template <DecoderType D>
class decoder_session {
public:
    using model_type = decoder_model<D>;

    decoder_session(const model_type& m, const decoder_session_options& o) : m_(&m), opt_(o) {
        const auto& hp = m.hparams();
        if (opt_.max_sequences == 0) throw argument_error("max_sequences = 0: a session needs at least one sequence");
        if (opt_.n_ubatch == 0) throw argument_error("n_ubatch = 0: need at least one token per forward pass");
        if (opt_.n_ctx == 0) opt_.n_ctx = std::min(default_n_ctx, hp.n_ctx_train);
        pool_ = std::make_unique<thread_pool>(std::max<std::size_t>(1, opt_.n_threads));
        // the cache policy sizes its memory from the mask's windows (runtime/cache/)
        // a stage keeps the cache of its own layers only (the policy sees layers 0..count-1)
        range_ = m.layers();
        windowed_.assign(hp.windowed.begin() + std::ptrdiff_t(range_.first),
                         hp.windowed.begin() + std::ptrdiff_t(range_.first + range_.count));
        runtime::cache_geometry g;
        g.n_layer = range_.count;
        g.n_head_kv = hp.dims.n_head_kv;
        g.head_dim = hp.dims.head_dim;
        g.n_ctx = opt_.n_ctx;
        g.window = hp.window;
        g.windowed = &windowed_;
        g.half = opt_.kv_type == kv_cache_type::f16;
        chunk_ = std::min(opt_.n_ubatch, cache_impl_t::chunk_limit(g));
        g.n_ubatch = chunk_;
        auto layout = cache_impl_t::layout(g);
        layout.k_only = detail::mixer_values_in_keys<mixer>; // MLA: values are a prefix of the keys
        // a layer whose mixer keeps no KV cells (a hybrid's recurrent layer) gets none
        bool attends = false;
        for (std::size_t i = 0; i < range_.count; ++i)
            if (const auto& L = m.layer_at(range_.first + i); !L.mixes || !detail::mixer_keeps_kv<mixer>(L.attn))
                layout.cells[i] = 0;
            else
                attends = true;
        cache_ = runtime::kv_cache(std::move(layout), opt_.max_sequences);
        cache_impl_t::init(g, cache_scratch_);
        // the attention scratch only where some held layer attends (not for RWKV or Mamba)
        attention_keys_ = attends ? cache_impl_t::attention_keys(g) : 0;
        rows_ = std::max(chunk_, opt_.max_sequences);
        // the recurrent mixers' state per sequence (conv states, ...) beside the KV cells,
        // and the scratch their forward pass needs
        // A layer's share of a sequence's memory: its feed-forward's (RWKV's channel-mix shift,
        // first, as rwkv.cpp lays a layer out), then its mixer's.
        state_offset_.assign(range_.count, 0);
        ffn_state_offset_.assign(range_.count, 0);
        std::size_t mix_scratch = 0, side = 0;
        for (std::size_t i = 0; i < range_.count; ++i) {
            const auto& L = m.layer_at(range_.first + i);
            const auto& w = L.attn;
            if constexpr (detail::ffn_has_memory<typename D::ffn>)
                if (L.feeds) {
                    ffn_state_offset_[i] = state_per_seq_;
                    state_per_seq_ += ffn_impl<typename D::ffn>::state_floats(L.ffn);
                    // the feed-forward runs after the mixer is done with the scratch: they share it
                    mix_scratch = std::max(mix_scratch, ffn_impl<typename D::ffn>::scratch_floats(L.ffn, rows_));
                }
            state_offset_[i] = state_per_seq_;
            if (!L.mixes) continue; // a feed-forward-only layer keeps nothing
            state_per_seq_ += detail::mixer_state_floats<mixer>(w);
            mix_scratch = std::max(mix_scratch, detail::mixer_scratch_floats<mixer>(w, rows_));
            side = std::max(side, detail::mixer_side_channel_floats<mixer>(w, rows_));
        }
        rstate_.assign(opt_.max_sequences * state_per_seq_, 0.f);
        mix_scratch_.assign(mix_scratch, 0.f);
        side_floats_.assign(side, 0.f);
        const std::size_t E = hp.dims.n_embd, qw = hp.attn.q_width(), kw = hp.attn.kv_width();
        x_.assign(rows_ * E, 0.f);
        h_.assign(rows_ * E, 0.f);
        t_.assign(rows_ * E, 0.f);
        if constexpr (detail::block_is_parallel<typename D::block>) u_.assign(rows_ * E, 0.f); // a second output
        q_.assign(rows_ * qw, 0.f);
        k_.assign(rows_ * kw, 0.f);
        v_.assign(rows_ * kw, 0.f);
        ao_.assign(rows_ * qw, 0.f);
        pos_.assign(rows_, 0);
        const std::size_t half = hp.rotary ? hp.rope.n_rot / 2 : 0;
        cos_.assign(rows_ * half, 0.f);
        sin_.assign(rows_ * half, 0.f);
        two_ropes_ = hp.rotary && (hp.rope_swa.freq_base != hp.rope.freq_base || hp.rope_swa.freq_scale != hp.rope.freq_scale);
        // LongRoPE (Phi-3): the long-context frequency factors when this session's context
        // exceeds the training one, as llama.cpp decides (per context, not per call)
        rope_ = layers::for_context(hp.rope, opt_.n_ctx);
        rope_swa_ = layers::for_context(hp.rope_swa, opt_.n_ctx);
        if (two_ropes_) {
            cos_swa_.assign(rows_ * half, 0.f);
            sin_swa_.assign(rows_ * half, 0.f);
        }
        groups_.reserve(rows_);
        // the position policy's per-session state (bias tables, scratch rows), sized once
        pos_impl::init(m.positions(), position_context{hp.dims.n_head, hp.dims.n_embd, opt_.n_ctx}, pos_state_);
        warm_up();
    }

    decoder_session(decoder_session&&) noexcept = default;
    decoder_session& operator=(decoder_session&&) noexcept = default;

    const model_type& model() const noexcept { return *m_; }
    const decoder_session_options& options() const noexcept { return opt_; }
    const runtime::kv_cache& cache() const noexcept { return cache_; }
    /// Bytes of recurrent mixer state (a hybrid's conv states, ...) one sequence keeps
    /// beside its KV cells (0 for a model that only attends).
    std::size_t recurrent_state_bytes_per_sequence() const noexcept { return state_per_seq_ * sizeof(float); }
    /// Sequence s's recurrent state: each held layer's feed-forward memory, then its mixer's
    /// (for RWKV rwkv.cpp's layout: per layer the channel-mix shift, the time-mix shift, the
    /// wkv matrix); read, or written in place (a saved state put back: runtime/rwkv_session.hpp).
    std::span<const float> recurrent_state(seq_id s) const {
        check_seq(s);
        return {rstate_.data() + std::size_t(s) * state_per_seq_, state_per_seq_};
    }
    std::span<float> recurrent_state(seq_id s) {
        check_seq(s);
        return {rstate_.data() + std::size_t(s) * state_per_seq_, state_per_seq_};
    }
    std::size_t n_vocab() const noexcept { return m_->n_vocab(); }
    /// Tokens held by sequence s (= its next position).
    std::int64_t n_past(seq_id s) const {
        check_seq(s);
        return cache_.n_past(std::size_t(s));
    }

    /// Feeds `tokens` to sequence `seq` at its next positions. logits (may be
    /// null): [n x n_vocab] for rows == all, [n_vocab] for rows == last; hidden
    /// (may be null): the final-norm output, [n x n_embd] or [n_embd].
    void prefill(seq_id seq, std::span<const std::int32_t> tokens, float* logits, logits_rows rows = logits_rows::all,
                 float* hidden = nullptr) {
        check_whole_model("prefill");
        check_seq(seq);
        check_tokens(tokens);
        const auto s = std::size_t(seq);
        check_room(s, tokens.size());
        if (tokens.empty()) return;
        if constexpr (whole_sequences)
            if (tokens.size() > chunk_)
                throw capacity_error("prefill: " + std::to_string(tokens.size()) + " tokens do not fit one pass of " +
                                     std::to_string(chunk_) + " rows (n_ubatch), and under " +
                                     std::string(D::cache::describe()) + " a sequence runs whole: its queries see "
                                     "every key of it (raise n_ubatch)");
        const std::size_t V = n_vocab(), E = m_->n_embd();
        for (std::size_t b = 0; b < tokens.size(); b += chunk_) {
            const std::size_t n = std::min(chunk_, tokens.size() - b);
            const bool last_chunk = b + n == tokens.size();
            groups_.clear();
            groups_.push_back({s, 0, n});
            for (std::size_t i = 0; i < n; ++i) pos_[i] = cache_.n_past(s) + std::int64_t(i);
            std::size_t out_first = n, out_n = 0;
            if (rows == logits_rows::all) {
                out_first = 0;
                out_n = n;
            } else if (last_chunk) {
                out_first = n - 1;
                out_n = 1;
            }
            const std::size_t out_row = rows == logits_rows::all ? b : 0;
            forward(tokens.data() + b, n, out_first, out_n, logits ? logits + out_row * V : nullptr,
                    hidden ? hidden + out_row * E : nullptr);
        }
    }

    /// One token for each sequence in `seqs` (distinct), in one batch:
    /// logits (may be null) [seqs.size() x n_vocab], in the order of `seqs`.
    void decode(std::span<const seq_id> seqs, std::span<const std::int32_t> tokens, float* logits,
                float* hidden = nullptr) {
        check_whole_model("decode");
        if constexpr (!decodes)
            throw argument_error("decode: " + std::string(D::cache::describe()) + " keeps no past tokens, so a decoded "
                                 "token would see only itself: run whole sequences through prefill or run_stage");
        runtime::check_decode_batch(seqs, tokens, opt_.max_sequences, n_vocab());
        for (const seq_id s : seqs) check_room(std::size_t(s), 1);
        if (seqs.empty()) return;
        groups_.clear();
        for (std::size_t i = 0; i < seqs.size(); ++i) {
            groups_.push_back({std::size_t(seqs[i]), i, 1});
            pos_[i] = cache_.n_past(std::size_t(seqs[i]));
        }
        const kernels::decode_rows_invariant_scope rows(opt_.batch_invariant_decode);
        forward(tokens.data(), seqs.size(), 0, seqs.size(), logits, hidden);
    }
    /// Turns batch_invariant_decode (the options') on or off for the next decode calls.
    void set_batch_invariant_decode(bool on) noexcept { opt_.batch_invariant_decode = on; }

    /// One token for one sequence: logits (may be null) [n_vocab].
    void decode(seq_id seq, std::int32_t token, float* logits, float* hidden = nullptr) {
        decode(std::span<const seq_id>(&seq, 1), std::span<const std::int32_t>(&token, 1), logits, hidden);
    }

    // ---- pipeline stages (distributed/pipeline.hpp) ---------------------------------
    /// The layers this session runs (all of them unless the model is a pipeline stage).
    const layer_range& layers() const noexcept { return range_; }
    /// Layers of the whole model, and the width of the rows that pass between stages.
    std::size_t n_layer() const noexcept { return m_->hparams().dims.n_layer; }
    std::size_t n_embd() const noexcept { return m_->n_embd(); }
    bool has_embedding() const noexcept { return m_->has_embedding(); }
    std::size_t max_sequences() const noexcept { return opt_.max_sequences; }
    std::size_t context_limit() const noexcept { return opt_.n_ctx; }
    bool has_head() const noexcept { return m_->has_head(); }
    /// Most rows of one sequence in one pass (n_ubatch, and what the cache policy allows);
    /// every stage of a pipeline must cut prefill at the same rows (take the least).
    std::size_t chunk_rows() const noexcept { return chunk_; }
    /// Most rows of one pass in all (max(chunk_rows, max_sequences)).
    std::size_t max_rows() const noexcept { return rows_; }

    /// One pass of this session's layers over `groups` (distinct sequences, their rows
    /// concatenated: n = the sum of their counts). The first stage reads `tokens` [n];
    /// the others read `x_in` [n x n_embd], the residual stream the previous stage wrote.
    /// A stage that does not end the model writes its residual stream to `x_out`
    /// [n x n_embd]; the last stage writes logits / hidden (may be null) of rows
    /// out_first .. out_first + out_n - 1, as prefill and decode do. Each sequence's
    /// positions advance by its count. The whole model as one stage gives exactly what
    /// prefill (one chunk) and decode give.
    void run_stage(std::span<const stage_rows> groups, const std::int32_t* tokens, const float* x_in, float* x_out,
                   std::size_t out_first, std::size_t out_n, float* logits, float* hidden = nullptr) {
        const std::size_t n = runtime::check_stage_pass(groups, opt_.max_sequences, chunk_, rows_, out_first, out_n,
                                                        range_, n_layer(), tokens, x_in, x_out);
        if (n == 0) return;
        for (const auto& g : groups) check_room(std::size_t(g.seq), g.n);
        if (m_->has_embedding()) check_tokens(std::span<const std::int32_t>(tokens, n));
        groups_.clear();
        std::size_t row = 0;
        for (const auto& g : groups) {
            groups_.push_back({std::size_t(g.seq), row, g.n});
            for (std::size_t i = 0; i < g.n; ++i) pos_[row + i] = cache_.n_past(std::size_t(g.seq)) + std::int64_t(i);
            row += g.n;
        }
        // (check_stage_pass refused a null x_in / x_out where the stage needs it; the tests of
        // the pointers show g++ which calls copy, else it warns -Wnonnull through pipeline.hpp)
        if (!m_->has_embedding() && x_in) std::memcpy(x_.data(), x_in, n * m_->n_embd() * sizeof(float));
        forward(tokens, n, out_first, out_n, logits, hidden);
        if (!m_->has_head() && x_out) std::memcpy(x_out, x_.data(), n * m_->n_embd() * sizeof(float));
    }

    /// The checks prefill makes before feeding `tokens` to `seq` (argument_error /
    /// capacity_error), without running anything: a pipeline validates a whole prompt
    /// before its first micro-batch leaves.
    void check_feed(seq_id seq, std::span<const std::int32_t> tokens) const {
        check_seq(seq);
        if (m_->has_embedding()) check_tokens(tokens);
        check_room(std::size_t(seq), tokens.size());
    }
    /// Called after each layer of a pass (null: none): a pipeline advances its pending
    /// sends and receives there, so that a stage's transfers progress while it computes.
    void on_each_layer(void (*hook)(void*), void* context) noexcept {
        layer_hook_ = hook;
        layer_hook_context_ = context;
    }

    /// Forgets sequence s (its cells are reused by the next tokens fed to it).
    void remove_sequence(seq_id s) {
        check_seq(s);
        cache_.clear(std::size_t(s));
        std::fill_n(rstate_.begin() + std::ptrdiff_t(std::size_t(s) * state_per_seq_), state_per_seq_, 0.f);
    }
    /// Makes dst a copy of src (dst's previous content is dropped).
    void copy_sequence(seq_id src, seq_id dst) {
        check_seq(src);
        check_seq(dst);
        cache_.copy(std::size_t(src), std::size_t(dst));
        std::copy_n(rstate_.begin() + std::ptrdiff_t(std::size_t(src) * state_per_seq_), state_per_seq_,
                    rstate_.begin() + std::ptrdiff_t(std::size_t(dst) * state_per_seq_));
    }

    /// Whether truncate_sequence can cut a sequence back to an earlier position: every
    /// layer's memory must allow it — KV cells that are positions (FullCache; a rolling
    /// cache without ring layers) and no recurrent mixer state.
    bool can_truncate() const noexcept {
        if constexpr (requires { cache_impl_t::can_truncate(cache_); })
            return state_per_seq_ == 0 && cache_impl_t::can_truncate(cache_);
        else
            return false;
    }
    /// Forgets positions n_keep .. n_past-1 of sequence s (the next token goes to n_keep):
    /// argument_error, before any change, when n_keep is outside 0..n_past or the memory
    /// cannot be cut back (can_truncate: a ring or a recurrent state; take a snapshot at
    /// that position instead). n_keep = 0 is remove_sequence; n_keep = n_past does nothing.
    void truncate_sequence(seq_id s, std::int64_t n_keep) {
        check_seq(s);
        const std::int64_t past = cache_.n_past(std::size_t(s));
        if (n_keep < 0 || n_keep > past)
            throw argument_error("truncate_sequence: position " + std::to_string(n_keep) + " is outside 0.." +
                                 std::to_string(past) + " (sequence " + std::to_string(s) + " holds " +
                                 std::to_string(past) + " positions)");
        if (n_keep == past) return;
        if (n_keep == 0) return remove_sequence(s);
        if (state_per_seq_ != 0)
            throw argument_error("truncate_sequence: sequence " + std::to_string(s) + " keeps recurrent mixer state (" +
                                 std::string(mixer::describe()) + "), which has folded in every position: it cannot "
                                 "be cut back to position " + std::to_string(n_keep) +
                                 "; save_sequence there and restore_sequence the snapshot");
        if (!can_truncate())
            throw argument_error("truncate_sequence: the " + std::string(D::cache::describe()) + " of sequence " +
                                 std::to_string(s) + " keeps rings whose old positions are overwritten: it cannot be "
                                 "cut back to position " + std::to_string(n_keep) +
                                 "; save_sequence there and restore_sequence the snapshot");
        cache_.truncate(std::size_t(s), n_keep);
    }
    /// A copy of sequence s's memory: the KV cells that hold something and the recurrent
    /// mixers' state (runtime/sequence_snapshot.hpp).
    sequence_snapshot save_sequence(seq_id s) const {
        check_seq(s);
        sequence_snapshot out;
        out.model = m_;
        out.kv = cache_.save(std::size_t(s));
        const auto first = rstate_.begin() + std::ptrdiff_t(std::size_t(s) * state_per_seq_);
        out.state.assign(first, first + std::ptrdiff_t(state_per_seq_));
        return out;
    }
    /// Makes sequence s what `snap` saved (s's previous content is dropped): argument_error,
    /// before any change, for a snapshot of another model or one that does not fit this
    /// session (another kv_type, more positions than its n_ctx).
    void restore_sequence(seq_id s, const sequence_snapshot& snap) {
        check_seq(s);
        if (snap.model != m_)
            throw argument_error("restore_sequence: the snapshot was taken from another model (a session restores "
                                 "snapshots of its own loaded model)");
        if (snap.state.size() != state_per_seq_)
            throw argument_error("restore_sequence: the snapshot holds " + std::to_string(snap.state.size()) +
                                 " floats of recurrent state, this session " + std::to_string(state_per_seq_));
        if (std::size_t(snap.n_past()) > opt_.n_ctx)
            throw argument_error("restore_sequence: the snapshot holds " + std::to_string(snap.n_past()) +
                                 " positions, past this session's n_ctx of " + std::to_string(opt_.n_ctx));
        cache_.restore(std::size_t(s), snap.kv);
        std::copy(snap.state.begin(), snap.state.end(),
                  rstate_.begin() + std::ptrdiff_t(std::size_t(s) * state_per_seq_));
    }

private:
    struct group {
        std::size_t seq, row, n;
    };

    void check_seq(seq_id s) const { runtime::check_sequence(s, opt_.max_sequences); }
    void check_whole_model(const char* what) const { runtime::check_whole_model(what, range_, n_layer()); }
    void check_tokens(std::span<const std::int32_t> t) const { runtime::check_tokens(t, n_vocab()); }
    void check_room(std::size_t s, std::size_t n) const {
        const auto end = std::size_t(cache_.n_past(s)) + n;
        if (end > opt_.n_ctx)
            throw capacity_error("sequence " + std::to_string(s) + " would reach position " + std::to_string(end - 1) +
                                 ", past the context of " + std::to_string(opt_.n_ctx) + " positions (n_ctx)");
        if constexpr (requires { pos_impl::max_positions(m_->positions()); }) {
            const std::size_t n_pos = pos_impl::max_positions(m_->positions());
            if (end > n_pos)
                throw capacity_error("sequence " + std::to_string(s) + " would reach position " + std::to_string(end - 1) +
                                     ", past the " + pos_impl::limit(m_->positions()));
        }
    }

    // The position policy's hooks (position_impl<P>, policies/position/*.hpp): an
    // additive score bias of head h between a query at pq and a visible key at pk
    // (ALiBi, T5 buckets), and a vector added to each embedding row (sinusoidal, learned).
    using pos_impl = position_impl<typename D::position>;
    using cache_impl_t = cache_impl<typename D::cache>;
    using mixer = typename D::mixer;
    /// The cache policy's terms (runtime/cache/none.hpp): a pass holds each sequence whole
    /// (NoCache: bidirectional queries), and whether decode has a past to attend to.
    static constexpr bool whole_sequences = [] {
        if constexpr (requires { cache_impl_t::whole_sequences; }) return bool(cache_impl_t::whole_sequences);
        else return false;
    }();
    static constexpr bool decodes = [] {
        if constexpr (requires { cache_impl_t::decodes; }) return bool(cache_impl_t::decodes);
        else return true;
    }();
    static constexpr bool biased = requires(const typename pos_impl::weights& w, const typename pos_impl::state& st) {
        pos_impl::score_bias(w, st, std::size_t{}, std::size_t{}, std::int64_t{}, std::int64_t{});
    };
    static constexpr bool adds_to_embedding = requires(const typename pos_impl::weights& w, typename pos_impl::state& st,
                                                       float* x) {
        pos_impl::embed_add(w, st, std::int64_t{}, x, std::size_t{});
    };
    static constexpr bool scales_queries = requires(const typename pos_impl::weights& w) {
        pos_impl::query_scale(w, std::int64_t{});
    };
    /// How the output head sums along K: in blocks where the logits policy asks
    /// (BlockSummedLogits: RWKV), else the fastest order.
    static constexpr kernels::gemm_sum head_sum = [] {
        if constexpr (requires { logits_impl<typename D::logits>::head_summed_in_blocks; })
            return logits_impl<typename D::logits>::head_summed_in_blocks ? kernels::gemm_sum::blocks
                                                                          : kernels::gemm_sum::chain;
        else return kernels::gemm_sum::chain;
    }();
    float pos_bias(std::size_t il, std::size_t h, std::int64_t pq, std::int64_t pk) const noexcept {
        return pos_impl::score_bias(m_->positions(), pos_state_, il, h, pq, pk);
    }
    /// kernels::attention with the position bias when the model has one; key_pos(j)
    /// is the position of key row j, query row i is at p0 + i. The cache policy calls it.
    template <class Visible, class Range, class KeyPos>
    void attention_at(std::size_t il, const kernels::attention_params& p, Visible&& visible, Range&& range,
                      std::int64_t p0, KeyPos&& key_pos) {
        if constexpr (biased)
            kernels::attention(p, visible, range, pool_.get(), [&](std::size_t h, std::size_t i, std::size_t j) {
                return pos_bias(il, h, p0 + std::int64_t(i), key_pos(j));
            });
        else
            kernels::attention(p, visible, range, pool_.get());
    }

    // Sizes every scratch buffer of the FFN for the largest batch, so that
    // no forward pass allocates afterwards.
    void warm_up() {
        const auto& hp = m_->hparams();
        std::size_t n_ff = hp.dims.n_ff; // the widest block of the held layers (experts, shared, dense)
        if constexpr (!detail::ffn_has_memory<typename D::ffn>) // one that runs itself sizes its own scratch
            for (std::size_t il = range_.first; il <= range_.last(); ++il)
                n_ff = std::max(n_ff, layers::hidden_max(m_->layer_at(il).ffn));
        const std::size_t E = hp.dims.n_embd, X = std::max<std::size_t>(1, hp.dims.n_expert);
        auto& w = ws_;
        layers::ffn_workspace::grow(w.score, X);
        layers::ffn_workspace::grow(w.a, rows_ * n_ff);
        layers::ffn_workspace::grow(w.b, rows_ * n_ff);
        layers::ffn_workspace::grow(w.logits, rows_ * X);
        layers::ffn_workspace::grow(w.xg, rows_ * E);
        layers::ffn_workspace::grow(w.yg, rows_ * E);
        layers::ffn_workspace::grow(w.row_w, rows_);
        w.rows.resize(rows_);
        w.sel.resize(rows_ * X);
        layers::ffn_workspace::grow(w.sel_w, rows_ * X);
        std::vector<float>& a = kernels::detail::attention_scratch();
        if (a.size() < kernels::detail::attention_q_block * attention_keys_)
            a.resize(kernels::detail::attention_q_block * attention_keys_);
    }

    /// Layer il's attention for one sequence's rows: the cache policy keeps the
    /// new keys / values and runs attention over what a query may see.
    /// v_dim: values are the first v_dim floats of each key row and the output heads that
    /// wide (multi-head latent attention; 0: values of their own, head_dim wide); scale: the
    /// score scale (0: the model's).
    void attend(std::size_t il, const group& gr, const float* sinks = nullptr, std::size_t v_dim = 0, float scale = 0.f) {
        const auto& hp = m_->hparams();
        const auto& ad = hp.attn;
        const std::size_t qw = ad.q_width(), kw = ad.kv_width();
        runtime::attend_step st;
        st.seq = gr.seq;
        st.layer = il - range_.first; // the cache holds this session's layers only
        st.p0 = pos_[gr.row];
        st.n = gr.n;
        st.k = k_.data() + gr.row * kw;
        st.v = v_dim ? st.k : v_.data() + gr.row * kw;
        st.ld = kw;
        st.window = hp.windowed[il] ? std::int64_t(hp.window) : 0;
        auto& p = st.params;
        p.n_head = ad.n_head;
        p.n_head_kv = ad.n_head_kv;
        p.head_dim = ad.head_dim;
        p.scale = scale != 0.f ? scale : ad.scale;
        p.v_dim = v_dim;
        score_cap_impl<typename D::score_cap>::apply(m_->score_cap(), p); // AttentionSoftCap: Gemma 2
        p.sinks = sinks;
        st.plain = !biased && p.softcap == 0.f && !sinks;
        st.pool = pool_.get();
        p.q = q_.data() + gr.row * qw;
        p.ldq = qw;
        p.n_q = gr.n;
        const std::size_t ow = v_dim ? ad.n_head * v_dim : qw;
        p.out = ao_.data() + gr.row * ow;
        p.ldo = ow;
        cache_impl_t::attend(cache_, cache_scratch_, st,
                             [&](const kernels::attention_params& ap, auto&& visible, auto&& range, auto&& key_pos) {
                                 attention_at(il, ap, visible, range, st.p0, key_pos);
                             });
    }

    /// One forward pass of n rows (groups_ and pos_ set); writes logits/hidden of
    /// rows out_first .. out_first+out_n-1.
    void forward(const std::int32_t* tok, std::size_t n, std::size_t out_first, std::size_t out_n, float* logits,
                 float* hidden) {
        const auto& hp = m_->hparams();
        const std::size_t E = hp.dims.n_embd;
        thread_pool* pool = pool_.get();
        const kernels::batch_activations_scope numerics(opt_.batch_activations);
        for (const auto& g : groups_) cache_.ensure(g.seq);
        if (m_->has_embedding()) { // else x_ holds the previous stage's rows
            for (std::size_t i = 0; i < n; ++i)
                kernels::embedding_row(m_->token_embd(), std::size_t(tok[i]), x_.data() + i * E);
            embedding_impl<typename D::embedding>::apply(m_->embedding(), x_.data(), n * E);
            if constexpr (adds_to_embedding)
                for (std::size_t i = 0; i < n; ++i)
                    pos_impl::embed_add(m_->positions(), pos_state_, pos_[i], x_.data() + i * E, E);
            // what the embedding policy does once the positions are in (BertEmbedding's norm)
            if constexpr (requires { embedding_impl<typename D::embedding>::after_positions(m_->embedding(), x_.data(), n * E); })
                embedding_impl<typename D::embedding>::after_positions(m_->embedding(), x_.data(), n * E);
        }
        const layers::rope_params* rope = hp.rotary ? &rope_ : nullptr;
        if (rope) layers::rope_tables(*rope, pos_.data(), n, cos_.data(), sin_.data());
        if (two_ropes_) layers::rope_tables(rope_swa_, pos_.data(), n, cos_swa_.data(), sin_swa_.data());
        using Norm = typename D::base_norm;
        side_ = side_channel{side_floats_.data(), false}; // what a layer hands to later ones, this pass
        for (std::size_t il = range_.first; il <= range_.last(); ++il) {
            // the layer's block shape wires its mixer and feed-forward (policies/block.hpp)
            sublayers s{*this, il, n, rope};
            block_impl<typename D::block>::template forward<D>(
                s, static_cast<const typename model_type::block_weights&>(m_->layer_at(il)));
            if (layer_hook_) layer_hook_(layer_hook_context_);
        }
        for (const auto& g : groups_) cache_impl_t::commit(cache_, g.seq, g.n);
        if (!m_->has_head() || out_n == 0 || (!logits && !hidden)) return;
        float* hrow = hidden ? hidden : h_.data();
        if constexpr (detail::block_final_norm<typename D::block>)
            layers::apply_norm<Norm>(m_->output_norm(), x_.data() + out_first * E, E, hrow, E, out_n, E);
        else // the last block's own norm ended the model (PostNormBlock)
            std::copy_n(x_.data() + out_first * E, out_n * E, hrow);
        if (logits) {
            kernels::matmul(m_->output(), hrow, E, out_n, logits, n_vocab(), pool, head_sum);
            layers::detail::add_row_bias(logits, n_vocab(), out_n, m_->output_bias(), n_vocab());
            if constexpr (!logits_impl<typename D::logits>::identity)
                logits_impl<typename D::logits>::apply(m_->logit_policy(), logits, out_n * n_vocab());
        }
    }

    /// What a block shape calls over the n rows of one pass of layer il (policies/block.hpp):
    /// the session's row buffers, the norm, the mixer (self-attention with the model's
    /// heads, position, mask and cache) and the feed-forward.
    struct sublayers {
        decoder_session& s;
        std::size_t il, n;
        const layers::rope_params* rope;
        using Norm = typename D::base_norm;

        std::size_t layer() const noexcept { return il; }
        std::size_t rows() const noexcept { return n; }
        std::size_t width() const noexcept { return s.m_->n_embd(); }
        float* stream() noexcept { return s.x_.data(); }
        /// For a recurrent mixer: the sequences of the pass, this layer's state of one, scratch.
        const std::vector<group>& groups() const noexcept { return s.groups_; }
        float* state(std::size_t seq) noexcept {
            return s.rstate_.data() + seq * s.state_per_seq_ + s.state_offset_[il - s.range_.first];
        }
        float* scratch() noexcept { return s.mix_scratch_.data(); }
        /// The layer stack's side channel of this pass (RWKV-7's v_first).
        archetype::side_channel& side_channel() noexcept { return s.side_; }
        thread_pool* pool() noexcept { return s.pool_.get(); }
        float* normed() noexcept { return s.h_.data(); }
        float* out() noexcept { return s.t_.data(); }
        float* out2() noexcept { return s.u_.data(); }
        void norm(const layers::norm_weights& w, const float* src, float* dst) noexcept {
            const std::size_t E = s.m_->n_embd();
            layers::apply_norm<Norm>(w, src, E, dst, E, n, E);
        }
        /// The layer's mixer (mixer_impl<D::mixer>::forward), which calls back here.
        void mix(const float* in, float* out) {
            mixer_impl<typename D::mixer>::forward(*this, s.m_->layer_at(il).attn, in, out);
        }
        /// Self-attention with the model's heads, position, mask and cache (SelfAttention's forward).
        void self_attention(const layers::attention_weights& w, const float* in, float* out) {
            const auto& hp = s.m_->hparams();
            const std::size_t E = hp.dims.n_embd, qw = hp.attn.q_width();
            const bool swa_rope = s.two_ropes_ && hp.windowed[il];
            // layers the position policy leaves unrotated (SmolLM3's NoPE layers)
            const bool rotated =
                rope && detail::position_rotates_layer<typename D::position>(il, hp.windowed[il], hp.window != 0);
            layers::project_qkv(w, hp.attn, in, E, n, s.q_.data(), s.k_.data(), s.v_.data(),
                                !rotated ? nullptr : swa_rope ? &s.rope_swa_ : rope,
                                swa_rope ? s.cos_swa_.data() : s.cos_.data(), swa_rope ? s.sin_swa_.data() : s.sin_.data(),
                                s.pool_.get());
            if constexpr (scales_queries) // the position policy's per-position query factor (QueryTemperature)
                for (std::size_t i = 0; i < n; ++i) {
                    const float f = pos_impl::query_scale(s.m_->positions(), s.pos_[i]);
                    for (float* q = s.q_.data() + i * qw; q != s.q_.data() + (i + 1) * qw; ++q) *q *= f;
                }
            for (const auto& g : s.groups_) s.attend(il, g, w.sinks);
            kernels::matmul(w.wo, s.ao_.data(), qw, n, out, E, s.pool_.get());
            layers::detail::add_row_bias(out, E, n, w.bo, E);
        }
        /// For an attention mixer that projects its own rows (MultiHeadLatentAttention): the
        /// session's query rows [n x n_head*head_dim], key rows [n x n_head_kv*head_dim] and
        /// attention output rows; rotate() rotates n_heads heads (head_stride apart) of the n rows
        /// at x (ld apart) with this layer's RoPE; attend_latent() runs the cache policy's
        /// attention of queries() over this layer's cells, keys() stored, values the first
        /// v_dim floats of each key row, into attention_out() [n x n_head*v_dim].
        float* queries() noexcept { return s.q_.data(); }
        float* keys() noexcept { return s.k_.data(); }
        /// value rows [n x n_head_kv*head_dim] (for attend_latent(0, ...): values of their own)
        float* values() noexcept { return s.v_.data(); }
        float* attention_out() noexcept { return s.ao_.data(); }
        void rotate(float* x, std::size_t ld, std::size_t n_heads, std::size_t head_stride) noexcept {
            if (rope) layers::apply_rope(*rope, x, ld, n, n_heads, head_stride, s.cos_.data(), s.sin_.data());
        }
        void attend_latent(std::size_t v_dim, float scale) {
            for (const auto& g : s.groups_) s.attend(il, g, nullptr, v_dim, scale);
        }
        void ffn(const float* in, float* out) {
            const std::size_t E = s.m_->n_embd();
            if constexpr (detail::ffn_has_memory<typename D::ffn>) {
                ffn_sublayer f{*this};
                ffn_impl<typename D::ffn>::forward(f, s.m_->layer_at(il).ffn, in, out);
            } else {
                layers::feed_forward<typename D::ffn>(s.m_->layer_at(il).ffn, in, E, n, out, E, s.ws_, s.pool_.get());
            }
        }
        void add(float* x, const float* y) noexcept {
            const std::size_t m = n * s.m_->n_embd();
            for (std::size_t i = 0; i < m; ++i) x[i] += y[i];
        }
        void add2(float* x, const float* y, const float* z) noexcept {
            const std::size_t m = n * s.m_->n_embd();
            for (std::size_t i = 0; i < m; ++i) x[i] += y[i] + z[i];
        }
    };


    /// What a feed-forward with a memory (detail::ffn_has_memory) is handed: a recurrent
    /// mixer's view of the pass, with the feed-forward's own share of each sequence's memory.
    struct ffn_sublayer {
        sublayers& s;
        std::size_t rows() const noexcept { return s.n; }
        const std::vector<group>& groups() const noexcept { return s.s.groups_; }
        float* state(std::size_t seq) noexcept {
            auto& d = s.s;
            return d.rstate_.data() + seq * d.state_per_seq_ + d.ffn_state_offset_[s.il - d.range_.first];
        }
        float* scratch() noexcept { return s.scratch(); }
        thread_pool* pool() noexcept { return s.pool(); }
    };

    const model_type* m_;
    decoder_session_options opt_;
    std::unique_ptr<thread_pool> pool_;
    runtime::kv_cache cache_;
    typename cache_impl_t::scratch cache_scratch_; // the cache policy's per-session buffers
    std::size_t attention_keys_ = 0;               // most key rows of one attention call
    std::size_t chunk_ = 0, rows_ = 0;
    void (*layer_hook_)(void*) = nullptr; // on_each_layer
    void* layer_hook_context_ = nullptr;
    layer_range range_{};        // the model's layers this session runs
    std::vector<bool> windowed_; // hp.windowed of those layers (the cache geometry's)
    std::vector<float> x_, h_, t_, u_, q_, k_, v_, ao_, cos_, sin_; // u_: a parallel block's second output
    // recurrent mixers: [max_sequences x state_per_seq_] states, each layer's at its offset
    std::vector<float> rstate_, mix_scratch_;
    std::vector<float> side_floats_; // the side channel's rows (RWKV-7's v_first)
    archetype::side_channel side_;
    std::vector<std::size_t> state_offset_;     // of each held layer's mixer state in a sequence's
    std::vector<std::size_t> ffn_state_offset_; // and of its feed-forward's (RWKV's channel mix)
    std::size_t state_per_seq_ = 0;
    typename pos_impl::state pos_state_;     // the position policy's tables / scratch
    bool two_ropes_ = false;             // windowed layers rotate with their own base (gemma3)
    layers::rope_params rope_, rope_swa_; // the model's, with the factors this context takes
    std::vector<float> cos_swa_, sin_swa_;
    std::vector<std::int64_t> pos_;
    std::vector<group> groups_;
    layers::ffn_workspace ws_;
};

/// A session over a loaded decoder model (the model must outlive it).
template <DecoderType D>
decoder_session<D> session(const decoder_model<D>& m, const decoder_session_options& o = {}) {
    return decoder_session<D>(m, o);
}

} // namespace archetype
