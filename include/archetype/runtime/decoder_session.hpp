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
// Prefill runs in chunks of at most n_ubatch tokens, and at most the window
// when a layer keeps a rolling cache (the attention of a chunk covers the ring
// as it was before the chunk plus the chunk itself, as the Mistral reference
// describes). Every projection of a chunk is one GEMM; decode runs each
// projection once for all sequences (n_tok = number of sequences); attention is
// split over heads on the thread pool. All buffers are allocated when the
// session is made (and a sequence's cache when it is first written): decode
// allocates nothing.
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
#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/embedding_row.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/quant/dequantize.hpp"
#include "archetype/layers/attention.hpp"
#include "archetype/layers/ffn.hpp"
#include "archetype/layers/norm.hpp"
#include "archetype/layers/positions.hpp"
#include "archetype/layers/rope.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/kv_cache.hpp"
#include "archetype/runtime/kv_cache_type.hpp"
#include "archetype/runtime/session_args.hpp"

namespace archetype {


struct decoder_session_options {
    std::size_t n_threads = std::max(1u, std::thread::hardware_concurrency());
    std::size_t max_sequences = 1;
    std::size_t n_ctx = 0;      ///< positions 0..n_ctx-1 per sequence; 0 = the file's context_length
    std::size_t n_ubatch = 512; ///< largest number of tokens in one forward pass
    kv_cache_type kv_type = kv_cache_type::f32;
};


template <DecoderType D>
class decoder_session {
public:
    using model_type = decoder_model<D>;

    decoder_session(const model_type& m, const decoder_session_options& o) : m_(&m), opt_(o) {
        const auto& hp = m.hparams();
        if (opt_.max_sequences == 0) throw argument_error("max_sequences = 0: a session needs at least one sequence");
        if (opt_.n_ubatch == 0) throw argument_error("n_ubatch = 0: need at least one token per forward pass");
        if (opt_.n_ctx == 0) opt_.n_ctx = hp.n_ctx_train;
        pool_ = std::make_unique<thread_pool>(std::max<std::size_t>(1, opt_.n_threads));
        runtime::kv_layout L;
        L.n_layer = hp.dims.n_layer;
        L.n_head_kv = hp.dims.n_head_kv;
        L.head_dim = hp.dims.head_dim;
        L.n_ctx = opt_.n_ctx;
        L.window = hp.window;
        L.sink = D::cache::rolling ? D::cache::sink : 0;
        L.half = opt_.kv_type == kv_cache_type::f16;
        L.rolling.assign(L.n_layer, false);
        for (std::size_t il = 0; il < L.n_layer; ++il) L.rolling[il] = D::cache::rolling && hp.windowed[il];
        cache_ = runtime::kv_cache(L, opt_.max_sequences);
        chunk_ = opt_.n_ubatch;
        if (cache_.has_rolling()) chunk_ = std::min(chunk_, hp.window);
        rows_ = std::max(chunk_, opt_.max_sequences);
        const std::size_t E = hp.dims.n_embd, qw = hp.attn.q_width(), kw = hp.attn.kv_width();
        x_.assign(rows_ * E, 0.f);
        h_.assign(rows_ * E, 0.f);
        t_.assign(rows_ * E, 0.f);
        q_.assign(rows_ * qw, 0.f);
        k_.assign(rows_ * kw, 0.f);
        v_.assign(rows_ * kw, 0.f);
        ao_.assign(rows_ * qw, 0.f);
        pos_.assign(rows_, 0);
        const std::size_t half = hp.rotary ? hp.rope.n_rot / 2 : 0;
        cos_.assign(rows_ * half, 0.f);
        sin_.assign(rows_ * half, 0.f);
        two_ropes_ = hp.rotary && (hp.rope_swa.freq_base != hp.rope.freq_base || hp.rope_swa.freq_scale != hp.rope.freq_scale);
        if (two_ropes_) {
            cos_swa_.assign(rows_ * half, 0.f);
            sin_swa_.assign(rows_ * half, 0.f);
        }
        if (cache_.has_rolling()) {
            const std::size_t cells = L.sink + L.window;
            const std::size_t n = L.n_head_kv * (cells + chunk_) * L.head_dim;
            if (L.half) {
                ck16_.assign(n, 0);
                cv16_.assign(n, 0);
            } else {
                ck_.assign(n, 0.f);
                cv_.assign(n, 0.f);
            }
            cpos_.assign(cells + chunk_, -1);
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
        check_seq(seq);
        check_tokens(tokens);
        const auto s = std::size_t(seq);
        check_room(s, tokens.size());
        if (tokens.empty()) return;
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
        runtime::check_decode_batch(seqs, tokens, opt_.max_sequences, n_vocab());
        for (const seq_id s : seqs) check_room(std::size_t(s), 1);
        if (seqs.empty()) return;
        groups_.clear();
        for (std::size_t i = 0; i < seqs.size(); ++i) {
            groups_.push_back({std::size_t(seqs[i]), i, 1});
            pos_[i] = cache_.n_past(std::size_t(seqs[i]));
        }
        forward(tokens.data(), seqs.size(), 0, seqs.size(), logits, hidden);
    }

    /// One token for one sequence: logits (may be null) [n_vocab].
    void decode(seq_id seq, std::int32_t token, float* logits, float* hidden = nullptr) {
        decode(std::span<const seq_id>(&seq, 1), std::span<const std::int32_t>(&token, 1), logits, hidden);
    }

    /// Forgets sequence s (its cells are reused by the next tokens fed to it).
    void remove_sequence(seq_id s) {
        check_seq(s);
        cache_.clear(std::size_t(s));
    }
    /// Makes dst a copy of src (dst's previous content is dropped).
    void copy_sequence(seq_id src, seq_id dst) {
        check_seq(src);
        check_seq(dst);
        cache_.copy(std::size_t(src), std::size_t(dst));
    }

private:
    struct group {
        std::size_t seq, row, n;
    };

    void check_seq(seq_id s) const { runtime::check_sequence(s, opt_.max_sequences); }
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
    static constexpr bool biased = requires(const typename pos_impl::weights& w, const typename pos_impl::state& st) {
        pos_impl::score_bias(w, st, std::size_t{}, std::size_t{}, std::int64_t{}, std::int64_t{});
    };
    static constexpr bool adds_to_embedding = requires(const typename pos_impl::weights& w, typename pos_impl::state& st,
                                                       float* x) {
        pos_impl::embed_add(w, st, std::int64_t{}, x, std::size_t{});
    };
    float pos_bias(std::size_t il, std::size_t h, std::int64_t pq, std::int64_t pk) const noexcept {
        return pos_impl::score_bias(m_->positions(), pos_state_, il, h, pq, pk);
    }
    /// kernels::attention with the position bias when the model has one; key_pos(j)
    /// is the position of key row j, query row i is at p0 + i.
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
        const std::size_t n_ff = hp.dims.n_ff, E = hp.dims.n_embd, X = std::max<std::size_t>(1, hp.dims.n_expert);
        auto& w = ws_;
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
        const std::size_t cells = std::max(opt_.n_ctx, hp.window + (D::cache::rolling ? D::cache::sink : 0) + chunk_);
        if (a.size() < kernels::detail::attention_q_block * cells) a.resize(kernels::detail::attention_q_block * cells);
    }

    void attend(std::size_t il, const group& gr) {
        const auto& hp = m_->hparams();
        const auto& ad = hp.attn;
        const std::size_t hd = ad.head_dim, qw = ad.q_width(), kw = ad.kv_width(), G = ad.n_head_kv;
        const std::size_t s = gr.seq, m = gr.n, r0 = gr.row;
        const std::int64_t p0 = pos_[r0];
        layers::causal_rule rule;
        if (hp.windowed[il]) {
            rule.window = std::int64_t(hp.window);
            rule.sink = std::int64_t(cache_.layout().sink);
        }
        kernels::attention_params p;
        p.n_head = ad.n_head;
        p.n_head_kv = G;
        p.head_dim = hd;
        p.scale = ad.scale;
        p.q = q_.data() + r0 * qw;
        p.ldq = qw;
        p.n_q = m;
        p.out = ao_.data() + r0 * qw;
        p.ldo = qw;
        const float* kr = k_.data() + r0 * kw;
        const float* vr = v_.data() + r0 * kw;
        if (!cache_.rolling(il)) {
            // full cache: cell = position; write the rows, then attend over the
            // cells a query of this group can see
            for (std::size_t g = 0; g < G; ++g)
                for (std::size_t i = 0; i < m; ++i) store(s, il, g, std::size_t(p0 + std::int64_t(i)), kr + i * kw + g * hd, vr + i * kw + g * hd);
            const std::int64_t j0 = rule.window ? std::max<std::int64_t>(0, p0 - rule.window + 1) : 0;
            point_at_cache(p, s, il, std::size_t(j0));
            p.ldkv = hd;
            p.kv_head_stride = cache_.head_stride(il);
            p.n_kv = std::size_t(p0 - j0) + m;
            // keys a block of rows [i0, i1) can see: causal bound p0 + i1 - 1, window lower bound
            auto keys = [&](std::size_t i0, std::size_t i1, std::size_t n_kv) {
                std::int64_t lo = 0;
                if (rule.window && rule.sink == 0)
                    lo = std::max<std::int64_t>(0, p0 + std::int64_t(i0) - rule.window + 1 - j0);
                const std::int64_t hi = std::min<std::int64_t>(std::int64_t(n_kv), p0 + std::int64_t(i1) - j0);
                return std::pair<std::size_t, std::size_t>(std::size_t(std::min(lo, hi)), std::size_t(hi));
            };
            attention_at(il, p, layers::cell_visibility{rule, p0, j0}, keys, p0,
                         [&](std::size_t j) { return j0 + std::int64_t(j); });
            return;
        }
        const std::size_t cells = cache_.cells(il);
        const std::int64_t* rp = cache_.ring_positions(s);
        if (m == 1) {
            // one token: the cell it takes holds a position the token cannot see
            // (p - W), so write first and attend over the ring in place
            const std::size_t c = cache_.ring_cell(p0);
            for (std::size_t g = 0; g < G; ++g) store(s, il, g, c, kr + g * hd, vr + g * hd);
            point_at_cache(p, s, il, 0);
            p.ldkv = hd;
            p.kv_head_stride = cache_.head_stride(il);
            p.n_kv = cells;
            auto key_pos = [&](std::size_t j) { return j == c ? p0 : rp[j]; };
            attention_at(
                il, p, [&](std::size_t, std::size_t j) { return rule(p0, key_pos(j)); }, kernels::all_keys{}, p0, key_pos);
            return;
        }
        // a chunk: attend over the ring as it was plus the chunk's own rows, then
        // write the chunk into the ring
        const std::size_t n_kv = cells + m;
        for (std::size_t g = 0; g < G; ++g) {
            if (cache_.half()) {
                std::uint16_t* ck = ck16_.data() + g * n_kv * hd;
                std::uint16_t* cv = cv16_.data() + g * n_kv * hd;
                std::memcpy(ck, cache_.k16(s, il, g), cells * hd * sizeof(std::uint16_t));
                std::memcpy(cv, cache_.v16(s, il, g), cells * hd * sizeof(std::uint16_t));
                for (std::size_t i = 0; i < m; ++i) {
                    kernels::f32_to_f16(kr + i * kw + g * hd, ck + (cells + i) * hd, hd);
                    kernels::f32_to_f16(vr + i * kw + g * hd, cv + (cells + i) * hd, hd);
                }
                continue;
            }
            float* ck = ck_.data() + g * n_kv * hd;
            float* cv = cv_.data() + g * n_kv * hd;
            std::memcpy(ck, cache_.k(s, il, g), cells * hd * sizeof(float));
            std::memcpy(cv, cache_.v(s, il, g), cells * hd * sizeof(float));
            for (std::size_t i = 0; i < m; ++i) {
                std::memcpy(ck + (cells + i) * hd, kr + i * kw + g * hd, hd * sizeof(float));
                std::memcpy(cv + (cells + i) * hd, vr + i * kw + g * hd, hd * sizeof(float));
            }
        }
        for (std::size_t j = 0; j < cells; ++j) cpos_[j] = rp[j];
        for (std::size_t i = 0; i < m; ++i) cpos_[cells + i] = p0 + std::int64_t(i);
        if (cache_.half()) {
            p.k16 = ck16_.data();
            p.v16 = cv16_.data();
        } else {
            p.k = ck_.data();
            p.v = cv_.data();
        }
        p.ldkv = hd;
        p.kv_head_stride = n_kv * hd;
        p.n_kv = n_kv;
        const std::int64_t* cp = cpos_.data();
        // the chunk's own rows after row i1 - 1 are in its future
        auto keys = [&](std::size_t, std::size_t i1, std::size_t n) {
            return std::pair<std::size_t, std::size_t>(0, std::min(n, cells + i1));
        };
        attention_at(
            il, p, [&](std::size_t i, std::size_t j) { return rule(p0 + std::int64_t(i), cp[j]); }, keys, p0,
            [&](std::size_t j) { return cp[j]; });
        for (std::size_t i = 0; i < m; ++i) {
            const std::size_t c = cache_.ring_cell(p0 + std::int64_t(i));
            for (std::size_t g = 0; g < G; ++g) store(s, il, g, c, kr + i * kw + g * hd, vr + i * kw + g * hd);
        }
    }

    /// Writes one key row and one value row into cell c of (sequence, layer, kv head),
    /// rounding to half for a half cache.
    void store(std::size_t s, std::size_t il, std::size_t g, std::size_t c, const float* k, const float* v) {
        const std::size_t hd = m_->hparams().attn.head_dim;
        if (cache_.half()) {
            kernels::f32_to_f16(k, cache_.k16(s, il, g) + c * hd, hd);
            kernels::f32_to_f16(v, cache_.v16(s, il, g) + c * hd, hd);
        } else {
            std::memcpy(cache_.k(s, il, g) + c * hd, k, hd * sizeof(float));
            std::memcpy(cache_.v(s, il, g) + c * hd, v, hd * sizeof(float));
        }
    }
    /// Attention reads the cache of (sequence, layer) from cell c0 on.
    void point_at_cache(kernels::attention_params& p, std::size_t s, std::size_t il, std::size_t c0) {
        const std::size_t hd = m_->hparams().attn.head_dim;
        if (cache_.half()) {
            p.k16 = cache_.k16(s, il, 0) + c0 * hd;
            p.v16 = cache_.v16(s, il, 0) + c0 * hd;
        } else {
            p.k = cache_.k(s, il, 0) + c0 * hd;
            p.v = cache_.v(s, il, 0) + c0 * hd;
        }
    }

    /// One forward pass of n rows (groups_ and pos_ set); writes logits/hidden of
    /// rows out_first .. out_first+out_n-1.
    void forward(const std::int32_t* tok, std::size_t n, std::size_t out_first, std::size_t out_n, float* logits,
                 float* hidden) {
        const auto& hp = m_->hparams();
        const std::size_t E = hp.dims.n_embd, qw = hp.attn.q_width();
        thread_pool* pool = pool_.get();
        for (const auto& g : groups_) cache_.ensure(g.seq);
        for (std::size_t i = 0; i < n; ++i) kernels::embedding_row(m_->token_embd(), std::size_t(tok[i]), x_.data() + i * E);
        embedding_impl<typename D::embedding>::apply(m_->embedding(), x_.data(), n * E);
        if constexpr (adds_to_embedding)
            for (std::size_t i = 0; i < n; ++i) pos_impl::embed_add(m_->positions(), pos_state_, pos_[i], x_.data() + i * E, E);
        const layers::rope_params* rope = hp.rotary ? &hp.rope : nullptr;
        if (rope) layers::rope_tables(*rope, pos_.data(), n, cos_.data(), sin_.data());
        if (two_ropes_) layers::rope_tables(hp.rope_swa, pos_.data(), n, cos_swa_.data(), sin_swa_.data());
        using Norm = typename D::base_norm;
        constexpr bool post = D::sandwich_norms;
        for (std::size_t il = 0; il < hp.dims.n_layer; ++il) {
            const auto& L = m_->layer_at(il);
            const bool swa_rope = two_ropes_ && hp.windowed[il];
            layers::apply_norm<Norm>(L.attn_norm, x_.data(), E, h_.data(), E, n, E);
            layers::project_qkv(L.attn, hp.attn, h_.data(), E, n, q_.data(), k_.data(), v_.data(),
                                swa_rope ? &hp.rope_swa : rope, swa_rope ? cos_swa_.data() : cos_.data(),
                                swa_rope ? sin_swa_.data() : sin_.data(), pool);
            for (const auto& g : groups_) attend(il, g);
            kernels::matmul(L.attn.wo, ao_.data(), qw, n, t_.data(), E, pool);
            layers::detail::add_row_bias(t_.data(), E, n, L.attn.bo, E);
            if constexpr (post) layers::apply_norm<Norm>(L.attn_post_norm, t_.data(), E, t_.data(), E, n, E);
            add_into(x_.data(), t_.data(), n * E);
            layers::apply_norm<Norm>(L.ffn_norm, x_.data(), E, h_.data(), E, n, E);
            layers::feed_forward<typename D::ffn>(L.ffn, h_.data(), E, n, t_.data(), E, ws_, pool);
            if constexpr (post) layers::apply_norm<Norm>(L.ffn_post_norm, t_.data(), E, t_.data(), E, n, E);
            add_into(x_.data(), t_.data(), n * E);
        }
        for (const auto& g : groups_) cache_.commit(g.seq, g.n);
        if (out_n == 0 || (!logits && !hidden)) return;
        float* hrow = hidden ? hidden : h_.data();
        layers::apply_norm<Norm>(m_->output_norm(), x_.data() + out_first * E, E, hrow, E, out_n, E);
        if (logits) {
            kernels::matmul(m_->output(), hrow, E, out_n, logits, n_vocab(), pool);
            if (const float c = hp.logit_softcap; c != 0.f)
                for (std::size_t i = 0; i < out_n * n_vocab(); ++i) logits[i] = c * std::tanh(logits[i] / c);
        }
    }

    static void add_into(float* x, const float* y, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
    }

    const model_type* m_;
    decoder_session_options opt_;
    std::unique_ptr<thread_pool> pool_;
    runtime::kv_cache cache_;
    std::size_t chunk_ = 0, rows_ = 0;
    std::vector<float> x_, h_, t_, q_, k_, v_, ao_, cos_, sin_, ck_, cv_;
    std::vector<std::uint16_t> ck16_, cv16_; // the rolling chunk's keys / values for a half cache
    typename pos_impl::state pos_state_;     // the position policy's tables / scratch
    bool two_ropes_ = false;             // windowed layers rotate with their own base (gemma3)
    std::vector<float> cos_swa_, sin_swa_;
    std::vector<std::int64_t> pos_, cpos_;
    std::vector<group> groups_;
    layers::ffn_workspace ws_;
};

/// A session over a loaded decoder model (the model must outlive it).
template <DecoderType D>
decoder_session<D> session(const decoder_model<D>& m, const decoder_session_options& o = {}) {
    return decoder_session<D>(m, o);
}

} // namespace archetype
