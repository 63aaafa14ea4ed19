#pragma once
// GEMM against weights packed once, for encoders: C[M x N] = A[M x K] * W^T
// with W [N x K] (F32, F16 or BF16 rows) converted at load into the packed
// engine's B layout of blas.hpp (per KC slab of K, NR-column panels of
// kc x NR floats, k-major, zero padded).
//
// Why: an encoder runs the same few matrices over every batch in chunks of a
// few hundred rows, and kernels::gemm_nt re-packs (and for F16 re-converts)
// the whole weight matrix on every call: about a fifth of the GEMM time at
// MiniLM shapes with 256-row chunks. Packed once, the micro-kernel reads the
// panels straight from memory. The price is memory: the packed copy is F32
// (twice the file's size for F16 weights).
//
// The arithmetic is blas.hpp's micro-kernel; every output element sees one
// instruction sequence (the same K slabs in the same order) whatever the
// thread count and the row range it falls in.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/compiled.hpp"
#include "archetype/kernels/matmul.hpp"

namespace archetype::kernels {

namespace detail {
#ifndef ARCHETYPE_ENCODER_GEMM_KC
#define ARCHETYPE_ENCODER_GEMM_KC 256
#endif
#ifndef ARCHETYPE_ENCODER_GEMM_NCP
#define ARCHETYPE_ENCODER_GEMM_NCP 12
#endif
#ifndef ARCHETYPE_ENCODER_GEMM_MCP
#define ARCHETYPE_ENCODER_GEMM_MCP 12
#endif
inline constexpr std::size_t enc_kc = ARCHETYPE_ENCODER_GEMM_KC;
inline constexpr std::size_t enc_nc_panels = ARCHETYPE_ENCODER_GEMM_NCP;
inline constexpr std::size_t enc_mc = MR * ARCHETYPE_ENCODER_GEMM_MCP;
} // namespace detail

/// A weight matrix [rows x cols] packed for gemm_prepacked.
class prepacked_weights {
public:
    prepacked_weights() = default;
    /// Packs w (F32, F16 or BF16); other types leave it empty (packable(w) false).
    explicit prepacked_weights(const weight_view& w) {
        if (!packable(w)) return;
        rows_ = w.rows;
        cols_ = w.cols;
        const std::size_t panels = n_panels();
        float* dst = buf_.get(panels * detail::NR * cols_);
        auto pack = [&](const auto* B) {
            for (std::size_t pc = 0; pc < cols_; pc += detail::enc_kc)
                detail::pack_b(B, cols_, 0, rows_, pc, std::min(detail::enc_kc, cols_ - pc), 0, panels,
                               dst + panels * detail::NR * pc);
        };
        if (w.type == ggml_type::F32) pack(static_cast<const float*>(w.data));
        else if (w.type == ggml_type::F16) pack(static_cast<const std::uint16_t*>(w.data));
        else pack(static_cast<const bf16_t*>(w.data));
    }
    static bool packable(const weight_view& w) noexcept {
        return (w.type == ggml_type::F32 || w.type == ggml_type::F16 || w.type == ggml_type::BF16) && w.rows > 0 &&
               w.cols > 0;
    }

    bool empty() const noexcept { return rows_ == 0; }
    std::size_t rows() const noexcept { return rows_; }
    std::size_t cols() const noexcept { return cols_; }
    std::size_t n_panels() const noexcept { return (rows_ + detail::NR - 1) / detail::NR; }
    /// Panel p of the slab starting at column pc (kc x NR floats).
    const float* panel(std::size_t pc, std::size_t p) const noexcept {
        return buf_.p.get() + n_panels() * detail::NR * pc + p * detail::NR * std::min(detail::enc_kc, cols_ - pc);
    }
    /// Bytes held.
    std::size_t bytes() const noexcept { return n_panels() * detail::NR * cols_ * sizeof(float); }

private:
    std::size_t rows_ = 0, cols_ = 0;
    detail::scratch buf_;
};

namespace detail {
/// Rows [i0, i1) x panels [pb, pe) of C = A * B^T. Blocks of enc_nc_panels
/// panels outermost, so one block's slab of B (kc x 384 floats, 384 KB) stays
/// in L2 while all row blocks use it; then MC-row blocks of A packed to L2; one
/// B panel (kc x NR) in L1 across the MR-row micro-tiles.
inline void gemm_prepacked_block(const float* A, std::size_t lda, const prepacked_weights& B, float* C,
                                 std::size_t ldc, std::size_t i0, std::size_t i1, std::size_t pb,
                                 std::size_t pe) {
    static thread_local scratch a_buf;
    const std::size_t K = B.cols(), N = B.rows();
    float* Ap = a_buf.get(enc_mc * enc_kc);
    for (std::size_t jb = pb; jb < pe; jb += enc_nc_panels) {
        const std::size_t je = std::min(pe, jb + enc_nc_panels);
        for (std::size_t ic = i0; ic < i1; ic += enc_mc) {
            const std::size_t mc = std::min(enc_mc, i1 - ic);
            for (std::size_t pc = 0; pc < K; pc += enc_kc) {
                const std::size_t kc = std::min(enc_kc, K - pc);
                pack_a(A, lda, ic, mc, pc, kc, Ap);
                for (std::size_t p = jb; p < je; ++p) {
                    const std::size_t jr = p * NR, nr = std::min(NR, N - jr);
                    const float* Bp = B.panel(pc, p);
                    for (std::size_t ir = 0; ir < mc; ir += MR)
                        micro_kernel(kc, Ap + ir * kc, Bp, C + (ic + ir) * ldc + jr, ldc, std::min(MR, mc - ir), nr,
                                     pc > 0);
                }
            }
        }
    }
}
} // namespace detail

/// C[M x N] = A[M x K] * B^T, B packed (N = B.rows(), K = B.cols()). With a
/// pool, threads split whole MR-row panels (or NR-column panels when M has too
/// few), so results do not depend on the thread count.
ARCHETYPE_KERNEL_ENTRY void gemm_prepacked(const float* A, std::size_t lda, const prepacked_weights& B, float* C,
                                           std::size_t ldc, std::size_t M, thread_pool* pool = nullptr);
#if ARCHETYPE_KERNEL_BODIES
ARCHETYPE_KERNEL_ENTRY void gemm_prepacked(const float* A, std::size_t lda, const prepacked_weights& B, float* C,
                                           std::size_t ldc, std::size_t M, thread_pool* pool) {
    using detail::MR;
    if (M == 0 || B.empty()) return;
    const std::size_t m_panels = (M + MR - 1) / MR, n_panels = B.n_panels();
    const std::size_t threads = pool ? pool->size() : 1;
    if (threads == 1) {
        detail::gemm_prepacked_block(A, lda, B, C, ldc, 0, M, 0, n_panels);
    } else if (m_panels >= 4 * threads) {
        pool->parallel_for(m_panels, [&](std::size_t b, std::size_t e) {
            detail::gemm_prepacked_block(A, lda, B, C, ldc, b * MR, std::min(e * MR, M), 0, n_panels);
        });
    } else {
        pool->parallel_for(n_panels, [&](std::size_t b, std::size_t e) {
            detail::gemm_prepacked_block(A, lda, B, C, ldc, 0, M, b, e);
        });
    }
}
#endif

} // namespace archetype::kernels
