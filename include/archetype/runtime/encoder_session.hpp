#pragma once
// encoder_session<Enc>: runs an encoder_model over packed batches of sequences
// and writes pooled, normalised embeddings.
//
//   auto model = archetype::load_model<MiniLM>("bert.gguf");
//   auto enc = archetype::encoder_session(model, {.n_threads = 2});
//   enc.embed(sequences, out);                                 // the type's pooling and normalisation
//   enc.embed(sequences, out, pooling_type::cls, 2);           // chosen at run time (CLI)
//
// The layers run on the core: a decoder_session of Enc::core (models/encoder.hpp), whose
// NoCache passes give each sequence its own rows as keys (runtime/cache/none.hpp). This
// session is the encoder's front end: it packs sequences into passes, runs them, and
// pools and normalises the final hidden rows.
//
// Packed batches: the sequences are laid one after another with no padding
// (up to options.max_batch_tokens tokens per forward pass); every projection
// and FFN runs once over all of them, and attention runs per sequence block,
// which is the block-diagonal mask without ever forming it. Each sequence is at
// positions 0..n-1, so its result equals running it alone (same instruction
// sequence per row: kernels split work by output rows). Many sequences: chunks of
// whole sequences (about ARCHETYPE_ENCODER_CHUNK_TOKENS tokens) each run through
// every layer by one thread on a single-threaded core session of its own (no
// barrier per operation, the chunk's activations stay in that core's L2); few:
// one pass on a core session with all the threads.
//
// Output layout (float32, row-major): pooling none -> [total tokens x n_embd],
// sequences one after another; mean/cls/last/max -> [n_sequences x n_embd];
// rank -> [n_sequences x n_rank_outputs] (usually one score). Normalisation is
// applied to each output vector (each token row under none); rank scores are
// never normalised.
#include <algorithm>
#include <bit>
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
#include "archetype/kernels/batch_activations.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/pooling.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
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
    // (the layer matrices' GEMM panels are the model's now, packed once at load:
    // encoder_model, decoder_model::pack_panels)
};

using token_span = std::span<const std::int32_t>;

template <class Enc>
class encoder_session {
public:
    using model_type = encoder_model<Enc>;

    encoder_session(const model_type& model, encoder_options opts = {})
        : m_(&model), opts_(opts), pool_(std::make_unique<thread_pool>(std::max<std::size_t>(1, opts.n_threads))) {
        if (opts_.max_batch_tokens == 0) throw argument_error("encoder_options.max_batch_tokens must be at least 1");
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
        if (pooling == pooling_type::rank && !m_->has_rank_head())
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
    using core_session = decoder_session<typename Enc::core>;

    const model_type* m_;
    encoder_options opts_;
    std::unique_ptr<thread_pool> pool_;    // runs the chunks
    std::vector<float> x_;                 // final hidden rows of the current pass [tokens x n_embd]
    std::vector<std::int32_t> tok_;        // its tokens, one sequence after another
    std::unique_ptr<core_session> whole_;  // a pass of few sequences, on all the threads
    // single-threaded core sessions running whole chunks; taken and given back under the mutex
    std::vector<std::unique_ptr<core_session>> spare_;
    std::unique_ptr<std::mutex> spare_mutex_ = std::make_unique<std::mutex>(); // (keeps the session movable)
    std::vector<float> cls_tmp_;

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

    /// A core session of `threads` threads whose passes hold `rows` rows: rounded up to a
    /// power of two (at most the longest pass this session may run), so that a growing
    /// workload makes few of them. Exact activations: the encoder's products.
    std::unique_ptr<core_session> make(std::size_t threads, std::size_t rows) const {
        const std::size_t most = std::max(opts_.max_batch_tokens, m_->max_sequence());
        rows = std::min(std::max(std::bit_ceil(rows), std::min<std::size_t>(chunk_tokens, most)), most);
        decoder_session_options o;
        o.n_threads = threads;
        o.max_sequences = rows;
        o.n_ubatch = rows;
        o.n_ctx = m_->max_sequence();
        o.batch_activations = kernels::batch_activations::exact;
        return std::make_unique<core_session>(m_->core(), o);
    }

    std::unique_ptr<core_session> take(std::size_t rows) {
        std::unique_ptr<core_session> s;
        {
            std::lock_guard lk(*spare_mutex_);
            if (!spare_.empty()) {
                s = std::move(spare_.back());
                spare_.pop_back();
            }
        }
        if (!s || s->max_rows() < rows) s = make(1, rows);
        return s;
    }
    void give_back(std::unique_ptr<core_session> s) {
        std::lock_guard lk(*spare_mutex_);
        spare_.push_back(std::move(s));
    }

    /// Sequences s0..s1-1 of lay through every layer on core session `c`: their hidden
    /// rows into x_ at their batch rows.
    void run(core_session& c, const packed_layout& lay, std::size_t s0, std::size_t s1) {
        std::vector<stage_rows> groups;
        groups.reserve(s1 - s0);
        for (std::size_t s = s0; s < s1; ++s) groups.push_back({seq_id(s - s0), lay.length(s)});
        const std::size_t t0 = lay.offsets[s0], n = lay.offsets[s1] - t0, E = m_->n_embd();
        c.run_stage(groups, tok_.data() + t0, nullptr, nullptr, 0, n, nullptr, x_.data() + t0 * E);
    }

    void forward(std::span<const token_span> seqs, const packed_layout& lay) {
        const std::size_t T = lay.n_tokens(), E = m_->n_embd();
        if (x_.size() < T * E) x_.resize(T * E);
        tok_.clear();
        for (const auto s : seqs) tok_.insert(tok_.end(), s.begin(), s.end());
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
            pool_->for_each_task(n_chunks, [&](std::size_t c) {
                auto s = take(lay.offsets[bounds[c + 1]] - lay.offsets[bounds[c]]);
                run(*s, lay, bounds[c], bounds[c + 1]);
                give_back(std::move(s));
            });
            return;
        }
        // Few sequences: the whole batch at once, each operation split over the threads.
        if (!whole_ || whole_->max_rows() < T) whole_ = make(threads, T);
        run(*whole_, lay, 0, lay.n_sequences());
    }

    /// llama.cpp's RANK pooling: first position -> tanh(cls x + b) -> cls.output x + b.
    void rank(const float* first_row, float* out) {
        const auto& H = m_->head();
        const float* h = first_row;
        std::size_t n = m_->n_embd();
        if (H.cls.data) {
            if (cls_tmp_.size() < H.cls.rows) cls_tmp_.resize(H.cls.rows);
            kernels::matmul(H.cls, h, n, 1, cls_tmp_.data(), H.cls.rows);
            n = H.cls.rows;
            if (H.cls_b) for (std::size_t i = 0; i < n; ++i) cls_tmp_[i] += H.cls_b[i];
            kernels::tanh(cls_tmp_.data(), n);
            h = cls_tmp_.data();
        }
        if (H.cls_out.data) {
            kernels::matmul(H.cls_out, h, n, 1, out, H.cls_out.rows);
            if (H.cls_out_b) for (std::size_t i = 0; i < H.cls_out.rows; ++i) out[i] += H.cls_out_b[i];
        } else {
            std::copy(h, h + n, out);
        }
    }
};

template <class Enc>
encoder_session(const encoder_model<Enc>&, encoder_options = {}) -> encoder_session<Enc>;

} // namespace archetype
