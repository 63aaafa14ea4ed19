#pragma once
// How kernels::matmul multiplies a block-quantised weight by a batch of tokens
// (n_tok >= quant::panels::min_tokens: a prefill chunk, an encoder batch):
//   exact: float activations against dequantised panels of the weight (quant/panels.hpp):
//          the exact model's products to float rounding.
//   int8:  the activations rounded to int8 per block first, exactly as llama.cpp's CPU
//          backend does for every product (the same int8 kernels a decode step uses),
//          so a batch gets llama.cpp's numerics and the integer kernels' speed. At AVX-512,
//          AVX2 and AVX-VNNI a batch runs on the int8 GEMM tiles (quant/avx512/tile.hpp,
//          quant/avx2/tile.hpp): 1.4-3.8x faster than exact (docs/weights.md). Its distance
//          to the exact model is llama.cpp's (mean truncated KL ~1e-3 where exact has ~1e-5).
//   int8x2: each product twice through the int8 kernels, on the activations and on their
//          int8 rounding error (quant/int8/activation_residual.hpp), the two results added:
//          about 15-bit activations (the exact model's products to ~1e-5) for twice the
//          int8 work, still faster than the float panels where int8 products run 2-4x
//          the float rate.
//   mixed: int8 for every product except those whose input a layer marks heavy-tailed
//          (heavy_tailed_input below: the FFN's down projection, whose input is the gated
//          product), which run int8x2. The default of a decoder session. Why: per-block
//          int8 rounding loses most where one large value sets a block's scale for 31
//          small ones, and the down projection's input is where that happens (LLM.int8's
//          outlier features).
// A decode step (fewer tokens) takes the int8 kernels either way; F32, F16 and BF16
// weights have one path, and so has AWQ4 (float activations in every mode: AWQ's numerics,
// quant/awq4_gemv.hpp). The mode is a property of the calling thread, set for a
// scope (a session sets it around each forward pass from its options): matmul reads
// it on the thread that calls it, before any work goes to the pool. A thread that never
// set one (an encoder or RWKV session) runs exact.
namespace archetype::kernels {

enum class batch_activations : unsigned char { exact, int8, mixed, int8x2 };

namespace detail {
inline thread_local batch_activations batch_activations_now = batch_activations::exact;
} // namespace detail

/// The mode matmul calls on this thread use.
inline batch_activations current_batch_activations() noexcept { return detail::batch_activations_now; }

/// The mode for a product whose input is heavy-tailed (a few values far above the rest of
/// their block): mixed runs it int8x2, the other modes are unchanged.
constexpr batch_activations for_heavy_tailed_input(batch_activations m) noexcept {
    return m == batch_activations::mixed ? batch_activations::int8x2 : m;
}

/// Sets this thread's mode for the scope's lifetime (restores the previous one).
class batch_activations_scope {
public:
    explicit batch_activations_scope(batch_activations m) noexcept : prev_(detail::batch_activations_now) {
        detail::batch_activations_now = m;
    }
    ~batch_activations_scope() { detail::batch_activations_now = prev_; }
    batch_activations_scope(const batch_activations_scope&) = delete;
    batch_activations_scope& operator=(const batch_activations_scope&) = delete;

private:
    batch_activations prev_;
};

} // namespace archetype::kernels
