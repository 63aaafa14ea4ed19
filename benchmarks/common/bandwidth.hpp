#pragma once
// The machine's read bandwidth as the benchmarks measure it: the sum of a
// 1 GiB float array (far larger than any cache) over 2 threads, median of 5.
// Bandwidth-bound kernels (decode GEMVs) report their speed as a fraction of it;
// it swings a lot on a shared machine, so measure it next to the runs it judges.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include "archetype/core/thread_pool.hpp"

namespace archetype::bench {

inline double read_bandwidth_gbs(thread_pool& pool, std::size_t bytes = std::size_t(1) << 30, int reps = 5) {
    using clk = std::chrono::steady_clock;
    const std::size_t n = bytes / sizeof(float), parts = pool.size() ? pool.size() : 1;
    std::vector<float> a(n);
    pool.parallel_for(n, [&](std::size_t b, std::size_t e) { std::fill(a.data() + b, a.data() + e, 1.f); });
    std::vector<double> times;
    std::vector<float> part(parts);
    float sink = 0.f;
    for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = clk::now();
        pool.parallel_for(parts, [&](std::size_t b, std::size_t e) {
            for (std::size_t p = b; p < e; ++p) {
                const float* x = a.data() + n / parts * p;
                float s[16] = {};
                for (std::size_t i = 0; i + 16 <= n / parts; i += 16)
                    for (std::size_t j = 0; j < 16; ++j) s[j] += x[i + j];
                float t = 0.f;
                for (float v : s) t += v;
                part[p] = t;
            }
        });
        times.push_back(std::chrono::duration<double>(clk::now() - t0).count());
        for (float v : part) sink += v;
    }
    std::sort(times.begin(), times.end());
    if (sink == 42.f) times[0] += 0; // keep the sums alive
    return double(n * sizeof(float)) / times[times.size() / 2] / 1e9;
}

} // namespace archetype::bench
