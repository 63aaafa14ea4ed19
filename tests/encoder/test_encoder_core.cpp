// An encoder composed on the core (issue 37: the encoder runs on the core): bert-tiny
// (llama.cpp golden outputs, the copy in tests/data) run by a Decoder<...> with a
// bidirectional mask, NoCache, PostNormBlock and BertEmbedding through decoder_session:
//  - per-token hidden states and mean/L2 pooling against llama.cpp's goldens (the tolerances
//    of test_encoder_fixture: 2e-3 raw, 1e-3 L2-normalised), and bitwise what the encoder
//    session gives for the same composition (its front end runs this core, with the
//    model's GEMM panels: decoder_model::pack_panels);
//  - NoCache's properties: a packed pass of several sequences gives each what it gets
//    alone, a sequence fed again starts at position 0, a symmetric window is applied
//    (as the encoder session applies it, and unlike no window);
//  - its refusals: decode, a sequence longer than one pass, attention.causal = true.
// The folder comes from argv (`-- DIR`).
#define BOOST_TEST_MODULE encoder_core
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/kernels/pooling.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/encoder_session.hpp"

#include "../decoder/edited_gguf.hpp"
#include "../decoder/fixture_common.hpp"

namespace {
using namespace archetype;

std::string folder() {
    auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(mts.argc > 1, "usage: test_encoder_core -- DIR (bert-tiny)");
    return mts.argv[1];
}

template <class T>
std::vector<T> read_bin(const std::string& path) {
    return fixture::read_raw<T>(path);
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    BOOST_REQUIRE_EQUAL(a.size(), b.size());
    float m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}
float tolerance(const std::vector<float>& ref) {
    float m = 1.f;
    for (float v : ref) m = std::max(m, std::fabs(v));
    return 1e-4f * m;
}

// BERT on the core: the encoder's policies on the decoder's axes.
template <class Mask>
using BertCore = Decoder<MHA<4>, LearnedPositions<64>, Mask, NoCache, PostNormBlock, LayerNorm, GeluMLP, BertEmbedding<>>;
// the same model as the encoder runs it (runtime/encoder_session.hpp)
template <class Mask>
using BertEncoder = Encoder<MHA<4>, LearnedPositions<64>, Mask, LayerNorm, GeluMLP>;

// The core reads no pooling: the test pools, so the file's default pooling is the test's.
constexpr known_unused_key pooled_here[] = {{"{arch}.pooling_type", "this test pools the hidden rows itself"}};

template <class Mask>
decoder_model<BertCore<Mask>> load_core(const std::string& path) {
    decoder_options o;
    o.known_unused_keys = pooled_here;
    o.repack = false;
    auto m = load_model<BertCore<Mask>>(path, o);
    m.pack_panels(true); // as encoder_model packs an ungated feed-forward's matrices
    return m;
}

/// Hidden rows [n x n_embd] of one sequence through the core.
template <class D>
std::vector<float> core_hidden(decoder_session<D>& s, const std::vector<std::int32_t>& tokens, seq_id seq = 0) {
    std::vector<float> h(tokens.size() * s.n_embd());
    s.prefill(seq, tokens, nullptr, logits_rows::all, h.data());
    return h;
}

template <class Mask>
std::vector<float> encoder_hidden(const std::string& path, const std::vector<std::int32_t>& tokens) {
    auto m = load_model<BertEncoder<Mask>>(path);
    encoder_session<BertEncoder<Mask>> enc(m, {.n_threads = 2});
    const token_span seqs[] = {tokens};
    std::vector<float> out(enc.output_size(seqs, pooling_type::none));
    enc.hidden(seqs, out);
    return out;
}

struct bert_tiny {
    std::string path = folder() + "/model.gguf";
    std::vector<std::int32_t> tokens = read_bin<std::int32_t>(folder() + "/tokens_7.i32.bin");
    decoder_model<BertCore<Bidirectional>> model = load_core<Bidirectional>(path);
};
} // namespace

BOOST_FIXTURE_TEST_SUITE(bert_on_the_core, bert_tiny)

BOOST_AUTO_TEST_CASE(hidden_rows_match_llama_cpp_and_the_encoder) {
    for (std::size_t threads : {1, 2}) {
        decoder_session<BertCore<Bidirectional>> s(model, {.n_threads = threads, .n_ubatch = 64});
        const auto got = core_hidden(s, tokens);
        const auto want = read_bin<float>(folder() + "/embd_none_7.f32.bin");
        const float d = max_diff(got, want);
        BOOST_TEST_MESSAGE("core vs llama.cpp (" << threads << " threads): max |diff| = " << d);
        BOOST_TEST(d <= 2e-3f);
        const auto enc = encoder_hidden<Bidirectional>(path, tokens);
        BOOST_TEST_MESSAGE("core vs encoder session: max |diff| = " << max_diff(got, enc));
        BOOST_TEST((got == enc), "the core's rows are not bitwise the encoder session's");
    }
}

BOOST_AUTO_TEST_CASE(mean_l2_pooling_matches_llama_cpp) {
    decoder_session<BertCore<Bidirectional>> s(model, {.n_threads = 2, .n_ubatch = 64});
    const auto h = core_hidden(s, tokens);
    const std::size_t E = s.n_embd();
    std::vector<float> pooled(E);
    kernels::pool_rows(kernels::pool_op::mean, h.data(), E, tokens.size(), E, pooled.data());
    kernels::embd_normalize(pooled.data(), pooled.data(), E, 2);
    BOOST_TEST(max_diff(pooled, read_bin<float>(folder() + "/pooled_mean_l2_7.f32.bin")) <= 1e-3f);
}

BOOST_AUTO_TEST_CASE(a_packed_pass_gives_each_sequence_its_own_rows) {
    decoder_session<BertCore<Bidirectional>> s(model, {.n_threads = 2, .max_sequences = 3, .n_ubatch = 64});
    const std::vector<std::int32_t> a = tokens, b(tokens.begin(), tokens.begin() + 4),
                                    c(tokens.rbegin(), tokens.rend());
    const auto ha = core_hidden(s, a, 0), hb = core_hidden(s, b, 1), hc = core_hidden(s, c, 2);
    // a, b and c in one pass (their rows one after another)
    std::vector<std::int32_t> all = a;
    all.insert(all.end(), b.begin(), b.end());
    all.insert(all.end(), c.begin(), c.end());
    const stage_rows groups[] = {{0, a.size()}, {1, b.size()}, {2, c.size()}};
    const std::size_t E = s.n_embd();
    std::vector<float> h(all.size() * E);
    s.run_stage(groups, all.data(), nullptr, nullptr, 0, all.size(), nullptr, h.data());
    auto rows = [&](std::size_t r0, std::size_t n) {
        return std::vector<float>(h.begin() + std::ptrdiff_t(r0 * E), h.begin() + std::ptrdiff_t((r0 + n) * E));
    };
    BOOST_TEST(max_diff(rows(0, a.size()), ha) <= tolerance(ha));
    BOOST_TEST(max_diff(rows(a.size(), b.size()), hb) <= tolerance(hb));
    BOOST_TEST(max_diff(rows(a.size() + b.size(), c.size()), hc) <= tolerance(hc));
    // the shorter sequence is not a prefix of the longer one's result: it saw fewer keys
    BOOST_TEST(max_diff(rows(0, b.size()), hb) > 1e-3f);
}

BOOST_AUTO_TEST_CASE(nothing_outlives_a_pass) {
    decoder_session<BertCore<Bidirectional>> s(model, {.n_threads = 1, .n_ubatch = 64});
    const auto first = core_hidden(s, tokens);
    BOOST_TEST(s.n_past(0) == 0);
    const auto again = core_hidden(s, tokens); // at positions 0.. again, seeing only itself
    BOOST_TEST(first == again);
}

BOOST_AUTO_TEST_CASE(a_symmetric_window_is_applied_as_the_encoder_applies_it) {
    auto windowed = load_core<SymmetricWindow<4>>(path);
    decoder_session<BertCore<SymmetricWindow<4>>> s(windowed, {.n_threads = 2, .n_ubatch = 64});
    const auto got = core_hidden(s, tokens);
    const auto enc = encoder_hidden<SymmetricWindow<4>>(path, tokens);
    BOOST_TEST((got == enc), "max |diff| " << max_diff(got, enc));
    // 7 tokens under |i - j| <= 2: not what every token seeing all gives
    BOOST_TEST(max_diff(got, encoder_hidden<Bidirectional>(path, tokens)) > 1e-3f);
}

BOOST_AUTO_TEST_CASE(refusals) {
    decoder_session<BertCore<Bidirectional>> s(model, {.n_threads = 1, .n_ubatch = 4});
    std::vector<float> h(tokens.size() * s.n_embd());
    // 7 tokens, 4 rows a pass: a bidirectional sequence cannot be cut
    BOOST_CHECK_EXCEPTION(s.prefill(0, tokens, nullptr, logits_rows::all, h.data()), capacity_error,
                          [](const capacity_error& e) { return std::string(e.what()).find("runs whole") != std::string::npos; });
    BOOST_CHECK_EXCEPTION(s.decode(0, tokens[0], nullptr, h.data()), argument_error,
                          [](const argument_error& e) { return std::string(e.what()).find("NoCache") != std::string::npos; });
    // a causal file under a bidirectional mask
    test_util::edited_gguf causal(path, "causal", [](gguf::writer& w, const gguf::file&) { w.set("bert.attention.causal", true); });
    BOOST_CHECK_EXCEPTION(load_core<Bidirectional>(causal.path), shape_error, [](const shape_error& e) {
        return std::string(e.what()).find("bert.attention.causal = true") != std::string::npos;
    });
    // the file's pooling is a key the core does not read: refused by name without the test's list
    BOOST_CHECK_EXCEPTION(load_model<BertCore<Bidirectional>>(path), shape_error, [](const shape_error& e) {
        return std::string(e.what()).find("bert.pooling_type") != std::string::npos;
    });
}

BOOST_AUTO_TEST_SUITE_END()
