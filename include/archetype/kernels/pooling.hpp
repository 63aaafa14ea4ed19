#pragma once
// Pooling of a sequence's hidden rows into one vector, and embedding
// normalisation: the model-free part of sentence embeddings. The model picks
// which rows form a sequence; these see only a row-major block of floats.
// Scalar twins (double accumulators) live in kernels/reference/pooling.hpp.
//
// Normalisation follows llama.cpp's common_embd_normalize (`--embd-normalize`)
// exactly: -1 none, 0 max-abs scaled to the int16 range (x * 32760 / max|x|),
// 1 taxicab, 2 euclidean (float squares summed in double), P > 2 p-norm; a zero
// vector stays zero.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"

namespace archetype::kernels {

/// How rows are reduced to one vector.
enum class pool_op { mean, first, last, max };

inline std::string_view pool_op_name(pool_op op) noexcept {
    switch (op) {
    case pool_op::mean: return "mean";
    case pool_op::first: return "first";
    case pool_op::last: return "last";
    case pool_op::max: return "max";
    }
    return "?";
}

/// y[n_cols] = op over the n_rows rows of x (leading dimension ldx). n_rows >= 1.
/// Column-wise loops over contiguous rows: the compiler vectorises them and each
/// column sees the rows in order, so the result does not depend on threads.
inline void pool_rows(pool_op op, const float* x, std::size_t ldx, std::size_t n_rows, std::size_t n_cols,
                      float* y) {
    if (n_rows == 0) throw argument_error("pool_rows: a sequence of 0 rows has no " +
                                          std::string(pool_op_name(op)) + " pooling");
    switch (op) {
    case pool_op::first: std::memcpy(y, x, n_cols * sizeof(float)); return;
    case pool_op::last: std::memcpy(y, x + (n_rows - 1) * ldx, n_cols * sizeof(float)); return;
    case pool_op::mean: {
        // llama.cpp multiplies each row by the float 1/n and sums (a matmul with inp_mean).
        const float inv = 1.f / float(n_rows);
        for (std::size_t c = 0; c < n_cols; ++c) y[c] = x[c] * inv;
        for (std::size_t r = 1; r < n_rows; ++r) {
            const float* row = x + r * ldx;
            for (std::size_t c = 0; c < n_cols; ++c) y[c] += row[c] * inv;
        }
        return;
    }
    case pool_op::max: {
        std::memcpy(y, x, n_cols * sizeof(float));
        for (std::size_t r = 1; r < n_rows; ++r) {
            const float* row = x + r * ldx;
            for (std::size_t c = 0; c < n_cols; ++c) y[c] = std::max(y[c], row[c]);
        }
        return;
    }
    }
}

/// llama.cpp's --embd-normalize values.
namespace embd_norm_mode {
inline constexpr int none = -1, max_abs_int16 = 0, l1 = 1, l2 = 2;
}

/// The norm llama.cpp divides by (1 for mode -1). Throws for mode < -1.
inline double embd_norm_value(const float* x, std::size_t n, int mode) {
    double s = 0.0;
    switch (mode) {
    case -1: return 1.0;
    case 0:
        for (std::size_t i = 0; i < n; ++i) s = std::max(s, double(std::fabs(x[i])));
        return s / 32760.0;
    case 1:
        for (std::size_t i = 0; i < n; ++i) s += std::fabs(x[i]);
        return s;
    case 2:
        // As llama.cpp: the square is a float product, the sum a double.
        for (std::size_t i = 0; i < n; ++i) s += x[i] * x[i];
        return std::sqrt(s);
    default:
        if (mode < -1)
            throw argument_error("embedding normalisation " + std::to_string(mode) +
                                 " is not -1 (none), 0 (max-abs), 1 (L1), 2 (L2) or a p-norm P > 2");
        for (std::size_t i = 0; i < n; ++i) s += std::pow(double(std::fabs(x[i])), double(mode));
        return std::pow(s, 1.0 / double(mode));
    }
}

/// y[n] = x[n] / norm (mode as llama.cpp's --embd-normalize); y may alias x.
inline void embd_normalize(const float* x, float* y, std::size_t n, int mode) {
    const double s = embd_norm_value(x, n, mode);
    const float inv = s > 0.0 ? float(1.0 / s) : 0.f;
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * inv;
}

} // namespace archetype::kernels
