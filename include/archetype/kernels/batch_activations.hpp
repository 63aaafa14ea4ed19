#pragma once
// How kernels::matmul multiplies a block-quantised weight by a batch of tokens
// (n_tok >= quant::panels::min_tokens: a prefill chunk, an encoder batch):
//   exact: float activations against dequantised panels of the weight (quant/panels.hpp):
//          the exact model's products to float rounding. The default.
//   int8:  the activations rounded to int8 per block first, exactly as llama.cpp's CPU
//          backend does for every product (the same int8 kernels a decode step uses),
//          so a batch gets llama.cpp's numerics and the integer kernels' speed:
//          on AVX-512 VNNI, `archetype perplexity` over GPL-3 at --ctx 512 runs
//          2.3-2.9x faster than with exact on Gemma 3 Q4_K_M and SmolLM2 Q4_1
//          (docs/real-models.md). At AVX2 and AVX-VNNI a batch runs on the int8 GEMM
//          tile (quant/avx2/tile.hpp): 1.4-3.6x faster than exact on TinyLlama-shape
//          Q4_0 / Q8_0 / Q4_K_M (docs/weights.md, session 24); on NEON the int8 kernels
//          are the row engine's GEMVs (unmeasured). Its distance to the exact model is llama.cpp's
//          (mean truncated KL ~1e-3 where exact has ~1e-5).
// A decode step (fewer tokens) takes the int8 kernels either way; F32, F16 and BF16
// weights have one path, and so has AWQ4 (float activations in every mode: AWQ's numerics,
// quant/awq4_gemv.hpp). The mode is a property of the calling thread, set for a
// scope (a session sets it around each forward pass from its options): matmul reads
// it on the thread that calls it, before any work goes to the pool.
namespace archetype::kernels {

enum class batch_activations : unsigned char { exact, int8 };

namespace detail {
inline thread_local batch_activations batch_activations_now = batch_activations::exact;
} // namespace detail

/// The mode matmul calls on this thread use.
inline batch_activations current_batch_activations() noexcept { return detail::batch_activations_now; }

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
