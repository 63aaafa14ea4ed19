#pragma once
// Batch-invariant rows: while this thread's mode is on, kernels::matmul gives every row of
// a batch bitwise what that row alone (n_tok = 1) gives, whatever the batch's size. A
// serving scheduler needs it for decode steps (runtime/serving/scheduler.hpp): otherwise a
// request's tokens would depend on which other requests share its batch, since a batch of
// quant::panels::min_tokens rows or more takes the float panels (quant/panels.hpp) and an
// F32 / F16 batch the GEMM, whose sums differ from the single-row kernels' in rounding.
//
// With the mode on (kernels/matmul.hpp):
//   - a block-quantised weight with an AVX-512 VNNI kernel (quant/avx512/engine.hpp) skips
//     the panels: that engine's batch path has the same integer sums and float chain as its
//     single-token path (its header), so the batch is one call;
//   - every other weight (F32, F16, BF16, and quantised types on other CPUs) runs row by
//     row through the single-row kernels: the same results, the weight read once per row.
// The mode is a property of the calling thread, set for a scope (decoder_session sets it
// around decode when its options ask for it), read before any work goes to the pool.
namespace archetype::kernels {

namespace detail {
inline thread_local bool decode_rows_invariant_now = false;
} // namespace detail

/// Whether matmul calls on this thread keep every row bitwise its single-row result.
inline bool decode_rows_invariant() noexcept { return detail::decode_rows_invariant_now; }

/// Sets this thread's mode for the scope's lifetime (restores the previous one).
class decode_rows_invariant_scope {
public:
    explicit decode_rows_invariant_scope(bool on) noexcept : prev_(detail::decode_rows_invariant_now) {
        detail::decode_rows_invariant_now = on;
    }
    ~decode_rows_invariant_scope() { detail::decode_rows_invariant_now = prev_; }
    decode_rows_invariant_scope(const decode_rows_invariant_scope&) = delete;
    decode_rows_invariant_scope& operator=(const decode_rows_invariant_scope&) = delete;

private:
    bool prev_;
};

} // namespace archetype::kernels
