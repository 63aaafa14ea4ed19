#pragma once
// The machine's read bandwidth as every benchmark measures it: the sum of a
// float array far larger than any cache (1 GiB by default), split over the
// pool's threads, median of `reps` runs. Bandwidth-bound kernels (decode GEMVs)
// report their speed as a fraction of it; it swings a lot on a shared machine,
// so measure it next to the runs it judges. (A kernel with software prefetch
// can read somewhat faster than this plain loop.)
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/simd_util.hpp"

namespace archetype::bench_util {

inline double read_bandwidth_gbs(thread_pool& pool, std::size_t bytes = std::size_t(1) << 30, int reps = 5) {
    using clk = std::chrono::steady_clock;
    using B = kernels::simd::fbatch;
    constexpr std::size_t W = kernels::simd::W;
    const std::size_t n = bytes / sizeof(float), parts = std::max<std::size_t>(1, pool.size());
    std::vector<float> a(n);
    pool.parallel_for(n, [&](std::size_t b, std::size_t e) { std::fill(a.data() + b, a.data() + e, 1.f); });
    std::vector<float> part(parts);
    std::vector<double> times;
    volatile float sink = 0.f;
    for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = clk::now();
        pool.parallel_for(parts, [&](std::size_t pb, std::size_t pe) {
            for (std::size_t p = pb; p < pe; ++p) {
                const std::size_t b = n * p / parts, e = n * (p + 1) / parts;
                B s0(0.f), s1(0.f), s2(0.f), s3(0.f);
                for (std::size_t i = b; i + 4 * W <= e; i += 4 * W) {
                    s0 += B::load_unaligned(a.data() + i);
                    s1 += B::load_unaligned(a.data() + i + W);
                    s2 += B::load_unaligned(a.data() + i + 2 * W);
                    s3 += B::load_unaligned(a.data() + i + 3 * W);
                }
                part[p] = xsimd::hadd(s0 + s1 + s2 + s3);
            }
        });
        times.push_back(std::chrono::duration<double>(clk::now() - t0).count());
        sink = part[0];
    }
    (void)sink;
    std::sort(times.begin(), times.end());
    return double(n * sizeof(float)) / times[times.size() / 2] / 1e9;
}

} // namespace archetype::bench_util
