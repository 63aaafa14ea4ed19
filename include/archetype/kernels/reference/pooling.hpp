#pragma once
// Scalar twins of kernels/pooling.hpp: pooling of a sequence's rows and
// embedding normalisation written as the formulas read, with double
// accumulators. Tests compare the working kernels with these.
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"

namespace archetype::kernels::reference {

/// y[c] = (1/n) sum_r x[r*ldx + c]
inline void mean_rows(const float* x, std::size_t ldx, std::size_t n_rows, std::size_t n_cols,
                      float* y) noexcept {
    for (std::size_t c = 0; c < n_cols; ++c) {
        double s = 0;
        for (std::size_t r = 0; r < n_rows; ++r) s += x[r * ldx + c];
        y[c] = float(s / double(n_rows));
    }
}

/// y[c] = max_r x[r*ldx + c]
inline void max_rows(const float* x, std::size_t ldx, std::size_t n_rows, std::size_t n_cols,
                     float* y) noexcept {
    for (std::size_t c = 0; c < n_cols; ++c) {
        float m = x[c];
        for (std::size_t r = 1; r < n_rows; ++r) m = x[r * ldx + c] > m ? x[r * ldx + c] : m;
        y[c] = m;
    }
}

/// llama.cpp's common_embd_normalize: -1 none, 0 max-abs to int16 range,
/// 1 taxicab, 2 euclidean, P > 2 p-norm; y = x / norm, zero when norm == 0.
inline void embd_normalize(const float* x, float* y, std::size_t n, int mode) {
    double s = 0;
    if (mode < -1) throw argument_error("embedding normalisation " + std::to_string(mode) + " is not -1, 0, 1, 2 or P > 2");
    if (mode == -1) {
        s = 1;
    } else if (mode == 0) {
        for (std::size_t i = 0; i < n; ++i) s = std::fmax(s, std::fabs(double(x[i])));
        s /= 32760.0;
    } else {
        for (std::size_t i = 0; i < n; ++i) s += std::pow(std::fabs(double(x[i])), double(mode));
        s = std::pow(s, 1.0 / double(mode));
    }
    const float inv = s > 0 ? float(1.0 / s) : 0.f;
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * inv;
}

} // namespace archetype::kernels::reference
