// AWQ4 (AutoAWQ's int4 groups as archetype repacks them, kernels/quant/blocks.hpp) and
// its float-activation kernel (kernels/quant/awq4_gemv.hpp), at the level this file is
// compiled for (tests/isa compiles it once per level): dequantisation bit for bit against
// a scalar reference written from the layout, the products against double sums of the
// exact weights, and bitwise independence of tokens, rows and threads.
#define BOOST_TEST_MODULE awq4
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/decode_rows.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/quant/awq4_gemv.hpp"
#include "archetype/kernels/quant/dequantize.hpp"

using archetype::ggml_type;
namespace k = archetype::kernels;
namespace q = archetype::quant;

namespace {

/// rows x cols/32 random blocks: F16 scales of both signs over several binades (some
/// subnormal), every zero point 0..15, random nibbles.
std::vector<std::uint8_t> random_blocks(std::size_t rows, std::size_t cols, std::mt19937& g) {
    std::vector<std::uint8_t> w(rows * cols / 32 * 19);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::uniform_int_distribution<int> byte(0, 255), zero(0, 15), binade(-16, 2);
    for (std::size_t b = 0; b < w.size() / 19; ++b) {
        std::uint8_t* p = w.data() + 19 * b;
        const float d = u(g) * std::ldexp(1.f, binade(g));
        q::store_f16(p, d);
        p[2] = std::uint8_t(zero(g) | (b % 7 == 0 ? 0xF0 : 0)); // high bits: ignored by every reader
        for (int j = 0; j < 16; ++j) p[3 + j] = std::uint8_t(byte(g));
    }
    return w;
}

/// Element j of block p, from the layout (blocks.hpp), in double.
double element(const std::uint8_t* p, std::size_t j) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    const double d = archetype::fp16_to_fp32(h);
    const int nib = j < 16 ? p[3 + j] & 15 : p[3 + j - 16] >> 4;
    return d * (nib - int(p[2] & 15)); // the zero point is the low 4 bits of its byte
}

std::vector<float> random_x(std::size_t n, std::mt19937& g) {
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> x(n);
    for (auto& v : x) v = nd(g);
    return x;
}

} // namespace

BOOST_AUTO_TEST_CASE(traits_and_names) {
    BOOST_TEST_MESSAGE("awq4 kernel level: " << q::awq4::level);
    BOOST_TEST(archetype::traits_of(ggml_type::AWQ4).block_size == 32u);
    BOOST_TEST(archetype::traits_of(ggml_type::AWQ4).type_size == 19u);
    BOOST_TEST(archetype::type_name(ggml_type::AWQ4) == "AWQ4");
    BOOST_TEST((archetype::type_from_name("awq4") == ggml_type::AWQ4));
    BOOST_TEST(archetype::traits_of(200u).has_value());
    BOOST_TEST(!archetype::traits_of(199u).has_value());
    BOOST_TEST(q::is_supported(ggml_type::AWQ4));
#if defined(__AVX512F__)
    BOOST_TEST(std::string(q::awq4::level) == "avx512");
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    BOOST_TEST(std::string(q::awq4::level) == "avx2");
#elif defined(__aarch64__)
    BOOST_TEST(std::string(q::awq4::level) == "neon");
#else
    BOOST_TEST(std::string(q::awq4::level) == "generic");
#endif
}

BOOST_AUTO_TEST_CASE(dequantize_is_exact) {
    std::mt19937 g(1);
    const std::size_t cols = 32 * 9;
    const auto w = random_blocks(5, cols, g);
    std::vector<float> out(cols);
    for (std::size_t r = 0; r < 5; ++r) {
        q::dequantize_row(ggml_type::AWQ4, w.data() + r * cols / 32 * 19, out.data(), cols);
        for (std::size_t i = 0; i < cols; ++i) {
            const double want = element(w.data() + (r * cols / 32 + i / 32) * 19, i % 32);
            BOOST_TEST(double(out[i]) == want, "row " << r << " element " << i);
        }
    }
    // a block by hand: d = 0.5, z = 3, byte 0 = 0x7A: element 0 = (10 - 3) / 2, element 16 = (7 - 3) / 2
    std::uint8_t b[19] = {};
    q::store_f16(b, 0.5f);
    b[2] = 3;
    b[3] = 0x7A;
    float y[32];
    q::dequantize_row(ggml_type::AWQ4, b, y, 32);
    BOOST_TEST(y[0] == 3.5f);
    BOOST_TEST(y[16] == 2.0f);
    BOOST_TEST(y[1] == -1.5f);
    BOOST_CHECK_THROW(q::dequantize_row(ggml_type::AWQ4, b, y, 31), archetype::argument_error);
}

BOOST_AUTO_TEST_CASE(matmul_matches_double_sums) {
    std::mt19937 g(2);
    archetype::thread_pool pool(3);
    for (std::size_t rows : {1u, 3u, 4u, 7u, 13u, 64u})
        for (std::size_t cols : {32u, 96u, 544u})
            for (std::size_t n_tok : {1u, 2u, 3u, 5u, 7u, 8u, 17u}) {
                const auto w = random_blocks(rows, cols, g);
                const std::size_t ldx = cols + 3, ldy = rows + 2;
                const auto x = random_x(n_tok * ldx, g);
                std::vector<float> y(n_tok * ldy, -7.f);
                const k::weight_view W{ggml_type::AWQ4, w.data(), rows, cols};
                k::matmul(W, x.data(), ldx, n_tok, y.data(), ldy, &pool);
                int bad = 0;
                for (std::size_t t = 0; t < n_tok; ++t)
                    for (std::size_t r = 0; r < rows; ++r) {
                        double ref = 0, mag = 0;
                        for (std::size_t i = 0; i < cols; ++i) {
                            const double wi = element(w.data() + (r * cols / 32 + i / 32) * 19, i % 32);
                            ref += wi * x[t * ldx + i];
                            mag += std::abs(wi * x[t * ldx + i]);
                        }
                        // float sums of `cols` exact products: within cols * 2^-24 of their magnitude
                        if (std::abs(y[t * ldy + r] - ref) > double(cols) * 0x1p-24 * mag + 1e-30) ++bad;
                    }
                BOOST_TEST(bad == 0, rows << " x " << cols << ", " << n_tok << " tokens");
                for (std::size_t t = 0; t < n_tok; ++t) // untouched padding of y
                    for (std::size_t r = rows; r < ldy; ++r) BOOST_TEST(y[t * ldy + r] == -7.f);
            }
}

BOOST_AUTO_TEST_CASE(tokens_rows_and_threads_do_not_change_the_bits) {
    std::mt19937 g(3);
    const std::size_t rows = 23, cols = 32 * 37;
    const auto w = random_blocks(rows, cols, g);
    const k::weight_view W{ggml_type::AWQ4, w.data(), rows, cols};
    const auto x = random_x(7 * cols, g);
    // one token at a time, one thread
    std::vector<float> single(7 * rows);
    for (std::size_t t = 0; t < 7; ++t) k::matmul(W, x.data() + t * cols, cols, 1, single.data() + t * rows, rows);
    for (std::size_t threads : {1u, 2u, 3u}) {
        archetype::thread_pool pool(threads);
        for (std::size_t n_tok = 1; n_tok <= 7; ++n_tok) {
            std::vector<float> y(n_tok * rows);
            k::matmul(W, x.data(), cols, n_tok, y.data(), rows, &pool);
            BOOST_TEST(std::memcmp(y.data(), single.data(), y.size() * 4) == 0, threads << " threads, " << n_tok << " tokens");
        }
        // one row at a time (the groups of 4 and the tail give the same bits)
        for (std::size_t r = 0; r < rows; ++r) {
            float y1;
            const k::weight_view R{ggml_type::AWQ4, w.data() + r * cols / 32 * 19, 1, cols};
            k::matmul(R, x.data() + cols, cols, 1, &y1, 1, &pool);
            BOOST_TEST(std::memcmp(&y1, &single[rows + r], 4) == 0, "row " << r);
        }
    }
    // the int8 batch mode does not apply: AWQ's numerics are float activations
    {
        const k::batch_activations_scope int8(k::batch_activations::int8);
        std::vector<float> y(7 * rows);
        k::matmul(W, x.data(), cols, 7, y.data(), rows);
        BOOST_TEST(std::memcmp(y.data(), single.data(), y.size() * 4) == 0);
    }
    // fused products (matmul_batch) are each product's matmul
    std::vector<float> a(rows), b(rows);
    const k::matmul_task tasks[] = {{&W, x.data(), cols, a.data(), rows}, {&W, x.data(), cols, b.data(), rows}};
    k::matmul_batch(tasks, 1);
    BOOST_TEST(std::memcmp(a.data(), single.data(), rows * 4) == 0);
    BOOST_TEST(std::memcmp(b.data(), single.data(), rows * 4) == 0);
}

BOOST_AUTO_TEST_CASE(a_batch_of_eight_or_more_is_the_exact_product_too) {
    // the panels (dequantised rows, F32 GEMM): a different order of float sums, same bound
    std::mt19937 g(4);
    const std::size_t rows = 40, cols = 256, n_tok = 12;
    const auto w = random_blocks(rows, cols, g);
    const k::weight_view W{ggml_type::AWQ4, w.data(), rows, cols};
    const auto x = random_x(n_tok * cols, g);
    std::vector<float> batch(n_tok * rows), one(n_tok * rows);
    k::matmul(W, x.data(), cols, n_tok, batch.data(), rows);
    for (std::size_t t = 0; t < n_tok; ++t) k::matmul(W, x.data() + t * cols, cols, 1, one.data() + t * rows, rows);
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        worst = std::max(worst, double(std::abs(batch[i] - one[i])));
        scale = std::max(scale, double(std::abs(one[i])));
    }
    BOOST_TEST(worst <= 1e-5 * scale);
    // with rows bitwise batch-invariant (decode_rows.hpp) the batch takes the one-token kernel
    {
        const k::decode_rows_invariant_scope inv(true);
        std::vector<float> y(n_tok * rows);
        k::matmul(W, x.data(), cols, n_tok, y.data(), rows);
        BOOST_TEST(std::memcmp(y.data(), one.data(), y.size() * 4) == 0);
    }
}
