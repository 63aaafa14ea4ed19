// kernels::matmul_batch, the one-dispatch form of several single-token
// products that RWKV's decode step uses (r/k/v/g, the ddlerp LoRA, channel-mix
// key and receptance): bitwise equal to separate kernels::matmul calls for any
// thread count, within float rounding of a double-precision scalar product,
// and the per-matmul fallback for several tokens or mixed weight types.
#define BOOST_TEST_MODULE rwkv_matmul_batch
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/matmul.hpp"

using namespace archetype;

namespace {

struct mat {
    std::vector<float> f32;         // the values (already F16-rounded for F16 matrices)
    std::vector<std::uint16_t> f16; // their F16 bits
    kernels::weight_view view;
};

mat make(std::size_t rows, std::size_t cols, bool half, unsigned seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    mat m;
    m.f32.resize(rows * cols);
    if (half) m.f16.resize(rows * cols);
    for (std::size_t i = 0; i < rows * cols; ++i) {
        if (half) {
            m.f16[i] = fp32_to_fp16(d(g));
            m.f32[i] = fp16_to_fp32(m.f16[i]);
        } else {
            m.f32[i] = d(g);
        }
    }
    m.view.type = half ? ggml_type::F16 : ggml_type::F32;
    m.view.data = half ? static_cast<const void*>(m.f16.data()) : static_cast<const void*>(m.f32.data());
    m.view.rows = rows;
    m.view.cols = cols;
    return m;
}

std::vector<float> random_vec(std::size_t n, unsigned seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    std::vector<float> v(n);
    for (auto& x : v) x = d(g);
    return v;
}

/// n_tok products per task, batched and separately; checks bitwise equality and the scalar reference.
void check(const std::vector<std::size_t>& rows, std::size_t cols, const std::vector<bool>& half, std::size_t n_tok,
           thread_pool* pool) {
    std::vector<mat> ms;
    std::vector<std::vector<float>> xs, ys, want;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        ms.push_back(make(rows[i], cols, half[i], unsigned(10 + i)));
        xs.push_back(random_vec(n_tok * cols, unsigned(100 + i)));
        ys.emplace_back(n_tok * rows[i], -7.f);
        want.emplace_back(n_tok * rows[i], -9.f);
    }
    std::vector<kernels::matmul_task> tasks;
    for (std::size_t i = 0; i < ms.size(); ++i)
        tasks.push_back({&ms[i].view, xs[i].data(), cols, ys[i].data(), rows[i]});
    kernels::matmul_batch(tasks, n_tok, pool);
    for (std::size_t i = 0; i < ms.size(); ++i) {
        kernels::matmul(ms[i].view, xs[i].data(), cols, n_tok, want[i].data(), rows[i], pool);
        for (std::size_t t = 0; t < n_tok; ++t)
            for (std::size_t r = 0; r < rows[i]; ++r) {
                const float got = ys[i][t * rows[i] + r];
                BOOST_TEST(got == want[i][t * rows[i] + r]); // bitwise: same kernel path per row group
                double ref = 0, mag = 0;
                for (std::size_t c = 0; c < cols; ++c) {
                    ref += double(xs[i][t * cols + c]) * double(ms[i].f32[r * cols + c]);
                    mag += std::fabs(double(xs[i][t * cols + c]) * double(ms[i].f32[r * cols + c]));
                }
                BOOST_TEST(std::fabs(double(got) - ref) <= 1e-6 * mag + 1e-30);
            }
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(batched_gemv_equals_separate_calls) {
    thread_pool p2(2), p3(3);
    for (thread_pool* pool : {static_cast<thread_pool*>(nullptr), &p2, &p3}) {
        // rows not multiples of the 8-row group, K not a multiple of the SIMD width
        check({13, 64, 5, 1}, 100, {true, true, true, true}, 1, pool);
        check({13, 64, 5, 1}, 100, {false, false, false, false}, 1, pool);
        check({768, 768, 768, 768}, 64, {true, true, true, true}, 1, pool);
        check({40, 40, 40, 40, 40}, 32, {false, false, false, false, false}, 1, pool);
        // more than the 8 tasks held without allocation
        check(std::vector<std::size_t>(11, 9), 48, std::vector<bool>(11, true), 1, pool);
    }
}

BOOST_AUTO_TEST_CASE(fallback_for_several_tokens_and_mixed_types) {
    thread_pool p2(2);
    check({13, 64, 5}, 100, {true, true, true}, 3, &p2);
    check({13, 64, 5}, 100, {true, false, true}, 1, &p2);
    check({13, 64}, 64, {false, true}, 20, &p2);
}

BOOST_AUTO_TEST_CASE(rejects_bad_weights) {
    mat m = make(4, 32, false, 1);
    m.view.type = ggml_type::Q4_K; // 32 columns is not a multiple of its 256-value block
    std::vector<float> x(32), y(4);
    const kernels::matmul_task t{&m.view, x.data(), 32, y.data(), 4};
    BOOST_CHECK_THROW(kernels::matmul_batch(std::span(&t, 1), 1), argument_error);
}
