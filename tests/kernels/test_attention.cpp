// kernels/attention.hpp against its scalar twin (kernels/reference/attention.hpp):
// prefill blocks and single-row decode (chunked keys), GQA groups, causal and
// windowed visibility with key ranges, additive bias, a float and a half K/V store;
// and row_scores (decode scores) against double-precision dot products.
#define BOOST_TEST_MODULE attention
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/reference/attention.hpp"
#include "archetype/layers/attention.hpp"
#include "kernel_test_util.hpp"

namespace k = archetype::kernels;

namespace {
struct problem {
    std::size_t n_head, n_head_kv, hd, n_q, n_kv;
    std::int64_t window = 0; // 0: causal only
    bool bias = false, half = false;
    std::int64_t sink = 0;   // with a window: keys before it stay visible
    float softcap = 0.f;     // scores softcap * tanh(s / softcap) (Gemma 2)
};

// Query row i sits at position n_kv - n_q + i; key j at position j (a cache plus the block).
// Returns the kernel's output.
std::vector<float> check(const problem& pr, archetype::thread_pool* pool, unsigned seed) {
    const std::size_t qw = pr.n_head * pr.hd, kw = pr.n_head_kv * pr.hd;
    auto q = kt::random_vec(pr.n_q * qw, seed);
    auto kf = kt::random_vec(pr.n_kv * kw, seed + 1);
    auto vf = kt::random_vec(pr.n_kv * kw, seed + 2);
    std::vector<std::uint16_t> k16(kf.size()), v16(vf.size());
    if (pr.half) {
        // the half store holds the rounded values; the float copies hold the same values
        for (std::size_t i = 0; i < kf.size(); ++i) {
            k16[i] = archetype::fp32_to_fp16(kf[i]);
            v16[i] = archetype::fp32_to_fp16(vf[i]);
        }
    }
    auto bias = kt::random_vec(pr.n_head * pr.n_q * pr.n_kv, seed + 3, -2.f, 2.f);
    const std::int64_t p0 = std::int64_t(pr.n_kv - pr.n_q);
    // The decoder's mask: with row spans (the kernel masks by ranges) and, the same
    // rule, as a plain predicate (checked per key).
    const archetype::layers::cell_visibility spans{{pr.window, pr.sink}, p0, 0};
    static_assert(k::has_row_span<archetype::layers::cell_visibility>);
    auto visible = [&](std::size_t i, std::size_t j) { return spans(i, j); };
    auto range = [&](std::size_t i0, std::size_t i1, std::size_t n) {
        std::int64_t lo = pr.window && !pr.sink ? std::max<std::int64_t>(0, p0 + std::int64_t(i0) - pr.window + 1) : 0;
        const std::int64_t hi = std::min<std::int64_t>(std::int64_t(n), p0 + std::int64_t(i1));
        return std::pair<std::size_t, std::size_t>(std::size_t(std::min(lo, hi)), std::size_t(hi));
    };
    k::attention_params p;
    p.n_head = pr.n_head;
    p.n_head_kv = pr.n_head_kv;
    p.head_dim = pr.hd;
    p.scale = 1.f / std::sqrt(float(pr.hd));
    p.softcap = pr.softcap;
    p.q = q.data();
    p.ldq = qw;
    p.n_q = pr.n_q;
    // head-major store [n_head_kv][n_kv][hd], as the decoder's cache
    std::vector<float> kh(kf.size()), vh(vf.size());
    std::vector<std::uint16_t> kh16(kf.size()), vh16(vf.size());
    for (std::size_t j = 0; j < pr.n_kv; ++j)
        for (std::size_t g = 0; g < pr.n_head_kv; ++g)
            for (std::size_t c = 0; c < pr.hd; ++c) {
                const std::size_t src = j * kw + g * pr.hd + c, dst = (g * pr.n_kv + j) * pr.hd + c;
                kh[dst] = kf[src];
                vh[dst] = vf[src];
                kh16[dst] = k16[src];
                vh16[dst] = v16[src];
            }
    if (pr.half) {
        p.k16 = kh16.data();
        p.v16 = vh16.data();
    } else {
        p.k = kh.data();
        p.v = vh.data();
    }
    p.ldkv = pr.hd;
    p.kv_head_stride = pr.n_kv * pr.hd;
    p.n_kv = pr.n_kv;
    if (pr.bias) {
        p.bias = bias.data();
        p.ld_bias = pr.n_kv;
        p.bias_head_stride = pr.n_q * pr.n_kv;
    }
    std::vector<float> out(pr.n_q * qw, -1.f), ref(pr.n_q * qw, -2.f), by_span(pr.n_q * qw, -3.f);
    p.out = out.data();
    p.ldo = qw;
    k::attention(p, visible, range, pool);
    auto ps = p;
    ps.out = by_span.data();
    k::attention(ps, spans, range, pool);
    auto pr_ = p;
    pr_.out = ref.data();
    k::reference::attention(pr_, visible);
    BOOST_TEST_CONTEXT("heads " << pr.n_head << "/" << pr.n_head_kv << " hd " << pr.hd << " n_q " << pr.n_q << " n_kv "
                                << pr.n_kv << " window " << pr.window << " sink " << pr.sink << " bias " << pr.bias
                                << " half " << pr.half << " softcap " << pr.softcap) {
        BOOST_TEST(kt::nmse(out, ref) < 1e-11);
        BOOST_TEST(by_span == out); // spans: bitwise what the predicate gives
    }
    return out;
}
} // namespace

BOOST_AUTO_TEST_CASE(prefill_and_decode_match_the_reference) {
    archetype::thread_pool pool(2);
    unsigned seed = 1;
    for (bool half : {false, true})
        for (bool bias : {false, true})
            for (std::int64_t window : {std::int64_t(0), std::int64_t(37)}) {
                // decode: one row over many keys (several 256-key chunks, a partial last one)
                check({9, 3, 64, 1, 700, window, bias, half}, &pool, seed++);
                check({4, 4, 64, 1, 257, window, bias, half}, &pool, seed++);
                check({8, 1, 32, 1, 33, window, bias, half}, nullptr, seed++);
                // prefill: query blocks of 56 rows (MR-row P.V tiles for head_dim 64, 4-row
                // tiles for 48), a cache in front of the block; with a sink the rows whose
                // sink and window are apart take the predicate (no exact span)
                for (std::int64_t sink : {std::int64_t(0), std::int64_t(4)}) {
                    if (sink && !window) continue;
                    check({9, 3, 64, 40, 300, window, bias, half, sink}, &pool, seed++);
                    check({6, 2, 48, 17, 17, window, bias, half, sink}, nullptr, seed++);
                    check({6, 2, 64, 56, 90, window, bias, half, sink}, &pool, seed++);
                    check({6, 2, 48, 130, 300, window, bias, half, sink}, &pool, seed++);
                    check({6, 2, 64, 130, 300, window, bias, half, sink}, &pool, seed++);
                }
            }
}

// Soft-capped scores (Gemma 2's attn_logit_softcapping) on every path: decode chunks,
// prefill spans and predicates, with and without a bias; a cap small against the
// scores changes the output, a huge one leaves it as uncapped (tanh(x) ~ x).
BOOST_AUTO_TEST_CASE(soft_capped_scores_match_the_reference) {
    archetype::thread_pool pool(2);
    unsigned seed = 500;
    for (bool bias : {false, true})
        for (std::int64_t window : {std::int64_t(0), std::int64_t(37)}) {
            for (const problem& base : {problem{9, 3, 64, 1, 700, window, bias}, problem{6, 2, 48, 130, 300, window, bias},
                                        problem{6, 2, 64, 17, 17, window, bias}}) {
                problem capped = base, loose = base;
                capped.softcap = 0.05f;
                loose.softcap = 1e6f;
                const auto plain = check(base, &pool, seed);
                const auto bent = check(capped, &pool, seed);
                const auto same = check(loose, &pool, seed);
                ++seed;
                BOOST_TEST(kt::nmse(bent, plain) > 1e-6);
                BOOST_TEST(kt::nmse(same, plain) < 1e-11);
            }
        }
}

BOOST_AUTO_TEST_CASE(half_store_equals_float_store_of_the_rounded_values) {
    // The half path only widens: against a float store holding the same (rounded)
    // values it must give bitwise the same outputs.
    const std::size_t H = 6, G = 2, hd = 64, n_kv = 600;
    auto q = kt::random_vec(H * hd, 5);
    auto kf = kt::random_vec(G * n_kv * hd, 6), vf = kt::random_vec(G * n_kv * hd, 7);
    std::vector<std::uint16_t> k16(kf.size()), v16(vf.size());
    for (std::size_t i = 0; i < kf.size(); ++i) {
        k16[i] = archetype::fp32_to_fp16(kf[i]);
        v16[i] = archetype::fp32_to_fp16(vf[i]);
        kf[i] = archetype::fp16_to_fp32(k16[i]);
        vf[i] = archetype::fp16_to_fp32(v16[i]);
    }
    archetype::thread_pool pool(2);
    for (std::size_t n_q : {std::size_t(1), std::size_t(20)}) {
        k::attention_params p;
        p.n_head = H;
        p.n_head_kv = G;
        p.head_dim = hd;
        p.scale = 0.125f;
        std::vector<float> qq(n_q * H * hd);
        for (std::size_t i = 0; i < qq.size(); ++i) qq[i] = q[i % q.size()] * float(1 + i / q.size());
        p.q = qq.data();
        p.ldq = H * hd;
        p.n_q = n_q;
        p.ldkv = hd;
        p.kv_head_stride = n_kv * hd;
        p.n_kv = n_kv;
        p.ldo = H * hd;
        std::vector<float> a(n_q * H * hd), b(n_q * H * hd);
        p.k = kf.data();
        p.v = vf.data();
        p.out = a.data();
        k::attention(p, &pool);
        p.k = nullptr;
        p.v = nullptr;
        p.k16 = k16.data();
        p.v16 = v16.data();
        p.out = b.data();
        k::attention(p, &pool);
        BOOST_TEST(a == b);
    }
}

// causal_rule::positions is exactly the set the predicate accepts, whenever it
// says exact; it says not exact only when the set is two intervals.
BOOST_AUTO_TEST_CASE(causal_rule_positions_match_the_predicate) {
    namespace L = archetype::layers;
    for (std::int64_t window : {0, 1, 5, 16})
        for (std::int64_t sink : {0, 2, 8})
            for (std::int64_t pq = -1; pq < 60; ++pq) {
                const L::causal_rule rule{window, window ? sink : 0};
                const auto sp = rule.positions(pq);
                std::int64_t runs = 0;
                bool prev = false, agree = true;
                for (std::int64_t pk = -3; pk < 70; ++pk) {
                    const bool v = rule(pq, pk);
                    runs += v && !prev;
                    prev = v;
                    if (sp.exact) agree = agree && v == (pk >= std::int64_t(sp.lo) && pk < std::int64_t(sp.hi));
                }
                BOOST_TEST_CONTEXT("window " << window << " sink " << sink << " pq " << pq) {
                    BOOST_TEST(agree);
                    BOOST_TEST(sp.exact == (runs <= 1));
                }
            }
}

// row_scores (a decode step's few query rows against many keys) against dot
// products in double: every row count up to 9 (rows go four at a time), key counts
// around the 16-key block, head_dim 16/64/128 (the vector path) and 48 (plain
// loops), padded strides, float and half keys. Lanes past n are never written.
template <class TB>
void check_row_scores(std::size_t m, std::size_t n, std::size_t hd, unsigned seed) {
    const std::size_t ldq = hd + 5, ldk = hd + 3, lds = n + 7;
    auto q = kt::random_vec(m * ldq, seed);
    auto kv = kt::random_vec(n * ldk, seed + 1);
    std::vector<TB> kb(kv.size());
    for (std::size_t i = 0; i < kv.size(); ++i) {
        if constexpr (std::is_same_v<TB, float>)
            kb[i] = kv[i];
        else {
            kb[i] = archetype::fp32_to_fp16(kv[i]);
            kv[i] = archetype::fp16_to_fp32(kb[i]);
        }
    }
    const float sentinel = 12345.f;
    std::vector<float> s(m * lds, sentinel);
    k::row_scores(q.data(), ldq, m, kb.data(), ldk, n, hd, s.data(), lds);
    double worst = 0;
    bool untouched = true;
    for (std::size_t r = 0; r < m; ++r) {
        for (std::size_t j = 0; j < n; ++j) {
            double t = 0, mag = 0;
            for (std::size_t d = 0; d < hd; ++d) {
                t += double(q[r * ldq + d]) * kv[j * ldk + d];
                mag += std::abs(double(q[r * ldq + d]) * kv[j * ldk + d]);
            }
            worst = std::max(worst, std::abs(s[r * lds + j] - t) / mag);
        }
        for (std::size_t j = n; j < lds; ++j) untouched = untouched && s[r * lds + j] == sentinel;
    }
    constexpr bool half = !std::is_same_v<TB, float>;
    BOOST_TEST_CONTEXT("m " << m << " n " << n << " hd " << hd << " half " << half) {
        BOOST_TEST(worst < 1e-6);
        BOOST_TEST(untouched);
    }
}

BOOST_AUTO_TEST_CASE(row_scores_match_double_dot_products) {
    unsigned seed = 100;
    for (std::size_t m = 1; m <= 9; ++m)
        for (std::size_t n : {1, 15, 16, 17, 40, 257})
            for (std::size_t hd : {16, 48, 64, 128}) {
                check_row_scores<float>(m, n, hd, seed++);
                check_row_scores<std::uint16_t>(m, n, hd, seed++);
            }
}

BOOST_AUTO_TEST_CASE(row_scores_do_not_depend_on_where_a_call_starts) {
    // Decode splits the keys into chunks at multiples of 16: a key's score must be
    // bitwise the same whichever chunk (and block position) computes it.
    const std::size_t m = 3, n = 100, hd = 64;
    auto q = kt::random_vec(m * hd, 7);
    auto kv = kt::random_vec(n * hd, 8);
    std::vector<float> whole(m * n), part(m * n);
    k::row_scores(q.data(), hd, m, kv.data(), hd, n, hd, whole.data(), n);
    for (std::size_t j0 = 0; j0 < n; j0 += 32) {
        const std::size_t nc = std::min<std::size_t>(32, n - j0);
        std::vector<float> s(m * nc);
        k::row_scores(q.data(), hd, m, kv.data() + j0 * hd, hd, nc, hd, s.data(), nc);
        for (std::size_t r = 0; r < m; ++r)
            for (std::size_t j = 0; j < nc; ++j) part[r * n + j0 + j] = s[r * nc + j];
    }
    BOOST_TEST(whole == part);
}
