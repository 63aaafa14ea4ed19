#define BOOST_TEST_MODULE half
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "archetype/core/half.hpp"

using namespace archetype;

// Reference: the exact value of a half is sign * 2^(e-15) * (1 + m/1024) (or subnormal).
static double half_value(std::uint16_t h) {
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

BOOST_AUTO_TEST_CASE(every_finite_half_round_trips_and_has_its_exact_value) {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const auto e = (h >> 10) & 31;
        if (e == 31) continue;
        const float f = fp16_to_fp32(std::uint16_t(h));
        BOOST_REQUIRE_EQUAL(double(f), half_value(std::uint16_t(h)));
        BOOST_REQUIRE_EQUAL(fp32_to_fp16(f), std::uint16_t(h));
    }
}

BOOST_AUTO_TEST_CASE(fp32_to_fp16_rounds_to_nearest_even) {
    // Against a brute-force nearest search over all finite halves, on a sweep of floats.
    for (std::uint32_t k = 0; k < 200000; ++k) {
        const std::uint32_t bits = 0x33000000u + k * 0x5555u; // spans subnormal to overflow
        const float f = std::bit_cast<float>(bits);
        if (!(f < 65504.f)) break;
        const std::uint16_t h = fp32_to_fp16(f);
        const double got = half_value(h);
        // neighbours
        const double up = half_value(std::uint16_t(h + 1)), down = h ? half_value(std::uint16_t(h - 1)) : -1;
        BOOST_REQUIRE_LE(std::abs(got - f), std::abs(up - f));
        if (h) BOOST_REQUIRE_LE(std::abs(got - f), std::abs(down - f));
    }
    BOOST_TEST(fp32_to_fp16(70000.f) == 0x7C00);
    BOOST_TEST(fp32_to_fp16(-70000.f) == 0xFC00);
    BOOST_TEST(std::isnan(fp16_to_fp32(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
}

BOOST_AUTO_TEST_CASE(bf16_round_to_nearest_even) {
    BOOST_TEST(fp32_to_bf16(1.0f) == 0x3F80);
    BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F808000u)) == 0x3F80); // tie -> even
    BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F818000u)) == 0x3F82); // tie -> even (up)
    BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F808001u)) == 0x3F81);
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = bf16_to_fp32(std::uint16_t(h));
        if (std::isnan(f)) continue;
        BOOST_REQUIRE_EQUAL(fp32_to_bf16(f), std::uint16_t(h));
    }
}
