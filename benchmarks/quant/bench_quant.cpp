// Quantised matmul throughput, per weight type.
//  1. Read bandwidth of this machine: sum of a 1 GiB array (larger than the
//     last-level cache) with 2 threads, median of 5.
//  2. Decode GEMV (1 token) at two real shapes, 2 threads: weight bytes / time,
//     and that as a fraction of (1). The matrices are cycled through 1 GiB of
//     copies so every call reads its weights from DRAM, as decoding a model does.
//  3. Prefill (512 tokens, 4096 x 4096), 2 threads: GFLOP/s.
//  4. Kernel throughput per CPU-second, 1 thread (thread CPU time, best of 5):
//     insensitive to other processes sharing the cores, unlike 1-3.
// Also in (2): the 4096 x 4096 matrix called again and again (resident in a large
// L3, e.g. 32 MiB; best of 15 rounds), which shows the kernel's own speed where DRAM
// would hide it.
// Arguments: type names (Q4_0, IQ4_XS, Q4_0x16 ...) run only those; --decode runs
// only (1) and (2).
// Q4_0x16 is Q4_0 in the 16-row interleaved layout the decoder loader makes
// (kernels/quant/interleaved.hpp), on this build's x16 kernels.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include "bandwidth.hpp"
#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/interleaved.hpp"
#include "level.hpp"

using archetype::ggml_type;
namespace k = archetype::kernels;
using clk = std::chrono::steady_clock;

namespace {

constexpr std::size_t big = std::size_t(1) << 30;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double thread_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

// Valid random storage: random quant bytes; scale fields small finite values.
std::vector<std::uint8_t> random_matrix(ggml_type t, std::size_t rows, std::size_t cols) {
    const auto tr = archetype::traits_of(t);
    const std::size_t n = rows * cols / tr.block_size * tr.type_size;
    std::vector<std::uint8_t> v(n);
    std::mt19937_64 rng(42);
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
        const std::uint64_t r = rng();
        std::memcpy(v.data() + i, &r, 8);
    }
    const std::size_t nblk = rows * cols / tr.block_size;
    for (std::size_t i = 0; i < nblk; ++i) {
        std::uint8_t* b = v.data() + i * tr.type_size;
        const float s = 0.01f + 0.001f * float(i % 7);
        switch (t) {
        case ggml_type::F32: { const float f = s * float(int(i % 9) - 4); std::memcpy(b, &f, 4); break; }
        case ggml_type::F16: archetype::quant::store_f16(b, s); break;
        case ggml_type::BF16: archetype::quant::store_u16(b, archetype::fp32_to_bf16(s)); break;
        case ggml_type::Q6_K: archetype::quant::store_f16(b + 208, s); break;
        case ggml_type::Q3_K: archetype::quant::store_f16(b + 108, s); break;
        case ggml_type::Q2_K:
            archetype::quant::store_f16(b + 80, s);
            archetype::quant::store_f16(b + 82, s);
            break;
        case ggml_type::MXFP4: b[0] = static_cast<std::uint8_t>(120 + i % 7); break; // E8M0: 2^-7 .. 2^-1
        case ggml_type::Q4_1: case ggml_type::Q5_1: case ggml_type::Q4_K: case ggml_type::Q5_K:
            archetype::quant::store_f16(b, s);
            archetype::quant::store_f16(b + 2, s);
            break;
        default: archetype::quant::store_f16(b, s); break;
        }
    }
    return v;
}


/// A weight type in a layout (the x16 layouts: Q4_0 and Q8_0).
struct variant {
    ggml_type t;
    bool x16 = false;
    std::string name() const { return std::string(archetype::type_name(t)) + (x16 ? "x16" : ""); }
    std::vector<std::uint8_t> matrix(std::size_t rows, std::size_t cols) const {
        auto m = random_matrix(t, rows, cols);
        if (!x16) return m;
        std::vector<std::uint8_t> p(m.size());
        archetype::quant::x16::repack(k::x16_layout_for(t), m.data(), rows, cols, p.data());
        return p;
    }
    k::weight_view view(const std::uint8_t* data, std::size_t rows, std::size_t cols) const {
        return {t, data, rows, cols, x16 ? k::x16_layout_for(t) : archetype::quant::weight_layout::rows};
    }
};

std::vector<variant> variants() {
    std::vector<variant> v;
    for (ggml_type t : {ggml_type::Q8_0, ggml_type::Q4_0, ggml_type::Q4_1, ggml_type::Q5_0, ggml_type::Q5_1,
                        ggml_type::Q4_K, ggml_type::Q5_K, ggml_type::Q6_K, ggml_type::Q2_K, ggml_type::Q3_K,
                        ggml_type::IQ4_NL, ggml_type::IQ4_XS, ggml_type::MXFP4, ggml_type::F16, ggml_type::BF16,
                        ggml_type::F32}) {
        v.push_back({t});
        if ((t == ggml_type::Q4_0 || t == ggml_type::Q8_0) && k::has_x16) v.push_back({t, true});
    }
    return v;
}

} // namespace

int main(int argc, char** argv) {
    bool decode_only = false;
    std::vector<std::string> only;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--decode") decode_only = true;
        else only.push_back(a);
    }
    std::vector<variant> chosen;
    for (const variant& v : variants())
        if (only.empty() || std::find(only.begin(), only.end(), v.name()) != only.end()) chosen.push_back(v);
    if (chosen.empty()) {
        std::fprintf(stderr, "bench_quant: no type named");
        for (const auto& a : only) std::fprintf(stderr, " %s", a.c_str());
        std::fprintf(stderr, " (names as printed in the tables, e.g. Q4_0, IQ4_XS, Q4_0x16)\n");
        return 2;
    }
    archetype::bench_util::announce_level();
    archetype::thread_pool pool(2);
    const double bw = archetype::bench_util::read_bandwidth_gbs(pool);
    std::printf("read bandwidth (1 GiB sum, 2 threads, median of 5): %.1f GB/s\n\n", bw);

    std::vector<std::uint8_t> arena(big);
    struct shape { std::size_t rows, cols; };
    const shape shapes[] = {{4096, 4096}, {5632, 2048}};
    std::printf("decode GEMV, 1 token, 2 threads, GB/s of weight bytes: one 4096x4096 matrix called again and "
                "again (hot: cache-resident where it fits, best of 15), and streamed from DRAM\n");
    std::printf("%-7s %10s %14s %8s %14s %8s\n", "type", "hot 4096^2", "4096x4096 GB/s", "of bw", "5632x2048 GB/s", "of bw");
    std::vector<float> x(16384), y(16384);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) * 0.1f;
    for (const variant& t : chosen) {
        std::printf("%-7s", t.name().c_str());
        {
            const auto m = t.matrix(4096, 4096);
            const k::weight_view W = t.view(m.data(), 4096, 4096);
            constexpr int calls = 20;
            double best = 0;
            for (int rep = 0; rep < 16; ++rep) { // the first round warms the caches
                const auto t0 = clk::now();
                for (int c = 0; c < calls; ++c) k::matmul(W, x.data(), 4096, 1, y.data(), 4096, &pool);
                if (rep) best = std::max(best, double(calls * m.size()) / seconds_since(t0) / 1e9);
            }
            std::printf(" %10.1f", best);
        }
        for (const auto& s : shapes) {
            const auto m = t.matrix(s.rows, s.cols);
            const std::size_t copies = std::max<std::size_t>(1, big / m.size());
            for (std::size_t c = 0; c < copies; ++c) std::memcpy(arena.data() + c * m.size(), m.data(), m.size());
            std::vector<double> rates;
            for (int rep = 0; rep < 3; ++rep) {
                const auto t0 = clk::now();
                for (std::size_t c = 0; c < copies; ++c)
                    k::matmul(t.view(arena.data() + c * m.size(), s.rows, s.cols), x.data(), s.cols, 1,
                              y.data(), s.rows, &pool);
                rates.push_back(double(copies * m.size()) / seconds_since(t0) / 1e9);
            }
            const double r = median(rates);
            std::printf(" %14.1f %8.2f", r, r / bw);
        }
        std::printf("\n");
        std::fflush(stdout);
    }
    if (decode_only) return 0;

    std::printf("\nprefill, 512 tokens x 4096 -> 4096, 2 threads\n%-7s %10s %10s\n", "type", "ms", "GFLOP/s");
    const std::size_t n_tok = 512, rows = 4096, cols = 4096;
    std::vector<float> X(n_tok * cols), Y(n_tok * rows);
    std::mt19937 rng(1);
    std::normal_distribution<float> g;
    for (auto& v : X) v = g(rng);
    for (const variant& t : chosen) {
        const auto m = t.matrix(rows, cols);
        const k::weight_view W = t.view(m.data(), rows, cols);
        k::matmul(W, X.data(), cols, n_tok, Y.data(), rows, &pool); // warm-up
        std::vector<double> times;
        for (int rep = 0; rep < 3; ++rep) {
            const auto t0 = clk::now();
            k::matmul(W, X.data(), cols, n_tok, Y.data(), rows, &pool);
            times.push_back(seconds_since(t0));
        }
        const double sec = median(times);
        std::printf("%-7s %10.1f %10.1f\n", t.name().c_str(), sec * 1e3,
                    2.0 * double(n_tok * rows * cols) / sec / 1e9);
    }

    std::printf("\nper CPU-second, 1 thread (thread CPU time, best of 5; weights 1024 x 4096, L2/L3 resident)\n"
                "%-7s %16s %20s\n", "type", "GEMV GB/s", "prefill 128 GOP/s");
    for (const variant& t : chosen) {
        const std::size_t r1 = 1024, c1 = 4096, nt = 128;
        const auto m = t.matrix(r1, c1);
        const k::weight_view W = t.view(m.data(), r1, c1);
        auto best = [&](std::size_t n) {
            double b = 1e30;
            for (int rep = 0; rep < 5; ++rep) {
                const double t0 = thread_cpu_seconds();
                k::matmul(W, X.data(), c1, n, Y.data(), r1, nullptr);
                b = std::min(b, thread_cpu_seconds() - t0);
            }
            return b;
        };
        const double g = best(1), p = best(nt);
        std::printf("%-7s %16.1f %20.1f\n", t.name().c_str(), double(m.size()) / g * 1e-9,
                    2.0 * double(nt * r1 * c1) / p * 1e-9);
    }
    return 0;
}
