// One loaded model shared by sessions running on several threads at once gives,
// bit for bit, what the same sessions give one after the other: a model is
// read-only once loaded, and every buffer a forward pass writes belongs to its
// session (or to the thread running it). Decoder and RWKV. CI also builds and
// runs this test under ThreadSanitizer (clang-14, -fsanitize=thread; see
// tools/run-tests.sh), which reports any shared write the results would not show.
#define BOOST_TEST_MODULE concurrent_sessions
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/rwkv_api.hpp"
#include "decoder_test_util.hpp"
#include "random_model.hpp"

using namespace archetype;

namespace {
/// Prefill `prompt`, then `n_gen` greedy decode steps; every logit of the run.
template <class Session>
std::vector<float> drive(Session& s, std::size_t n_vocab, const std::vector<std::int32_t>& prompt, std::size_t n_gen) {
    std::vector<float> all(prompt.size() * n_vocab);
    s.prefill(0, prompt, all.data());
    std::vector<float> last(all.end() - std::ptrdiff_t(n_vocab), all.end());
    for (std::size_t i = 0; i < n_gen; ++i) {
        const auto t = std::int32_t(std::max_element(last.begin(), last.end()) - last.begin());
        s.decode(seq_id(0), t, last.data());
        all.insert(all.end(), last.begin(), last.end());
    }
    return all;
}

std::vector<std::int32_t> prompt_of(std::size_t n, std::uint32_t seed, std::size_t n_vocab) {
    std::vector<std::int32_t> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = std::int32_t((seed * 2654435761u + i * 40503u) % n_vocab);
    return p;
}

/// Runs jobs one after the other, then all at once on their own threads; the
/// results must be identical.
void same_alone_and_together(const std::vector<std::function<std::vector<float>()>>& jobs) {
    std::vector<std::vector<float>> alone, together(jobs.size());
    for (const auto& j : jobs) alone.push_back(j());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < jobs.size(); ++i) threads.emplace_back([&, i] { together[i] = jobs[i](); });
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        BOOST_TEST_CONTEXT("job " << i) {
            BOOST_REQUIRE_EQUAL(alone[i].size(), together[i].size());
            BOOST_TEST(std::memcmp(alone[i].data(), together[i].data(), alone[i].size() * sizeof(float)) == 0);
        }
    }
}
} // namespace

BOOST_AUTO_TEST_CASE(decoder_model_shared_by_two_threads) {
    decoder_test::temp_model f(decoder_test::small_llama(7), "concurrent");
    const auto m = load_model<presets::Llama>(f.path);
    const std::size_t V = m.n_vocab();
    auto job = [&](std::uint32_t seed, std::size_t threads) {
        return [&m, V, seed, threads] {
            auto s = session(m, {.n_threads = threads, .max_sequences = 1, .n_ctx = 128});
            return drive(s, V, prompt_of(23, seed, V), 12);
        };
    };
    same_alone_and_together({job(1, 2), job(2, 1)});
}

BOOST_AUTO_TEST_CASE(rwkv_model_shared_by_two_threads) {
    rwkv_test::model_spec spec;
    const auto bytes = rwkv_test::make_gguf(spec).write_to_memory();
    const auto m = load_model_from_memory<Rwkv6<dynamic, dynamic>>(bytes);
    const std::size_t V = spec.V;
    auto job = [&](std::uint32_t seed, std::size_t threads) {
        return [&m, V, seed, threads] {
            auto s = session(m, {.n_threads = threads, .max_sequences = 1});
            return drive(s, V, prompt_of(19, seed, V), 12);
        };
    };
    same_alone_and_together({job(3, 2), job(4, 1)});
}
