// runtime/perplexity.hpp against its formula, on a session whose logits are known:
// after token t the logit of (t + 1) mod V is a, every other logit 0. A stream that
// always steps by one then has nll = log(e^a + V - 1) - a at every scored position;
// a stream with some other steps has two values, whose mean and delta-method error
// the test computes directly. Also llama-perplexity's chunking (which rows are
// scored, BOS at each chunk start, the rest of the text unscored) and its errors.
#define BOOST_TEST_MODULE perplexity
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "archetype/runtime/perplexity.hpp"

using namespace archetype;

namespace {
struct fake_options {
    std::size_t n_ctx;
};

/// A session with the interface perplexity() uses; records what it was fed.
struct fake_session {
    std::size_t V = 11;
    float a = 2.5f;
    fake_options opt{64};
    std::vector<std::int32_t> fed;       // every token prefilled, in order
    std::size_t position = 0, removed = 0;
    std::size_t n_vocab() const { return V; }
    const fake_options& options() const { return opt; }
    void remove_sequence(seq_id) { position = 0, ++removed; }
    void prefill(seq_id, std::span<const std::int32_t> t, float* logits, logits_rows rows) {
        for (std::size_t i = 0; i < t.size(); ++i) {
            fed.push_back(t[i]);
            if (rows == logits_rows::all || i + 1 == t.size()) {
                float* row = logits + (rows == logits_rows::all ? i * V : 0);
                for (std::size_t v = 0; v < V; ++v) row[v] = 0.f;
                row[(std::size_t(t[i]) + 1) % V] = a;
            }
        }
        position += t.size();
        BOOST_REQUIRE(position <= opt.n_ctx);
    }
};

double nll_hit(const fake_session& s) { return std::log(std::exp(double(s.a)) + double(s.V) - 1) - double(s.a); }
double nll_miss(const fake_session& s) { return std::log(std::exp(double(s.a)) + double(s.V) - 1); }
} // namespace

BOOST_AUTO_TEST_CASE(constant_steps_give_the_closed_form) {
    fake_session s;
    std::vector<std::int32_t> tokens(3 * 16 + 5);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::int32_t(i % s.V);
    const auto r = perplexity(s, tokens, {.n_ctx = 16, .n_batch = 5});
    BOOST_TEST(r.n_chunks == 3u);
    BOOST_TEST(r.n_scored == 3u * (16 - 8 - 1));
    BOOST_TEST(std::abs(r.ppl - std::exp(nll_hit(s))) < 1e-6 * r.ppl);
    BOOST_TEST(r.ppl_error < 1e-6 * r.ppl); // no variance, up to the rounding of E[x^2] - E[x]^2
    BOOST_TEST(s.removed >= 3u);
    BOOST_TEST(s.fed.size() == 3u * 16); // the 5 tokens after the last chunk are not fed
}

BOOST_AUTO_TEST_CASE(mean_and_standard_error_follow_llama_perplexity) {
    fake_session s;
    const std::size_t n_ctx = 20, n_chunks = 4;
    std::vector<std::int32_t> tokens(n_ctx * n_chunks);
    std::int32_t t = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = t;
        t = std::int32_t((std::size_t(t) + (i % 3 == 0 ? 2 : 1)) % s.V); // every third step misses
    }
    // the formula: rows p = n_ctx/2 .. n_ctx-2 of each chunk score token p + 1
    double sum = 0, sum2 = 0;
    std::size_t count = 0;
    for (std::size_t c = 0; c < n_chunks; ++c)
        for (std::size_t p = n_ctx / 2; p + 1 < n_ctx; ++p) {
            const std::size_t i = c * n_ctx + p;
            const bool hit = (std::size_t(tokens[i]) + 1) % s.V == std::size_t(tokens[i + 1]);
            const double v = hit ? nll_hit(s) : nll_miss(s);
            sum += v, sum2 += v * v, ++count;
        }
    const double mean = sum / double(count), ppl = std::exp(mean);
    const double err = std::sqrt((sum2 / double(count) - mean * mean) / double(count - 1)) * ppl;
    const auto r = perplexity(s, tokens, {.n_ctx = n_ctx, .n_batch = 7, .n_threads = 2});
    BOOST_TEST(r.n_scored == count);
    BOOST_TEST(std::abs(r.ppl - ppl) < 1e-9 * ppl);
    BOOST_TEST(std::abs(r.ppl_error - err) < 1e-6 * err);
    BOOST_TEST(err > 0.0);
    // --chunks: the first two only
    const auto r2 = perplexity(s, tokens, {.n_ctx = n_ctx, .n_chunks = 2});
    BOOST_TEST(r2.n_chunks == 2u);
    BOOST_TEST(r2.n_scored == count / 2);
}

BOOST_AUTO_TEST_CASE(bos_replaces_each_chunks_first_token) {
    fake_session s;
    std::vector<std::int32_t> tokens(40);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::int32_t(i % 7);
    perplexity(s, tokens, {.n_ctx = 10, .bos = 9});
    BOOST_REQUIRE(s.fed.size() == 40u);
    for (std::size_t i = 0; i < 40; ++i) BOOST_TEST(s.fed[i] == (i % 10 == 0 ? 9 : tokens[i]));
}

BOOST_AUTO_TEST_CASE(errors_name_the_values) {
    fake_session s;
    std::vector<std::int32_t> tokens(30, 1);
    auto message = [&](const perplexity_options& o) {
        try {
            perplexity(s, tokens, o);
        } catch (const argument_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    BOOST_TEST(message({.n_ctx = 16}).find("30 tokens") != std::string::npos);
    BOOST_TEST(message({.n_ctx = 16}).find("32") != std::string::npos);
    BOOST_TEST(message({.n_ctx = 128}).find("128") != std::string::npos); // beyond the session's 64
    BOOST_TEST(message({.n_ctx = 2}).find("2") != std::string::npos);
    BOOST_TEST(message({.n_ctx = 8, .n_batch = 0}).find("batch") != std::string::npos);
    tokens[3] = 11; // outside the vocabulary of 11
    BOOST_TEST(message({.n_ctx = 8}).find("11") != std::string::npos);
}
