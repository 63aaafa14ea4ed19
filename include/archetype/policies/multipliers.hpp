#pragma once
// Multipliers read from the file, one policy per place they act (Granite's four keys
// are three of these plus the generic {arch}.attention.scale):
//   EmbeddingMultiplier      (embedding axis)  embedding rows times {arch}.embedding_scale
//   ResidualMultiplier<B>    (block axis)      block B with each sublayer's output times
//                                              {arch}.residual_scale before the residual add
//   LogitDivisor             (logits axis)     logits divided by {arch}.logit_scale (Granite;
//                                              Command-R's key of the same name multiplies:
//                                              LogitMultiplier, policies/logits.hpp)
// Each reads its own key in its bind hook: a finite positive number, 1 when absent; any
// other value is a format_error naming the key. A file with one of these keys and a
// model without the policy is refused by the key ledger (io/key_ledger.hpp).
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/block.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

namespace detail {
/// {arch}.<name> as a finite positive float, or 1 when the file does not have it.
template <class Binder>
float positive_key(Binder& b, const char* name) {
    const std::string key = b.prefix() + name;
    if (!b.file().has(key)) return 1.f;
    const float v = b.file().template get<float>(key);
    if (!std::isfinite(v) || !(v > 0.f))
        throw format_error(key + " = " + std::to_string(v) + " must be a finite positive number");
    return v;
}
} // namespace detail

struct EmbeddingMultiplier {
    using axis = archetype::axis::embedding;
    static constexpr std::string_view name = "EmbeddingMultiplier";
    static std::string describe() { return "EmbeddingMultiplier (x {arch}.embedding_scale)"; }
};
template <>
struct embedding_impl<EmbeddingMultiplier> {
    struct weights {
        float scale = 1.f;
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        w.scale = detail::positive_key(b, "embedding_scale");
    }
    static void apply(const weights& w, float* x, std::size_t n) noexcept {
        if (w.scale != 1.f)
            for (std::size_t i = 0; i < n; ++i) x[i] *= w.scale;
    }
};

template <class Block = SequentialBlock>
struct ResidualMultiplier {
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "ResidualMultiplier";
    static constexpr bool parallel = detail::block_is_parallel<Block>;
    static std::string describe() { return Block::describe() + ", each sublayer x {arch}.residual_scale"; }
};

template <class Block>
struct block_impl<ResidualMultiplier<Block>> {
    using inner = block_impl<Block>;
    struct weights : detail::block_weights<Block>::type {
        float scale = 1.f;
    };
    template <class D>
    static constexpr std::size_t norms_per_layer() {
        return inner::template norms_per_layer<D>();
    }
    template <class D, class Binder>
    static void bind(Binder& b, std::size_t il, const std::string& blk, weights& w, float eps) {
        inner::template bind<D>(b, il, blk, w, eps);
        w.scale = detail::positive_key(b, "residual_scale");
    }
    /// The sublayers of the inner block, with the residual adds scaled.
    template <class S>
    struct scaled : S {
        float scale;
        void add(float* x, const float* y) noexcept {
            if (scale == 1.f) return S::add(x, y);
            const std::size_t m = S::rows() * S::width();
            for (std::size_t i = 0; i < m; ++i) x[i] += scale * y[i];
        }
        void add2(float* x, const float* y, const float* z) noexcept {
            if (scale == 1.f) return S::add2(x, y, z);
            const std::size_t m = S::rows() * S::width();
            for (std::size_t i = 0; i < m; ++i) x[i] += scale * (y[i] + z[i]);
        }
    };
    template <class D, class S>
    static void forward(S& s, const weights& w) {
        scaled<S> ss{s, w.scale}; // a copy of the handle: the buffers are the session's
        inner::template forward<D>(ss, w);
    }
};

struct LogitDivisor {
    using axis = archetype::axis::logits;
    static constexpr std::string_view name = "LogitDivisor";
    static std::string describe() { return "divided by {arch}.logit_scale"; }
};
template <>
struct logits_impl<LogitDivisor> {
    struct weights {
        float scale = 1.f;
    };
    static constexpr bool identity = false;
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        w.scale = detail::positive_key(b, "logit_scale");
    }
    static void apply(const weights& w, float* logits, std::size_t n) noexcept {
        if (w.scale != 1.f)
            for (std::size_t i = 0; i < n; ++i) logits[i] /= w.scale;
    }
};

} // namespace archetype
