// The serving scheduler (runtime/serving/): continuous batching over a decoder session on
// seeded random-weight models, against the same requests run alone through the session
// one token at a time (the chunk schedule the scheduler documents); batch invariance
// bitwise on logits at batch sizes 1, 7, 8, 9 and 16 for F32, Q4_0 (the x16 layout where
// the CPU has it) and Q4_1 weights; the prefix cache; cancellation; the queue's bound;
// embeddings; the text stream's UTF-8 and stop-string hold-back.
#define BOOST_TEST_MODULE serving_scheduler
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <ostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/serving/scheduler.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "../decoder/decoder_test_util.hpp"

namespace archetype::serving {
std::ostream& operator<<(std::ostream& o, finish_reason r) { return o << finish_reason_name(r); }
} // namespace archetype::serving

using namespace archetype;
using D = Decoder<GQA<4, 2>, RoPE>;

namespace {

random_decoder::spec spec_of(ggml_type t) {
    auto s = decoder_test::small_llama(5);
    s.n_vocab = 272;
    s.n_ff = 128; // whole blocks of 32 for the quantised types
    s.matrix_type = t;
    s.byte_vocab = true;
    return s;
}

constexpr std::size_t chunk = 16;

/// One request run alone on a fresh one-sequence session: its prompt in chunks of
/// `chunk` from position 0 (logits of the last row), then one token per decode call,
/// greedy. Rows: every row of logits a token was chosen from.
struct alone_result {
    std::vector<std::int32_t> tokens;
    std::vector<std::vector<float>> rows;
};
alone_result run_alone(const decoder_model<D>& m, const std::vector<std::int32_t>& prompt, std::size_t max_tokens,
                       std::size_t n_ctx) {
    auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = n_ctx});
    const std::size_t V = m.n_vocab();
    std::vector<float> logits(V);
    for (std::size_t b = 0; b < prompt.size(); b += chunk) {
        const std::size_t n = std::min(chunk, prompt.size() - b);
        s.prefill(0, std::span<const std::int32_t>(prompt.data() + b, n), logits.data(), logits_rows::last);
    }
    alone_result r;
    for (std::size_t i = 0; i < max_tokens; ++i) {
        r.rows.push_back(logits);
        const std::int32_t t = argmax(logits);
        r.tokens.push_back(t);
        if (i + 1 < max_tokens) s.decode(0, t, logits.data());
    }
    return r;
}

std::vector<std::int32_t> prompt_of(std::size_t i) {
    return decoder_test::tokens(3 + 11 * i, 100 + i, 256); // 3 .. 168 tokens: 1 to 11 chunks
}
/// Short prompts (one chunk), so that the decode batch fills up, and one of five chunks,
/// read between the others' decode steps.
std::vector<std::int32_t> batch_prompt(std::size_t i) {
    return decoder_test::tokens(i == 1 ? 70 : 3 + i, 300 + i, 256);
}

/// `batch` greedy requests at once through a scheduler with `batch` sequences; checks
/// every row of logits bitwise against the request alone. Returns the rows that differ.
std::size_t batch_differences(const decoder_model<D>& m, std::size_t batch, bool invariant, std::size_t max_tokens) {
    const std::size_t n_ctx = 256;
    auto sess = session(m, {.n_threads = 2, .max_sequences = batch, .n_ctx = n_ctx});
    std::map<std::uint64_t, std::vector<std::vector<float>>> rows;
    std::map<std::uint64_t, std::vector<std::int32_t>> toks;
    // one chunk per pass: the long prompt is read between the others' decode steps
    serving::scheduler sch(sess, {.max_queued = 64, .chunk_tokens = chunk, .prefill_tokens_per_pass = 0,
                                  .batch_invariant = invariant, .on_logits = [&](std::uint64_t id, std::size_t k, std::span<const float> l) {
                                      BOOST_REQUIRE_EQUAL(rows[id].size(), k);
                                      rows[id].emplace_back(l.begin(), l.end());
                                  }});
    std::vector<std::shared_ptr<serving::ticket>> tk;
    for (std::size_t i = 0; i < batch; ++i) {
        serving::request r;
        r.prompt = batch_prompt(i);
        r.max_tokens = max_tokens;
        r.on_event = [&toks, i](const serving::event& e) { toks[i].insert(toks[i].end(), e.tokens.begin(), e.tokens.end()); };
        tk.push_back(sch.submit(std::move(r)));
    }
    // the passes one by one: the most rows of logits one pass gave (the decode batch) must
    // reach the batch size
    std::size_t most_rows = 0;
    for (;;) {
        std::size_t before = 0;
        for (const auto& [id, r] : rows) before += r.size();
        const bool worked = sch.step();
        std::size_t after = 0;
        for (const auto& [id, r] : rows) after += r.size();
        most_rows = std::max(most_rows, after - before);
        if (!worked && sch.counts().active == 0 && sch.counts().queued == 0) break;
    }
    BOOST_TEST(most_rows == batch);
    std::size_t diff = 0;
    for (std::size_t i = 0; i < batch; ++i) {
        BOOST_REQUIRE(tk[i]->done());
        const auto ref = run_alone(m, batch_prompt(i), max_tokens, n_ctx);
        const auto& got = rows[tk[i]->id()];
        BOOST_REQUIRE_EQUAL(got.size(), max_tokens);
        for (std::size_t k = 0; k < max_tokens; ++k)
            if (std::memcmp(got[k].data(), ref.rows[k].data(), ref.rows[k].size() * sizeof(float)) != 0) ++diff;
        if (invariant) BOOST_TEST(toks[i] == ref.tokens, boost::test_tools::per_element());
    }
    return diff;
}

void invariance_at_every_batch(ggml_type t, const char* name) {
    decoder_test::temp_model f(spec_of(t), std::string("serving_inv_") + name);
    const auto m = load_model<D>(f.path);
    for (const std::size_t b : {1, 7, 8, 9, 16}) {
        BOOST_TEST_CONTEXT(name << " batch " << b) {
            BOOST_TEST(batch_differences(m, b, true, 32) == 0u);
        }
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_invariance)

BOOST_AUTO_TEST_CASE(f32_weights) { invariance_at_every_batch(ggml_type::F32, "f32"); }
BOOST_AUTO_TEST_CASE(q4_0_weights) { invariance_at_every_batch(ggml_type::Q4_0, "q4_0"); }
BOOST_AUTO_TEST_CASE(q4_1_weights) { invariance_at_every_batch(ggml_type::Q4_1, "q4_1"); }

// The check can fail: without the invariant mode, a batch of 16 quantised rows takes the
// float panels, and its rows differ from the single-token kernels'.
BOOST_AUTO_TEST_CASE(without_the_mode_a_batch_of_16_differs) {
    decoder_test::temp_model f(spec_of(ggml_type::Q4_1), "serving_noinv");
    const auto m = load_model<D>(f.path);
    BOOST_TEST(batch_differences(m, 16, false, 32) > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(scheduling)

// A prompt sharing its first chunks with an earlier one restores their snapshot, and its
// logits are bitwise those of the prompt computed alone.
BOOST_AUTO_TEST_CASE(prefix_cache_reuses_chunks_bitwise) {
    decoder_test::temp_model f(spec_of(ggml_type::Q4_1), "serving_prefix");
    const auto m = load_model<D>(f.path);
    auto sess = session(m, {.n_threads = 2, .max_sequences = 2, .n_ctx = 256});
    std::vector<std::vector<float>> rows;
    serving::scheduler sch(sess, {.chunk_tokens = chunk, .prefix_cache_bytes = std::size_t(64) << 20,
                                  .on_logits = [&](std::uint64_t, std::size_t, std::span<const float> l) {
                                      rows.emplace_back(l.begin(), l.end());
                                  }});
    const auto system = decoder_test::tokens(40, 9, 256);
    auto a = system, b = system;
    for (const auto t : decoder_test::tokens(7, 10, 256)) a.push_back(t);
    for (const auto t : decoder_test::tokens(9, 11, 256)) b.push_back(t);
    std::size_t cached_a = 99, cached_b = 0;
    sch.submit({.prompt = a, .max_tokens = 4, .on_event = [&](const serving::event& e) {
                    if (e.finished != serving::finish_reason::none) cached_a = e.cached_tokens;
                }});
    sch.run_until_idle();
    BOOST_TEST(sch.prefixes().size() == 2u); // a's 47 tokens cross the boundaries 16 and 32
    rows.clear();
    sch.submit({.prompt = b, .max_tokens = 4, .on_event = [&](const serving::event& e) {
                    if (e.finished != serving::finish_reason::none) cached_b = e.cached_tokens;
                }});
    sch.run_until_idle();
    BOOST_TEST(cached_a == 0u);
    BOOST_TEST(cached_b == 32u); // two whole chunks of the shared 40 tokens
    const auto ref = run_alone(m, b, 4, 256);
    BOOST_REQUIRE_EQUAL(rows.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k)
        BOOST_TEST(std::memcmp(rows[k].data(), ref.rows[k].data(), rows[k].size() * sizeof(float)) == 0);
    BOOST_TEST(sch.prefixes().bytes() <= sch.prefixes().max_bytes());
}

BOOST_AUTO_TEST_CASE(prefix_cache_evicts_least_recently_used_by_bytes) {
    decoder_test::temp_model f(spec_of(ggml_type::F32), "serving_lru");
    const auto m = load_model<D>(f.path);
    auto sess = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 64});
    std::vector<sequence_snapshot> snaps;
    std::vector<std::vector<std::int32_t>> keys;
    for (std::size_t i = 0; i < 4; ++i) {
        keys.push_back(decoder_test::tokens(16, 50 + i, 256));
        sess.remove_sequence(0);
        sess.prefill(0, keys.back(), nullptr);
        snaps.push_back(sess.save_sequence(0));
    }
    const std::size_t one = snaps[0].bytes() + 16 * sizeof(std::int32_t);
    serving::prefix_cache c(3 * one);
    for (std::size_t i = 0; i < 3; ++i) c.insert(keys[i], snaps[i]);
    BOOST_TEST(c.size() == 3u);
    BOOST_TEST(c.find(keys[0]) != nullptr); // 0 becomes the most recent: 1 is the oldest
    c.insert(keys[3], snaps[3]);
    BOOST_TEST(c.size() == 3u);
    BOOST_TEST(c.bytes() == 3 * one);
    BOOST_TEST(c.find(keys[1]) == nullptr);
    BOOST_TEST(c.find(keys[0]) != nullptr);
    BOOST_TEST(c.find(keys[2]) != nullptr);
    BOOST_TEST(c.find(keys[3]) != nullptr);
    serving::prefix_cache small(one - 1); // an entry over the bound is not kept
    small.insert(keys[0], snaps[0]);
    BOOST_TEST(small.size() == 0u);
}

// Stop tokens, stop strings and max_tokens end a request; the text is the tokens' bytes
// up to (not including) the stop string; the sequence is released.
BOOST_AUTO_TEST_CASE(stops_and_text) {
    decoder_test::temp_model f(spec_of(ggml_type::F32), "serving_text");
    const auto m = load_model<D>(f.path);
    const auto tok = tokenizer::load_tokenizer(gguf::file::open(f.path));
    auto sess = session(m, {.n_threads = 2, .max_sequences = 2, .n_ctx = 256});
    serving::scheduler sch(sess, {.chunk_tokens = chunk, .piece = [&](std::int32_t t) { return tok->token_to_piece(t); }});
    const auto prompt = decoder_test::tokens(20, 3, 256);
    const auto ref = run_alone(m, prompt, 24, 256);
    std::string all_bytes;
    for (const auto t : ref.tokens) all_bytes += tok->token_to_piece(t);
    const std::string whole = serving::sanitize_utf8(all_bytes, true);

    auto run = [&](serving::request r) {
        std::string text;
        serving::finish_reason why{};
        std::size_t n = 0;
        r.on_event = [&](const serving::event& e) {
            BOOST_TEST(serving::is_valid_utf8(e.text));
            text += e.text;
            n = e.completion_tokens;
            if (e.finished != serving::finish_reason::none) why = e.finished;
        };
        sch.submit(std::move(r));
        sch.run_until_idle();
        BOOST_TEST(sess.n_past(0) == 0);
        return std::tuple(text, why, n);
    };
    {
        const auto [text, why, n] = run({.prompt = prompt, .max_tokens = 24});
        BOOST_TEST(text == whole);
        BOOST_TEST(why == serving::finish_reason::length);
        BOOST_TEST(n == 24u);
    }
    { // a stop token: the 6th token of the greedy completion
        const auto [text, why, n] = run({.prompt = prompt, .max_tokens = 24, .stop_tokens = {ref.tokens[5]}});
        BOOST_TEST(why == serving::finish_reason::stop);
        BOOST_TEST(n == std::size_t(std::find(ref.tokens.begin(), ref.tokens.end(), ref.tokens[5]) - ref.tokens.begin()) + 1);
    }
    { // a stop string from the middle of the text: the text up to its first occurrence
        const std::string stop = whole.substr(whole.size() / 2, 3);
        const auto [text, why, n] = run({.prompt = prompt, .max_tokens = 24, .stop = {stop}});
        BOOST_TEST(why == serving::finish_reason::stop);
        BOOST_TEST(text == whole.substr(0, whole.find(stop)));
    }
}

// A pass reads prompt chunks, round robin over the requests still reading, until it has
// read prefill_tokens_per_pass tokens (whole chunks, at least one) or no prompt is left;
// the tokens do not depend on the budget.
BOOST_AUTO_TEST_CASE(prefill_budget_per_pass) {
    decoder_test::temp_model f(spec_of(ggml_type::F32), "serving_budget");
    const auto m = load_model<D>(f.path);
    const auto p0 = decoder_test::tokens(70, 7, 256), p1 = decoder_test::tokens(50, 8, 256); // 5 + 4 chunks
    const auto alone0 = run_alone(m, p0, 6, 256), alone1 = run_alone(m, p1, 6, 256);
    // budget -> prompt tokens read by the first pass: one chunk (0), whole chunks up to the
    // first that reaches the budget (40 -> 3 chunks; 16 -> 1), everything (2048)
    for (const auto& [budget, first] : std::vector<std::pair<std::size_t, std::size_t>>{
             {0, 16}, {16, 16}, {40, 48}, {2048, 120}}) {
        auto sess = session(m, {.n_threads = 2, .max_sequences = 2, .n_ctx = 256});
        serving::scheduler sch(sess, {.chunk_tokens = chunk, .prefill_tokens_per_pass = budget});
        std::vector<std::int32_t> got0, got1;
        sch.submit({.prompt = p0, .max_tokens = 6, .on_event = [&](const serving::event& e) {
                        got0.insert(got0.end(), e.tokens.begin(), e.tokens.end());
                    }});
        sch.submit({.prompt = p1, .max_tokens = 6, .on_event = [&](const serving::event& e) {
                        got1.insert(got1.end(), e.tokens.begin(), e.tokens.end());
                    }});
        sch.step();
        BOOST_TEST(sch.counts().prompt_tokens_total == first, "budget " << budget);
        // round robin: both requests read their first chunk before either reads a second
        if (budget == 40) BOOST_TEST(sess.n_past(0) + sess.n_past(1) == 48u);
        if (budget == 40) BOOST_TEST(std::min(sess.n_past(0), sess.n_past(1)) == 16u);
        sch.run_until_idle();
        BOOST_TEST(got0 == alone0.tokens, boost::test_tools::per_element());
        BOOST_TEST(got1 == alone1.tokens, boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_CASE(cancel_releases_the_sequence) {
    decoder_test::temp_model f(spec_of(ggml_type::F32), "serving_cancel");
    const auto m = load_model<D>(f.path);
    auto sess = session(m, {.n_threads = 2, .max_sequences = 2, .n_ctx = 256});
    serving::scheduler sch(sess, {.chunk_tokens = chunk});
    serving::finish_reason why{};
    std::size_t produced = 0;
    auto t = sch.submit({.prompt = decoder_test::tokens(30, 1, 256), .max_tokens = 100,
                         .on_event = [&](const serving::event& e) {
                             produced = e.completion_tokens;
                             if (e.finished != serving::finish_reason::none) why = e.finished;
                         }});
    for (int i = 0; i < 6; ++i) sch.step();
    BOOST_TEST(sch.counts().active == 1u);
    BOOST_TEST(sess.n_past(0) > 0);
    t->cancel();
    sch.step();
    BOOST_TEST(t->done());
    BOOST_TEST(why == serving::finish_reason::cancelled);
    BOOST_TEST(produced > 0u);
    BOOST_TEST(produced < 100u);
    BOOST_TEST(sch.counts().active == 0u);
    BOOST_TEST(sess.n_past(0) == 0);
}

BOOST_AUTO_TEST_CASE(bad_requests_and_the_queue_bound) {
    decoder_test::temp_model f(spec_of(ggml_type::F32), "serving_bad");
    const auto m = load_model<D>(f.path);
    auto sess = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 64});
    serving::scheduler sch(sess, {.max_queued = 2, .chunk_tokens = chunk});
    try {
        sch.submit({.prompt = decoder_test::tokens(65, 1, 256)});
        BOOST_FAIL("a prompt past the context was accepted");
    } catch (const argument_error& e) {
        const std::string w = e.what();
        BOOST_TEST(w.find("65") != std::string::npos);
        BOOST_TEST(w.find("64") != std::string::npos);
    }
    BOOST_CHECK_THROW(sch.submit({.prompt = {}}), argument_error);
    BOOST_CHECK_THROW(sch.submit({.prompt = {1, 999}}), argument_error);
    BOOST_CHECK_THROW(sch.submit({.prompt = {1}, .max_tokens = 0}), argument_error);
    BOOST_CHECK_THROW(sch.submit({.prompt = {1}, .sampling = {.temperature = 1.f, .top_p = 2.f}}), argument_error);
    sch.submit({.prompt = {1, 2}, .max_tokens = 2});
    sch.submit({.prompt = {1, 2}, .max_tokens = 2});
    BOOST_CHECK_THROW(sch.submit({.prompt = {1, 2}}), capacity_error); // 2 queued, none admitted yet
    BOOST_TEST(sch.counts().queued == 2u);
    sch.run_until_idle();
    const auto c = sch.counts();
    BOOST_TEST(c.queued == 0u);
    BOOST_TEST(c.requests_total == 2u);
    BOOST_TEST(c.generated_tokens_total == 4u);
}

// Decoder embeddings: the final-norm row of the last prompt token (or the mean of all),
// L2-normalised, against the session's own hidden rows.
BOOST_AUTO_TEST_CASE(embeddings_pool_the_final_norm_rows) {
    decoder_test::temp_model f(spec_of(ggml_type::F32), "serving_embed");
    const auto m = load_model<D>(f.path);
    const auto prompt = decoder_test::tokens(37, 4, 256);
    const std::size_t E = m.n_embd();
    std::vector<float> hidden(prompt.size() * E);
    {
        auto s = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 64});
        for (std::size_t b = 0; b < prompt.size(); b += chunk) {
            const std::size_t n = std::min(chunk, prompt.size() - b);
            s.prefill(0, std::span<const std::int32_t>(prompt.data() + b, n), nullptr, logits_rows::all,
                      hidden.data() + b * E);
        }
    }
    auto sess = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 64});
    serving::scheduler sch(sess, {.chunk_tokens = chunk});
    for (const auto pool : {serving::pooling::last, serving::pooling::mean}) {
        std::vector<float> got;
        sch.submit({.prompt = prompt, .embedding = true, .pool = pool, .on_event = [&](const serving::event& e) {
                        got.assign(e.embedding.begin(), e.embedding.end());
                    }});
        sch.run_until_idle();
        std::vector<double> want(E, 0.0);
        for (std::size_t i = pool == serving::pooling::last ? prompt.size() - 1 : 0; i < prompt.size(); ++i)
            for (std::size_t j = 0; j < E; ++j) want[j] += hidden[i * E + j];
        double ss = 0;
        for (const double v : want) ss += v * v;
        BOOST_REQUIRE_EQUAL(got.size(), E);
        for (std::size_t j = 0; j < E; ++j) BOOST_TEST(got[j] == want[j] / std::sqrt(ss), boost::test_tools::tolerance(1e-5));
    }
}

// The scheduler on its own thread, requests submitted from several threads at once:
// each gets the tokens it gets alone.
BOOST_AUTO_TEST_CASE(threaded_submission) {
    decoder_test::temp_model f(spec_of(ggml_type::Q4_0), "serving_threads");
    const auto m = load_model<D>(f.path);
    auto sess = session(m, {.n_threads = 2, .max_sequences = 4, .n_ctx = 256});
    serving::scheduler sch(sess, {.max_queued = 16, .chunk_tokens = chunk});
    sch.start();
    std::vector<std::vector<std::int32_t>> got(10);
    std::vector<std::thread> th;
    std::atomic<int> done{0};
    for (std::size_t i = 0; i < got.size(); ++i)
        th.emplace_back([&, i] {
            std::mutex mu;
            auto t = sch.submit({.prompt = prompt_of(i), .max_tokens = 8, .on_event = [&, i](const serving::event& e) {
                                     got[i].insert(got[i].end(), e.tokens.begin(), e.tokens.end());
                                     if (e.finished != serving::finish_reason::none) ++done;
                                 }});
            while (!t->done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
    for (auto& t : th) t.join();
    sch.stop(std::chrono::milliseconds(1000));
    BOOST_TEST(done.load() == 10);
    for (std::size_t i = 0; i < got.size(); ++i)
        BOOST_TEST(got[i] == run_alone(m, prompt_of(i), 8, 256).tokens, boost::test_tools::per_element());
    BOOST_CHECK_THROW(sch.submit({.prompt = {1}}), capacity_error); // stopped: no new requests
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(text_stream)

BOOST_AUTO_TEST_CASE(holds_back_incomplete_characters) {
    serving::text_stream s;
    BOOST_TEST(s.push("a\xC3") == "a");   // é split over two tokens
    BOOST_TEST(s.push("\xA9z") == "\xC3\xA9z");
    BOOST_TEST(s.push("\xF0\x9F") == ""); // 4-byte emoji in two halves
    BOOST_TEST(s.push("\x98\x80") == "\xF0\x9F\x98\x80");
    BOOST_TEST(s.push("\xE2\x82") == "");
    BOOST_TEST(s.finish() == std::string(serving::replacement_character)); // cut short at the end
}

BOOST_AUTO_TEST_CASE(replaces_invalid_bytes) {
    // one U+FFFD per maximal invalid subpart, as Python's bytes.decode(errors="replace")
    BOOST_TEST(serving::sanitize_utf8("a\xFF" "b", true) == "a\xEF\xBF\xBD" "b");
    BOOST_TEST(serving::sanitize_utf8("\xE0\xA0x", true) == "\xEF\xBF\xBDx");
    BOOST_TEST(serving::sanitize_utf8("\xE0\x80", true) == "\xEF\xBF\xBD\xEF\xBF\xBD");
    BOOST_TEST(serving::sanitize_utf8("\xED\xA0\x80", true) == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); // a surrogate
    BOOST_TEST(serving::sanitize_utf8("\xC0\xAF", true) == "\xEF\xBF\xBD\xEF\xBF\xBD");                 // overlong
    BOOST_TEST(serving::is_valid_utf8("\xE2\x82\xAC"));
    BOOST_TEST(!serving::is_valid_utf8("\xE2\x82"));
}

BOOST_AUTO_TEST_CASE(stop_strings_over_several_tokens) {
    serving::text_stream s({"</end>", "STOP"});
    BOOST_TEST(s.push("hello <") == "hello "); // '<' may begin "</end>"
    BOOST_TEST(s.push("/e") == "");
    BOOST_TEST(s.push("x") == "</ex");         // it did not
    BOOST_TEST(s.push(" ST") == " ");
    BOOST_TEST(s.push("OP and more") == "");
    BOOST_TEST(s.stopped());
    BOOST_TEST(s.matched_stop() == "STOP");
    BOOST_TEST(s.push("ignored") == "");
    BOOST_TEST(s.finish() == "");
}

BOOST_AUTO_TEST_CASE(partial_match_released_at_the_end) {
    serving::text_stream s({"\xC3\xA9t\xC3\xA9"}); // "été"
    BOOST_TEST(s.push("caf\xC3") == "caf");
    BOOST_TEST(s.push("\xA9") == ""); // "é" may begin the stop string
    BOOST_TEST(s.finish() == "\xC3\xA9");
    BOOST_TEST(!s.stopped());
}

BOOST_AUTO_TEST_SUITE_END()
