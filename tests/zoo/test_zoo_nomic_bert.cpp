// The nomic-bert encoder of the zoo (GGUF `nomic-bert`: RoPE, fused QKV, SwiGLU, post-norm)
// against Hugging Face transformers' NomicBertModel (tests/data/zoo/nomic-bert/, made by
// tools/reference/make_zoo_encoder_fixture.py --family nomic-bert): every position's last
// hidden state of a 7- and a 40-token prompt, each alone and both packed in one batch, on 1
// and 2 threads, and the sentence embedding (mean pooling from the file, then L2), to
// max |Δ| ≤ 1e-4 × max(1, max |ref|).
#define BOOST_TEST_MODULE zoo_nomic_bert
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "architectures_page.hpp"
#include "fixture_common.hpp"

using namespace archetype;
using Entry = presets::nomic_bert_architecture;

namespace {
const char* const family = "nomic-bert";

using zoo_page::argument;
std::string zoo_dir() { return argument(1, "tests/data/zoo") + "/" + family + "/"; }
std::vector<std::int32_t> tokens(int n) {
    return fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_" + std::to_string(n) + ".i32.bin");
}
/// max |got - want| / max(1, max |want|) over rows of width E, each row also held to 1e-4.
double worst_of(const float* got, const std::vector<float>& want, std::size_t E, const std::string& what) {
    double worst = 0;
    for (std::size_t p = 0; p * E < want.size(); ++p) {
        double err = 0, ref = 0;
        for (std::size_t i = 0; i < E; ++i) {
            err = std::max(err, std::abs(double(got[p * E + i]) - double(want[p * E + i])));
            ref = std::max(ref, std::abs(double(want[p * E + i])));
        }
        worst = std::max(worst, err / std::max(1.0, ref));
        BOOST_TEST_CONTEXT(what << " row " << p) { BOOST_TEST(err <= 1e-4 * std::max(1.0, ref)); }
    }
    return worst;
}
template <class M>
double worst_error(const M& m) {
    const std::size_t E = m.n_embd();
    const auto t7 = tokens(7), t40 = tokens(40);
    auto hidden = [&](int n) { return fixture::read_raw<float>(zoo_dir() + "hidden_" + std::to_string(n) + ".f32.bin"); };
    double worst = 0;
    for (std::size_t threads : {1, 2}) {
        auto enc = encoder_session(m, {.n_threads = threads});
        for (const auto* t : {&t7, &t40}) {
            const token_span one[] = {*t};
            std::vector<float> h(t->size() * E);
            enc.hidden(one, h);
            worst = std::max(worst, worst_of(h.data(), hidden(int(t->size())), E, "alone n=" + std::to_string(t->size())));
            std::vector<float> e(E);
            enc.embed(one, e);
            const auto want = fixture::read_raw<float>(zoo_dir() + "embedding_" + std::to_string(t->size()) + ".f32.bin");
            worst = std::max(worst, worst_of(e.data(), want, E, "embedding n=" + std::to_string(t->size())));
        }
        const token_span both[] = {t40, t7};
        std::vector<float> h((t7.size() + t40.size()) * E);
        enc.hidden(both, h);
        worst = std::max(worst, worst_of(h.data(), hidden(40), E, "packed n=40"));
        worst = std::max(worst, worst_of(h.data() + 40 * E, hidden(7), E, "packed n=7"));
    }
    BOOST_TEST_MESSAGE(family << ": max |Δ| / max(1, max |ref|) = " << worst);
    return worst;
}
} // namespace

BOOST_AUTO_TEST_CASE(the_registry_picks_nomic_bert_and_it_matches_transformers) {
    bool picked = false;
    with_architecture<default_architectures>(gguf::file::open(zoo_dir() + "model.gguf"),
                                             [&]<class E>(std::type_identity<E>) { picked = std::is_same_v<E, Entry>; });
    BOOST_TEST(picked);
    const auto m = load_model<Entry>(zoo_dir() + "model.gguf");
    BOOST_TEST(worst_error(m) <= 1e-4);
}

BOOST_AUTO_TEST_CASE(the_architectures_page_states_this_family) {
    const auto row = zoo_page::table_row(argument(2, "docs/architectures.md"), family);
    BOOST_REQUIRE_EQUAL(row.size(), 6u);
    const double bound = std::stod(row[5]);
    const auto m = load_model<Entry>(zoo_dir() + "model.gguf");
    BOOST_TEST(worst_error(m) <= bound);
    BOOST_TEST(bound <= 1e-4);
    const std::size_t lines = zoo_page::preset_lines(argument(3, "include/") + "/archetype/models/presets/nomic_bert.hpp");
    BOOST_TEST(std::stoul(row[3]) == lines);
    BOOST_TEST(lines <= 15u);
}
