// One model family of the zoo (compiled once per family, see meson.build: ZOO_FAMILY
// names the folder under tests/data/zoo/, ZOO_ENTRY the registry entry, ZOO_PRESET its
// header) against Hugging Face transformers: a tiny random-weight checkpoint (biases and
// norm weights perturbed away from 0 and 1, so a dropped tensor shows) converted with
// llama.cpp's convert_hf_to_gguf.py, and transformers' float32 eager logits for a 7- and
// a 40-token prompt (tools/reference/make_zoo_fixture.py; <family>/versions.json).
// Pass: max |Δ| <= 1e-4 × max(1, max |ref|) at every position, in batch, sequential and
// chunked feeding; the registry picks the entry from the file alone; a stray tensor in
// the file is refused by name.
#define BOOST_TEST_MODULE zoo_family
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <type_traits>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include ZOO_PRESET
#include "fixture_common.hpp"

using namespace archetype;
using Entry = ZOO_ENTRY;
using Model = decoder_model<typename Entry::model>;

namespace {
std::string zoo_dir() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/" + ZOO_FAMILY + "/";
}

std::vector<float> run(const Model& m, const std::vector<std::int32_t>& tok, std::size_t step) {
    auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = 64});
    const std::size_t n = tok.size(), V = m.n_vocab();
    std::vector<float> logits(n * V);
    for (std::size_t b = 0; b < n; b += step) {
        const std::size_t c = std::min(step, n - b);
        s.prefill(0, std::span<const std::int32_t>(tok.data() + b, c), logits.data() + b * V);
    }
    return logits;
}
} // namespace

BOOST_AUTO_TEST_CASE(matches_transformers_at_every_position) {
    const auto m = load_model<Entry>(zoo_dir() + "model.gguf");
    const std::size_t V = m.n_vocab();
    for (int n : {7, 40}) {
        const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_" + std::to_string(n) + ".i32.bin");
        const auto want = fixture::read_raw<float>(zoo_dir() + "logits_" + std::to_string(n) + ".f32.bin");
        BOOST_REQUIRE_EQUAL(tok.size(), std::size_t(n));
        BOOST_REQUIRE_EQUAL(want.size(), std::size_t(n) * V);
        for (std::size_t step : {std::size_t(n), std::size_t(1), std::size_t(5)}) {
            const auto got = run(m, tok, step);
            double worst = 0;
            for (int p = 0; p < n; ++p) {
                double err = 0, ref = 0;
                for (std::size_t v = 0; v < V; ++v) {
                    err = std::max(err, std::abs(double(got[p * V + v]) - double(want[p * V + v])));
                    ref = std::max(ref, std::abs(double(want[p * V + v])));
                }
                worst = std::max(worst, err / std::max(1.0, ref));
                BOOST_TEST_CONTEXT("n=" << n << " step=" << step << " position " << p) {
                    BOOST_TEST(err <= 1e-4 * std::max(1.0, ref));
                }
            }
            BOOST_TEST_MESSAGE(ZOO_FAMILY << " n=" << n << " step=" << step << ": max |Δ| / max(1, max |ref|) = " << worst);
        }
    }
}

BOOST_AUTO_TEST_CASE(the_registry_picks_the_entry_from_the_file) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    const bool picked = with_architecture<default_architectures>(
        f, []<class E>(std::type_identity<E>) { return std::is_same_v<E, Entry>; });
    BOOST_TEST(picked);
}

// A tensor that no policy of the compiled structure binds is an error naming it,
// never silently dropped (a stray bias on a projection that has none).
BOOST_AUTO_TEST_CASE(a_stray_tensor_is_refused_by_name) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    gguf::writer w;
    for (const auto& e : f.metadata()) w.set(e.key, e.value);
    for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
    const std::size_t E = f.tensor("blk.0.attn_norm.weight").ne[0];
    const std::vector<float> extra(E, 0.5f);
    w.add_tensor("blk.1.attn_output.bias_stray", ggml_type::F32, {E}, extra);
    const auto path =
        (std::filesystem::temp_directory_path() / ("archetype_zoo_" + std::string(ZOO_FAMILY) + "_stray.gguf")).string();
    w.write(path);
    try {
        (void)load_model<Entry>(path);
        BOOST_ERROR("a file with an unbound tensor loaded");
    } catch (const shape_error& e) {
        BOOST_TEST(std::string(e.what()).find("'blk.1.attn_output.bias_stray'") != std::string::npos);
    }
    std::filesystem::remove(path);
}
