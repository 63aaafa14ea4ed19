// The gated delta rule (kernels/gated_delta.hpp) against a plain double-precision
// recurrence: every position, the state carried across calls, the chunked WY form equal to
// the token recurrence within float32 rounding (several chunk sizes, a partial last chunk),
// both value-head orders, and results bitwise independent of the thread count.
#define BOOST_TEST_MODULE gated_delta
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "archetype/kernels/gated_delta.hpp"
#include "kernel_test_util.hpp"

using namespace archetype;
using kernels::value_head_order;

namespace {
struct problem {
    std::size_t T = 150, Hk = 2, Hv = 4, dk = 8, dv = 12;
    value_head_order order;
    std::vector<float> q, k, v, g, beta;
    explicit problem(value_head_order o) : order(o) {
        q = kt::random_vec(T * Hk * dk, 1);
        k = kt::random_vec(T * Hk * dk, 2);
        // q, k L2-normalised per head as the mixer hands them (q also scaled by 1/sqrt(dk))
        for (auto* x : {&q, &k})
            for (std::size_t r = 0; r < T * Hk; ++r) {
                double ss = 0;
                for (std::size_t i = 0; i < dk; ++i) ss += double((*x)[r * dk + i]) * (*x)[r * dk + i];
                const float f = float(1 / std::sqrt(ss)) * (x == &q ? 1.f / std::sqrt(float(dk)) : 1.f);
                for (std::size_t i = 0; i < dk; ++i) (*x)[r * dk + i] *= f;
            }
        v = kt::random_vec(T * Hv * dv, 3);
        g = kt::random_vec(T * Hv, 4, -1.5f, -0.01f);
        beta = kt::random_vec(T * Hv, 5, 0.05f, 0.95f);
    }
    kernels::gated_delta_params params(std::size_t t0, std::size_t n, float* state, float* o) const {
        kernels::gated_delta_params p;
        p.n_tok = n;
        p.n_key_heads = Hk;
        p.n_value_heads = Hv;
        p.dk = dk;
        p.dv = dv;
        p.order = order;
        p.q = q.data() + t0 * Hk * dk;
        p.k = k.data() + t0 * Hk * dk;
        p.ldqk = Hk * dk;
        p.v = v.data() + t0 * Hv * dv;
        p.ldv = Hv * dv;
        p.g = g.data() + t0 * Hv;
        p.beta = beta.data() + t0 * Hv;
        p.ldgb = Hv;
        p.state = state;
        p.o = o ? o + t0 * Hv * dv : nullptr;
        p.ldo = Hv * dv;
        return p;
    }
    std::vector<double> reference(std::vector<double>* final_state = nullptr) const {
        std::vector<double> S(Hv * dk * dv, 0.0), o(T * Hv * dv);
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t j = 0; j < Hv; ++j) {
                const std::size_t kh = order == value_head_order::grouped ? j / (Hv / Hk) : j % Hk;
                const float* qt = q.data() + t * Hk * dk + kh * dk;
                const float* kt_ = k.data() + t * Hk * dk + kh * dk;
                double* Sj = S.data() + j * dk * dv;
                const double decay = std::exp(double(g[t * Hv + j])), b = beta[t * Hv + j];
                for (auto* s = Sj; s != Sj + dk * dv; ++s) *s *= decay;
                for (std::size_t c = 0; c < dv; ++c) {
                    double kv = 0;
                    for (std::size_t i = 0; i < dk; ++i) kv += Sj[i * dv + c] * kt_[i];
                    const double delta = b * (v[t * Hv * dv + j * dv + c] - kv);
                    for (std::size_t i = 0; i < dk; ++i) Sj[i * dv + c] += kt_[i] * delta;
                }
                for (std::size_t c = 0; c < dv; ++c) {
                    double acc = 0;
                    for (std::size_t i = 0; i < dk; ++i) acc += Sj[i * dv + c] * qt[i];
                    o[t * Hv * dv + j * dv + c] = acc;
                }
            }
        if (final_state) *final_state = S;
        return o;
    }
};

double worst(const std::vector<float>& got, const std::vector<double>& want) {
    double m = 0, scale = 0;
    for (double w : want) scale = std::max(scale, std::abs(w));
    for (std::size_t i = 0; i < got.size(); ++i) m = std::max(m, std::abs(double(got[i]) - want[i]));
    return m / std::max(1.0, scale);
}
} // namespace

BOOST_AUTO_TEST_CASE(the_recurrence_and_the_chunked_form_match_the_double_reference) {
    for (auto order : {value_head_order::grouped, value_head_order::tiled}) {
        const problem pr(order);
        std::vector<double> want_state;
        const auto want = pr.reference(&want_state);
        std::vector<float> S(pr.Hv * pr.dk * pr.dv, 0.f), o(pr.T * pr.Hv * pr.dv);
        kernels::gated_delta_recurrent(pr.params(0, pr.T, S.data(), o.data()), nullptr);
        BOOST_TEST(worst(o, want) <= 1e-5);
        BOOST_TEST(worst(S, want_state) <= 1e-5);
        for (std::size_t Q : {std::size_t(64), std::size_t(16), std::size_t(5), std::size_t(1)}) {
            BOOST_TEST_CONTEXT("order " << int(order) << ", chunk " << Q) {
                std::vector<float> S2(S.size(), 0.f), o2(o.size()),
                    scratch(kernels::gated_delta_chunked_scratch(pr.params(0, 1, nullptr, nullptr), Q));
                kernels::gated_delta_chunked(pr.params(0, pr.T, S2.data(), o2.data()), Q, scratch.data(), nullptr);
                BOOST_TEST(worst(o2, want) <= 1e-5);
                BOOST_TEST(worst(S2, want_state) <= 1e-5);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(the_two_value_head_orders_differ) {
    const auto a = problem(value_head_order::grouped).reference(), b = problem(value_head_order::tiled).reference();
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
    BOOST_TEST(d > 1e-2);
}

BOOST_AUTO_TEST_CASE(the_state_carries_across_calls_and_threads_change_nothing) {
    const problem pr(value_head_order::grouped);
    const auto want = pr.reference();
    std::vector<float> first;
    for (std::size_t threads : {1, 2, 3}) {
        thread_pool pool(threads);
        std::vector<float> S(pr.Hv * pr.dk * pr.dv, 0.f), o(pr.T * pr.Hv * pr.dv),
            scratch(kernels::gated_delta_chunked_scratch(pr.params(0, 1, nullptr, nullptr), 64));
        kernels::gated_delta_chunked(pr.params(0, 37, S.data(), o.data()), 64, scratch.data(), &pool);
        kernels::gated_delta_chunked(pr.params(37, 90, S.data(), o.data()), 64, scratch.data(), &pool);
        for (std::size_t t = 127; t < pr.T; ++t) kernels::gated_delta_recurrent(pr.params(t, 1, S.data(), o.data()), &pool);
        BOOST_TEST(worst(o, want) <= 1e-5);
        if (first.empty()) first = o;
        else BOOST_TEST(o == first);
    }
}
