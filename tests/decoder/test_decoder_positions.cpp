// Position schemes of the decoder run time (ALiBi, Sinusoidal, LearnedPositions,
// RelativeBias) against a plain scalar forward pass written here (double
// accumulation, one token at a time, no kernel of the library), on seeded random
// llama-layout GGUF files; in batch, sequential and chunked feeding; plus the
// rolling cache under ALiBi and the errors of the position tensors.
//
// Compiled once per scheme (POS_CASE 1..4, see meson.build): one family of model
// types per translation unit.
#define BOOST_TEST_MODULE decoder_positions
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include "archetype/io/gguf.hpp"
#include "archetype/layers/positions.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "decoder_test_util.hpp"
#include "random_decoder.hpp"

#ifndef POS_CASE
#define POS_CASE 1
#endif

using namespace archetype;

using decoder_test::feed;
using decoder_test::temp_model;
using decoder_test::tokens;

namespace {
random_decoder::spec small_spec() { return decoder_test::small_llama(23); }

enum class scheme { alibi, sinusoidal, learned, relative };

// ---- the scalar reference: llama layout, F32 weights, RMSNorm, SwiGLU, no RoPE ----
struct reference {
    const gguf::file f;
    std::size_t E, H, G, hd, F, V, L;
    scheme sch;
    std::size_t window; // 0: causal only
    std::size_t buckets = 0;
    std::vector<std::vector<std::vector<double>>> K, Vv; // per layer, per position: [G * hd]

    reference(const std::string& path, scheme s, std::size_t w, std::size_t b)
        : f(gguf::file::open(path)), sch(s), window(w), buckets(b) {
        const auto& emb = f.tensor("token_embd.weight");
        E = emb.ne[0];
        V = emb.ne[1];
        L = 0;
        while (f.find_tensor("blk." + std::to_string(L) + ".attn_q.weight")) ++L;
        hd = E / 4;
        H = 4;
        G = f.tensor("blk.0.attn_k.weight").ne[1] / hd;
        F = f.tensor("blk.0.ffn_up.weight").ne[1];
        K.resize(L);
        Vv.resize(L);
    }
    const float* w(const std::string& name) const { return reinterpret_cast<const float*>(f.tensor(name).data); }
    // y[rows] = W[rows x cols] x
    static std::vector<double> mv(const float* W, std::size_t rows, std::size_t cols, const std::vector<double>& x) {
        std::vector<double> y(rows, 0.0);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c) y[r] += double(W[r * cols + c]) * x[c];
        return y;
    }
    std::vector<double> rms(const std::vector<double>& x, const float* g) const {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double k = 1.0 / std::sqrt(ss / double(x.size()) + 1e-5);
        std::vector<double> y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * k * g[i];
        return y;
    }
    double bias(std::size_t il, std::size_t h, std::int64_t pq, std::int64_t pk) const {
        if (sch == scheme::alibi) {
            // slopes written out: n = 4 heads (a power of two), m0 = 2^(-8/4)
            const double slope = std::pow(2.0, -2.0 * double(h + 1));
            return slope * double(pk - pq);
        }
        if (sch == scheme::relative) {
            const std::string name = "blk." + std::to_string(il) + ".attn_rel_b.weight";
            const float* t = f.find_tensor(name) ? w(name) : w("blk.0.attn_rel_b.weight");
            return t[layers::t5_bucket_causal(pq - pk, buckets, 128) * H + h];
        }
        return 0.0;
    }
    /// Logits of token tok at position p (positions fed in order 0, 1, 2, ...).
    std::vector<double> step(std::int32_t tok, std::int64_t p) {
        const float* e = w("token_embd.weight") + std::size_t(tok) * E;
        std::vector<double> x(e, e + E);
        if (sch == scheme::sinusoidal)
            for (std::size_t i = 0; i < E; i += 2) {
                const double a = double(p) / std::pow(10000.0, double(i) / double(E));
                x[i] += std::sin(a);
                x[i + 1] += std::cos(a);
            }
        if (sch == scheme::learned) {
            const float* pe = w("position_embd.weight") + std::size_t(p) * E;
            for (std::size_t i = 0; i < E; ++i) x[i] += pe[i];
        }
        for (std::size_t il = 0; il < L; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            const auto h = rms(x, w(b + "attn_norm.weight"));
            const auto q = mv(w(b + "attn_q.weight"), H * hd, E, h);
            K[il].push_back(mv(w(b + "attn_k.weight"), G * hd, E, h));
            Vv[il].push_back(mv(w(b + "attn_v.weight"), G * hd, E, h));
            std::vector<double> att(H * hd, 0.0);
            for (std::size_t hh = 0; hh < H; ++hh) {
                const std::size_t g = hh / (H / G);
                std::vector<double> sc;
                std::vector<std::int64_t> pk;
                for (std::int64_t j = 0; j <= p; ++j) {
                    if (window && p - j >= std::int64_t(window)) continue;
                    double d = 0;
                    for (std::size_t c = 0; c < hd; ++c) d += q[hh * hd + c] * K[il][std::size_t(j)][g * hd + c];
                    sc.push_back(d / std::sqrt(double(hd)) + bias(il, hh, p, j));
                    pk.push_back(j);
                }
                const double mx = *std::max_element(sc.begin(), sc.end());
                double sum = 0;
                for (double& v : sc) sum += v = std::exp(v - mx);
                for (std::size_t t = 0; t < sc.size(); ++t)
                    for (std::size_t c = 0; c < hd; ++c)
                        att[hh * hd + c] += sc[t] / sum * Vv[il][std::size_t(pk[t])][g * hd + c];
            }
            const auto o = mv(w(b + "attn_output.weight"), E, H * hd, att);
            for (std::size_t i = 0; i < E; ++i) x[i] += o[i];
            const auto h2 = rms(x, w(b + "ffn_norm.weight"));
            const auto gt = mv(w(b + "ffn_gate.weight"), F, E, h2), up = mv(w(b + "ffn_up.weight"), F, E, h2);
            std::vector<double> a(F);
            for (std::size_t i = 0; i < F; ++i) a[i] = gt[i] / (1.0 + std::exp(-gt[i])) * up[i];
            const auto dn = mv(w(b + "ffn_down.weight"), E, F, a);
            for (std::size_t i = 0; i < E; ++i) x[i] += dn[i];
        }
        return mv(w("output.weight"), V, E, rms(x, w("output_norm.weight")));
    }
    std::vector<float> run(const std::vector<std::int32_t>& t) {
        std::vector<float> out;
        for (std::size_t i = 0; i < t.size(); ++i)
            for (double v : step(t[i], std::int64_t(i))) out.push_back(float(v));
        return out;
    }
};

/// max |a - b| / max |b|
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    BOOST_REQUIRE_EQUAL(a.size(), b.size());
    double d = 0, m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, double(std::abs(a[i] - b[i])));
        m = std::max(m, double(std::abs(b[i])));
    }
    return d / m;
}
/// The model against the reference in batch, sequential and chunked feeding.
template <class D>
void check_modes(const std::string& path, scheme sch, std::size_t n, std::size_t window = 0, std::size_t buckets = 0) {
    const auto m = load_model<D>(path);
    const auto t = tokens(n, 5, m.n_vocab());
    reference ref(path, sch, window, buckets);
    const auto want = ref.run(t);
    for (std::size_t step : {std::size_t(0), std::size_t(1), std::size_t(5)}) {
        const double e = rel_err(feed(m, t, step), want);
        BOOST_TEST_MESSAGE(D::describe() << " step " << step << ": max rel err " << e);
        BOOST_TEST(e <= 1e-4, "step " << step << ": " << e);
    }
}
template <class Fn>
void expect_error_containing(Fn&& fn, const std::string& what) {
    try {
        fn();
        BOOST_ERROR("no exception; expected one naming " << what);
    } catch (const std::exception& e) {
        BOOST_TEST(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
}
} // namespace

#if POS_CASE == 1
BOOST_AUTO_TEST_CASE(alibi_matches_the_reference) {
    temp_model f(small_spec(), "alibi");
    check_modes<Decoder<GQA<4, 2>, ALiBi>>(f.path, scheme::alibi, 60);
}
BOOST_AUTO_TEST_CASE(alibi_rolling_cache_equals_full_cache_and_reference) {
    // the ring keeps positions: the bias uses them, not the cells
    temp_model f(small_spec(), "alibi_swa");
    using Roll = Decoder<GQA<4, 2>, ALiBi, SlidingWindow<16>, RollingCache>;
    using Full = Decoder<GQA<4, 2>, ALiBi, SlidingWindow<16>, FullCache>;
    check_modes<Roll>(f.path, scheme::alibi, 100, 16);
    const auto t = tokens(100, 6, 96);
    const auto full = feed(load_model<Full>(f.path), t, 0);
    const auto mr = load_model<Roll>(f.path);
    for (std::size_t step : {std::size_t(0), std::size_t(1), std::size_t(37)}) BOOST_TEST(rel_err(feed(mr, t, step), full) <= 1e-5);
}
BOOST_AUTO_TEST_CASE(alibi_slopes_follow_ggml) {
    // 8 heads: 2^-1 .. 2^-8; 12 heads: n = 8 -> m0^(h+1) for h < 8, then m1 = 2^-0.5 to the odd powers
    const auto s8 = layers::alibi_slopes(8);
    for (std::size_t h = 0; h < 8; ++h) BOOST_TEST(s8[h] == std::pow(2.f, -float(h + 1)));
    const auto s12 = layers::alibi_slopes(12);
    for (std::size_t h = 8; h < 12; ++h) BOOST_TEST(std::abs(s12[h] - std::pow(2.f, -0.5f * float(2 * (h - 8) + 1))) <= 1e-6f);
}
#elif POS_CASE == 2
BOOST_AUTO_TEST_CASE(sinusoidal_matches_the_reference) {
    temp_model f(small_spec(), "sin");
    check_modes<Decoder<GQA<4, 2>, Sinusoidal>>(f.path, scheme::sinusoidal, 60);
}
#elif POS_CASE == 3
BOOST_AUTO_TEST_CASE(learned_positions_match_the_reference) {
    auto sp = small_spec();
    sp.n_pos = 64;
    temp_model f(sp, "learned");
    check_modes<Decoder<GQA<4, 2>, LearnedPositions<64>>>(f.path, scheme::learned, 60);
}
BOOST_AUTO_TEST_CASE(learned_positions_errors) {
    auto sp = small_spec();
    sp.n_pos = 64;
    temp_model f(sp, "learned_err");
    using Learned = Decoder<GQA<4, 2>, LearnedPositions<>>;
    const auto m = load_model<Learned>(f.path);
    auto s = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 512});
    const auto t = tokens(70, 7, m.n_vocab());
    std::vector<float> logits(70 * m.n_vocab());
    // past the 64-row table: a capacity_error naming both, nothing fed
    BOOST_CHECK_THROW(s.prefill(0, t, logits.data()), capacity_error);
    expect_error_containing([&] { s.prefill(0, t, logits.data()); }, "learned position table of 64 rows");
    BOOST_TEST(s.n_past(0) == 0);
    s.prefill(0, std::span<const std::int32_t>(t.data(), 64), logits.data());
    const int seq = 0;
    BOOST_CHECK_THROW(s.decode(std::span<const int>(&seq, 1), std::span<const std::int32_t>(t.data(), 1), logits.data()),
                      capacity_error);
    BOOST_TEST(s.n_past(0) == 64);
    // a static table size that disagrees with the file, and a file without the table
    expect_error_containing([&] { (void)load_model<Decoder<GQA<4, 2>, LearnedPositions<32>>>(f.path); }, "has 64 positions");
    temp_model plain(small_spec(), "learned_missing");
    expect_error_containing([&] { (void)load_model<Learned>(plain.path); }, "position_embd.weight");
}
#elif POS_CASE == 4
BOOST_AUTO_TEST_CASE(relative_bias_matches_the_reference) {
    // 60 tokens: distances past the 16 exact buckets reach the logarithmic ones
    auto sp = small_spec();
    sp.rel_buckets = 32;
    temp_model shared(sp, "rel_shared"); // one table (layer 0's) for all layers, as T5's files
    check_modes<Decoder<GQA<4, 2>, RelativeBias<32>>>(shared.path, scheme::relative, 60, 0, 32);
    sp.rel_bias_every_layer = true;
    temp_model every(sp, "rel_every");
    check_modes<Decoder<GQA<4, 2>, RelativeBias<32>>>(every.path, scheme::relative, 60, 0, 32);
}
BOOST_AUTO_TEST_CASE(relative_bias_buckets_and_errors) {
    // exact below B/2, logarithmic up to 128, the last bucket beyond (HF T5, bidirectional=False)
    BOOST_TEST(layers::t5_bucket_causal(0, 32) == 0u);
    BOOST_TEST(layers::t5_bucket_causal(15, 32) == 15u);
    BOOST_TEST(layers::t5_bucket_causal(16, 32) == 16u);
    BOOST_TEST(layers::t5_bucket_causal(127, 32) == 31u);
    BOOST_TEST(layers::t5_bucket_causal(100000, 32) == 31u);
    // 16 + floor(log(d/16) / log(8) * 16): d = 32 -> 16 + 5 = 21
    BOOST_TEST(layers::t5_bucket_causal(32, 32) == 21u);
    temp_model plain(small_spec(), "rel_missing");
    expect_error_containing([&] { (void)load_model<Decoder<GQA<4, 2>, RelativeBias<32>>>(plain.path); },
                            "attn_rel_b.weight");
    auto sp = small_spec();
    sp.rel_buckets = 16;
    temp_model wrong(sp, "rel_wrong");
    expect_error_containing([&] { (void)load_model<Decoder<GQA<4, 2>, RelativeBias<32>>>(wrong.path); }, "[4, 16]");
}
#endif
