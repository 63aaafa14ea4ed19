// quickstart: compose the mission's architectures, print what the compiler
// resolved, then run the kernels on a seeded random problem.
//
//   ./build/examples/quickstart            (no download, no model file)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "archetype/archetype.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/models/rwkv.hpp"

using namespace archetype;

using Mistral = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>;
using Finch = Rwkv6<2048, 64>;
// The same structure with the head dimension fixed: the type now knows its KV bytes.
using Mistral7B = Decoder<GQA<32, 8, 128>, RoPE, SlidingWindow<4096>, RollingCache>;

template <class F>
double best_seconds(int reps, F&& f) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = s < best ? s : best;
    }
    return best;
}

int main() {
    std::printf("== Mistral = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>\n%s\n",
                describe<Mistral>().c_str());
    std::printf("== Finch = Rwkv6<2048, 64>\n%s\n", describe<Finch>().c_str());
    std::printf("== with a static head dimension of 128\n%s", describe<Mistral7B>().c_str());

    // Compile-time plan for Mistral-7B's shape (dims as a preset would give them).
    constexpr transformer_dims dims{.n_layer = 32, .n_embd = 4096, .n_vocab = 32000, .n_ff = 14336,
                                    .n_head = 32, .n_head_kv = 8, .head_dim = 128, .window = 4096};
    constexpr auto at4k = Mistral7B::figures(dims, 4096);
    constexpr auto at32k = Mistral7B::figures(dims, 32768);
    static_assert(at4k.cache_bytes == at32k.cache_bytes, "the rolling cache is constant past the window");
    std::printf("  parameters:            %.3f B\n", at4k.parameters / 1e9);
    std::printf("  FLOPs per token:       %.2f G (matmuls) + %.2f G (attention at 4096 keys)\n",
                at4k.matmul_flops_per_token / 1e9, at4k.attention_flops_per_token / 1e9);
    std::printf("  KV cache per sequence: %.0f MiB at 4096 tokens, %.0f MiB at 32768 (rolling)\n\n",
                at4k.cache_bytes / 1048576.0, at32k.cache_bytes / 1048576.0);

    // Kernels on a seeded random problem: C = A * B^T, 512 x 1024 x 1024.
    thread_pool pool;
    const std::size_t M = 512, N = 1024, K = 1024;
    std::mt19937 rng(42);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> A(M * K), B(N * K), C(M * N), y(N);
    for (auto& v : A) v = nd(rng);
    for (auto& v : B) v = nd(rng);
    const double tg = best_seconds(5, [&] { kernels::gemm_nt(A.data(), K, B.data(), K, C.data(), N, M, N, K, &pool); });
    const double tv = best_seconds(20, [&] { kernels::gemv(B.data(), K, A.data(), y.data(), N, K, &pool); });
    // check one element against a double-precision dot
    double ref = 0;
    for (std::size_t k = 0; k < K; ++k) ref += double(A[3 * K + k]) * B[5 * K + k];
    std::printf("== kernels (%zu threads)\n", pool.size());
    std::printf("  gemm %zux%zux%zu: %.1f GFLOP/s   (C[3,5] = %.4f, double reference %.4f)\n", M, N, K,
                2.0 * M * N * K / tg / 1e9, C[3 * N + 5], ref);
    std::printf("  gemv %zux%zu:      %.1f GB/s of weights\n", N, K, N * K * 4.0 / tv / 1e9);
    return std::abs(C[3 * N + 5] - ref) < 1e-2 * (1 + std::abs(ref)) ? 0 : 1;
}
