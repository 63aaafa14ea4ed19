#pragma once
// Embedding axis: what is done to a token's embedding row before the first
// layer. Gemma multiplies it by sqrt(n_embd) (its embeddings are tied to the
// output head, so they are stored at the output's scale): ScaledEmbedding, named by the
// gemma presets. No key says it: a Decoder<...> loaded without an entry must agree with the
// preset registered for the file's architecture (load_model, models/decoder_model.hpp).
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "archetype/core/policy.hpp"
#include "archetype/kernels/embedding_row.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/norm.hpp"

namespace archetype {

/// The embedding row as stored (Llama, Mistral).
struct PlainEmbedding {
    using axis = archetype::axis::embedding;
    static constexpr std::string_view name = "PlainEmbedding";
    static std::string describe() { return "PlainEmbedding"; }
};
template <>
struct embedding_impl<PlainEmbedding> {
    struct weights {};
    template <class Binder>
    static void bind(Binder&, weights&) {}
    static void apply(const weights&, float*, std::size_t) noexcept {}
};

/// The embedding row times sqrt(n_embd), in float32 as llama.cpp's ggml_scale (Gemma).
struct ScaledEmbedding {
    using axis = archetype::axis::embedding;
    static constexpr std::string_view name = "ScaledEmbedding";
    static std::string describe() { return "ScaledEmbedding (x sqrt(n_embd))"; }
};
template <>
struct embedding_impl<ScaledEmbedding> {
    struct weights {
        float scale = 1.f;
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        w.scale = std::sqrt(float(b.hparams().dims.n_embd));
    }
    /// n floats (whole rows) in place.
    static void apply(const weights& w, float* x, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) x[i] *= w.scale;
    }
};

/// The embedding row normalised by Norm with the file's token_embd_norm.{weight,bias}
/// (BLOOM: a LayerNorm right after the lookup; eps is the norm's key of the file).
template <class Norm = LayerNorm>
struct NormedEmbedding {
    using axis = archetype::axis::embedding;
    static constexpr std::string_view name = "NormedEmbedding";
    static std::string describe() { return "NormedEmbedding<" + Norm::describe() + "> (token_embd_norm)"; }
};
template <class Norm>
struct embedding_impl<NormedEmbedding<Norm>> {
    struct weights {
        const float *w = nullptr, *b = nullptr;
        float eps = 0.f;
        std::size_t n_embd = 0;
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        w.n_embd = b.hparams().dims.n_embd;
        w.w = b.vector_f32("token_embd_norm.weight", w.n_embd);
        w.b = b.optional_vector_f32("token_embd_norm.bias", w.n_embd);
        w.eps = norm_impl<Norm>::eps(b.keys());
    }
    /// n floats (whole rows of n_embd) in place.
    static void apply(const weights& w, float* x, std::size_t n) noexcept {
        for (std::size_t r = 0; r + w.n_embd <= n; r += w.n_embd) norm_impl<Norm>::apply(x + r, w.w, w.b, x + r, w.n_embd, w.eps);
    }
};

/// BERT's embedding: the token's row plus token type 0's row of token_types.weight (llama.cpp
/// feeds every token as type 0; a file without the table adds nothing), then, once the
/// position policy has added its row, Norm with token_embd_norm.{weight,bias} (absent in
/// the file: no norm, as llama.cpp's bert graph). The sum is (token + type) + position, the
/// encoder's order.
template <class Norm = LayerNorm>
struct BertEmbedding {
    using axis = archetype::axis::embedding;
    static constexpr std::string_view name = "BertEmbedding";
    static std::string describe() {
        return "BertEmbedding<" + Norm::describe() + "> (+ token type 0, then token_embd_norm after the positions)";
    }
};
template <class Norm>
struct embedding_impl<BertEmbedding<Norm>> {
    struct weights {
        std::vector<float> type0; // row 0 of token_types.weight as floats (empty: no table)
        const float *w = nullptr, *b = nullptr; // token_embd_norm (null: none)
        float eps = 0.f;
        std::size_t n_embd = 0;
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::size_t E = w.n_embd = b.hparams().dims.n_embd;
        if (const auto* t = b.file().find_tensor("token_types.weight")) {
            const std::size_t rows = t->ne.size() >= 2 ? std::size_t(t->ne[1]) : 1;
            const auto table = b.lookup_matrix("token_types.weight", E, rows);
            w.type0.assign(E, 0.f);
            kernels::embedding_row(table, 0, w.type0.data());
        }
        if (b.file().find_tensor("token_embd_norm.weight")) {
            w.w = b.vector_f32("token_embd_norm.weight", E);
            // a bias only for a norm that has one: in the file of one that has none (LayerNormNoBias)
            // it stays unbound, and the tensor ledger refuses the file rather than drop it
            constexpr bool biased = [] {
                if constexpr (requires { Norm::has_bias; }) return bool(Norm::has_bias);
                else return true;
            }();
            if constexpr (biased) w.b = b.optional_vector_f32("token_embd_norm.bias", E);
            w.eps = norm_impl<Norm>::eps(b.keys());
        }
    }
    /// n floats (whole rows) in place: + token type 0.
    static void apply(const weights& w, float* x, std::size_t n) noexcept {
        if (w.type0.empty()) return;
        for (std::size_t r = 0; r + w.n_embd <= n; r += w.n_embd)
            for (std::size_t i = 0; i < w.n_embd; ++i) x[r + i] += w.type0[i];
    }
    /// After the position rows are added: the embedding norm.
    static void after_positions(const weights& w, float* x, std::size_t n) noexcept {
        if (!w.w) return;
        for (std::size_t r = 0; r + w.n_embd <= n; r += w.n_embd) norm_impl<Norm>::apply(x + r, w.w, w.b, x + r, w.n_embd, w.eps);
    }
};

} // namespace archetype
