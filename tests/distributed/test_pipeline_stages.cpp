// Pipeline stages in one process, without MPI: a model loaded as layer ranges,
// each range's session fed the previous one's rows (run_stage), gives bitwise the
// logits of the whole model's session fed the same chunks (prefill and batched
// decode, full and rolling caches); a stage binds only its share of the file's
// tensors; the layer split (distributed/layer_split.hpp) against brute force.
#define BOOST_TEST_MODULE pipeline_stages
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "../decoder/decoder_test_util.hpp"
#include "archetype/distributed/layer_split.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/models/presets/mellum.hpp"

using namespace archetype;

namespace {

/// Runs `chunks` (tokens of sequence 0, one pass each) through the stages in order:
/// the last stage's logits of every row.
template <class D>
std::vector<float> through_stages(std::vector<decoder_session<D>>& stages, const std::vector<std::int32_t>& t,
                                  std::size_t step) {
    const std::size_t V = stages.back().n_vocab(), E = stages.front().n_embd();
    std::vector<float> logits(t.size() * V), a, b;
    std::size_t chunk = step; // a call is cut where prefill cuts it: at the least chunk of the stages
    for (const auto& s : stages) chunk = std::min(chunk, s.chunk_rows());
    for (std::size_t p = 0, n = 0; p < t.size(); p += n) {
        n = std::min(chunk, std::min(t.size(), (p / step + 1) * step) - p);
        const stage_rows g{0, n};
        a.assign(n * E, 0.f);
        b.assign(n * E, 0.f);
        for (std::size_t s = 0; s < stages.size(); ++s) {
            const bool last = s + 1 == stages.size();
            stages[s].run_stage(std::span(&g, 1), s == 0 ? t.data() + p : nullptr, s == 0 ? nullptr : a.data(),
                                last ? nullptr : b.data(), 0, n, last ? logits.data() + p * V : nullptr);
            std::swap(a, b);
        }
    }
    return logits;
}

template <class Entry>
void stages_equal_whole(const random_decoder::spec& spec, const std::vector<layer_range>& split, const char* name) {
    using D = typename Entry::model;
    decoder_test::temp_model f(spec, name);
    const auto whole = load_model<Entry>(f.path);
    std::vector<decoder_model<D>> models;
    for (const auto& r : split) models.push_back(load_model<Entry>(f.path, decoder_options{.layers = r}));
    const auto t = decoder_test::tokens(40, 11, spec.n_vocab);
    for (const std::size_t step : {std::size_t(40), std::size_t(7), std::size_t(1)}) {
        const auto want = decoder_test::feed(whole, t, step, 64, 1);
        std::vector<decoder_session<D>> stages;
        for (const auto& m : models) stages.push_back(session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 64}));
        const auto got = through_stages(stages, t, step);
        BOOST_TEST_CONTEXT(name << " step " << step) {
            BOOST_TEST(std::equal(got.begin(), got.end(), want.begin(), want.end()));
        }
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(llama_in_three_stages_is_bitwise_the_whole_model) {
    auto s = decoder_test::small_llama(5);
    s.n_layer = 5;
    stages_equal_whole<presets::llama_architecture>(s, {{0, 2}, {2, 2}, {4, 1}}, "llama3");
    s.tied = true; // both ends hold the shared matrix
    stages_equal_whole<presets::llama_architecture>(s, {{0, 1}, {1, 4}}, "llama_tied");
}

BOOST_AUTO_TEST_CASE(rolling_cache_stages_keep_their_own_windows) {
    // windowed and global layers split over stages: each stage's ring covers its layers only
    random_decoder::spec s = decoder_test::small_llama(9);
    s.arch = "mellum";
    s.n_layer = 4;
    s.window = 8;
    s.swa_pattern = {true, false, true, true};
    stages_equal_whole<presets::mellum_swa_architecture>(s, {{0, 1}, {1, 2}, {3, 1}}, "mellum_swa");
}

BOOST_AUTO_TEST_CASE(batched_decode_through_stages_is_bitwise_decode) {
    auto spec = decoder_test::small_llama(21);
    spec.n_layer = 3;
    decoder_test::temp_model f(spec, "decode");
    using E = presets::llama_architecture;
    const auto whole = load_model<E>(f.path);
    const auto m0 = load_model<E>(f.path, decoder_options{.layers = {0, 2}});
    const auto m1 = load_model<E>(f.path, decoder_options{.layers = {2, 1}});
    const decoder_session_options o{.n_threads = 1, .max_sequences = 3, .n_ctx = 32};
    auto ref = session(whole, o);
    auto s0 = session(m0, o);
    auto s1 = session(m1, o);
    const std::size_t V = whole.n_vocab(), E_ = whole.n_embd();
    // three prompts of different lengths, then four batched decode steps
    for (seq_id q = 0; q < 3; ++q) {
        const auto t = decoder_test::tokens(3 + std::size_t(q) * 2, 40 + std::uint64_t(q), spec.n_vocab);
        ref.prefill(q, t, nullptr);
        const stage_rows g{q, t.size()};
        std::vector<float> x(t.size() * E_);
        s0.run_stage(std::span(&g, 1), t.data(), nullptr, x.data(), 0, 0, nullptr);
        s1.run_stage(std::span(&g, 1), nullptr, x.data(), nullptr, 0, 0, nullptr);
    }
    const std::vector<seq_id> seqs{2, 0, 1};
    for (int step = 0; step < 4; ++step) {
        const auto t = decoder_test::tokens(3, 90 + std::uint64_t(step), spec.n_vocab);
        std::vector<float> want(3 * V), got(3 * V), x(3 * E_);
        ref.decode(seqs, t, want.data());
        std::vector<stage_rows> g;
        for (const auto q : seqs) g.push_back({q, 1});
        s0.run_stage(g, t.data(), nullptr, x.data(), 0, 0, nullptr);
        s1.run_stage(g, nullptr, x.data(), nullptr, 0, 3, got.data());
        BOOST_TEST(got == want);
    }
    BOOST_TEST(s1.n_past(2) == ref.n_past(2));
}

BOOST_AUTO_TEST_CASE(a_stage_binds_only_its_share) {
    auto spec = decoder_test::small_llama(3);
    spec.n_layer = 4;
    decoder_test::temp_model f(spec, "share");
    using E = presets::llama_architecture;
    const auto mid = load_model<E>(f.path, decoder_options{.layers = {1, 2}});
    BOOST_TEST(!mid.has_embedding());
    BOOST_TEST(!mid.has_head());
    BOOST_TEST(mid.token_embd().data == nullptr);
    BOOST_TEST(mid.output().data == nullptr);
    BOOST_TEST(mid.layer_at(0).attn.wq.data == nullptr); // layer 0 is another stage's
    BOOST_TEST(mid.layer_at(1).attn.wq.data != nullptr);
    BOOST_TEST(mid.layer_at(3).ffn.down.data == nullptr);
    const auto first = load_model<E>(f.path, decoder_options{.layers = {0, 1}});
    BOOST_TEST(first.has_embedding());
    BOOST_TEST(first.output().data == nullptr);
    const auto last = load_model<E>(f.path, decoder_options{.layers = {3, 0}}); // count 0: to the end
    BOOST_TEST(last.layers().count == 1u);
    BOOST_TEST(last.has_head());
    BOOST_TEST(last.token_embd().data == nullptr); // untied: the head is output.weight
    // a stage's session refuses the whole-model calls, naming its layers
    auto s = session(mid, {.n_threads = 1, .max_sequences = 1, .n_ctx = 8});
    const std::int32_t tok = 1;
    BOOST_CHECK_EXCEPTION(s.prefill(0, std::span(&tok, 1), nullptr), argument_error, [](const argument_error& e) {
        return std::string(e.what()).find("layers 1-2 of 4") != std::string::npos;
    });
    // a middle stage needs the previous stage's rows
    const stage_rows g{0, 1};
    BOOST_CHECK_THROW(s.run_stage(std::span(&g, 1), &tok, nullptr, nullptr, 0, 0, nullptr), argument_error);
    // ranges outside the model
    BOOST_CHECK_THROW(load_model<E>(f.path, decoder_options{.layers = {4, 1}}), argument_error);
    BOOST_CHECK_THROW(load_model<E>(f.path, decoder_options{.layers = {2, 3}}), argument_error);
}

BOOST_AUTO_TEST_CASE(balanced_split_is_the_best_contiguous_split) {
    using distributed::balanced_split;
    // brute force over every cut for small cases
    std::uint64_t seed = 7;
    for (int trial = 0; trial < 200; ++trial) {
        distributed::model_weight_bytes w;
        const std::size_t L = 1 + random_decoder::splitmix(++seed) % 7;
        for (std::size_t i = 0; i < L; ++i) w.layer.push_back(1 + random_decoder::splitmix(++seed) % 100);
        w.head = random_decoder::splitmix(++seed) % 200;
        const std::size_t S = 1 + random_decoder::splitmix(++seed) % L;
        const auto r = balanced_split(w, S);
        BOOST_REQUIRE_EQUAL(r.size(), S);
        auto heaviest = [&](const std::vector<std::size_t>& starts) {
            std::uint64_t worst = 0;
            for (std::size_t s = 0; s < S; ++s) {
                const std::size_t a = starts[s], b = s + 1 < S ? starts[s + 1] : L;
                std::uint64_t sum = s + 1 == S ? w.head : 0;
                for (std::size_t i = a; i < b; ++i) sum += w.layer[i];
                worst = std::max(worst, sum);
            }
            return worst;
        };
        std::vector<std::size_t> got_starts;
        std::size_t next = 0;
        for (const auto& x : r) {
            BOOST_REQUIRE_EQUAL(x.first, next); // contiguous, from layer 0
            BOOST_REQUIRE_GE(x.count, 1u);
            got_starts.push_back(x.first);
            next += x.count;
        }
        BOOST_REQUIRE_EQUAL(next, L);
        // the least heaviest stage over all splits (starts strictly increasing from 0)
        std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
        std::vector<std::size_t> starts(S);
        auto rec = [&](auto&& self, std::size_t s, std::size_t from) -> void {
            if (s == S) {
                best = std::min(best, heaviest(starts));
                return;
            }
            for (std::size_t a = from; a + (S - s) <= L; ++a) {
                if (s == 0 && a != 0) break;
                starts[s] = a;
                self(self, s + 1, a + 1);
            }
        };
        rec(rec, 0, 0);
        BOOST_TEST(heaviest(got_starts) == best);
    }
    distributed::model_weight_bytes w{{1, 1, 1}, 0};
    BOOST_CHECK_EXCEPTION(balanced_split(w, 4), argument_error, [](const argument_error& e) {
        return std::string(e.what()).find("4 pipeline stages but the model has 3 layers") != std::string::npos;
    });
}

BOOST_AUTO_TEST_CASE(explicit_split_reads_counts_and_refuses_bad_ones) {
    const auto r = distributed::explicit_split("10,12,8", 30, 3);
    BOOST_TEST(r[1].first == 10u);
    BOOST_TEST(r[1].count == 12u);
    BOOST_TEST(r[2].first == 22u);
    for (const char* bad : {"10,12", "10,12,9", "10,,20", "10,0,20", "a,b,c", "10,12,8,", ""})
        BOOST_CHECK_THROW(distributed::explicit_split(bad, 30, 3), argument_error);
}
