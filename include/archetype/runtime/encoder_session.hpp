#pragma once
// encoder_session<Enc>: runs an encoder_model over packed batches of sequences
// and writes pooled, normalised embeddings.
//
//   auto model = archetype::load_model<MiniLM>("bert.gguf");
//   auto enc = archetype::encoder_session(model, {.n_threads = 2});
//   enc.embed(sequences, out);                                 // the type's pooling and normalisation
//   enc.embed(sequences, out, pooling_type::cls, 2);           // chosen at run time (CLI)
//
// Packed batches: the sequences are laid one after another with no padding
// (up to options.max_batch_tokens tokens per forward pass); every projection
// and FFN runs once over all of them, and attention runs per sequence block,
// which is the block-diagonal mask without ever forming it. Each sequence is at
// positions 0..n-1, so its result equals running it alone (same instruction
// sequence per row: kernels split work by output rows).
//
// Output layout (float32, row-major): pooling none -> [total tokens x n_embd],
// sequences one after another; mean/cls/last/max -> [n_sequences x n_embd];
// rank -> [n_sequences x n_rank_outputs] (usually one score). Normalisation is
// applied to each output vector (each token row under none); rank scores are
// never normalised.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/activation.hpp"
#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/encoder_attention.hpp"
#include "archetype/kernels/encoder_gemm.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/kernels/pooling.hpp"
#include "archetype/kernels/rope.hpp"
#include "archetype/layers/rope.hpp"
#include "archetype/layers/ffn.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_mask.hpp"

#ifndef ARCHETYPE_ENCODER_CHUNK_TOKENS
#define ARCHETYPE_ENCODER_CHUNK_TOKENS 256
#endif

#include "archetype/runtime/session_args.hpp"

namespace archetype {

struct encoder_options {
    std::size_t n_threads = 1;
    /// Tokens per forward pass (a longer single sequence still runs whole).
    std::size_t max_batch_tokens = 8192;
    /// Pack the F32/F16/BF16 layer matrices once into the GEMM's panel layout
    /// (kernels/encoder_gemm.hpp): faster, but the packed copies are F32, so
    /// they take the layers' size again (twice for F16 files).
    bool prepack_weights = true;
};

using token_span = std::span<const std::int32_t>;

template <class Enc>
class encoder_session {
public:
    using model_type = encoder_model<Enc>;

    encoder_session(const model_type& model, encoder_options opts = {})
        : m_(&model), opts_(opts), pool_(std::make_unique<thread_pool>(std::max<std::size_t>(1, opts.n_threads))) {
        if (opts_.max_batch_tokens == 0) throw argument_error("encoder_options.max_batch_tokens must be at least 1");
        if (opts_.prepack_weights) {
            packed_.resize(m_->layers.size());
            for (std::size_t i = 0; i < packed_.size(); ++i) {
                const auto& L = m_->layers[i];
                auto& P = packed_[i];
                if (L.wqkv.data) P.qkv = kernels::prepacked_weights(L.wqkv);
                P.o = kernels::prepacked_weights(L.wo);
                P.up = kernels::prepacked_weights(L.ffn.up);
                P.down = kernels::prepacked_weights(L.ffn.down);
            }
        }
    }

    const model_type& model() const noexcept { return *m_; }

    /// The pooling the type selects (the file's `bert.pooling_type` under PoolingFromFile).
    pooling_type default_pooling() const noexcept {
        constexpr pooling_type p = Enc::pooling::type;
        return p == pooling_type::from_file ? m_->hp.pooling : p;
    }
    static constexpr int default_normalize = Enc::embd_norm::mode;

    /// Floats embed() writes for these sequences with pooling p.
    std::size_t output_size(std::span<const token_span> seqs, pooling_type p) const {
        if (p == pooling_type::from_file) p = default_pooling();
        if (p == pooling_type::none) {
            std::size_t n = 0;
            for (auto s : seqs) n += s.size();
            return n * m_->n_embd();
        }
        return seqs.size() * width(p);
    }
    std::size_t output_size(std::span<const token_span> seqs) const { return output_size(seqs, default_pooling()); }

    /// Embeddings with the type's pooling and normalisation.
    void embed(std::span<const token_span> seqs, std::span<float> out) {
        embed(seqs, out, default_pooling(), default_normalize);
    }
    std::vector<float> embed(std::span<const token_span> seqs) {
        std::vector<float> out(output_size(seqs));
        embed(seqs, out);
        return out;
    }

    /// Embeddings with pooling and normalisation chosen at run time; `normalize`
    /// is llama.cpp's --embd-normalize value (-1 none, 0 max-abs int16, 1 L1,
    /// 2 L2, P > 2 p-norm).
    void embed(std::span<const token_span> seqs, std::span<float> out, pooling_type pooling, int normalize) {
        if (pooling == pooling_type::from_file) pooling = default_pooling();
        if (normalize < -1)
            throw argument_error("normalisation " + std::to_string(normalize) +
                                 " is not -1 (none), 0 (max-abs), 1 (L1), 2 (L2) or a p-norm P > 2");
        validate(seqs);
        if (pooling == pooling_type::rank && !m_->has_cls && !m_->has_cls_out)
            throw argument_error("rank pooling needs the file's classifier head ('cls.weight' or "
                                 "'cls.output.weight'), and this model has none");
        const std::size_t need = output_size(seqs, pooling);
        if (out.size() != need)
            throw argument_error("output buffer holds " + std::to_string(out.size()) + " floats, " +
                                 std::to_string(need) + " are needed");
        const std::size_t E = m_->n_embd(), w = width(pooling);
        std::size_t s0 = 0;
        float* dst = out.data();
        while (s0 < seqs.size()) {
            packed_layout lay;
            std::size_t s1 = s0;
            while (s1 < seqs.size() && (lay.n_tokens() == 0 || lay.n_tokens() + seqs[s1].size() <= opts_.max_batch_tokens))
                lay.add(seqs[s1++].size());
            forward(seqs.subspan(s0, s1 - s0), lay);
            const float* h = x_.data();
            for (std::size_t s = 0; s < lay.n_sequences(); ++s) {
                const float* rows = h + lay.offsets[s] * E;
                const std::size_t n = lay.length(s);
                switch (pooling) {
                case pooling_type::none:
                    for (std::size_t r = 0; r < n; ++r)
                        kernels::embd_normalize(rows + r * E, dst + r * E, E, normalize);
                    dst += n * E;
                    continue;
                case pooling_type::rank: rank(rows, dst); dst += w; continue;
                case pooling_type::mean: kernels::pool_rows(kernels::pool_op::mean, rows, E, n, E, dst); break;
                case pooling_type::cls: kernels::pool_rows(kernels::pool_op::first, rows, E, n, E, dst); break;
                case pooling_type::last: kernels::pool_rows(kernels::pool_op::last, rows, E, n, E, dst); break;
                case pooling_type::max: kernels::pool_rows(kernels::pool_op::max, rows, E, n, E, dst); break;
                case pooling_type::from_file: break; // resolved above
                }
                kernels::embd_normalize(dst, dst, E, normalize);
                dst += E;
            }
            s0 = s1;
        }
    }

    /// Final hidden states [total tokens x n_embd] (pooling none, no normalisation).
    void hidden(std::span<const token_span> seqs, std::span<float> out) { embed(seqs, out, pooling_type::none, -1); }

private:
    /// Buffers of one worker running a layer over a set of rows.
    struct workspace {
        std::vector<float> qkv, a, o, h, f;
        layers::ffn_workspace ffn;
        static void grow(std::vector<float>& b, std::size_t n) { if (b.size() < n) b.resize(n); }
    };

    /// A layer's matrices packed once (empty when not packable or not asked for).
    struct packed_layer {
        kernels::prepacked_weights qkv, o, up, down;
    };
    static inline const packed_layer no_packed{};

    // The position policy's embedding hook (Sinusoidal). Learned tables are the
    // encoder model's (M.pos_embd, bound with the token-type table); RoPE rotates
    // in attention. Workers call embed_add at once, so the encoder uses it only for
    // policies whose state is empty.
    using pos_impl = position_impl<typename Enc::position>;
    static constexpr bool adds_to_embedding =
        !detail::is_learned_positions<typename Enc::position> &&
        requires(const typename pos_impl::weights& w, typename pos_impl::state& st, float* x) {
            pos_impl::embed_add(w, st, std::int64_t{}, x, std::size_t{});
        };
    static_assert(!adds_to_embedding || std::is_empty_v<typename pos_impl::state>,
                  "archetype: an encoder's position policy that adds to the embeddings must keep no per-session state");
    typename pos_impl::weights pos_w_{};
    typename pos_impl::state pos_state_{};

    const model_type* m_;
    encoder_options opts_;
    std::vector<packed_layer> packed_;
    std::unique_ptr<thread_pool> pool_;
    std::vector<float> x_;       // hidden states of the current pass [tokens x n_embd]
    /// cos/sin per position [max pos x n_rot / 2] for one RoPE base: [0] the global
    /// layers', [1] the windowed layers' when the file gives them their own base.
    struct rope_table {
        float base = 0.f;
        std::vector<float> cos, sin;
    };
    rope_table rope_[2];
    std::vector<float> cls_tmp_;
    // One workspace per task running at once; taken and given back under the mutex.
    std::vector<std::unique_ptr<workspace>> spare_;
    std::unique_ptr<std::mutex> spare_mutex_ = std::make_unique<std::mutex>(); // (keeps the session movable)

    /// Tokens a chunk of whole sequences aims at when each worker runs whole
    /// chunks through every layer: enough rows for the packed GEMM engine, few
    /// enough that the chunk's activations (~ 8 KB per token at 384 wide) stay
    /// in L2 between the GEMMs, attention and norms of a layer.
    static constexpr std::size_t chunk_tokens = ARCHETYPE_ENCODER_CHUNK_TOKENS;

    std::size_t width(pooling_type p) const {
        return p == pooling_type::rank ? m_->n_rank_outputs() : m_->n_embd();
    }

    void validate(std::span<const token_span> seqs) const {
        for (std::size_t s = 0; s < seqs.size(); ++s) {
            const auto seq = seqs[s];
            if (seq.empty()) throw argument_error("sequence " + std::to_string(s) + " is empty");
            if (seq.size() > m_->max_sequence())
                throw argument_error("sequence " + std::to_string(s) + " has " + std::to_string(seq.size()) +
                                     " tokens, more than the model's " + std::to_string(m_->max_sequence()) +
                                     " positions");
            runtime::check_tokens(seq, m_->n_vocab(), std::ptrdiff_t(s));
        }
    }

    /// y = x W^T through the packed copy when there is one.
    static void linear(const kernels::weight_view& w, const kernels::prepacked_weights& pw, const float* x,
                       std::size_t ldx, std::size_t T, float* y, std::size_t ldy, thread_pool* pool) {
        if (!pw.empty()) kernels::gemm_prepacked(x, ldx, pw, y, ldy, T, pool);
        else kernels::matmul(w, x, ldx, T, y, ldy, pool);
    }

    /// f(begin, end) over [0, n): split over the pool, or inline when pool is null.
    template <class F>
    static void rows(thread_pool* pool, std::size_t n, F&& f) {
        if (pool) pool->parallel_for(n, f);
        else if (n) f(std::size_t{0}, n);
    }

    /// y += row r of an embedding table (F32, F16 or BF16).
    static void add_row(const kernels::weight_view& t, std::size_t r, float* y, float* tmp) {
        const std::size_t n = t.cols;
        const float* src;
        if (t.type == ggml_type::F32) {
            src = reinterpret_cast<const float*>(t.row(r));
        } else {
            const auto* h = reinterpret_cast<const std::uint16_t*>(t.row(r));
            if (t.type == ggml_type::F16) kernels::f16_to_f32(h, tmp, n);
            else kernels::bf16_to_f32(h, tmp, n);
            src = tmp;
        }
        for (std::size_t i = 0; i < n; ++i) y[i] += src[i];
    }

    /// Normalises one row in place (the model's norm; RMSNorm adds its optional bias).
    void norm_row(float* row, const float* w, const float* b) const {
        const std::size_t E = m_->n_embd();
        using Norm = typename Enc::norm;
        if constexpr (!std::is_same_v<Norm, RMSNorm>) {
            norm_impl<Norm>::apply(row, w, b, row, E, m_->hp.norm_eps);
        } else { // the file's RMS eps, then the optional bias the BERT files may carry
            norm_impl<Norm>::apply(row, w, nullptr, row, E, m_->hp.rms_eps);
            if (b) for (std::size_t i = 0; i < E; ++i) row[i] += b[i];
        }
    }
    void norm_rows(float* x, std::size_t n_rows, const float* w, const float* b, thread_pool* pool) {
        const std::size_t E = m_->n_embd();
        rows(pool, n_rows, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) norm_row(x + r * E, w, b);
        });
    }
    /// y[r] += b over n_rows rows of n (leading dimension ld); b may be null.
    static void add_bias(float* y, std::size_t n_rows, std::size_t n, std::size_t ld, const float* b, thread_pool* pool) {
        if (!b) return;
        rows(pool, n_rows, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r)
                for (std::size_t i = 0; i < n; ++i) y[r * ld + i] += b[i];
        });
    }
    /// The residual step, one pass per row while it is in L1:
    /// x[r] += y[r] + b (b may be null), then x[r] = norm(x[r]) when nw is given.
    void residual(float* x, const float* y, const float* b, std::size_t n_rows, const float* nw, const float* nb,
                  bool do_norm, thread_pool* pool) {
        const std::size_t E = m_->n_embd();
        rows(pool, n_rows, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                float* xr = x + r * E;
                const float* yr = y + r * E;
                if (b) for (std::size_t i = 0; i < E; ++i) xr[i] += yr[i] + b[i];
                else for (std::size_t i = 0; i < E; ++i) xr[i] += yr[i];
                if (do_norm) norm_row(xr, nw, nb);
            }
        });
    }

    /// Token + type + position embeddings of batch rows [t0, t1) (then embedding norm).
    void embed_rows(std::span<const token_span> seqs, const packed_layout& lay, std::size_t t0, std::size_t t1,
                    float* tmp) {
        const auto& M = *m_;
        const std::size_t E = M.n_embd();
        for (std::size_t t = t0; t < t1; ++t) {
            const std::size_t s = lay.sequence_of(t), p = t - lay.offsets[s];
            float* y = x_.data() + t * E;
            std::fill(y, y + E, 0.f);
            add_row(M.tok_embd, std::size_t(seqs[s][p]), y, tmp);
            if (M.has_token_types) add_row(M.type_embd, 0, y, tmp); // token type 0, as llama.cpp
            if (M.has_positions) add_row(M.pos_embd, p, y, tmp);
            if constexpr (adds_to_embedding) // the position policy's vector (Sinusoidal)
                pos_impl::embed_add(pos_w_, pos_state_, std::int64_t(p), y, E);
            if (M.embd_norm_w) norm_row(y, M.embd_norm_w, M.embd_norm_b);
        }
    }

    /// The RoPE base of the global layers: the policy's compiled base, else the file's.
    float global_rope_base() const noexcept {
        using position = typename Enc::position;
        if constexpr (requires { position::base; })
            if (position::base != 0) return float(position::base);
        return m_->hp.rope_freq_base;
    }
    /// Which rope_ table layer il rotates with.
    std::size_t rope_table_of(std::size_t il) const noexcept {
        return m_->layer_windowed(il) && m_->hp.rope_freq_base_swa > 0.f ? 1 : 0;
    }
    /// cos/sin of ggml's rope angles for positions 0..n-1 (layers::rope_tables, the
    /// decoder's: theta_i = p * base^(-2i/n_rot), no scaling), for each base in use.
    void prepare_rope(std::size_t n_pos) {
        const std::size_t half = m_->hp.n_rot / 2;
        std::vector<std::int64_t> pos(n_pos);
        for (std::size_t p = 0; p < n_pos; ++p) pos[p] = std::int64_t(p);
        for (std::size_t t = 0; t < 2; ++t) {
            auto& tab = rope_[t];
            const float base = t == 0 ? global_rope_base() : m_->hp.rope_freq_base_swa;
            if (base <= 0.f || (tab.base == base && tab.cos.size() >= n_pos * half)) continue;
            layers::rope_params rp;
            rp.n_rot = m_->hp.n_rot;
            rp.freq_base = base;
            tab.base = base;
            tab.cos.assign(n_pos * half, 0.f);
            tab.sin.assign(n_pos * half, 0.f);
            layers::rope_tables(rp, pos.data(), n_pos, tab.cos.data(), tab.sin.data());
        }
    }
    void apply_rope(float* x, std::size_t ld, std::size_t n_heads, const packed_layout& lay, const rope_table& tab,
                    thread_pool* pool) {
        using position = typename Enc::position;
        // bert-family encoders with rotary positions (nomic-bert, jina) use the NeoX pairing
        kernels::rope_pairing pairing = kernels::rope_pairing::neox;
        if constexpr (requires { position::pairing; })
            if (position::pairing == rope_pairing_policy::adjacent) pairing = kernels::rope_pairing::adjacent;
        const std::size_t half = m_->hp.n_rot / 2, D = m_->hp.head_dim;
        rows(pool, lay.n_tokens(), [&](std::size_t t0, std::size_t t1) {
            for (std::size_t t = t0; t < t1; ++t) {
                const std::size_t p = t - lay.offsets[lay.sequence_of(t)];
                kernels::rope(x + t * ld, n_heads, D, m_->hp.n_rot, tab.cos.data() + p * half,
                              tab.sin.data() + p * half, pairing);
            }
        });
    }

    /// The rule of a windowed layer: the mask itself, or an Interleave's local mask.
    template <class M>
    struct window_rule { using type = M; };
    template <class M>
        requires requires { typename M::local; }
    struct window_rule<M> { using type = typename M::local; };

    /// Attention of every sequence of lay over its own block: q/k/v rows at
    /// stride ld (heads side by side), output rows [tokens x Hq] in a. `windowed`:
    /// this layer attends through the window (the mask's windowed rule), else to all.
    void attention(const packed_layout& lay, const float* q, const float* k, const float* v, std::size_t ld,
                   float* a, bool windowed, thread_pool* pool) {
        const auto& hp = m_->hp;
        const std::size_t Hq = hp.n_head * hp.head_dim;
        using mask = typename window_rule<typename Enc::mask>::type;
        auto params = [&](std::size_t s) {
            const std::size_t off = lay.offsets[s], n = lay.length(s);
            kernels::attention_params p;
            p.n_head = hp.n_head;
            p.n_head_kv = hp.n_head_kv;
            p.head_dim = hp.head_dim;
            p.scale = 1.f / std::sqrt(float(hp.head_dim));
            p.q = q + off * ld;
            p.ldq = ld;
            p.n_q = n;
            p.k = k + off * ld;
            p.v = v + off * ld;
            p.ldkv = ld;
            p.kv_head_stride = hp.head_dim;
            p.n_kv = n;
            p.out = a + off * Hq;
            p.ldo = Hq;
            return p;
        };
        // A sequence whose mask shows it every key (always for Bidirectional; for a
        // window covering the sequence) takes the dense kernel, one head at a time.
        const bool dense_kernel = kernels::dense_attention_supported(hp.head_dim);
        auto dense = [&](std::size_t s) {
            if (!dense_kernel) return false;
            if (windowed) {
                const auto w = std::int64_t(m_->window());
                const auto last = pos_t(lay.length(s) - 1);
                return mask::visible(pos_t(0), last, w) && mask::visible(last, pos_t(0), w);
            }
            return true;
        };
        bool all_dense = true;
        for (std::size_t s = 0; s < lay.n_sequences() && all_dense; ++s) all_dense = dense(s);
        if (all_dense) {
            // One task per (sequence, head).
            const std::size_t H = hp.n_head, n_tasks = lay.n_sequences() * H;
            auto task = [&](std::size_t t) { kernels::dense_attention_head(params(t / H), t % H); };
            if (pool) pool->for_each_task(n_tasks, task);
            else for (std::size_t t = 0; t < n_tasks; ++t) task(t);
            return;
        }
        auto one = [&](std::size_t s, thread_pool* inner) {
            const auto p = params(s);
            if (dense(s)) {
                auto head = [&](std::size_t h) { kernels::dense_attention_head(p, h); };
                if (inner) inner->for_each_task(hp.n_head, head);
                else for (std::size_t h = 0; h < hp.n_head; ++h) head(h);
            } else if (windowed) {
                const auto w = std::int64_t(m_->window());
                kernels::attention(p, [w](std::size_t i, std::size_t j) {
                    return mask::visible(pos_t(i), pos_t(j), w);
                }, inner);
            } else {
                kernels::attention(p, kernels::all_visible{}, inner);
            }
        };
        // Many sequences: one task per sequence. Few: each sequence uses all threads.
        if (!pool) {
            for (std::size_t s = 0; s < lay.n_sequences(); ++s) one(s, nullptr);
        } else if (lay.n_sequences() >= 2 * pool->size()) {
            pool->for_each_task(lay.n_sequences(), [&](std::size_t s) { one(s, nullptr); });
        } else {
            for (std::size_t s = 0; s < lay.n_sequences(); ++s) one(s, pool);
        }
    }

    /// One encoder block over the rows of lay (x: its hidden states, updated in
    /// place). pool null: this thread alone (a chunk task); else split over it.
    void layer(std::size_t il, const encoder_layer_weights& L, const packed_layer& P, float* x,
               const packed_layout& lay, workspace& w, thread_pool* pool) {
        const auto& hp = m_->hp;
        const std::size_t T = lay.n_tokens(), E = hp.n_embd;
        const std::size_t Hq = hp.n_head * hp.head_dim, Hkv = hp.n_head_kv * hp.head_dim;
        const std::size_t ld = Hq + 2 * Hkv;
        constexpr bool post = Enc::placement == norm_placement::post;
        workspace::grow(w.qkv, T * ld);
        workspace::grow(w.a, T * Hq);
        workspace::grow(w.o, T * E);
        const float* in = x;
        if (!post && L.norm1_w) { // (no attention norm: ModernBERT's first layer)
            workspace::grow(w.h, T * E);
            std::copy(x, x + T * E, w.h.data());
            norm_rows(w.h.data(), T, L.norm1_w, L.norm1_b, pool);
            in = w.h.data();
        }
        // Q | K | V side by side in one [T x ld] buffer: one GEMM when stacked.
        float* q = w.qkv.data();
        float* k = q + Hq;
        float* v = k + Hkv;
        if (L.wqkv.data) {
            linear(L.wqkv, P.qkv, in, E, T, q, ld, pool);
            add_bias(q, T, ld, ld, L.bqkv, pool);
        } else {
            kernels::matmul(L.wq, in, E, T, q, ld, pool);
            kernels::matmul(L.wk, in, E, T, k, ld, pool);
            kernels::matmul(L.wv, in, E, T, v, ld, pool);
            add_bias(q, T, Hq, ld, L.bq, pool);
            add_bias(k, T, Hkv, ld, L.bk, pool);
            add_bias(v, T, Hkv, ld, L.bv, pool);
        }
        if constexpr (Enc::position::rotary) {
            const auto& tab = rope_[rope_table_of(il)];
            apply_rope(q, ld, hp.n_head, lay, tab, pool);
            apply_rope(k, ld, hp.n_head_kv, lay, tab, pool);
        }
        attention(lay, q, k, v, ld, w.a.data(), m_->layer_windowed(il), pool);
        linear(L.wo, P.o, w.a.data(), Hq, T, w.o.data(), E, pool);
        residual(x, w.o.data(), L.bo, T, L.norm1_w, L.norm1_b, post, pool);
        if constexpr (post) {
            feed_forward(L.ffn, P, x, T, w, pool);
        } else {
            workspace::grow(w.h, T * E);
            std::copy(x, x + T * E, w.h.data());
            norm_rows(w.h.data(), T, L.norm2_w, L.norm2_b, pool);
            feed_forward(L.ffn, P, w.h.data(), T, w, pool);
        }
        residual(x, w.o.data(), L.ffn.down_bias, T, L.norm2_w, L.norm2_b, post, pool);
    }

    /// w.o = FFN(in) without the down bias (the residual step adds it). A dense
    /// ungated block (GeluMLP) adds the up bias and applies its activation row by
    /// row while the row is in L1; other forms go through layers::feed_forward.
    void feed_forward(const layers::ffn_weights& f, const packed_layer& P, const float* in, std::size_t T, workspace& w,
                      thread_pool* pool) {
        using FFN = typename Enc::ffn;
        const std::size_t E = m_->n_embd();
        if constexpr (!FFN::gated && !layers::detail::is_moe_v<FFN>) {
            const std::size_t F = f.n_ff();
            workspace::grow(w.f, T * F);
            float* a = w.f.data();
            linear(f.up, P.up, in, E, T, a, F, pool);
            rows(pool, T, [&](std::size_t r0, std::size_t r1) {
                for (std::size_t r = r0; r < r1; ++r) {
                    float* ar = a + r * F;
                    if (f.up_bias) for (std::size_t i = 0; i < F; ++i) ar[i] += f.up_bias[i];
                    ffn_impl<FFN>::apply(ar, F);
                }
            });
            linear(f.down, P.down, a, F, T, w.o.data(), E, pool);
        } else {
            layers::ffn_weights nob = f;
            nob.down_bias = nullptr;
            layers::feed_forward<FFN>(nob, in, E, T, w.o.data(), E, w.ffn, pool);
        }
    }

    const packed_layer& packed(std::size_t i) const noexcept { return i < packed_.size() ? packed_[i] : no_packed; }

    std::unique_ptr<workspace> take_workspace() {
        std::lock_guard lk(*spare_mutex_);
        if (spare_.empty()) return std::make_unique<workspace>();
        auto w = std::move(spare_.back());
        spare_.pop_back();
        return w;
    }
    void give_back(std::unique_ptr<workspace> w) {
        std::lock_guard lk(*spare_mutex_);
        spare_.push_back(std::move(w));
    }

    /// Every layer over rows [t0, t1) of the batch (whole sequences s0..s1-1) by one thread.
    void run_chunk(std::span<const token_span> seqs, const packed_layout& lay, std::size_t s0, std::size_t s1) {
        const auto& M = *m_;
        const std::size_t E = M.n_embd(), t0 = lay.offsets[s0], t1 = lay.offsets[s1];
        auto w = take_workspace();
        workspace::grow(w->h, E);
        embed_rows(seqs, lay, t0, t1, w->h.data());
        packed_layout sub;
        for (std::size_t s = s0; s < s1; ++s) sub.add(lay.length(s));
        float* x = x_.data() + t0 * E;
        for (std::size_t i = 0; i < M.layers.size(); ++i) layer(i, M.layers[i], packed(i), x, sub, *w, nullptr);
        if (M.out_norm_w) norm_rows(x, t1 - t0, M.out_norm_w, M.out_norm_b, nullptr);
        give_back(std::move(w));
    }

    void forward(std::span<const token_span> seqs, const packed_layout& lay) {
        const auto& M = *m_;
        const std::size_t T = lay.n_tokens(), E = M.hp.n_embd;
        if (x_.size() < T * E) x_.resize(T * E);
        if constexpr (Enc::position::rotary) {
            std::size_t longest = 0;
            for (std::size_t s = 0; s < lay.n_sequences(); ++s) longest = std::max(longest, lay.length(s));
            prepare_rope(longest);
        }
        // Sequences never see each other, so whole sequences can run through all
        // layers independently. Chunks of about chunk_tokens: each thread takes
        // whole chunks (no barrier per operation, activations stay in its L2).
        std::vector<std::size_t> bounds{0};
        for (std::size_t s = 0, tok = 0; s < lay.n_sequences(); ++s) {
            tok += lay.length(s);
            if (tok >= chunk_tokens || s + 1 == lay.n_sequences()) {
                bounds.push_back(s + 1);
                tok = 0;
            }
        }
        const std::size_t n_chunks = bounds.size() - 1, threads = pool_->size();
        if (threads == 1 || n_chunks >= 2 * threads) {
            pool_->for_each_task(n_chunks, [&](std::size_t c) { run_chunk(seqs, lay, bounds[c], bounds[c + 1]); });
            return;
        }
        // Few sequences: the whole batch at once, each operation split over the threads.
        thread_pool* pool = pool_.get();
        auto w = take_workspace();
        workspace::grow(w->h, E);
        rows(pool, T, [&](std::size_t t0, std::size_t t1) {
            std::vector<float> tmp(E);
            embed_rows(seqs, lay, t0, t1, tmp.data());
        });
        for (std::size_t i = 0; i < M.layers.size(); ++i) layer(i, M.layers[i], packed(i), x_.data(), lay, *w, pool);
        if (M.out_norm_w) norm_rows(x_.data(), T, M.out_norm_w, M.out_norm_b, pool);
        give_back(std::move(w));
    }

    /// llama.cpp's RANK pooling: first position -> tanh(cls x + b) -> cls.output x + b.
    void rank(const float* first_row, float* out) {
        const auto& M = *m_;
        const float* h = first_row;
        std::size_t n = M.n_embd();
        if (M.has_cls) {
            if (cls_tmp_.size() < M.cls.rows) cls_tmp_.resize(M.cls.rows);
            kernels::matmul(M.cls, h, n, 1, cls_tmp_.data(), M.cls.rows);
            n = M.cls.rows;
            if (M.cls_b) for (std::size_t i = 0; i < n; ++i) cls_tmp_[i] += M.cls_b[i];
            kernels::tanh(cls_tmp_.data(), n);
            h = cls_tmp_.data();
        }
        if (M.has_cls_out) {
            kernels::matmul(M.cls_out, h, n, 1, out, M.cls_out.rows);
            if (M.cls_out_b) for (std::size_t i = 0; i < M.cls_out.rows; ++i) out[i] += M.cls_out_b[i];
        } else {
            std::copy(h, h + n, out);
        }
    }
};

template <class Enc>
encoder_session(const encoder_model<Enc>&, encoder_options = {}) -> encoder_session<Enc>;

} // namespace archetype
