// Mamba-2's SSD scan (kernels/ssd.hpp) and the depthwise causal convolution with state
// (kernels/causal_conv.hpp) against plain double-precision recurrences: every position,
// the state carried across calls, the chunked matrix form equal to the token recurrence
// within float32 rounding (several chunk sizes, a partial last chunk), and results
// bitwise independent of the thread count.
#define BOOST_TEST_MODULE ssd
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "archetype/kernels/causal_conv.hpp"
#include "archetype/kernels/ssd.hpp"
#include "kernel_test_util.hpp"

using namespace archetype;

namespace {
struct problem {
    std::size_t T = 150, H = 4, P = 8, N = 16, G = 2;
    std::vector<float> x, bc, dt, A;
    problem() {
        x = kt::random_vec(T * H * P, 1);
        bc = kt::random_vec(T * 2 * G * N, 2);   // [T x (B | C)]
        dt = kt::random_vec(T * H, 3, 0.01f, 0.5f); // softplus'd: positive
        A = kt::random_vec(H, 4, -4.f, -0.5f);
    }
    kernels::ssd_params params(std::size_t t0, std::size_t n, float* state, float* y) const {
        kernels::ssd_params p;
        p.n_tok = n;
        p.n_head = H;
        p.head_dim = P;
        p.d_state = N;
        p.n_group = G;
        p.x = x.data() + t0 * H * P;
        p.ldx = H * P;
        p.B = bc.data() + t0 * 2 * G * N;
        p.C = p.B + G * N;
        p.ldbc = 2 * G * N;
        p.dt = dt.data() + t0 * H;
        p.lddt = H;
        p.A = A.data();
        p.state = state;
        p.y = y + t0 * H * P;
        p.ldy = H * P;
        return p;
    }
    /// the recurrence in double from a zero state: y [T x H*P] and the final state
    std::vector<double> reference(std::vector<double>* final_state = nullptr) const {
        std::vector<double> S(H * P * N, 0.0), y(T * H * P);
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t h = 0; h < H; ++h) {
                const std::size_t g = h / (H / G);
                const double d = dt[t * H + h], dA = std::exp(d * double(A[h]));
                for (std::size_t p = 0; p < P; ++p) {
                    double acc = 0;
                    for (std::size_t n = 0; n < N; ++n) {
                        double& s = S[(h * P + p) * N + n];
                        s = s * dA + d * x[t * H * P + h * P + p] * bc[t * 2 * G * N + g * N + n];
                        acc += s * bc[t * 2 * G * N + G * N + g * N + n];
                    }
                    y[t * H * P + h * P + p] = acc;
                }
            }
        if (final_state) *final_state = S;
        return y;
    }
};

double worst(const std::vector<float>& got, const std::vector<double>& want) {
    double m = 0, scale = 0;
    for (double w : want) scale = std::max(scale, std::abs(w));
    for (std::size_t i = 0; i < got.size(); ++i) m = std::max(m, std::abs(double(got[i]) - want[i]));
    return m / std::max(1.0, scale);
}
} // namespace

BOOST_AUTO_TEST_CASE(the_recurrence_matches_the_double_reference_at_every_position) {
    const problem pr;
    std::vector<double> want_state;
    const auto want = pr.reference(&want_state);
    std::vector<float> S(pr.H * pr.P * pr.N, 0.f), y(pr.T * pr.H * pr.P);
    kernels::ssd_recurrent(pr.params(0, pr.T, S.data(), y.data()), nullptr);
    BOOST_TEST(worst(y, want) <= 1e-5);
    BOOST_TEST(worst(S, want_state) <= 1e-5);
}

BOOST_AUTO_TEST_CASE(the_chunked_form_equals_the_recurrence_within_float32_rounding) {
    const problem pr;
    std::vector<double> want_state;
    const auto want = pr.reference(&want_state);
    for (std::size_t Q : {std::size_t(64), std::size_t(16), std::size_t(7), std::size_t(1)}) {
        BOOST_TEST_CONTEXT("chunk " << Q) {
            kernels::ssd_params p0 = pr.params(0, pr.T, nullptr, nullptr);
            std::vector<float> S(pr.H * pr.P * pr.N, 0.f), y(pr.T * pr.H * pr.P),
                scratch(kernels::ssd_chunked_scratch(p0, Q));
            kernels::ssd_chunked(pr.params(0, pr.T, S.data(), y.data()), Q, scratch.data(), nullptr);
            BOOST_TEST(worst(y, want) <= 1e-5);
            BOOST_TEST(worst(S, want_state) <= 1e-5);
        }
    }
}

BOOST_AUTO_TEST_CASE(the_state_carries_across_calls_in_both_forms) {
    const problem pr;
    const auto want = pr.reference();
    std::vector<float> S(pr.H * pr.P * pr.N, 0.f), y(pr.T * pr.H * pr.P);
    std::vector<float> scratch(kernels::ssd_chunked_scratch(pr.params(0, 1, nullptr, nullptr), 64));
    // a prompt in two chunked calls (the second starts mid-way), then token by token
    kernels::ssd_chunked(pr.params(0, 37, S.data(), y.data()), 64, scratch.data(), nullptr);
    kernels::ssd_chunked(pr.params(37, 90, S.data(), y.data()), 64, scratch.data(), nullptr);
    for (std::size_t t = 127; t < pr.T; ++t) kernels::ssd_recurrent(pr.params(t, 1, S.data(), y.data()), nullptr);
    BOOST_TEST(worst(y, want) <= 1e-5);
}

BOOST_AUTO_TEST_CASE(results_do_not_depend_on_the_thread_count) {
    const problem pr;
    std::vector<float> ref_y;
    for (std::size_t threads : {1, 2, 3}) {
        thread_pool pool(threads);
        std::vector<float> S(pr.H * pr.P * pr.N, 0.f), y(pr.T * pr.H * pr.P);
        std::vector<float> scratch(kernels::ssd_chunked_scratch(pr.params(0, 1, nullptr, nullptr), 64));
        kernels::ssd_chunked(pr.params(0, 100, S.data(), y.data()), 64, scratch.data(), &pool);
        kernels::ssd_recurrent(pr.params(100, 50, S.data(), y.data()), &pool);
        if (ref_y.empty()) ref_y = y;
        else BOOST_TEST(y == ref_y); // bitwise
    }
}

BOOST_AUTO_TEST_CASE(the_causal_convolution_carries_its_state_and_matches_the_reference) {
    for (std::size_t C : {std::size_t(5), std::size_t(300)}) {
        const std::size_t T = 23, K = 4, ld = C + 3;
        const auto in = kt::random_vec(T * ld, 7), w = kt::random_vec(C * K, 8), bias = kt::random_vec(C, 9);
        std::vector<double> want(T * C);
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < C; ++c) {
                double acc = bias[c];
                for (std::size_t i = 0; i < K; ++i) // tap i reads the row K-1-i before t (zero before 0)
                    if (t + i >= K - 1) acc += double(in[(t + i - (K - 1)) * ld + c]) * w[c * K + i];
                want[t * C + c] = acc;
            }
        std::vector<float> first;
        for (std::size_t threads : {1, 3}) {
            thread_pool pool(threads);
            std::vector<float> state((K - 1) * C, 0.f), out(T * C);
            // 2 rows (fewer than K-1), 1 row, then the rest
            std::size_t t0 = 0;
            for (std::size_t n : {std::size_t(2), std::size_t(1), T - 3}) {
                kernels::causal_conv1d(n, C, K, in.data() + t0 * ld, ld, w.data(), bias.data(), state.data(),
                                       out.data() + t0 * C, C, &pool);
                t0 += n;
            }
            BOOST_TEST_CONTEXT("C " << C << ", threads " << threads) {
                BOOST_TEST(worst(out, want) <= 1e-6);
                for (std::size_t k = 0; k + 1 < K; ++k) // the state is the last K-1 input rows
                    for (std::size_t c = 0; c < C; ++c) BOOST_TEST(state[k * C + c] == in[(T - (K - 1) + k) * ld + c]);
                if (first.empty()) first = out;
                else BOOST_TEST(out == first);
            }
        }
    }
}
