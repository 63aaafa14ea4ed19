#define BOOST_TEST_MODULE kernels_elementwise
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "archetype/kernels/activation.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/kernels/reference/activation.hpp"
#include "archetype/kernels/reference/norm.hpp"
#include "archetype/kernels/reference/rope.hpp"
#include "archetype/kernels/reference/softmax.hpp"
#include "archetype/kernels/rope.hpp"
#include "archetype/kernels/softmax.hpp"
#include "kernel_test_util.hpp"

namespace k = archetype::kernels;
namespace ref = archetype::kernels::reference;

namespace {
using unary = void (*)(float*, std::size_t) noexcept;
void check_unary(const char* name, unary fast, unary slow, float lo, float hi, double bound) {
    for (std::size_t n : kt::sizes) {
        auto x = kt::random_vec(n, unsigned(n), lo, hi), y = x;
        fast(x.data(), n);
        slow(y.data(), n);
        BOOST_TEST(kt::nmse(x, y) < bound, name << " n=" << n << " nmse=" << kt::nmse(x, y));
        bool finite = true;
        for (float v : x) finite = finite && std::isfinite(v);
        BOOST_TEST(finite, name << " n=" << n << " produced a non-finite value");
    }
}
} // namespace

BOOST_AUTO_TEST_CASE(activations_vs_reference) {
    check_unary("silu", k::silu, ref::silu, -20.f, 20.f, 1e-12);
    check_unary("sigmoid", k::sigmoid, ref::sigmoid, -20.f, 20.f, 1e-12);
    check_unary("tanh", k::tanh, ref::tanh, -10.f, 10.f, 1e-12);
    check_unary("exp", k::exp, ref::exp, -80.f, 80.f, 1e-12);
    check_unary("relu_sq", k::relu_sq, ref::relu_sq, -5.f, 5.f, 1e-14);
    check_unary("gelu_tanh", k::gelu_tanh, ref::gelu_tanh, -8.f, 8.f, 1e-12);
    check_unary("gelu_erf", k::gelu_erf, ref::gelu_erf, -8.f, 8.f, 1e-12);
    for (std::size_t n : kt::sizes) {
        auto g = kt::random_vec(n, 1, -10.f, 10.f), g2 = g;
        const auto u = kt::random_vec(n, 2);
        k::silu_mul(g.data(), u.data(), n);
        ref::silu_mul(g2.data(), u.data(), n);
        BOOST_TEST(kt::nmse(g, g2) < 1e-12, "silu_mul n=" << n);
    }
}

BOOST_AUTO_TEST_CASE(gelu_against_std_formulas) {
    // Independent of the reference twin: the textbook formulas in double.
    const auto x0 = kt::random_vec(1000, 7, -6.f, 6.f);
    auto a = x0, b = x0;
    k::gelu_tanh(a.data(), a.size());
    k::gelu_erf(b.data(), b.size());
    for (std::size_t i = 0; i < x0.size(); ++i) {
        const double x = x0[i];
        const double gt = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        const double ge = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        BOOST_TEST(std::abs(a[i] - gt) <= 1e-5 * (1 + std::abs(gt)), "gelu_tanh x=" << x);
        BOOST_TEST(std::abs(b[i] - ge) <= 1e-5 * (1 + std::abs(ge)), "gelu_erf x=" << x);
    }
    // The two forms differ by at most ~1e-3 (a known property of the approximation).
    for (std::size_t i = 0; i < x0.size(); ++i) BOOST_TEST(std::abs(a[i] - b[i]) < 2e-3);
}

BOOST_AUTO_TEST_CASE(softmax_vs_reference_and_masking) {
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    for (std::size_t n : kt::sizes) {
        auto x = kt::random_vec(n, unsigned(n) + 3, -30.f, 30.f);
        for (std::size_t i = 0; i < n; i += 3) x[i] = ninf; // partly masked
        auto y = x, xs = x, ys = x;
        k::softmax(x.data(), n);
        ref::softmax(y.data(), n);
        BOOST_TEST(kt::nmse(x, y) < 1e-12, "softmax n=" << n);
        k::softmax_scaled(xs.data(), n, 0.125f);
        ref::softmax_scaled(ys.data(), n, 0.125f);
        BOOST_TEST(kt::nmse(xs, ys) < 1e-12, "softmax_scaled n=" << n);
        double s = 0;
        for (float v : x) s += v;
        if (n > 1) BOOST_TEST(std::abs(s - 1.0) < 1e-5, "softmax sum n=" << n);
        std::vector<float> m(n, ninf);
        k::softmax(m.data(), n);
        bool zeros = true;
        for (float v : m) zeros = zeros && v == 0.f;
        BOOST_TEST(zeros, "fully masked row n=" << n << " must give zeros");
    }
}

BOOST_AUTO_TEST_CASE(norms_vs_reference) {
    for (std::size_t n : kt::sizes) {
        const auto x = kt::random_vec(n, 11, -3.f, 5.f); // offset mean: exercises the two-pass variance
        const auto w = kt::random_vec(n, 12), b = kt::random_vec(n, 13);
        std::vector<float> y(n), yr(n);
        k::rms_norm(x.data(), w.data(), y.data(), n, 1e-6f);
        ref::rms_norm(x.data(), w.data(), yr.data(), n, 1e-6f);
        BOOST_TEST(kt::nmse(y, yr) < 1e-12, "rms_norm n=" << n);
        k::layer_norm(x.data(), w.data(), b.data(), y.data(), n, 1e-5f);
        ref::layer_norm(x.data(), w.data(), b.data(), yr.data(), n, 1e-5f);
        BOOST_TEST(kt::nmse(y, yr) < 1e-11, "layer_norm n=" << n);
        k::layer_norm(x.data(), nullptr, nullptr, y.data(), n, 1e-5f);
        ref::layer_norm(x.data(), nullptr, nullptr, yr.data(), n, 1e-5f);
        BOOST_TEST(kt::nmse(y, yr) < 1e-11, "layer_norm (no affine) n=" << n);
        auto inplace = x; // y aliasing x
        k::rms_norm(inplace.data(), nullptr, inplace.data(), n, 1e-6f);
        ref::rms_norm(x.data(), nullptr, yr.data(), n, 1e-6f);
        BOOST_TEST(kt::nmse(inplace, yr) < 1e-12, "rms_norm in place n=" << n);
    }
    for (std::size_t groups : {1u, 4u, 32u}) {
        const std::size_t n = groups * 65;
        const auto x = kt::random_vec(n, 21, -2.f, 4.f), w = kt::random_vec(n, 22), b = kt::random_vec(n, 23);
        std::vector<float> y(n), yr(n);
        k::group_norm(x.data(), w.data(), b.data(), y.data(), n, groups, 1e-5f);
        ref::group_norm(x.data(), w.data(), b.data(), yr.data(), n, groups, 1e-5f);
        BOOST_TEST(kt::nmse(y, yr) < 1e-11, "group_norm groups=" << groups);
    }
}

BOOST_AUTO_TEST_CASE(rope_both_pairings) {
    for (auto pairing : {k::rope_pairing::adjacent, k::rope_pairing::neox})
        for (std::size_t head_dim : {2u, 14u, 64u, 80u, 128u, 130u})
            for (std::size_t n_rot : {head_dim, head_dim / 2 - head_dim / 2 % 2}) {
                if (n_rot == 0) continue;
                const std::size_t n_heads = 3, stride = head_dim + 5;
                auto x = kt::random_vec(n_heads * stride, unsigned(head_dim)), y = x;
                const auto ang = kt::random_vec(n_rot / 2, 5, -3.f, 3.f);
                std::vector<float> c(ang.size()), s(ang.size());
                for (std::size_t i = 0; i < ang.size(); ++i) { c[i] = std::cos(ang[i]); s[i] = std::sin(ang[i]); }
                k::rope(x.data(), n_heads, stride, n_rot, c.data(), s.data(), pairing);
                ref::rope(y.data(), n_heads, stride, n_rot, c.data(), s.data(), pairing);
                BOOST_TEST(kt::nmse(x, y) < 1e-13, "rope head_dim=" << head_dim << " n_rot=" << n_rot);
                // rotation keeps each pair's norm; dims past n_rot untouched (x vs y covers it)
            }
    // batched form = per-token calls
    const std::size_t n_tok = 5, n_heads = 2, hd = 64, tok_stride = n_heads * hd;
    auto x = kt::random_vec(n_tok * tok_stride, 9), y = x;
    const auto c = kt::random_vec(n_tok * hd / 2, 1), s = kt::random_vec(n_tok * hd / 2, 2);
    k::rope_tokens(x.data(), n_tok, tok_stride, n_heads, hd, hd, c.data(), s.data(), hd / 2, k::rope_pairing::neox);
    for (std::size_t t = 0; t < n_tok; ++t)
        ref::rope(y.data() + t * tok_stride, n_heads, hd, hd, c.data() + t * hd / 2, s.data() + t * hd / 2,
                  k::rope_pairing::neox);
    BOOST_TEST(kt::nmse(x, y) < 1e-13);
}
