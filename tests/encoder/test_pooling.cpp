// Pooling and embedding-normalisation kernels against the formulas written out
// directly (and against their scalar twins), plus the policies' modes.
#define BOOST_TEST_MODULE encoder_pooling
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/kernels/pooling.hpp"
#include "archetype/kernels/reference/pooling.hpp"
#include "archetype/policies/embd_norm.hpp"
#include "archetype/policies/pooling.hpp"

using namespace archetype;
namespace k = archetype::kernels;

namespace {
std::vector<float> random_rows(std::size_t n, std::size_t ld, unsigned seed) {
    std::mt19937 g(seed);
    std::normal_distribution<float> d(0.f, 1.5f);
    std::vector<float> v(n * ld);
    for (auto& x : v) x = d(g);
    return v;
}
} // namespace

BOOST_AUTO_TEST_CASE(pool_rows_direct_formulas) {
    const std::size_t n = 13, cols = 37, ld = 41; // ld > cols: padding columns must be ignored
    const auto x = random_rows(n, ld, 1);
    std::vector<float> y(cols), r(cols);
    k::pool_rows(k::pool_op::mean, x.data(), ld, n, cols, y.data());
    for (std::size_t c = 0; c < cols; ++c) {
        double s = 0;
        for (std::size_t i = 0; i < n; ++i) s += x[i * ld + c];
        BOOST_TEST(std::fabs(y[c] - s / n) <= 1e-6);
    }
    k::reference::mean_rows(x.data(), ld, n, cols, r.data());
    for (std::size_t c = 0; c < cols; ++c) BOOST_TEST(std::fabs(y[c] - r[c]) <= 1e-6f);

    k::pool_rows(k::pool_op::max, x.data(), ld, n, cols, y.data());
    k::reference::max_rows(x.data(), ld, n, cols, r.data());
    for (std::size_t c = 0; c < cols; ++c) {
        float m = -INFINITY;
        for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[i * ld + c]);
        BOOST_TEST(y[c] == m);
        BOOST_TEST(r[c] == m);
    }
    k::pool_rows(k::pool_op::first, x.data(), ld, n, cols, y.data());
    for (std::size_t c = 0; c < cols; ++c) BOOST_TEST(y[c] == x[c]);
    k::pool_rows(k::pool_op::last, x.data(), ld, n, cols, y.data());
    for (std::size_t c = 0; c < cols; ++c) BOOST_TEST(y[c] == x[(n - 1) * ld + c]);
    BOOST_CHECK_THROW(k::pool_rows(k::pool_op::mean, x.data(), ld, 0, cols, y.data()), argument_error);
}

BOOST_AUTO_TEST_CASE(normalize_direct_formulas) {
    const std::size_t n = 384;
    const auto x = random_rows(1, n, 7);
    std::vector<float> y(n), r(n);
    auto close = [](double a, double b, double tol) { return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b)); };

    k::embd_normalize(x.data(), y.data(), n, -1);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(y[i] == x[i]);

    double mx = 0;
    for (float v : x) mx = std::max(mx, double(std::fabs(v)));
    k::embd_normalize(x.data(), y.data(), n, 0);
    double ymax = 0;
    for (std::size_t i = 0; i < n; ++i) {
        BOOST_TEST(close(y[i], x[i] * 32760.0 / mx, 1e-6));
        ymax = std::max(ymax, double(std::fabs(y[i])));
    }
    BOOST_TEST(close(ymax, 32760.0, 1e-6)); // fits int16

    double l1 = 0;
    for (float v : x) l1 += std::fabs(v);
    k::embd_normalize(x.data(), y.data(), n, 1);
    double s1 = 0;
    for (std::size_t i = 0; i < n; ++i) { BOOST_TEST(close(y[i], x[i] / l1, 1e-6)); s1 += std::fabs(y[i]); }
    BOOST_TEST(close(s1, 1.0, 1e-5));

    double l2 = 0;
    for (float v : x) l2 += double(v) * v;
    l2 = std::sqrt(l2);
    k::embd_normalize(x.data(), y.data(), n, 2);
    double s2 = 0;
    for (std::size_t i = 0; i < n; ++i) { BOOST_TEST(close(y[i], x[i] / l2, 1e-6)); s2 += double(y[i]) * y[i]; }
    BOOST_TEST(close(s2, 1.0, 1e-5));

    for (int p : {3, 4, 7}) {
        double lp = 0;
        for (float v : x) lp += std::pow(std::fabs(double(v)), p);
        lp = std::pow(lp, 1.0 / p);
        k::embd_normalize(x.data(), y.data(), n, p);
        k::reference::embd_normalize(x.data(), r.data(), n, p);
        for (std::size_t i = 0; i < n; ++i) {
            BOOST_TEST(close(y[i], x[i] / lp, 1e-6));
            BOOST_TEST(close(r[i], x[i] / lp, 1e-6));
        }
    }
    for (int mode : {0, 1, 2}) {
        k::embd_normalize(x.data(), y.data(), n, mode);
        k::reference::embd_normalize(x.data(), r.data(), n, mode);
        for (std::size_t i = 0; i < n; ++i) BOOST_TEST(close(y[i], r[i], 1e-6));
    }
    // in place
    std::vector<float> z = x;
    k::embd_normalize(z.data(), z.data(), n, 2);
    k::embd_normalize(x.data(), y.data(), n, 2);
    BOOST_TEST(z == y);
}

BOOST_AUTO_TEST_CASE(normalize_zero_and_bad_mode) {
    std::vector<float> x(16, 0.f), y(16, 1.f);
    for (int mode : {0, 1, 2, 5}) {
        k::embd_normalize(x.data(), y.data(), x.size(), mode);
        for (float v : y) BOOST_TEST(v == 0.f);
    }
    BOOST_CHECK_THROW(k::embd_normalize(x.data(), y.data(), x.size(), -2), argument_error);
    BOOST_CHECK_THROW(k::reference::embd_normalize(x.data(), y.data(), x.size(), -7), argument_error);
}

BOOST_AUTO_TEST_CASE(policies) {
    static_assert(NoNormalize::mode == -1 && MaxAbsInt16::mode == 0 && L1Normalize::mode == 1 &&
                  L2Normalize::mode == 2 && PNormalize<3>::mode == 3);
    static_assert(std::is_same_v<axis_of_t<PNormalize<5>>, axis::embd_norm>);
    static_assert(MeanPooling::type == pooling_type::mean && ClsPooling::type == pooling_type::cls &&
                  LastPooling::type == pooling_type::last && MaxPooling::type == pooling_type::max &&
                  RankPooling::type == pooling_type::rank && NoPooling::type == pooling_type::none);
    static_assert(Policy<MaxPooling> && Policy<PoolingFromFile> && Policy<L1Normalize>);
    BOOST_TEST((pooling_from_name("max") == pooling_type::max));
    BOOST_TEST((pooling_from_name("cls") == pooling_type::cls));
    BOOST_TEST(!pooling_from_name("avg").has_value());
    BOOST_TEST((pooling_from_file_value(1) == pooling_type::mean));
    BOOST_TEST(!pooling_from_file_value(5).has_value());
    BOOST_TEST(!pooling_from_file_value(-1).has_value());
    BOOST_TEST(PNormalize<3>::describe() == "PNormalize<3>");
}
