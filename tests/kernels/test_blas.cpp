#define BOOST_TEST_MODULE kernels_blas
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include "archetype/core/half.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/reference/blas.hpp"
#include "kernel_test_util.hpp"

namespace k = archetype::kernels;
namespace ref = archetype::kernels::reference;

namespace {
// Built twice: test_blas_threads uses real 2- and 3-thread pools; test_blas
// (KT_SINGLE_THREAD) runs the same cases with 1-thread pools.
#ifdef KT_SINGLE_THREAD
constexpr std::size_t t2 = 1, t3 = 1;
#else
constexpr std::size_t t2 = 2, t3 = 3;
#endif
std::vector<std::uint16_t> to_f16(const std::vector<float>& v) {
    std::vector<std::uint16_t> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) h[i] = archetype::fp32_to_fp16(v[i]);
    return h;
}
} // namespace

BOOST_AUTO_TEST_CASE(dot_axpy_sizes) {
    for (std::size_t n : kt::sizes) {
        const auto a = kt::random_vec(n, 1), b = kt::random_vec(n, 2);
        const float r = ref::dot(a.data(), b.data(), n);
        const float v = k::dot(a.data(), b.data(), n);
        BOOST_TEST(std::abs(v - r) <= 1e-5f * float(n), "dot n=" << n << " " << v << " vs " << r);
        const auto bh = to_f16(b);
        const float rh = ref::dot_f16(a.data(), bh.data(), n);
        const float vh = k::dot_f16(a.data(), bh.data(), n);
        BOOST_TEST(std::abs(vh - rh) <= 1e-5f * float(n), "dot_f16 n=" << n << " " << vh << " vs " << rh);
        auto y1 = kt::random_vec(n, 3), y2 = y1;
        k::axpy(n, 0.37f, a.data(), y1.data());
        ref::axpy(n, 0.37f, a.data(), y2.data());
        BOOST_TEST(kt::nmse(y1, y2) < 1e-12, "axpy n=" << n);
    }
}

BOOST_AUTO_TEST_CASE(gemv_sizes_and_threads) {
    archetype::thread_pool pool2(t2), pool3(t3);
    for (std::size_t M : {1u, 7u, 63u, 64u, 65u, 1000u})
        for (std::size_t K : kt::sizes) {
            if (M * K > 1'500'000) continue;
            const std::size_t lda = K + (M % 3); // odd leading dims
            const auto A = kt::random_vec(M * lda, 4), x = kt::random_vec(K, 5);
            std::vector<float> y(M), y2(M), y3(M), yr(M);
            ref::gemv(A.data(), lda, x.data(), yr.data(), M, K);
            k::gemv(A.data(), lda, x.data(), y.data(), M, K);
            BOOST_TEST(kt::nmse(y, yr) < 1e-11, "gemv M=" << M << " K=" << K);
            k::gemv(A.data(), lda, x.data(), y2.data(), M, K, &pool2);
            k::gemv(A.data(), lda, x.data(), y3.data(), M, K, &pool3);
            BOOST_TEST(kt::max_rel(y2, y) <= 1e-6, "gemv threads M=" << M << " K=" << K);
            BOOST_TEST(kt::max_rel(y3, y) <= 1e-6, "gemv threads M=" << M << " K=" << K);
            const auto Ah = to_f16(A);
            ref::gemv_f16(Ah.data(), lda, x.data(), yr.data(), M, K);
            k::gemv_f16(Ah.data(), lda, x.data(), y.data(), M, K, &pool2);
            BOOST_TEST(kt::nmse(y, yr) < 1e-11, "gemv_f16 M=" << M << " K=" << K);
        }
}

BOOST_AUTO_TEST_CASE(gemm_shapes) {
    archetype::thread_pool pool2(t2), pool3(t3);
    const std::size_t dims[] = {1, 2, 7, 13, 29, 64, 65, 97, 300};
    const std::size_t ks[] = {1, 7, 16, 63, 65, 257, 600};
    for (std::size_t M : dims)
        for (std::size_t N : dims)
            for (std::size_t K : ks) {
                const std::size_t lda = K + 3, ldb = K + 1, ldc = N + 5;
                const auto A = kt::random_vec(M * lda, unsigned(M * 7 + K));
                const auto B = kt::random_vec(N * ldb, unsigned(N * 13 + K));
                const auto C0 = kt::random_vec(M * ldc, 9);
                std::vector<float> C = C0, Cr = C0, C2 = C0, C3 = C0;
                ref::gemm_nt(A.data(), lda, B.data(), ldb, Cr.data(), ldc, M, N, K);
                k::gemm_nt(A.data(), lda, B.data(), ldb, C.data(), ldc, M, N, K);
                BOOST_TEST(kt::nmse(C, Cr) < 1e-11, "gemm M=" << M << " N=" << N << " K=" << K);
                k::gemm_nt(A.data(), lda, B.data(), ldb, C2.data(), ldc, M, N, K, &pool2);
                k::gemm_nt(A.data(), lda, B.data(), ldb, C3.data(), ldc, M, N, K, &pool3);
                BOOST_TEST(kt::max_rel(C2, C) <= 1e-6, "gemm threads M=" << M << " N=" << N << " K=" << K);
                BOOST_TEST(kt::max_rel(C3, C) <= 1e-6, "gemm threads M=" << M << " N=" << N << " K=" << K);
                // accumulate, and the padding between rows (ldc > N) left untouched
                std::vector<float> Ca = C0, Cra = C0;
                ref::gemm_nt(A.data(), lda, B.data(), ldb, Cra.data(), ldc, M, N, K, true);
                k::gemm_nt(A.data(), lda, B.data(), ldb, Ca.data(), ldc, M, N, K, &pool2, true);
                BOOST_TEST(kt::nmse(Ca, Cra) < 1e-11, "gemm acc M=" << M << " N=" << N << " K=" << K);
                bool pad_ok = true;
                for (std::size_t i = 0; i < M; ++i)
                    for (std::size_t j = N; j < ldc; ++j) pad_ok = pad_ok && C[i * ldc + j] == C0[i * ldc + j];
                BOOST_TEST(pad_ok, "gemm wrote past N: M=" << M << " N=" << N << " K=" << K);
                // the packed engine summing in blocks of KSUM steps: same bounds, thread-count
                // independent, accumulate, and (K < KSUM or the row-dot engine) the chain's bits
                std::vector<float> Cb = C0, Cb3 = C0, Cba = C0;
                k::gemm_nt(A.data(), lda, B.data(), ldb, Cb.data(), ldc, M, N, K, nullptr, false, k::gemm_sum::blocks);
                k::gemm_nt(A.data(), lda, B.data(), ldb, Cb3.data(), ldc, M, N, K, &pool3, false, k::gemm_sum::blocks);
                k::gemm_nt(A.data(), lda, B.data(), ldb, Cba.data(), ldc, M, N, K, &pool2, true, k::gemm_sum::blocks);
                BOOST_TEST(kt::nmse(Cb, Cr) < 1e-11, "gemm blocks M=" << M << " N=" << N << " K=" << K);
                BOOST_TEST(kt::max_rel(Cb3, Cb) <= 1e-6, "gemm blocks threads M=" << M << " N=" << N << " K=" << K);
                BOOST_TEST(kt::nmse(Cba, Cra) < 1e-11, "gemm blocks acc M=" << M << " N=" << N << " K=" << K);
                if ((K <= k::detail::KSUM && !k::detail::blocks_take_rowdot) || !k::detail::use_packed(M) ||
                    K < k::detail::W)
                    BOOST_TEST(Cb == C, "gemm blocks != chain for one block M=" << M << " N=" << N << " K=" << K);
                if (k::detail::blocks_take_rowdot) {
                    // no fused multiply-add (the generic level): blocks are GEMV's arithmetic, so
                    // each row of the batch is bitwise that row alone
                    bool rows_alone = true;
                    for (std::size_t i = 0; i < M; ++i) {
                        std::vector<float> row(N);
                        k::gemm_nt(A.data() + i * lda, lda, B.data(), ldb, row.data(), N, 1, N, K, nullptr, false,
                                   k::gemm_sum::blocks);
                        for (std::size_t j = 0; j < N; ++j) rows_alone = rows_alone && row[j] == Cb[i * ldc + j];
                    }
                    BOOST_TEST(rows_alone, "gemm blocks without FMA != row alone M=" << M << " N=" << N << " K=" << K);
                }
            }
}

BOOST_AUTO_TEST_CASE(gemm_f16_shapes) {
    archetype::thread_pool pool2(t2);
    const std::size_t dims[] = {1, 7, 31, 64, 130};
    const std::size_t ks[] = {1, 15, 64, 300};
    for (std::size_t M : dims)
        for (std::size_t N : dims)
            for (std::size_t K : ks) {
                const std::size_t lda = K + 1, ldb = K + 2, ldc = N;
                const auto A = kt::random_vec(M * lda, 11);
                const auto B = to_f16(kt::random_vec(N * ldb, 12));
                std::vector<float> C(M * ldc), Cr(M * ldc), C2(M * ldc);
                ref::gemm_nt_f16(A.data(), lda, B.data(), ldb, Cr.data(), ldc, M, N, K);
                k::gemm_nt_f16(A.data(), lda, B.data(), ldb, C.data(), ldc, M, N, K);
                k::gemm_nt_f16(A.data(), lda, B.data(), ldb, C2.data(), ldc, M, N, K, &pool2);
                BOOST_TEST(kt::nmse(C, Cr) < 1e-11, "gemm_f16 M=" << M << " N=" << N << " K=" << K);
                BOOST_TEST(kt::max_rel(C2, C) <= 1e-6, "gemm_f16 threads M=" << M << " N=" << N << " K=" << K);
                std::vector<float> Cb(M * ldc);
                k::gemm_nt_f16(A.data(), lda, B.data(), ldb, Cb.data(), ldc, M, N, K, &pool2, false,
                               k::gemm_sum::blocks);
                BOOST_TEST(kt::nmse(Cb, Cr) < 1e-11, "gemm_f16 blocks M=" << M << " N=" << N << " K=" << K);
            }
}

BOOST_AUTO_TEST_CASE(gemm_large_blocks) {
    // Crosses the KC and NC block edges and the row/column split choice.
    // M = 131 takes the small-M order (A packed once, B streamed per panel);
    // M = 300 the large-M order, crossing the N blocks as well.
    archetype::thread_pool pool2(t2);
    for (const std::size_t M : {std::size_t{131}, std::size_t{300}}) {
        const std::size_t N = 4100, K = 530;
        const auto A = kt::random_vec(M * K, 21), B = kt::random_vec(N * K, 22);
        std::vector<float> C(M * N), Cr(M * N), C2(M * N);
        ref::gemm_nt(A.data(), K, B.data(), K, Cr.data(), N, M, N, K);
        k::gemm_nt(A.data(), K, B.data(), K, C.data(), N, M, N, K);
        k::gemm_nt(A.data(), K, B.data(), K, C2.data(), N, M, N, K, &pool2);
        BOOST_TEST(kt::nmse(C, Cr) < 1e-11, "M=" << M);
        BOOST_TEST(kt::max_rel(C2, C) <= 1e-6, "M=" << M);
        std::vector<float> Cb(M * N), Cb2(M * N);
        k::gemm_nt(A.data(), K, B.data(), K, Cb.data(), N, M, N, K, nullptr, false, k::gemm_sum::blocks);
        k::gemm_nt(A.data(), K, B.data(), K, Cb2.data(), N, M, N, K, &pool2, false, k::gemm_sum::blocks);
        BOOST_TEST(kt::nmse(Cb, Cr) < 1e-11, "blocks M=" << M);
        BOOST_TEST(kt::max_rel(Cb2, Cb) <= 1e-6, "blocks M=" << M);
    }
}

BOOST_AUTO_TEST_CASE(gemm_blocks_error_is_gemv_like) {
    // Sums whose terms cancel (sum ~ 1 over terms ~ 100): the packed engine's one chain
    // per slab rounds a large running sum K times; blocks of KSUM steps keep it near the
    // row-dot engine's (GEMV) error. Mean |error| over many outputs, against double.
    const std::size_t M = 64, N = 64, K = 256;
    auto A = kt::random_vec(M * K, 31), B = kt::random_vec(N * K, 32);
    for (auto& a : A) a *= 100.f;
    std::vector<float> Cc(M * N), Cb(M * N), Cg(M * N), Cr(M * N);
    k::gemm_nt(A.data(), K, B.data(), K, Cc.data(), N, M, N, K);
    k::gemm_nt(A.data(), K, B.data(), K, Cb.data(), N, M, N, K, nullptr, false, k::gemm_sum::blocks);
    for (std::size_t i = 0; i < M; ++i) k::gemv(B.data(), K, A.data() + i * K, Cg.data() + i * N, N, K);
    double ec = 0, eb = 0, eg = 0;
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < N; ++j) {
            double r = 0;
            for (std::size_t p = 0; p < K; ++p) r += double(A[i * K + p]) * double(B[j * K + p]);
            ec += std::abs(Cc[i * N + j] - r);
            eb += std::abs(Cb[i * N + j] - r);
            eg += std::abs(Cg[i * N + j] - r);
        }
    BOOST_TEST_MESSAGE("mean |error|: chain " << ec / double(M * N) << ", blocks " << eb / double(M * N)
                                                << ", gemv " << eg / double(M * N));
    BOOST_TEST(eb < 0.7 * ec);
    BOOST_TEST(eb < 1.5 * eg);
}
