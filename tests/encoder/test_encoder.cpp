// Encoder properties on bert-tiny (folder in argv[1]): pooling equals the
// formula applied to the per-token rows, normalisations equal their formulas on
// the raw pooled vector, a packed batch equals each sequence alone, bad input is
// refused with a message naming the value, and the compile-time structure.
#define BOOST_TEST_MODULE encoder
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_session.hpp"

using namespace archetype;

namespace {
std::string model_path() {
    auto& m = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(m.argc > 1, "pass the bert-tiny folder as the first argument");
    return std::string(m.argv[1]) + "/model.gguf";
}

using Bert = Encoder<>;

std::vector<std::int32_t> ids(std::size_t n, std::uint32_t seed) {
    std::vector<std::int32_t> v(n);
    for (auto& x : v) x = std::int32_t((seed = seed * 1103515245u + 12345u) >> 16) % 128;
    return v;
}

struct fixture {
    encoder_model<Bert> model = load_model<Bert>(model_path());
    encoder_session<Bert> enc{model, {.n_threads = 2}};
    std::vector<std::int32_t> a = ids(7, 1), b = ids(3, 2), c = ids(19, 3);

    std::vector<float> run(std::vector<token_span> seqs, pooling_type p, int norm) {
        std::vector<float> out(enc.output_size(seqs, p));
        enc.embed(seqs, out, p, norm);
        return out;
    }
};

template <class F>
void expect_error(F&& f, const std::string& fragment) {
    try {
        f();
        BOOST_ERROR("no exception; expected one mentioning '" << fragment << "'");
    } catch (const argument_error& e) {
        BOOST_TEST_MESSAGE(e.what());
        BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
}
} // namespace

BOOST_FIXTURE_TEST_SUITE(bert_tiny, fixture)

BOOST_AUTO_TEST_CASE(pooling_equals_formula_on_token_rows) {
    const std::size_t E = model.n_embd();
    for (const auto* s : {&a, &b, &c}) {
        const std::size_t n = s->size();
        const auto rows = run({*s}, pooling_type::none, -1);
        const auto mean = run({*s}, pooling_type::mean, -1);
        const auto mx = run({*s}, pooling_type::max, -1);
        const auto cls = run({*s}, pooling_type::cls, -1);
        const auto last = run({*s}, pooling_type::last, -1);
        for (std::size_t i = 0; i < E; ++i) {
            double sum = 0;
            float m = -INFINITY;
            for (std::size_t r = 0; r < n; ++r) {
                sum += rows[r * E + i];
                m = std::max(m, rows[r * E + i]);
            }
            BOOST_TEST(std::fabs(mean[i] - sum / double(n)) <= 1e-6);
            BOOST_TEST(mx[i] == m);
            BOOST_TEST(cls[i] == rows[i]);
            BOOST_TEST(last[i] == rows[(n - 1) * E + i]);
        }
    }
}

BOOST_AUTO_TEST_CASE(normalisations_equal_formulas) {
    const std::size_t E = model.n_embd();
    const auto raw = run({c}, pooling_type::mean, -1);
    double mx = 0, l1 = 0, l2 = 0, l3 = 0;
    for (float v : raw) {
        mx = std::max(mx, double(std::fabs(v)));
        l1 += std::fabs(v);
        l2 += double(v) * v;
        l3 += std::pow(std::fabs(double(v)), 3);
    }
    l2 = std::sqrt(l2);
    l3 = std::cbrt(l3);
    const auto n0 = run({c}, pooling_type::mean, 0);
    const auto n1 = run({c}, pooling_type::mean, 1);
    const auto n2 = run({c}, pooling_type::mean, 2);
    const auto n3 = run({c}, pooling_type::mean, 3);
    for (std::size_t i = 0; i < E; ++i) {
        BOOST_TEST(std::fabs(n0[i] - raw[i] * 32760.0 / mx) <= 1e-6 * 32760);
        BOOST_TEST(std::fabs(n1[i] - raw[i] / l1) <= 1e-7);
        BOOST_TEST(std::fabs(n2[i] - raw[i] / l2) <= 1e-7);
        BOOST_TEST(std::fabs(n3[i] - raw[i] / l3) <= 1e-7);
    }
}

BOOST_AUTO_TEST_CASE(packed_batch_equals_each_alone) {
    const std::size_t E = model.n_embd();
    for (auto p : {pooling_type::none, pooling_type::mean, pooling_type::cls, pooling_type::max}) {
        const auto all = run({a, b, c}, p, 2);
        std::vector<float> alone;
        for (const auto* s : {&a, &b, &c}) {
            const auto one = run({*s}, p, 2);
            alone.insert(alone.end(), one.begin(), one.end());
        }
        BOOST_REQUIRE_EQUAL(all.size(), alone.size());
        float d = 0;
        for (std::size_t i = 0; i < all.size(); ++i) d = std::max(d, std::fabs(all[i] - alone[i]));
        BOOST_TEST_MESSAGE("pooling " << pooling_name(p) << ": packed vs alone max |diff| = " << d);
        BOOST_TEST(d <= 1e-6f);
        if (p != pooling_type::none) BOOST_TEST(all.size() == 3 * E);
    }
    // Split into several forward passes (2 sequences at most per pass here) gives the same.
    encoder_session<Bert> small(model, {.n_threads = 1, .max_batch_tokens = 20});
    std::vector<token_span> seqs{a, b, c, a};
    std::vector<float> out(small.output_size(seqs, pooling_type::mean));
    small.embed(seqs, out, pooling_type::mean, 2);
    const auto ref = run({a, b, c, a}, pooling_type::mean, 2);
    for (std::size_t i = 0; i < out.size(); ++i) BOOST_TEST(std::fabs(out[i] - ref[i]) <= 1e-6f);
}

BOOST_AUTO_TEST_CASE(bad_input) {
    std::vector<std::int32_t> empty, bad_id{1, 2, 128}, neg{-1}, too_long(65, 1);
    std::vector<float> out(64 * 100);
    auto embed = [&](std::vector<token_span> s) {
        std::vector<float> o(enc.output_size(s, pooling_type::mean));
        enc.embed(s, o, pooling_type::mean, 2);
    };
    expect_error([&] { embed({a, empty}); }, "sequence 1 is empty");
    expect_error([&] { embed({bad_id}); }, "token id 128");
    expect_error([&] { embed({neg}); }, "token id -1");
    expect_error([&] { embed({too_long}); }, "65 tokens");
    expect_error([&] { std::vector<token_span> s{a}; enc.embed(s, std::span<float>(out.data(), 10), pooling_type::mean, 2); },
                 "10 floats");
    expect_error([&] { std::vector<token_span> s{a}; enc.embed(s, std::span<float>(out.data(), 64), pooling_type::mean, -2); },
                 "-2");
    expect_error([&] { std::vector<token_span> s{a}; enc.embed(s, std::span<float>(out.data(), 64), pooling_type::rank, 2); },
                 "classifier");
    // a static shape that disagrees with the file
    BOOST_CHECK_THROW(load_model<Encoder<MHA<8>>>(model_path()), shape_error);
    BOOST_CHECK_THROW(load_model<Encoder<LearnedPositions<512>>>(model_path()), shape_error);
    BOOST_CHECK_THROW(load_model<Encoder<SymmetricWindow<>>>(model_path()), shape_error); // no window key
    BOOST_CHECK_THROW(load_model<Bert>(model_path() + ".missing"), io_error);
}

BOOST_AUTO_TEST_CASE(symmetric_window) {
    // A window covering the whole sequence is plain bidirectional attention;
    // a narrow one changes the result.
    using Wide = Encoder<SymmetricWindow<64>>;
    using Narrow = Encoder<SymmetricWindow<2>>;
    auto mw = load_model<Wide>(model_path());
    auto mn = load_model<Narrow>(model_path());
    encoder_session<Wide> ew(mw);
    encoder_session<Narrow> en(mn);
    const std::vector<token_span> s{c};
    std::vector<float> w(ew.output_size(s, pooling_type::none)), n(w.size());
    ew.embed(s, w, pooling_type::none, -1);
    en.embed(s, n, pooling_type::none, -1);
    const auto full = run({c}, pooling_type::none, -1);
    float dw = 0, dn = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
        dw = std::max(dw, std::fabs(w[i] - full[i]));
        dn = std::max(dn, std::fabs(n[i] - full[i]));
    }
    BOOST_TEST(dw == 0.f);
    BOOST_TEST(dn > 1e-2f);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(structure) {
    using MiniLM = Encoder<MHA<12>, LearnedPositions<512>, LayerNorm, GeluMLP, MeanPooling, L2Normalize>;
    static_assert(std::is_same_v<MiniLM::mask, Bidirectional>);
    static_assert(std::is_same_v<MiniLM::cache, NoCache>);
    static_assert(MiniLM::placement == norm_placement::post);
    static_assert(MiniLM::max_positions == 512);
    static_assert(std::is_same_v<Encoder<>::pooling, PoolingFromFile>);
    static_assert(std::is_same_v<Encoder<>::embd_norm, L2Normalize>);
    static_assert(Encoder<PreNorm<LayerNorm>>::placement == norm_placement::pre);
    static_assert(std::is_same_v<Encoder<PreNorm<RMSNorm>>::norm, RMSNorm>);
    static_assert(EncoderModel<MiniLM> && !EncoderModel<int>);
    // all-MiniLM-L6-v2: the HF checkpoint holds 22,713,216 parameters, of which
    // 384*384 + 384 = 147,840 are the BERT pooler that llama.cpp (and we) never use.
    const encoder_dims d{.n_layer = 6, .n_embd = 384, .n_vocab = 30522, .n_ff = 1536, .n_head = 12,
                         .head_dim = 32, .n_positions = 512, .n_token_types = 2};
    BOOST_TEST(MiniLM::parameters(d) == 22713216u - 147840u);
    const std::string s = MiniLM::describe();
    BOOST_TEST_MESSAGE(s);
    BOOST_TEST(s.find("MHA<12>") != std::string::npos);
    BOOST_TEST(s.find("LearnedPositions<512>") != std::string::npos);
    BOOST_TEST(s.find("MeanPooling") != std::string::npos);
    BOOST_TEST(s.find("post-norm") != std::string::npos);
}
