#pragma once
// y = x * W^T for a weight matrix in any storage type: the one entry point the
// layers use for every linear projection. W has `rows` output features, each a
// contiguous row of `cols` input features encoded in `type` (GGUF order:
// ne[0] = cols, ne[1] = rows). x is [n_tok x cols] (leading dim ldx), y is
// [n_tok x rows] (leading dim ldy). Works on the stored blocks: no dequantised
// copy of the matrix is ever made (batches dequantise one panel of rows at a time).
//
// Dispatch on W.type:
//   F32              kernels::gemv (n_tok = 1) / kernels::gemm_nt (blas.hpp)
//   F16              kernels::gemv_f16 / gemm_nt_f16 (blas.hpp, converted in registers)
//   BF16             quant/half_matmul.hpp (AVX-512), else the generic path
//   Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K Q2_K Q3_K IQ4_NL IQ4_XS MXFP4
//                    n_tok >= quant::panels::min_tokens: quant/panels.hpp (panels of
//                    dequantised rows through the F32 GEMM: float activations, the
//                    exact model's products to float rounding), unless this thread's
//                    batch_activations mode is int8 (batch_activations.hpp), or int8x2:
//                    the int8 kernels twice, on x and on its int8 rounding error;
//                    fewer tokens, or the int8 mode: quant/avx512/engine.hpp (activations quantised to int8 once
//                    per call, vpdpbusd on the blocks; AVX-512 VNNI), else the int8
//                    row engine (quant/int8/: the same int8 numerics; avx2/ with
//                    vpmaddubsw on AVX2 + FMA + F16C, neon/ with sdot or smull on
//                    aarch64), else quant/generic.hpp
//   AWQ4             (AutoAWQ's int4 groups, repacked at load: io/hf_awq.hpp) float activations
//                    in every mode (AWQ's W4A16 numerics): n_tok >= min_tokens the panels,
//                    fewer tokens (or decode_rows_invariant) quant/awq4_gemv.hpp
//   Q4_0 / Q8_0, layout q4_0_x16 / q8_0_x16 (16-row interleaved,
//                    quant/interleaved.hpp; made by the decoder loader): the same
//                    panels, else quant/avx512/engine.hpp's x16 kernels; bitwise the row
//                    layout's results
// Work is split by output rows, so results do not depend on the thread count.
// With this thread's decode_rows_invariant mode on (decode_rows.hpp), every row of a
// batch is bitwise its single-row result: no panels, and the weights without a
// batch-invariant batch kernel run row by row.
// `sum` chooses how the F32 / F16 (and AVX-512 BF16) GEMM sums along K
// (kernels::gemm_sum); GEMV and the other kernels have one order each.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/batch_activations.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/decode_rows.hpp"
#include "archetype/kernels/compiled.hpp"
#include "archetype/kernels/quant/awq4_gemv.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/generic.hpp"
#include "archetype/kernels/quant/half_matmul.hpp"
#include "archetype/kernels/quant/int8/activation_residual.hpp"
#include "archetype/kernels/quant/int8/level_engine.hpp"
#include "archetype/kernels/quant/interleaved.hpp"
#include "archetype/kernels/quant/panels.hpp"
#include "archetype/kernels/quant/avx512/engine.hpp"

namespace archetype::kernels {

class prepacked_weights; // kernels/encoder_gemm.hpp

struct weight_view {
    ggml_type type = ggml_type::F32;
    const void* data = nullptr;
    std::size_t rows = 0; // output features (ne[1])
    std::size_t cols = 0; // input features (ne[0]), a multiple of the type's block size
    /// Order of the blocks in memory: the file's rows, or (Q4_0, Q8_0) 16-row
    /// interleaved groups of the same total size (quant/interleaved.hpp), which only
    /// matmul reads.
    quant::weight_layout layout = quant::weight_layout::rows;
    /// The matrix packed into the GEMM panels of kernels/encoder_gemm.hpp (owned by the
    /// model), or null: with panels every product, of any row count, runs gemm_prepacked
    /// (an encoder's projections: what its passes of many rows gain, and its summation order).
    const prepacked_weights* panels = nullptr;
    /// bytes of one stored row (of the row layout; the x16 layout has the same total)
    std::size_t row_bytes() const noexcept {
        const auto t = traits_of(type);
        return cols / t.block_size * t.type_size;
    }
    /// Row r's bytes: the row layout only (an interleaved matrix has no contiguous rows).
    const std::byte* row(std::size_t r) const noexcept {
        return static_cast<const std::byte*>(data) + r * row_bytes();
    }
};

/// Whether this build has kernels for the x16 layouts (Q4_0, Q8_0; AVX-512 VNNI,
/// VBMI, GFNI); loaders repack only then.
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
inline constexpr bool has_x16 = true;
#else
inline constexpr bool has_x16 = false;
#endif

/// The x16 layout a matrix of this type can take (rows when it has none).
inline constexpr quant::weight_layout x16_layout_for(ggml_type t) noexcept {
    return t == ggml_type::Q4_0   ? quant::weight_layout::q4_0_x16
           : t == ggml_type::Q8_0 ? quant::weight_layout::q8_0_x16
                                  : quant::weight_layout::rows;
}

namespace detail {
inline void check_matmul_weight(const weight_view& W) {
    if (W.layout != quant::weight_layout::rows) {
        const auto& G = quant::x16::of(W.layout);
        if (x16_layout_for(W.type) != W.layout || !quant::x16::fits(W.rows, W.cols))
            throw argument_error(std::string("matmul: the ") + G.name + " layout needs a " + G.type_name +
                                 " matrix with rows a multiple of 16, got " + std::string(type_name(W.type)) + " " +
                                 std::to_string(W.rows) + " x " + std::to_string(W.cols));
        if (!has_x16)
            throw argument_error(std::string("matmul: this build has no kernel for the ") + G.name +
                                 " layout (AVX-512 VNNI, VBMI and GFNI)");
        return;
    }
    if (!quant::is_supported(W.type))
        throw argument_error("matmul: weight type " + std::string(type_name(W.type)) + " is not supported");
    const std::size_t bs = traits_of(W.type).block_size;
    if (W.cols % bs != 0)
        throw argument_error("matmul: " + std::to_string(W.cols) + " columns is not a multiple of the " +
                             std::string(type_name(W.type)) + " block size " + std::to_string(bs));
}
/// Whether a batch of this weight has a kernel whose rows are bitwise its single-row
/// results (decode_rows.hpp): the AVX-512 VNNI engine's block types.
inline bool batch_rows_invariant(const weight_view& W) noexcept {
#if defined(ARCHETYPE_QUANT_VNNI)
    if (W.layout != quant::weight_layout::rows) return true; // the x16 layouts: VNNI kernels only
    switch (W.type) {
    case ggml_type::Q8_0: case ggml_type::Q4_0: case ggml_type::Q4_1: case ggml_type::Q5_0: case ggml_type::Q5_1:
    case ggml_type::Q4_K: case ggml_type::Q5_K: case ggml_type::Q6_K: case ggml_type::Q2_K: case ggml_type::Q3_K:
    case ggml_type::IQ4_NL: case ggml_type::IQ4_XS: case ggml_type::MXFP4: return true;
    default: return false;
    }
#else
    (void)W;
    return false;
#endif
}
} // namespace detail

/// y = x * W^T (the header's first comment). The entry points here are inline, or
/// defined once in the kernel library (compiled.hpp).
ARCHETYPE_KERNEL_ENTRY void matmul(const weight_view& W, const float* x, std::size_t ldx, std::size_t n_tok,
                                   float* y, std::size_t ldy, thread_pool* pool = nullptr,
                                   gemm_sum sum = gemm_sum::chain);

/// One product of matmul_batch: y = x * W^T with x [n_tok x W.cols] (leading
/// dim ldx) and y [n_tok x W.rows] (leading dim ldy).
struct matmul_task {
    const weight_view* W;
    const float* x;
    std::size_t ldx;
    float* y;
    std::size_t ldy;
};

/// Independent products over the same n_tok rows. One token with every weight
/// F16 (or every weight F32) runs them all in one dispatch (detail::gemv_many), and
/// so does one token through one quantised type, width and x (vnni::gemv_many,
/// int8::gemv_parts):
/// a decode step has several small projections of one input size (RWKV's
/// r/k/v/g), and each separate dispatch pays a fork-join and a cold start of
/// the weight stream. Otherwise, one matmul per task. Either way each output
/// is bitwise what matmul gives.
ARCHETYPE_KERNEL_ENTRY void matmul_batch(std::span<const matmul_task> tasks, std::size_t n_tok,
                                         thread_pool* pool = nullptr, gemm_sum sum = gemm_sum::chain);

#if ARCHETYPE_KERNEL_BODIES
namespace detail {
/// The int8x2 batch mode (batch_activations.hpp): W x through the int8 kernels plus W r,
/// r the rounding error of x's int8 activations (quant/int8/activation_residual.hpp),
/// also through them: two int8 products whose sum has about 15-bit activations.
inline void matmul_int8x2(const weight_view& W, const float* x, std::size_t ldx, std::size_t n_tok, float* y,
                          std::size_t ldy, thread_pool* pool, gemm_sum sum) {
    thread_local std::vector<float> r, yr; // per thread: the calling thread's scratch, reused
    if (r.size() < n_tok * W.cols) r.resize(n_tok * W.cols);
    if (yr.size() < n_tok * W.rows) yr.resize(n_tok * W.rows);
    quant::int8::activation_residual(W.type, x, ldx, n_tok, W.cols, r.data(), pool);
    const batch_activations_scope int8(batch_activations::int8);
    matmul(W, x, ldx, n_tok, y, ldy, pool, sum);
    matmul(W, r.data(), W.cols, n_tok, yr.data(), W.rows, pool, sum);
    for (std::size_t t = 0; t < n_tok; ++t)
        for (std::size_t i = 0; i < W.rows; ++i) y[t * ldy + i] += yr[t * W.rows + i];
}
} // namespace detail

ARCHETYPE_KERNEL_ENTRY void gemm_prepacked(const float* A, std::size_t lda, const prepacked_weights& B, float* C,
                                           std::size_t ldc, std::size_t M, thread_pool* pool);
ARCHETYPE_KERNEL_ENTRY void matmul(const weight_view& W, const float* x, std::size_t ldx, std::size_t n_tok,
                                   float* y, std::size_t ldy, thread_pool* pool, gemm_sum sum) {
    detail::check_matmul_weight(W);
    if (W.rows == 0 || n_tok == 0) return;
    if (W.panels) return gemm_prepacked(x, ldx, *W.panels, y, ldy, n_tok, pool);
    const bool invariant = decode_rows_invariant();
    if (W.type == ggml_type::AWQ4) { // float activations whatever the batch mode (the header's table)
        if (n_tok >= quant::panels::min_tokens && !invariant)
            quant::panels::matmul(W.type, W.layout, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool, sum);
        else
            quant::awq4::matmul(W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool); // rows batch-invariant
        return;
    }
    if (invariant && n_tok > 1 && !detail::batch_rows_invariant(W)) { // row by row (decode_rows.hpp)
        for (std::size_t t = 0; t < n_tok; ++t) matmul(W, x + t * ldx, ldx, 1, y + t * ldy, ldy, pool, sum);
        return;
    }
    switch (W.type) {
    case ggml_type::F32: {
        const auto* w = static_cast<const float*>(W.data);
        if (n_tok == 1) gemv(w, W.cols, x, y, W.rows, W.cols, pool);
        else gemm_nt(x, ldx, w, W.cols, y, ldy, n_tok, W.rows, W.cols, pool, false, sum);
        return;
    }
    case ggml_type::F16: {
        const auto* w = static_cast<const std::uint16_t*>(W.data);
        if (n_tok == 1) gemv_f16(w, W.cols, x, y, W.rows, W.cols, pool);
        else gemm_nt_f16(x, ldx, w, W.cols, y, ldy, n_tok, W.rows, W.cols, pool, false, sum);
        return;
    }
    case ggml_type::BF16:
#if defined(ARCHETYPE_QUANT_HALF_AVX512)
        quant::half_avx512::matmul(true, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool, sum);
        return;
#else
        break;
#endif
    default:
        if (n_tok >= quant::panels::min_tokens && traits_of(W.type).block_size > 1 && !invariant) {
            if (current_batch_activations() == batch_activations::exact) {
                quant::panels::matmul(W.type, W.layout, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool, sum);
                return;
            }
            if (current_batch_activations() == batch_activations::int8x2 && quant::int8::handles(W.type)) {
                detail::matmul_int8x2(W, x, ldx, n_tok, y, ldy, pool, sum);
                return;
            }
        }
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
        if (W.layout != quant::weight_layout::rows) {
            quant::vnni::matmul_x16(W.layout, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool);
            return;
        }
#endif
#if defined(ARCHETYPE_QUANT_VNNI)
        if (quant::vnni::matmul(W.type, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool)) return;
#endif
#if defined(ARCHETYPE_QUANT_INT8)
        if (W.layout == quant::weight_layout::rows &&
            quant::int8::matmul<quant::int8::level_engine>(W.type, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool))
            return;
#endif
        break;
    }
    quant::generic::matmul(W.type, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool);
}

ARCHETYPE_KERNEL_ENTRY void matmul_batch(std::span<const matmul_task> tasks, std::size_t n_tok,
                                         thread_pool* pool, gemm_sum sum) {
    bool fuse = n_tok == 1 && !tasks.empty();
    for (const auto& t : tasks) {
        detail::check_matmul_weight(*t.W);
        fuse = fuse && t.W->type == tasks[0].W->type && t.W->layout == tasks[0].W->layout &&
               t.W->type != ggml_type::AWQ4 && // its own kernel, one product at a time
               !t.W->panels;                   // packed: gemm_prepacked, through matmul
    }
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
    // One block type, one width, one x (a decode step's q/k/v or gate/up): the
    // quantised single-token kernel takes all matrices in one dispatch, quantising
    // x once.
    if (fuse && tasks.size() <= 8 && traits_of(tasks[0].W->type).block_size > 1) {
        bool same_x = true;
        quant::vnni::detail::gemv_part parts[8];
        for (std::size_t i = 0; i < tasks.size(); ++i) {
            same_x = same_x && tasks[i].x == tasks[0].x && tasks[i].W->cols == tasks[0].W->cols;
            parts[i] = {static_cast<const std::uint8_t*>(tasks[i].W->data), tasks[i].W->rows, tasks[i].y};
        }
        if (same_x && tasks[0].W->layout != quant::weight_layout::rows) {
            quant::vnni::gemv_many_x16(tasks[0].W->layout, parts, tasks.size(), tasks[0].W->cols, tasks[0].x, pool);
            return;
        }
        if (same_x && quant::vnni::gemv_many(tasks[0].W->type, parts, tasks.size(), tasks[0].W->cols, tasks[0].x, pool))
            return;
    }
#elif defined(ARCHETYPE_QUANT_INT8)
    // The same with the int8 row engine: one dispatch, x quantised once (quant/int8/).
    if (fuse && tasks.size() <= 8 && tasks[0].W->layout == quant::weight_layout::rows &&
        traits_of(tasks[0].W->type).block_size > 1) {
        bool same_x = true;
        quant::int8::gemv_part parts[8];
        for (std::size_t i = 0; i < tasks.size(); ++i) {
            same_x = same_x && tasks[i].x == tasks[0].x && tasks[i].W->cols == tasks[0].W->cols;
            parts[i] = {static_cast<const std::uint8_t*>(tasks[i].W->data), tasks[i].W->rows, tasks[i].y, tasks[i].ldy};
        }
        if (same_x && quant::int8::gemv_parts<quant::int8::level_engine>(tasks[0].W->type, parts, tasks.size(),
                                                                          tasks[0].W->cols, tasks[0].x, tasks[0].ldx, 1, pool))
            return;
    }
#endif
    fuse = fuse && (tasks[0].W->type == ggml_type::F16 || tasks[0].W->type == ggml_type::F32);
    if (!fuse) {
        for (const auto& t : tasks) matmul(*t.W, t.x, t.ldx, n_tok, t.y, t.ldy, pool, sum);
        return;
    }
    auto run = [&](auto tag) {
        using TB = decltype(tag);
        constexpr std::size_t max_inline = 8;
        detail::gemv_job<TB> inline_jobs[max_inline];
        std::vector<detail::gemv_job<TB>> heap_jobs;
        detail::gemv_job<TB>* jobs = inline_jobs;
        if (tasks.size() > max_inline) {
            heap_jobs.resize(tasks.size());
            jobs = heap_jobs.data();
        }
        std::size_t n = 0;
        for (const auto& t : tasks)
            if (t.W->rows != 0)
                jobs[n++] = {static_cast<const TB*>(t.W->data), t.W->cols, t.W->rows, t.W->cols, t.x, t.y};
        detail::gemv_many<TB>(jobs, n, pool);
    };
    if (tasks[0].W->type == ggml_type::F16) run(std::uint16_t{});
    else run(float{});
}

#endif

} // namespace archetype::kernels

// gemm_prepacked's definition (matmul calls it for a weight_view with panels)
#include "archetype/kernels/encoder_gemm.hpp"
