// kernels/encoder_attention.hpp (dense per-head attention of one sequence
// block) against the scalar definition in kernels/reference/attention.hpp:
// several head sizes (one to four vectors, and one it must refuse), GQA,
// lengths that are not multiples of the query tile or of the key panel, and
// rows at a stride with heads side by side (the encoder's QKV layout).
#define BOOST_TEST_MODULE encoder_attention
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "archetype/kernels/encoder_attention.hpp"
#include "archetype/kernels/reference/attention.hpp"

using namespace archetype;
namespace k = archetype::kernels;

namespace {
struct problem {
    std::size_t n_head, n_head_kv, head_dim, n;
    std::vector<float> qkv, out, ref;
    std::size_t ld;
    k::attention_params p;

    problem(std::size_t h, std::size_t hkv, std::size_t d, std::size_t n_, unsigned seed)
        : n_head(h), n_head_kv(hkv), head_dim(d), n(n_) {
        ld = (h + 2 * hkv) * d + 3; // Q | K | V side by side, plus padding columns
        std::mt19937 g(seed);
        std::normal_distribution<float> dist(0.f, 1.f);
        qkv.resize(n * ld);
        for (auto& x : qkv) x = dist(g);
        out.assign(n * h * d, -7.f);
        ref.assign(n * h * d, 0.f);
        p.n_head = h;
        p.n_head_kv = hkv;
        p.head_dim = d;
        p.scale = 1.f / std::sqrt(float(d));
        p.q = qkv.data();
        p.ldq = ld;
        p.n_q = n;
        p.k = qkv.data() + h * d;
        p.v = qkv.data() + (h + hkv) * d;
        p.ldkv = ld;
        p.kv_head_stride = d;
        p.n_kv = n;
        p.ldo = h * d;
    }
    float max_diff() {
        p.out = ref.data();
        k::reference::attention(p);
        p.out = out.data();
        for (std::size_t hh = 0; hh < n_head; ++hh) BOOST_REQUIRE(k::dense_attention_head(p, hh));
        float d = 0;
        for (std::size_t i = 0; i < out.size(); ++i) d = std::max(d, std::fabs(out[i] - ref[i]));
        return d;
    }
};
} // namespace

BOOST_AUTO_TEST_CASE(matches_reference) {
    const std::size_t W = k::simd::W;
    struct shape { std::size_t h, hkv, dv, n; } shapes[] = {
        {12, 12, std::min<std::size_t>(32 / W, 4), 128}, // MiniLM: 12 heads of 32, 128 tokens (AVX-512)
        {2, 2, 1, 7},                       // shorter than one query tile and one key panel
        {4, 2, 2, 37},                      // GQA, ragged tiles
        {3, 1, 3, 50},                      // MQA, three vectors per head
        {2, 2, 4, 129},                     // four vectors, one past a tile
        {1, 1, 1, 1},                       // a single token sees only itself
    };
    for (auto s : shapes) {
        problem pr(s.h, s.hkv, s.dv * W, s.n, unsigned(s.n));
        const float d = pr.max_diff();
        BOOST_TEST_MESSAGE("heads " << s.h << "/" << s.hkv << " dim " << s.dv * W << " n " << s.n << ": max |diff| " << d);
        BOOST_TEST(d <= 2e-6f);
    }
}

BOOST_AUTO_TEST_CASE(single_token_returns_its_value) {
    // softmax over one key is 1, so the output is that key's value row exactly.
    problem pr(2, 2, k::simd::W, 1, 3);
    pr.p.out = pr.out.data();
    for (std::size_t h = 0; h < 2; ++h) BOOST_REQUIRE(k::dense_attention_head(pr.p, h));
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t c = 0; c < k::simd::W; ++c)
            BOOST_TEST(pr.out[h * k::simd::W + c] == pr.p.v[h * k::simd::W + c]);
}

BOOST_AUTO_TEST_CASE(unsupported_head_size_is_refused) {
    const std::size_t odd = k::simd::W + 1;
    BOOST_TEST(!k::dense_attention_supported(odd));
    BOOST_TEST(!k::dense_attention_supported(5 * k::simd::W));
    problem pr(1, 1, odd, 5, 4);
    pr.p.out = pr.out.data();
    BOOST_TEST(!k::dense_attention_head(pr.p, 0));
    for (float x : pr.out) BOOST_TEST(x == -7.f); // nothing written
}
