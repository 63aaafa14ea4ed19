// Decoder logits and hidden states against llama.cpp's golden files, at every
// position, in batch, sequential and chunked (5) modes, for several compiled
// structures of the same file (static / dynamic dims, full / rolling caches).
#define BOOST_TEST_MODULE decoder_fixtures
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <span>

#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "fixture_common.hpp"

using namespace archetype;

namespace {
enum class mode { batch, sequential, chunked };

template <class D>
struct run_result {
    std::vector<float> logits, hidden;
};

template <class D>
run_result<D> run(const decoder_model<D>& m, const std::vector<std::int32_t>& tok, mode md, std::size_t threads) {
    auto s = session(m, {.n_threads = threads, .max_sequences = 1, .n_ctx = 256});
    const std::size_t n = tok.size(), V = m.n_vocab(), E = m.n_embd();
    run_result<D> r;
    r.logits.assign(n * V, 0.f);
    r.hidden.assign(n * E, 0.f);
    const std::size_t step = md == mode::batch ? n : md == mode::sequential ? 1 : 5;
    for (std::size_t b = 0; b < n; b += step) {
        const std::size_t c = std::min(step, n - b);
        s.prefill(0, std::span<const std::int32_t>(tok.data() + b, c), r.logits.data() + b * V, logits_rows::all,
                  r.hidden.data() + b * E);
    }
    return r;
}

template <class D>
void check_model(const std::string& name, std::initializer_list<int> lengths) {
    const std::string dir = fixture::transformer_dir() + "/" + name + "/";
    const auto m = load_model<D>(dir + "model.gguf");
    for (int n : lengths) {
        const auto tok = fixture::read_raw<std::int32_t>(dir + "tokens_" + std::to_string(n) + ".i32.bin");
        const auto want_l = fixture::read_raw<float>(dir + "logits_" + std::to_string(n) + ".f32.bin");
        const auto want_h = fixture::read_raw<float>(dir + "hidden_" + std::to_string(n) + ".f32.bin");
        BOOST_REQUIRE_EQUAL(tok.size(), std::size_t(n));
        for (mode md : {mode::batch, mode::sequential, mode::chunked})
            for (std::size_t threads : {1u, 2u}) {
                const auto r = run(m, tok, md, threads);
                const double el = fixture::max_rel_err(r.logits, want_l), eh = fixture::max_rel_err(r.hidden, want_h);
                BOOST_TEST_MESSAGE(name << " n=" << n << " mode=" << int(md) << " threads=" << threads
                                        << " logits err " << fixture::max_abs_err(r.logits, want_l) << " hidden err "
                                        << fixture::max_abs_err(r.hidden, want_h));
                BOOST_TEST(el <= 1e-4);
                BOOST_TEST(eh <= 1e-4);
            }
    }
}
} // namespace

BOOST_AUTO_TEST_CASE(llama_gqa_dynamic) { check_model<Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache>>("llama-gqa", {7, 40}); }
BOOST_AUTO_TEST_CASE(llama_gqa_static) { check_model<Decoder<GQA<4, 2, 16>, RoPE::with<10000>, SwiGLUWith<96>>>("llama-gqa", {7, 40}); }
BOOST_AUTO_TEST_CASE(llama_mqa) {
    check_model<Decoder<MQA<4>, RoPE>>("llama-mqa", {7});
    check_model<Decoder<GQA<dynamic, dynamic>>>("llama-mqa", {7});
}
BOOST_AUTO_TEST_CASE(mellum_swa_from_file_full) {
    check_model<Decoder<GQA<4, 2>, Interleave<dynamic, SlidingWindow<>, Causal>, FullCache, MoE<1, 1, SwiGLU>>>(
        "mellum-swa", {7, 40});
}
BOOST_AUTO_TEST_CASE(mellum_swa_from_file_rolling) {
    check_model<Decoder<GQA<4, 2>, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache, MoE<1, 1, SwiGLU>>>(
        "mellum-swa", {7, 40});
}
BOOST_AUTO_TEST_CASE(mellum_swa_static_window_rolling) {
    check_model<Decoder<GQA<4, 2>, SlidingWindow<8>, RollingCache, SelfAttentionWith<qk_norm::rms>, SwiGLU>>(
        "mellum-swa", {7, 40});
}
