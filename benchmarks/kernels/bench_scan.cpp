// Prefill throughput of the state-space scans: the chunked matrix form (chunk 64, what
// prefill runs) against the token recurrence (what decode runs) over a 512-token prompt of
// one sequence, at two real shapes:
//   Mamba-2 130M's SSD (kernels/ssd.hpp): 24 heads of 64, state 128, 1 group
//   Qwen3-Next's gated delta rule (kernels/gated_delta.hpp): 16 key heads, 32 value heads, 128 x 128
// 1 thread by thread CPU time (best of N: a shared machine's wall clock swings), and the
// wall clock with every core. Also prints the largest difference between the two forms
// relative to the largest output (float32 rounding: ~1e-6).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>
#include <vector>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/gated_delta.hpp"
#include "archetype/kernels/ssd.hpp"
#include "level.hpp"

namespace k = archetype::kernels;

namespace {
std::vector<float> random_vec(std::size_t n, unsigned seed, float lo, float hi) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(g);
    return v;
}
double thread_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
template <class F>
double best_cpu_seconds(int runs, F&& f) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        const double t0 = thread_seconds();
        f();
        best = std::min(best, thread_seconds() - t0);
    }
    return best;
}
template <class F>
double best_wall_seconds(int runs, F&& f) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0, m = 1e-30;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, double(std::abs(a[i] - b[i])));
        m = std::max(m, double(std::abs(b[i])));
    }
    return d / m;
}
void report(const char* name, std::size_t T, double rec1, double chk1, double recN, double chkN, unsigned n, double diff) {
    std::printf("%-34s 1 thread: recurrence %8.0f tok/s, chunked %8.0f tok/s (%.2fx) | %u threads: %8.0f / %8.0f tok/s "
                "(%.2fx) | max diff %.1e\n",
                name, T / rec1, T / chk1, rec1 / chk1, n, T / recN, T / chkN, recN / chkN, diff);
}
} // namespace

int main() {
    archetype::bench_util::announce_level();
    const std::size_t T = 512, Q = 64;
    const unsigned n_threads = std::max(1u, std::thread::hardware_concurrency());
    archetype::thread_pool one(1), all(n_threads);
    {
        const std::size_t H = 24, P = 64, N = 128, G = 1;
        const auto x = random_vec(T * H * P, 1, -1, 1), bc = random_vec(T * 2 * G * N, 2, -1, 1),
                   dt = random_vec(T * H, 3, 1e-3f, 0.1f), A = random_vec(H, 4, -8, -1);
        std::vector<float> S(H * P * N), y_rec(T * H * P), y_chk(T * H * P);
        k::ssd_params p;
        p.n_tok = T, p.n_head = H, p.head_dim = P, p.d_state = N, p.n_group = G;
        p.x = x.data(), p.ldx = H * P, p.B = bc.data(), p.C = bc.data() + G * N, p.ldbc = 2 * G * N;
        p.dt = dt.data(), p.lddt = H, p.A = A.data(), p.state = S.data(), p.ldy = H * P;
        std::vector<float> scratch(k::ssd_chunked_scratch(p, Q));
        auto rec = [&](archetype::thread_pool* pool) {
            std::fill(S.begin(), S.end(), 0.f);
            p.y = y_rec.data();
            k::ssd_recurrent(p, pool);
        };
        auto chk = [&](archetype::thread_pool* pool) {
            std::fill(S.begin(), S.end(), 0.f);
            p.y = y_chk.data();
            k::ssd_chunked(p, Q, scratch.data(), pool);
        };
        const double r1 = best_cpu_seconds(5, [&] { rec(&one); }), c1 = best_cpu_seconds(5, [&] { chk(&one); });
        const double rn = best_wall_seconds(5, [&] { rec(&all); }), cn = best_wall_seconds(5, [&] { chk(&all); });
        report("SSD, Mamba-2 130M (24 x 64, N 128)", T, r1, c1, rn, cn, n_threads, rel_diff(y_chk, y_rec));
    }
    {
        const std::size_t Hk = 16, Hv = 32, dk = 128, dv = 128;
        auto q = random_vec(T * Hk * dk, 5, -1, 1), kk = random_vec(T * Hk * dk, 6, -1, 1);
        for (auto* m : {&q, &kk}) // L2-normalised rows, q scaled by 1/sqrt(dk), as the mixer hands them
            for (std::size_t r = 0; r < T * Hk; ++r) {
                double ss = 0;
                for (std::size_t i = 0; i < dk; ++i) ss += double((*m)[r * dk + i]) * (*m)[r * dk + i];
                const float f = float(1 / std::sqrt(ss)) / (m == &q ? std::sqrt(float(dk)) : 1.f);
                for (std::size_t i = 0; i < dk; ++i) (*m)[r * dk + i] *= f;
            }
        const auto v = random_vec(T * Hv * dv, 7, -1, 1), g = random_vec(T * Hv, 8, -0.5f, -0.001f),
                   beta = random_vec(T * Hv, 9, 0.05f, 0.95f);
        std::vector<float> S(Hv * dk * dv), o_rec(T * Hv * dv), o_chk(T * Hv * dv);
        k::gated_delta_params p;
        p.n_tok = T, p.n_key_heads = Hk, p.n_value_heads = Hv, p.dk = dk, p.dv = dv;
        p.q = q.data(), p.k = kk.data(), p.ldqk = Hk * dk, p.v = v.data(), p.ldv = Hv * dv;
        p.g = g.data(), p.beta = beta.data(), p.ldgb = Hv, p.state = S.data(), p.ldo = Hv * dv;
        std::vector<float> scratch(k::gated_delta_chunked_scratch(p, Q));
        auto rec = [&](archetype::thread_pool* pool) {
            std::fill(S.begin(), S.end(), 0.f);
            p.o = o_rec.data();
            k::gated_delta_recurrent(p, pool);
        };
        auto chk = [&](archetype::thread_pool* pool) {
            std::fill(S.begin(), S.end(), 0.f);
            p.o = o_chk.data();
            k::gated_delta_chunked(p, Q, scratch.data(), pool);
        };
        const double r1 = best_cpu_seconds(3, [&] { rec(&one); }), c1 = best_cpu_seconds(3, [&] { chk(&one); });
        const double rn = best_wall_seconds(3, [&] { rec(&all); }), cn = best_wall_seconds(3, [&] { chk(&all); });
        report("gated delta, Qwen3-Next (16/32 x 128)", T, r1, c1, rn, cn, n_threads, rel_diff(o_chk, o_rec));
    }
}
