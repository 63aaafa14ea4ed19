#pragma once
// Embedding axis: what is done to a token's embedding row before the first
// layer. Gemma multiplies it by sqrt(n_embd) (its embeddings are tied to the
// output head, so they are stored at the output's scale): ScaledEmbedding, named by the
// gemma presets. No key says it: a Decoder<...> loaded without an entry must agree with the
// preset registered for the file's architecture (load_model, models/decoder_model.hpp).
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/policy.hpp"
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

} // namespace archetype
