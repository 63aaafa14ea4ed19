#define BOOST_TEST_MODULE kernels_convert
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/reference/convert.hpp"

namespace k = archetype::kernels;
namespace ref = archetype::kernels::reference;

namespace {
std::vector<std::uint16_t> all_halves() {
    std::vector<std::uint16_t> h(65536);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = std::uint16_t(i);
    return h;
}
// Floats that hit every rounding case: all halves, their midpoints and neighbours,
// overflow edges, NaNs with payloads, and random bit patterns.
std::vector<float> probe_floats() {
    std::vector<float> f;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const std::uint32_t b = std::bit_cast<std::uint32_t>(archetype::fp16_to_fp32(std::uint16_t(i)));
        for (std::uint32_t d : {0u, 1u, 0xFFFu, 0x1000u, 0x1001u}) f.push_back(std::bit_cast<float>(b + d));
        f.push_back(std::bit_cast<float>(b - 1));
    }
    std::mt19937 g(1);
    for (int i = 0; i < 200000; ++i) f.push_back(std::bit_cast<float>(std::uint32_t(g())));
    f.push_back(std::bit_cast<float>(0x7FC00001u));
    f.push_back(std::bit_cast<float>(0xFF800123u));
    return f;
}
} // namespace

BOOST_AUTO_TEST_CASE(f16_to_f32_all_halves_bit_exact) {
    const auto h = all_halves();
    for (std::size_t off : {0u, 1u, 7u}) { // misaligned starts and tails
        std::vector<float> a(h.size() - off), b(h.size() - off);
        k::f16_to_f32(h.data() + off, a.data(), a.size());
        ref::f16_to_f32(h.data() + off, b.data(), b.size());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < a.size(); ++i)
            bad += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
        BOOST_TEST(bad == 0u, "f16_to_f32 offset " << off << ": " << bad << " mismatches");
    }
}

BOOST_AUTO_TEST_CASE(f32_to_f16_bit_exact) {
    const auto f = probe_floats();
    std::vector<std::uint16_t> a(f.size()), b(f.size());
    k::f32_to_f16(f.data(), a.data(), f.size());
    ref::f32_to_f16(f.data(), b.data(), f.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < a.size(); ++i) bad += a[i] != b[i];
    BOOST_TEST(bad == 0u, bad << " mismatches");
    // round trip of every half that is not NaN
    const auto h = all_halves();
    std::vector<float> x(h.size());
    std::vector<std::uint16_t> back(h.size());
    k::f16_to_f32(h.data(), x.data(), h.size());
    k::f32_to_f16(x.data(), back.data(), h.size());
    for (std::size_t i = 0; i < h.size(); ++i)
        if ((h[i] & 0x7FFF) <= 0x7C00 && back[i] != h[i]) BOOST_FAIL("round trip of half " << h[i]);
}

BOOST_AUTO_TEST_CASE(bf16_bit_exact) {
    const auto h = all_halves();
    std::vector<float> a(h.size()), b(h.size());
    k::bf16_to_f32(h.data(), a.data(), h.size());
    ref::bf16_to_f32(h.data(), b.data(), h.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        bad += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
    BOOST_TEST(bad == 0u);
    const auto f = probe_floats();
    std::vector<std::uint16_t> x(f.size()), y(f.size());
    k::f32_to_bf16(f.data(), x.data(), f.size());
    ref::f32_to_bf16(f.data(), y.data(), f.size());
    bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) bad += x[i] != y[i];
    BOOST_TEST(bad == 0u, bad << " mismatches");
}
