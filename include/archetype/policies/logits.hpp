#pragma once
// Logits axis: what is done to the output head's logits before they are returned.
//   PlainLogits (default)   as the head computes them
//   BlockSummedLogits       as computed, the head's GEMM summed in blocks (RWKV)
//   LogitMultiplier         logits * {arch}.logit_scale (Cohere / Command-R: the key
//                           multiplies; Granite's key of the same name divides, and is
//                           read by Granite's own multipliers)
// A logits_impl<P> specialisation has `weights` (what it read), a bind hook that reads
// its keys through the binder, and apply(weights, logits, count) over the rows of one pass;
// optionally `head_summed_in_blocks` (the output head's GEMM sums along K in blocks,
// kernels::gemm_sum::blocks; default false: gemm_sum::chain).
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct PlainLogits {
    using axis = archetype::axis::logits;
    static constexpr std::string_view name = "PlainLogits";
    static std::string describe() { return "as computed"; }
};

/// The logits as computed, with the output head's GEMM summed in blocks along K
/// (kernels::gemm_sum::blocks): a prompt's logits then carry the error of decoding its
/// tokens one at a time (the RWKV models' projections all sum so: layers/rwkv_weights.hpp).
struct BlockSummedLogits {
    using axis = archetype::axis::logits;
    static constexpr std::string_view name = "BlockSummedLogits";
    static std::string describe() { return "as computed, the head summed in blocks (a prompt as exact as decoding)"; }
};

struct LogitMultiplier {
    using axis = archetype::axis::logits;
    static constexpr std::string_view name = "LogitMultiplier";
    static std::string describe() { return "multiplied by {arch}.logit_scale"; }
};

template <>
struct logits_impl<PlainLogits> {
    struct weights {};
    static constexpr bool identity = true;
    template <class Binder>
    static void bind(Binder&, weights&) {}
    static void apply(const weights&, float*, std::size_t) noexcept {}
};

template <>
struct logits_impl<BlockSummedLogits> : logits_impl<PlainLogits> {
    static constexpr bool head_summed_in_blocks = true;
};

template <>
struct logits_impl<LogitMultiplier> {
    struct weights {
        float scale = 1.f;
    };
    static constexpr bool identity = false;
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::string key = b.prefix() + "logit_scale";
        if (!b.file().has(key)) return; // Cohere's converter always writes it; 1 when absent
        w.scale = b.file().template get<float>(key);
        if (!std::isfinite(w.scale) || !(w.scale > 0.f))
            throw format_error(key + " = " + std::to_string(w.scale) + " must be a finite positive number");
    }
    static void apply(const weights& w, float* logits, std::size_t n) noexcept {
        if (w.scale != 1.f)
            for (std::size_t i = 0; i < n; ++i) logits[i] *= w.scale;
    }
};

} // namespace archetype
