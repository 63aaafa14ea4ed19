// The encoders of the zoo on the core (issue 37): nomic-bert (RoPE, SwiGLU, fused QKV,
// post-norm) and ModernBERT (pre-norm, a global layer then symmetric-window ones, two RoPE
// bases, fused GeGLU, no attention norm on layer 0) loaded as their Encoder type's `core`,
// a Decoder composition (bidirectional mask, NoCache, the encoder's block, BertEmbedding,
// EncoderHead), and run by decoder_session:
//  - against Hugging Face transformers' last hidden state (tests/data/zoo/<family>/hidden_<n>,
//    the 7- and 40-token prompts): max |Δ| <= 1e-4 × max(1, max |ref|), each prompt alone
//    and both in one packed pass, on 1 and 2 threads;
//  - bitwise what the encoder session gives (its front end over the same core and panels);
//  - the file's default pooling, read by EncoderHead.
// Arguments after `--`: tests/data/zoo.
#define BOOST_TEST_MODULE encoder_core_zoo
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/models/presets/modern_bert.hpp"
#include "archetype/models/presets/nomic_bert.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "fixture_common.hpp"

using namespace archetype;

namespace {
std::string zoo(const std::string& family) {
    auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(mts.argc > 1, "usage: test_encoder_core_zoo -- tests/data/zoo");
    return std::string(mts.argv[1]) + "/" + family + "/";
}

template <class Entry>
decoder_model<typename Entry::model::core> load_core(const std::string& family) {
    static constexpr arch::gguf_conventions conv = conventions_of<Entry>();
    decoder_options o;
    o.conventions = &conv;
    o.repack = false;
    auto m = load_model<typename Entry::model::core>(zoo(family) + "model.gguf", o);
    m.pack_panels(!Entry::model::ffn::gated); // as encoder_model does
    return m;
}

/// max |Δ| / max(1, max |ref|) of rows [n x E] against hidden_<n>.f32.bin, per position.
double worst_of(const std::string& family, const float* got, std::size_t n, std::size_t E, const std::string& what) {
    const auto want = fixture::read_raw<float>(zoo(family) + "hidden_" + std::to_string(n) + ".f32.bin");
    BOOST_REQUIRE_EQUAL(want.size(), n * E);
    double worst = 0;
    for (std::size_t p = 0; p < n; ++p) {
        double err = 0, ref = 0;
        for (std::size_t i = 0; i < E; ++i) {
            err = std::max(err, std::abs(double(got[p * E + i]) - double(want[p * E + i])));
            ref = std::max(ref, std::abs(double(want[p * E + i])));
        }
        worst = std::max(worst, err / std::max(1.0, ref));
        BOOST_TEST_CONTEXT(family << " " << what << " n=" << n << " position " << p) {
            BOOST_TEST(err <= 1e-4 * std::max(1.0, ref));
        }
    }
    return worst;
}

template <class Entry>
void check_family(const std::string& family) {
    using Enc = typename Entry::model;
    auto core = load_core<Entry>(family);
    const std::size_t E = core.n_embd();
    const auto t7 = fixture::read_raw<std::int32_t>(zoo(family) + "tokens_7.i32.bin");
    const auto t40 = fixture::read_raw<std::int32_t>(zoo(family) + "tokens_40.i32.bin");
    const auto enc_model = load_model<Entry>(zoo(family) + "model.gguf");
    BOOST_TEST((core.logit_policy().pooling == enc_model.hp.pooling)); // the file's default pooling
    encoder_session<Enc> enc(enc_model, {.n_threads = 2});
    double worst = 0;
    for (std::size_t threads : {1, 2}) {
        decoder_session<typename Enc::core> s(core, {.n_threads = threads, .max_sequences = 2, .n_ubatch = 64});
        for (const auto* t : {&t7, &t40}) {
            std::vector<float> h(t->size() * E);
            s.prefill(0, *t, nullptr, logits_rows::all, h.data());
            worst = std::max(worst, worst_of(family, h.data(), t->size(), E, "alone, threads " + std::to_string(threads)));
            const token_span one[] = {*t};
            std::vector<float> e(h.size());
            enc.hidden(one, e);
            BOOST_TEST((h == e), family << " n=" << t->size() << ": not bitwise the encoder session's rows");
        }
        // both prompts in one pass
        std::vector<std::int32_t> both = t40;
        both.insert(both.end(), t7.begin(), t7.end());
        const stage_rows groups[] = {{0, t40.size()}, {1, t7.size()}};
        std::vector<float> h(both.size() * E);
        s.run_stage(groups, both.data(), nullptr, nullptr, 0, both.size(), nullptr, h.data());
        const std::string what = "packed, threads " + std::to_string(threads);
        worst = std::max(worst, worst_of(family, h.data(), 40, E, what));
        worst = std::max(worst, worst_of(family, h.data() + 40 * E, 7, E, what));
    }
    BOOST_TEST_MESSAGE(family << " on the core: max |Δ| / max(1, max |ref|) = " << worst);
}
} // namespace

BOOST_AUTO_TEST_CASE(nomic_bert_on_the_core) {
    check_family<presets::nomic_bert_architecture>("nomic-bert");
}

BOOST_AUTO_TEST_CASE(modern_bert_on_the_core) {
    check_family<presets::modern_bert_architecture>("modern-bert");
}
