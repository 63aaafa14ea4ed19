// Kernel benchmark: measures this machine's limits first (FP32 FMA peak with
// 1 and 2 threads, read bandwidth over a 1 GiB array with 2 threads), then
// prints GEMM GFLOP/s and GEMV GB/s as fractions of them.
// A first table measures 1 thread by thread CPU time (CLOCK_THREAD_CPUTIME_ID,
// best of N): on a shared machine wall-clock rates swing by 3x, CPU time does
// not count the time other processes hold the core.
// Goals (issue 2): GEMM >= 0.7 of FMA peak at 1024^3 with 2 threads,
// GEMV >= 0.85 of read bandwidth.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <tuple>
#include <vector>

#include "bandwidth.hpp"
#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/quant/half_matmul.hpp"
#include "archetype/kernels/simd_util.hpp"
#include "level.hpp"

namespace k = archetype::kernels;
using clk = std::chrono::steady_clock;

namespace {

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

template <class F>
double median_seconds(int runs, F&& f) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = clk::now();
        f();
        t.push_back(seconds_since(t0));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// Best of `runs` calls, in CPU seconds of the calling thread (1-thread kernels only).
template <class F>
double best_cpu_seconds(int runs, F&& f) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        const double t0 = thread_cpu_seconds();
        f();
        best = std::min(best, thread_cpu_seconds() - t0);
    }
    return best;
}

// 16 independent FMA chains held in registers: enough to cover latency x ports
// on every x86 core. fma is not reassociated (no -ffast-math), so the compiler
// cannot fold the loop.
float fma_chains(std::size_t iters, float seed) {
    using B = k::simd::fbatch;
    constexpr int C = 16;
    B acc[C];
    for (int c = 0; c < C; ++c) acc[c] = B(seed + float(c));
    const B a(0.999999f), b(1e-7f);
    for (std::size_t i = 0; i < iters; ++i) {
        for (int c = 0; c < C; ++c) acc[c] = xsimd::fma(acc[c], a, b);
    }
    B s = acc[0];
    for (int c = 1; c < C; ++c) s += acc[c];
    return xsimd::hadd(s);
}

double fma_peak_gflops(archetype::thread_pool& pool, std::size_t threads) {
    const std::size_t iters = 20'000'000;
    volatile float sink = 0;
    fma_chains(iters / 20, 1.f); // warm up clocks
    const double t = median_seconds(3, [&] {
        pool.parallel_for(threads, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) sink = fma_chains(iters, float(i));
        });
    });
    return double(threads) * double(iters) * 16 * 2 * double(k::simd::W) / t * 1e-9;
}


std::vector<float> random_vec(std::size_t n, unsigned seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    std::vector<float> v(n);
    for (auto& x : v) x = d(g);
    return v;
}

std::vector<std::uint16_t> to_f16(const std::vector<float>& v) {
    std::vector<std::uint16_t> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) h[i] = archetype::fp32_to_fp16(v[i]);
    return h;
}

/// 1 thread, per CPU-second: FMA peak, GEMM F32/F16/BF16, GEMV F32/F16, read rate.
void cpu_time_table() {
    volatile float sink = 0;
    const std::size_t iters = 20'000'000;
    const double tp = best_cpu_seconds(3, [&] { sink = fma_chains(iters, 1.f); });
    const double peak = double(iters) * 16 * 2 * double(k::simd::W) / tp * 1e-9;
    std::printf("--- 1 thread, per CPU-second (thread CPU time, best of N) ---\n");
    std::printf("FMA peak %.1f GFLOP/s\n", peak);
    struct shape { std::size_t M, N, K; };
    for (const shape s : {shape{1024, 1024, 1024}, shape{512, 1536, 576}, shape{64, 1536, 576},
                          shape{32, 1536, 576}, shape{14, 1536, 576}, shape{7, 1536, 576},
                          shape{32, 4096, 4096}, shape{7, 4096, 4096}}) {
        const auto A = random_vec(s.M * s.K, 1), B = random_vec(s.N * s.K, 2);
        const auto Bh = to_f16(B);
        std::vector<std::uint16_t> Bb(B.size());
        for (std::size_t i = 0; i < B.size(); ++i) Bb[i] = archetype::fp32_to_bf16(B[i]);
        std::vector<float> C(s.M * s.N);
        const double flop = 2.0 * double(s.M) * double(s.N) * double(s.K);
        const int runs = std::max(3, int(1e10 / flop));
        const double t = best_cpu_seconds(runs, [&] {
            k::gemm_nt(A.data(), s.K, B.data(), s.K, C.data(), s.N, s.M, s.N, s.K);
        });
        const double th = best_cpu_seconds(runs, [&] {
            k::gemm_nt_f16(A.data(), s.K, Bh.data(), s.K, C.data(), s.N, s.M, s.N, s.K);
        });
        std::printf("gemm M=%-5zu N=%-5zu K=%-5zu f32 %6.1f GFLOP/s (%.2f of peak)  f16 %6.1f (%.2f)", s.M, s.N, s.K,
                    flop / t * 1e-9, flop / t * 1e-9 / peak, flop / th * 1e-9, flop / th * 1e-9 / peak);
#if defined(ARCHETYPE_QUANT_HALF_AVX512)
        const double tb = best_cpu_seconds(runs, [&] {
            archetype::quant::half_avx512::matmul(true, Bb.data(), s.N, s.K, A.data(), s.K, s.M, C.data(), s.N,
                                                  nullptr);
        });
        std::printf("  bf16 %6.1f (%.2f)", flop / tb * 1e-9, flop / tb * 1e-9 / peak);
#endif
        std::printf("\n");
    }
    for (const auto& [M, K] : {std::pair<std::size_t, std::size_t>{4096, 4096}, {65536, 2048}}) {
        // Larger than L2 (4096^2 F16 = 32 MB; 65536 x 2048 F16 = 256 MB, larger than L3 too).
        const auto x = random_vec(K, 4);
        std::vector<std::uint16_t> Ah(M * K);
        for (std::size_t i = 0; i < Ah.size(); ++i) Ah[i] = std::uint16_t(0x3800u + ((i * 2654435761u >> 22) & 0x3ffu));
        std::vector<float> y(M);
        const double th = best_cpu_seconds(5, [&] { k::gemv_f16(Ah.data(), K, x.data(), y.data(), M, K); });
        std::printf("gemv_f16 %5zux%-5zu %6.1f GB/s", M, K, double(M * K * 2) / th * 1e-9);
        if (M * K <= 4096 * 4096) {
            std::vector<float> A(M * K, 0.5f);
            const double t = best_cpu_seconds(5, [&] { k::gemv(A.data(), K, x.data(), y.data(), M, K); });
            std::printf("   gemv f32 %6.1f GB/s", double(M * K * 4) / t * 1e-9);
        }
        std::printf("\n");
    }
    {
        // Plain streaming sum over 256 MB: the single-core read rate GEMV is compared with.
        const std::size_t n = (std::size_t(1) << 28) / sizeof(float);
        std::vector<float> a(n, 1.f);
        using B = k::simd::fbatch;
        constexpr std::size_t W = k::simd::W;
        const double t = best_cpu_seconds(5, [&] {
            B s0(0.f), s1(0.f), s2(0.f), s3(0.f);
            for (std::size_t i = 0; i + 4 * W <= n; i += 4 * W) {
                s0 += B::load_unaligned(a.data() + i);
                s1 += B::load_unaligned(a.data() + i + W);
                s2 += B::load_unaligned(a.data() + i + 2 * W);
                s3 += B::load_unaligned(a.data() + i + 3 * W);
            }
            sink = xsimd::hadd(s0 + s1 + s2 + s3);
        });
        std::printf("read rate (sum over 256 MB, 1 thread) %.1f GB/s\n", double(n * sizeof(float)) / t * 1e-9);
    }
    std::printf("--- wall clock ---\n");
}

} // namespace

int main() {
    archetype::bench_util::announce_level();
    archetype::thread_pool pool1(1), pool2(2);
    std::printf("kernels benchmark (simd width %zu floats)\n", k::simd::W);
    cpu_time_table();
    const double peak1 = fma_peak_gflops(pool1, 1);
    const double peak2 = fma_peak_gflops(pool2, 2);
    const double bw = archetype::bench_util::read_bandwidth_gbs(pool2);
    std::printf("machine: FMA peak %.1f GFLOP/s (1 thread), %.1f GFLOP/s (2 threads); read bandwidth %.1f GB/s "
                "(2 threads, 1 GiB, median of 5)\n",
                peak1, peak2, bw);

    struct shape { std::size_t M, N, K; };
    for (const shape s : {shape{1024, 1024, 1024}, shape{512, 1536, 576}, shape{128, 2048, 2048},
                          shape{64, 1536, 576}, shape{7, 4096, 4096}}) {
        const auto A = random_vec(s.M * s.K, 1), B = random_vec(s.N * s.K, 2);
        std::vector<float> C(s.M * s.N);
        const double flop = 2.0 * double(s.M) * double(s.N) * double(s.K);
        const int runs = std::max(3, int(2e10 / flop / 100));
        for (auto [pool, peak, label] : {std::tuple{&pool1, peak1, "1 thread "}, std::tuple{&pool2, peak2, "2 threads"}}) {
            k::gemm_nt(A.data(), s.K, B.data(), s.K, C.data(), s.N, s.M, s.N, s.K, pool);
            const double t = median_seconds(runs, [&] {
                k::gemm_nt(A.data(), s.K, B.data(), s.K, C.data(), s.N, s.M, s.N, s.K, pool);
            });
            std::printf("gemm_nt  M=%-5zu N=%-5zu K=%-5zu %s %7.1f GFLOP/s  = %.2f of FMA peak\n", s.M, s.N, s.K,
                        label, flop / t * 1e-9, flop / t * 1e-9 / peak);
        }
    }
    {
        const std::size_t M = 1024, N = 1024, K = 1024;
        const auto A = random_vec(M * K, 1), Bf = random_vec(N * K, 2);
        std::vector<std::uint16_t> B(N * K);
        for (std::size_t i = 0; i < B.size(); ++i) B[i] = archetype::fp32_to_fp16(Bf[i]);
        std::vector<float> C(M * N);
        const double flop = 2.0 * M * N * K;
        const double t = median_seconds(5, [&] { k::gemm_nt_f16(A.data(), K, B.data(), K, C.data(), N, M, N, K, &pool2); });
        std::printf("gemm_nt_f16 M=%zu N=%zu K=%zu 2 threads %7.1f GFLOP/s  = %.2f of FMA peak\n", M, N, K,
                    flop / t * 1e-9, flop / t * 1e-9 / peak2);
    }
    {
        const std::size_t M = 4096, K = 4096;
        const auto A = random_vec(M * K, 3), x = random_vec(K, 4);
        std::vector<std::uint16_t> Ah(M * K);
        for (std::size_t i = 0; i < Ah.size(); ++i) Ah[i] = archetype::fp32_to_fp16(A[i]);
        std::vector<float> y(M);
        for (auto [pool, label] : {std::pair{&pool1, "1 thread "}, std::pair{&pool2, "2 threads"}}) {
            const double t = median_seconds(11, [&] { k::gemv(A.data(), K, x.data(), y.data(), M, K, pool); });
            const double gbs = double(M * K * sizeof(float)) / t * 1e-9;
            std::printf("gemv     f32 %zux%zu %s %6.1f GB/s  = %.2f of read bandwidth\n", M, K, label, gbs, gbs / bw);
            const double th = median_seconds(11, [&] { k::gemv_f16(Ah.data(), K, x.data(), y.data(), M, K, pool); });
            const double gbh = double(M * K * sizeof(std::uint16_t)) / th * 1e-9;
            std::printf("gemv_f16     %zux%zu %s %6.1f GB/s  = %.2f of read bandwidth\n", M, K, label, gbh, gbh / bw);
        }
    }
    return 0;
}
