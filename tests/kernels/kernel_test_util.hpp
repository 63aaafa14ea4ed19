#pragma once
// Shared helpers for the kernel tests: seeded random data and the NMSE measure.
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace kt {

inline const std::size_t sizes[] = {1, 7, 63, 64, 65, 1000, 4097};

inline std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(g);
    return v;
}

/// sum (a - b)^2 / sum b^2 (b is the reference); 0 when both are zero.
inline double nmse(const float* a, const float* b, std::size_t n) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) {
        num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        den += double(b[i]) * b[i];
    }
    return den == 0 ? num : num / den;
}
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
    return nmse(a.data(), b.data(), std::min(a.size(), b.size()));
}

inline double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a[i]) - b[i]) / std::max(1e-30, std::abs(double(b[i])));
        m = std::max(m, d);
    }
    return m;
}

} // namespace kt
