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
#include <span>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/activation.hpp"
#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/kernels/pooling.hpp"
#include "archetype/kernels/rope.hpp"
#include "archetype/layers/ffn.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_mask.hpp"

namespace archetype {

struct encoder_options {
    std::size_t n_threads = 1;
    /// Tokens per forward pass (a longer single sequence still runs whole).
    std::size_t max_batch_tokens = 8192;
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
            const float* h = ws_.x.data();
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
    struct workspace {
        std::vector<float> x, q, k, v, a, o, h;
        std::vector<float> rope_cs; // cos/sin per position, [max pos x n_rot]
        std::vector<float> cls_tmp;
        layers::ffn_workspace ffn;
        static void grow(std::vector<float>& b, std::size_t n) { if (b.size() < n) b.resize(n); }
    };

    const model_type* m_;
    encoder_options opts_;
    std::unique_ptr<thread_pool> pool_;
    workspace ws_;

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
            for (std::size_t i = 0; i < seq.size(); ++i)
                if (seq[i] < 0 || std::size_t(seq[i]) >= m_->n_vocab())
                    throw argument_error("token id " + std::to_string(seq[i]) + " at index " + std::to_string(i) +
                                         " of sequence " + std::to_string(s) + " is outside the vocabulary (0.." +
                                         std::to_string(m_->n_vocab() - 1) + ")");
        }
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

    void norm_rows(float* x, std::size_t n_rows, const float* w, const float* b) {
        const std::size_t E = m_->n_embd();
        pool_->parallel_for(n_rows, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                float* row = x + r * E;
                if constexpr (std::is_same_v<typename Enc::norm, RMSNorm>) {
                    kernels::rms_norm(row, w, row, E, m_->hp.rms_eps);
                    if (b) for (std::size_t i = 0; i < E; ++i) row[i] += b[i];
                } else {
                    kernels::layer_norm(row, w, b, row, E, m_->hp.norm_eps);
                }
            }
        });
    }
    /// y[r] = x[r] + b (b may be null) over n_rows rows of n.
    void add_bias(float* y, std::size_t n_rows, std::size_t n, const float* b) {
        if (!b) return;
        pool_->parallel_for(n_rows, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r)
                for (std::size_t i = 0; i < n; ++i) y[r * n + i] += b[i];
        });
    }
    void add_into(float* x, const float* y, std::size_t n) {
        pool_->parallel_for(n, [&](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) x[i] += y[i];
        });
    }

    void embed_tokens(std::span<const token_span> seqs, const packed_layout& lay) {
        const auto& M = *m_;
        const std::size_t E = M.n_embd();
        float* x = ws_.x.data();
        pool_->parallel_for(lay.n_tokens(), [&](std::size_t t0, std::size_t t1) {
            std::vector<float> tmp(E);
            for (std::size_t t = t0; t < t1; ++t) {
                const std::size_t s = lay.sequence_of(t), p = t - lay.offsets[s];
                float* y = x + t * E;
                std::fill(y, y + E, 0.f);
                add_row(M.tok_embd, std::size_t(seqs[s][p]), y, tmp.data());
                if (M.has_token_types) add_row(M.type_embd, 0, y, tmp.data()); // token type 0, as llama.cpp
                if (M.has_positions) add_row(M.pos_embd, p, y, tmp.data());
                if constexpr (std::is_same_v<typename Enc::position, Sinusoidal>) {
                    // Vaswani et al.: PE(p, 2i) = sin(p / 10000^(2i/E)), PE(p, 2i+1) = cos(same)
                    for (std::size_t i = 0; 2 * i < E; ++i) {
                        const double ang = double(p) / std::pow(10000.0, double(2 * i) / double(E));
                        y[2 * i] += float(std::sin(ang));
                        if (2 * i + 1 < E) y[2 * i + 1] += float(std::cos(ang));
                    }
                }
            }
        });
        if (M.embd_norm_w) norm_rows(x, lay.n_tokens(), M.embd_norm_w, M.embd_norm_b);
    }

    /// cos/sin of ggml's rope angles for positions 0..n-1 (theta_i = p * base^(-2i/n_rot)).
    void prepare_rope(std::size_t n_pos) {
        const std::size_t half = m_->hp.n_rot / 2;
        if (ws_.rope_cs.size() >= n_pos * 2 * half) return;
        ws_.rope_cs.assign(n_pos * 2 * half, 0.f);
        using position = typename Enc::position;
        float base = m_->hp.rope_freq_base;
        if constexpr (requires { position::base; })
            if (position::base != 0) base = float(position::base);
        const float theta_scale = std::pow(base, -2.0f / float(m_->hp.n_rot));
        for (std::size_t p = 0; p < n_pos; ++p) {
            float theta = float(p);
            float* c = ws_.rope_cs.data() + p * 2 * half;
            for (std::size_t i = 0; i < half; ++i) {
                c[i] = std::cos(theta);
                c[half + i] = std::sin(theta);
                theta *= theta_scale;
            }
        }
    }
    void apply_rope(float* x, std::size_t ld, std::size_t n_heads, const packed_layout& lay) {
        using position = typename Enc::position;
        // bert-family encoders with rotary positions (nomic-bert, jina) use the NeoX pairing
        kernels::rope_pairing pairing = kernels::rope_pairing::neox;
        if constexpr (requires { position::pairing; })
            if (position::pairing == rope_pairing_policy::adjacent) pairing = kernels::rope_pairing::adjacent;
        const std::size_t half = m_->hp.n_rot / 2, D = m_->hp.head_dim;
        pool_->parallel_for(lay.n_tokens(), [&](std::size_t t0, std::size_t t1) {
            for (std::size_t t = t0; t < t1; ++t) {
                const std::size_t p = t - lay.offsets[lay.sequence_of(t)];
                const float* c = ws_.rope_cs.data() + p * 2 * half;
                kernels::rope(x + t * ld, n_heads, D, m_->hp.n_rot, c, c + half, pairing);
            }
        });
    }

    void attention(const packed_layout& lay) {
        const auto& hp = m_->hp;
        const std::size_t Hq = hp.n_head * hp.head_dim, Hkv = hp.n_head_kv * hp.head_dim;
        auto one = [&](std::size_t s, thread_pool* pool) {
            const std::size_t off = lay.offsets[s], n = lay.length(s);
            kernels::attention_params p;
            p.n_head = hp.n_head;
            p.n_head_kv = hp.n_head_kv;
            p.head_dim = hp.head_dim;
            p.scale = 1.f / std::sqrt(float(hp.head_dim));
            p.q = ws_.q.data() + off * Hq;
            p.ldq = Hq;
            p.n_q = n;
            p.k = ws_.k.data() + off * Hkv;
            p.v = ws_.v.data() + off * Hkv;
            p.ldkv = Hkv;
            p.kv_head_stride = hp.head_dim;
            p.n_kv = n;
            p.out = ws_.a.data() + off * Hq;
            p.ldo = Hq;
            using mask = typename Enc::mask;
            if constexpr (mask::windowed) {
                const auto w = std::int64_t(m_->window());
                kernels::attention(p, [w](std::size_t i, std::size_t j) {
                    return mask::visible(pos_t(i), pos_t(j), w);
                }, pool);
            } else {
                kernels::attention(p, kernels::all_visible{}, pool);
            }
        };
        // Many sequences: one task per sequence. Few: each sequence uses all threads.
        if (lay.n_sequences() >= 2 * pool_->size())
            pool_->for_each_task(lay.n_sequences(), [&](std::size_t s) { one(s, nullptr); });
        else
            for (std::size_t s = 0; s < lay.n_sequences(); ++s) one(s, pool_.get());
    }

    void forward(std::span<const token_span> seqs, const packed_layout& lay) {
        const auto& M = *m_;
        const auto& hp = M.hp;
        const std::size_t T = lay.n_tokens(), E = hp.n_embd;
        const std::size_t Hq = hp.n_head * hp.head_dim, Hkv = hp.n_head_kv * hp.head_dim;
        workspace::grow(ws_.x, T * E);
        workspace::grow(ws_.q, T * Hq);
        workspace::grow(ws_.k, T * Hkv);
        workspace::grow(ws_.v, T * Hkv);
        workspace::grow(ws_.a, T * Hq);
        workspace::grow(ws_.o, T * E);
        constexpr bool post = Enc::placement == norm_placement::post;
        if constexpr (!post) workspace::grow(ws_.h, T * E);
        constexpr bool rotary = Enc::position::rotary;
        if constexpr (rotary) {
            std::size_t longest = 0;
            for (std::size_t s = 0; s < lay.n_sequences(); ++s) longest = std::max(longest, lay.length(s));
            prepare_rope(longest);
        }
        thread_pool* pool = pool_.get();
        float* x = ws_.x.data();
        embed_tokens(seqs, lay);
        for (const auto& L : M.layers) {
            const float* in = x;
            if constexpr (!post) {
                std::copy(x, x + T * E, ws_.h.data());
                norm_rows(ws_.h.data(), T, L.norm1_w, L.norm1_b);
                in = ws_.h.data();
            }
            kernels::matmul(L.wq, in, E, T, ws_.q.data(), Hq, pool);
            kernels::matmul(L.wk, in, E, T, ws_.k.data(), Hkv, pool);
            kernels::matmul(L.wv, in, E, T, ws_.v.data(), Hkv, pool);
            add_bias(ws_.q.data(), T, Hq, L.bq);
            add_bias(ws_.k.data(), T, Hkv, L.bk);
            add_bias(ws_.v.data(), T, Hkv, L.bv);
            if constexpr (rotary) {
                apply_rope(ws_.q.data(), Hq, hp.n_head, lay);
                apply_rope(ws_.k.data(), Hkv, hp.n_head_kv, lay);
            }
            attention(lay);
            kernels::matmul(L.wo, ws_.a.data(), Hq, T, ws_.o.data(), E, pool);
            add_bias(ws_.o.data(), T, E, L.bo);
            add_into(x, ws_.o.data(), T * E);
            if constexpr (post) {
                norm_rows(x, T, L.norm1_w, L.norm1_b);
                layers::feed_forward<typename Enc::ffn>(L.ffn, x, E, T, ws_.o.data(), E, ws_.ffn, pool);
            } else {
                std::copy(x, x + T * E, ws_.h.data());
                norm_rows(ws_.h.data(), T, L.norm2_w, L.norm2_b);
                layers::feed_forward<typename Enc::ffn>(L.ffn, ws_.h.data(), E, T, ws_.o.data(), E, ws_.ffn, pool);
            }
            add_into(x, ws_.o.data(), T * E);
            if constexpr (post) norm_rows(x, T, L.norm2_w, L.norm2_b);
        }
        if (M.out_norm_w) norm_rows(x, T, M.out_norm_w, M.out_norm_b);
    }

    /// llama.cpp's RANK pooling: first position -> tanh(cls x + b) -> cls.output x + b.
    void rank(const float* first_row, float* out) {
        const auto& M = *m_;
        const float* h = first_row;
        std::size_t n = M.n_embd();
        if (M.has_cls) {
            workspace::grow(ws_.cls_tmp, M.cls.rows);
            kernels::matmul(M.cls, h, n, 1, ws_.cls_tmp.data(), M.cls.rows);
            n = M.cls.rows;
            if (M.cls_b) for (std::size_t i = 0; i < n; ++i) ws_.cls_tmp[i] += M.cls_b[i];
            kernels::tanh(ws_.cls_tmp.data(), n);
            h = ws_.cls_tmp.data();
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
