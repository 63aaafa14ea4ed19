// The Mamba-2 preset on the zoo's fixture (tests/data/zoo/mamba2/model.gguf) over a prompt
// longer than the SSD's chunk (150 tokens: chunks of 64, 64 and 22): the chunked matrix
// form of prefill equals the token recurrence of decode within float32 rounding at every
// position, a prompt fed in uneven pieces carries the conv and SSM states across calls,
// and the logits do not depend on the thread count (bitwise).
#define BOOST_TEST_MODULE mamba2_session
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/mamba2.hpp"
#include "archetype/runtime/decoder_session.hpp"

using namespace archetype;

namespace {
std::string model_path() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/mamba2/model.gguf";
}

/// The prompt fed in pieces of `pieces` tokens (repeating), one token per call when 1.
std::vector<float> run(const decoder_model<presets::Mamba2Lm>& m, const std::vector<std::int32_t>& tok,
                       std::vector<std::size_t> pieces, std::size_t threads, std::size_t n_ubatch = 512) {
    auto s = session(m, {.n_threads = threads, .max_sequences = 1, .n_ctx = 256, .n_ubatch = n_ubatch});
    const std::size_t V = m.n_vocab();
    std::vector<float> logits(tok.size() * V);
    for (std::size_t b = 0, i = 0; b < tok.size(); ++i) {
        const std::size_t n = std::min(pieces[i % pieces.size()], tok.size() - b);
        if (n == 1) s.decode(0, tok[b], logits.data() + b * V);
        else s.prefill(0, std::span<const std::int32_t>(tok.data() + b, n), logits.data() + b * V);
        b += n;
    }
    return logits;
}

double worst(const std::vector<float>& a, const std::vector<float>& ref, std::size_t V) {
    double w = 0;
    for (std::size_t p = 0; p < ref.size() / V; ++p) {
        double err = 0, big = 1;
        for (std::size_t v = 0; v < V; ++v) {
            err = std::max(err, std::abs(double(a[p * V + v]) - double(ref[p * V + v])));
            big = std::max(big, std::abs(double(ref[p * V + v])));
        }
        w = std::max(w, err / big);
    }
    return w;
}
} // namespace

BOOST_AUTO_TEST_CASE(chunked_prefill_equals_the_recurrence_and_the_thread_count_changes_nothing) {
    const auto m = load_model<presets::mamba2_architecture>(model_path());
    const std::size_t V = m.n_vocab();
    std::vector<std::int32_t> tok(150);
    for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = std::int32_t((i * 37 + 11) % V);
    const auto recurrence = run(m, tok, {1}, 2);          // decode: the recurrence, token by token
    const auto chunked = run(m, tok, {150}, 2);           // one prefill: chunks of 64, 64, 22
    const auto pieces = run(m, tok, {37, 1, 90, 5}, 2);   // state carried across uneven calls
    // passes as wide as the session's rows (n_ubatch 64: the mixer's scratch, SSD's included,
    // filled to its last float; a sanitizer build catches an undersized one)
    const auto full_rows = run(m, tok, {150}, 2, 64);
    BOOST_TEST_MESSAGE("chunked vs recurrence: " << worst(chunked, recurrence, V));
    BOOST_TEST(worst(chunked, recurrence, V) <= 1e-5);
    BOOST_TEST(worst(pieces, recurrence, V) <= 1e-5);
    BOOST_TEST(worst(full_rows, recurrence, V) <= 1e-5);
    // the state matters: the last token alone (a fresh state) gives other logits
    const auto alone = run(m, {tok.back()}, {1}, 2);
    const std::vector<float> last(recurrence.end() - std::ptrdiff_t(V), recurrence.end());
    BOOST_TEST(worst(alone, last, V) > 1e-2);
    for (std::size_t threads : {1, 3}) {
        BOOST_TEST(run(m, tok, {150}, threads) == chunked);
        BOOST_TEST(run(m, tok, {1}, threads) == recurrence);
    }
}

// Several sequences in one decode batch: each row reads and writes its own sequence's conv
// and SSM state (the batch's rows are one group per sequence), as when decoded alone.
BOOST_AUTO_TEST_CASE(a_decode_batch_of_several_sequences_keeps_each_state) {
    const auto m = load_model<presets::mamba2_architecture>(model_path());
    const std::size_t V = m.n_vocab();
    const std::vector<std::int32_t> a = {5, 9, 17, 33, 2, 71, 8, 8, 40, 3}, b = {64, 1, 12, 99, 27, 6, 50};
    auto s = session(m, {.n_threads = 2, .max_sequences = 2, .n_ctx = 64});
    s.prefill(0, std::span<const std::int32_t>(a).first(8), nullptr);
    s.prefill(1, std::span<const std::int32_t>(b).first(5), nullptr);
    std::vector<float> both(2 * V);
    for (std::size_t i = 0; i < 2; ++i) {
        const std::vector<seq_id> seqs = {0, 1};
        const std::vector<std::int32_t> next = {a[8 + i], b[5 + i]};
        s.decode(seqs, next, both.data());
    }
    // each sequence alone, token by token: the last rows of run()
    const auto ra = run(m, a, {8, 1, 1}, 2), rb = run(m, b, {5, 1, 1}, 2);
    const std::vector<float> last_a(ra.end() - std::ptrdiff_t(V), ra.end()), last_b(rb.end() - std::ptrdiff_t(V), rb.end());
    BOOST_TEST(worst(std::vector<float>(both.begin(), both.begin() + std::ptrdiff_t(V)), last_a, V) <= 1e-5);
    BOOST_TEST(worst(std::vector<float>(both.begin() + std::ptrdiff_t(V), both.end()), last_b, V) <= 1e-5);
}
