// AutoAWQ GEMM checkpoints (io/hf_awq.hpp, issue 41 item 5) against transformers: a tiny
// random Llama whose decoder linears are packed as AutoAWQ packs them (group size 64, zero
// points), and transformers' float32 logits of the same model with the dequantised weights
// (tools/reference/make_awq_fixture.py; tests/data/awq/versions.json).
// Pass: max |Δ| <= 1e-4 × max(1, max |ref|) at every position, in batch, sequential and
// chunked feeding (the AWQ4 kernels take float activations in every mode, so the int8
// batch mode gives the same bits); modules_to_not_convert keeps its linears float; every
// other quantization_config, and shapes that disagree with the config, are refused by name.
// Arguments after `--`: tests/data/awq.
#define BOOST_TEST_MODULE awq
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <functional>
#include <iterator>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "archetype/io/hf_checkpoint.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "fixture_common.hpp"

using namespace archetype;
using Entry = presets::llama_architecture;
using Model = decoder_model<typename Entry::model>;

namespace {
std::string data_dir() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/awq") + "/";
}

std::vector<float> run(const Model& m, const std::vector<std::int32_t>& tok, std::size_t step,
                       kernels::batch_activations act = kernels::batch_activations::exact) {
    auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = 64, .batch_activations = act});
    const std::size_t n = tok.size(), V = m.n_vocab();
    std::vector<float> logits(n * V);
    for (std::size_t b = 0; b < n; b += step) {
        const std::size_t c = std::min(step, n - b);
        s.prefill(0, std::span<const std::int32_t>(tok.data() + b, c), logits.data() + b * V);
    }
    return logits;
}

/// Worst max |Δ| / max(1, max |ref|) over the positions of both prompts in the three
/// feedings (each position checked on the way), against logits<suffix>_<n>.f32.bin.
double worst_error(const Model& m, const std::string& suffix,
                   kernels::batch_activations act = kernels::batch_activations::exact) {
    const std::size_t V = m.n_vocab();
    double worst = 0;
    for (int n : {7, 40}) {
        const auto tok = fixture::read_raw<std::int32_t>(data_dir() + "tokens_" + std::to_string(n) + ".i32.bin");
        const auto want = fixture::read_raw<float>(data_dir() + "logits" + suffix + "_" + std::to_string(n) + ".f32.bin");
        BOOST_REQUIRE_EQUAL(want.size(), std::size_t(n) * V);
        for (std::size_t step : {std::size_t(n), std::size_t(1), std::size_t(5)}) {
            const auto got = run(m, tok, step, act);
            double mode_worst = 0;
            for (int p = 0; p < n; ++p) {
                double err = 0, ref = 0;
                for (std::size_t v = 0; v < V; ++v) {
                    err = std::max(err, std::abs(double(got[p * V + v]) - double(want[p * V + v])));
                    ref = std::max(ref, std::abs(double(want[p * V + v])));
                }
                mode_worst = std::max(mode_worst, err / std::max(1.0, ref));
                BOOST_TEST_CONTEXT("n=" << n << " step=" << step << " position " << p) {
                    BOOST_TEST(err <= 1e-4 * std::max(1.0, ref));
                }
            }
            BOOST_TEST_MESSAGE("awq" << suffix << " n=" << n << " step=" << step
                                     << ": max |Δ| / max(1, max |ref|) = " << mode_worst);
            worst = std::max(worst, mode_worst);
        }
    }
    return worst;
}

/// A copy of fixture directory `name` with its config.json edited, in a temporary directory.
struct edited_dir {
    std::filesystem::path path;
    edited_dir(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
        namespace fs = std::filesystem;
        static int counter = 0;
        path = fs::temp_directory_path() / ("archetype-awq-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::create_directories(path);
        fs::copy_file(data_dir() + name + "/model.safetensors", path / "model.safetensors");
        std::ifstream in(data_dir() + name + "/config.json");
        auto j = nlohmann::json::parse(in);
        edit(j);
        std::ofstream(path / "config.json") << j.dump(2);
    }
    /// ... and its model.safetensors header edited (the data section unchanged)
    edited_dir(const std::string& name, const std::function<void(nlohmann::json&)>& edit_config,
               const std::function<void(nlohmann::json&)>& edit_header)
        : edited_dir(name, edit_config) {
        std::ifstream in(path / "model.safetensors", std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::uint64_t n;
        std::memcpy(&n, bytes.data(), 8);
        auto header = nlohmann::json::parse(bytes.substr(8, n));
        edit_header(header);
        std::string h = header.dump();
        h.resize(((h.size() + 7) / 8) * 8, ' ');
        const std::uint64_t m = h.size();
        std::ofstream out(path / "model.safetensors", std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(&m), 8);
        out << h << bytes.substr(8 + n);
    }
    ~edited_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

void refused_dir(const edited_dir& d, const std::string& needle) {
    try {
        (void)hf::open_as_gguf(d.path.string());
        BOOST_ERROR("loaded; expected an error naming " << needle);
    } catch (const format_error& e) {
        BOOST_TEST_CONTEXT(e.what()) { BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos); }
    }
}

void refused(const std::string& name, const std::function<void(nlohmann::json&)>& edit, const std::string& needle) {
    refused_dir(edited_dir(name, edit), needle);
}

nlohmann::json& qc(nlohmann::json& j) { return j["quantization_config"]; }
} // namespace

BOOST_AUTO_TEST_CASE(matches_transformers_in_every_feeding) {
    const auto m = load_model<Entry>(hf::open_as_gguf(data_dir() + "hf"));
    for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
        for (int l : {0, 1}) {
            const auto& ti = m.file().tensor("blk." + std::to_string(l) + "." + t + ".weight");
            BOOST_TEST((ti.type == ggml_type::AWQ4), ti.name);
        }
    BOOST_TEST((m.file().tensor("token_embd.weight").type == ggml_type::F16));
    BOOST_TEST((m.file().tensor("output.weight").type == ggml_type::F16));
    BOOST_TEST(worst_error(m, "") <= 1e-4);
}

BOOST_AUTO_TEST_CASE(the_int8_batch_mode_changes_nothing) {
    // AWQ4 has float-activation kernels only (AWQ's W4A16 numerics): the int8 batch mode,
    // which rounds activations for ggml's block types, leaves this model's logits bit for bit
    const auto m = load_model<Entry>(hf::open_as_gguf(data_dir() + "hf"));
    const auto tok = fixture::read_raw<std::int32_t>(data_dir() + "tokens_40.i32.bin");
    for (std::size_t step : {std::size_t(40), std::size_t(1), std::size_t(5)})
        BOOST_TEST((run(m, tok, step, kernels::batch_activations::int8) == run(m, tok, step)), "step " << step);
}

BOOST_AUTO_TEST_CASE(modules_to_not_convert_stay_float) {
    const auto m = load_model<Entry>(hf::open_as_gguf(data_dir() + "hf-keep"));
    BOOST_TEST((m.file().tensor("blk.0.ffn_down.weight").type == ggml_type::F16));
    BOOST_TEST((m.file().tensor("blk.1.ffn_down.weight").type == ggml_type::F16));
    BOOST_TEST((m.file().tensor("blk.1.ffn_up.weight").type == ggml_type::AWQ4));
    BOOST_TEST(worst_error(m, "_keep") <= 1e-4);
    // and the main model's reference is not this one's (the float down_proj matters)
    const auto tok = fixture::read_raw<std::int32_t>(data_dir() + "tokens_40.i32.bin");
    const auto other = fixture::read_raw<float>(data_dir() + "logits_40.f32.bin");
    const auto got = run(m, tok, 40);
    double diff = 0;
    for (std::size_t i = 0; i < got.size(); ++i) diff = std::max(diff, double(std::abs(got[i] - other[i])));
    BOOST_TEST(diff > 1e-2);
}

BOOST_AUTO_TEST_CASE(other_quantization_configs_are_refused_by_name) {
    refused("hf", [](auto& j) { qc(j)["quant_method"] = "gptq"; }, "'gptq'");
    refused("hf", [](auto& j) { qc(j)["quant_method"] = "bitsandbytes"; }, "'bitsandbytes'");
    refused("hf", [](auto& j) { qc(j)["version"] = "gemv"; }, "gemv");
    refused("hf", [](auto& j) { qc(j)["version"] = "GEMV_FAST"; }, "GEMV_FAST");
    refused("hf", [](auto& j) { qc(j)["format"] = "exllama"; }, "exllama");
    refused("hf", [](auto& j) { qc(j).erase("version"); }, "no version");
    refused("hf", [](auto& j) { qc(j)["bits"] = 8; }, "bits 8");
    refused("hf", [](auto& j) { qc(j)["bits"] = "4"; }, "bits \"4\"");
    refused("hf", [](auto& j) { qc(j)["zero_point"] = false; }, "zero_point false");
    refused("hf", [](auto& j) { qc(j)["group_size"] = 48; }, "group_size 48");
    refused("hf", [](auto& j) { qc(j)["group_size"] = 0; }, "group_size 0");
    refused("hf", [](auto& j) { qc(j)["group_size"] = 64.5; }, "group_size 64.5");
    refused("hf", [](auto& j) { qc(j)["modules_to_not_convert"] = "down_proj"; }, "modules_to_not_convert");
    refused("hf", [](auto& j) { qc(j)["modules_to_not_convert"] = nlohmann::json::array({3}); }, "entry 3");
    refused("hf", [](auto& j) { j["quantization_config"] = 4; }, "not an object");
    // a quantization_config AWQ cannot have on a family this reader does not convert with AWQ
    refused("hf", [](auto& j) { j["architectures"] = {"Qwen3MoeForCausalLM"}; }, "Qwen3MoeForCausalLM");
}

BOOST_AUTO_TEST_CASE(shapes_must_agree_with_the_config) {
    // group size 128: qzeros must be [1, 16], the file's is [2, 16] (q_proj)
    refused("hf", [](auto& j) { qc(j)["group_size"] = 128; }, "q_proj.qzeros' is I32 [2, 16], AWQ GEMM needs I32 [1, 16]");
    // group -1 (a whole row per group) also disagrees with the file's groups
    refused("hf", [](auto& j) { qc(j)["group_size"] = -1; }, "needs I32 [1, 16]");
    // a wider feed-forward than the packed tensors hold
    refused("hf", [](auto& j) { j["intermediate_size"] = 512; }, "gate_proj.qweight' is I32 [128, 32], AWQ GEMM needs I32 [128, 64]");
    // group size that does not divide a linear's inputs (down_proj has 256, q_proj 128)
    refused("hf", [](auto& j) { qc(j)["group_size"] = 96; }, "does not divide its 128 inputs");
    // modules_to_not_convert must match the file: a packed linear it names, a float linear it does not
    refused("hf", [](auto& j) { qc(j)["modules_to_not_convert"] = {"up_proj"}; }, "keeps 'model.layers.0.mlp.up_proj' float");
    refused("hf-keep", [](auto& j) { qc(j)["modules_to_not_convert"] = nullptr; },
            "'model.layers.0.mlp.down_proj.weight' is float, but quantization_config (AWQ) quantises");
}

BOOST_AUTO_TEST_CASE(hostile_tensors_are_refused_before_they_are_read) {
    auto no_edit = [](nlohmann::json&) {};
    const std::string q = "model.layers.0.self_attn.q_proj";
    // a qweight of another dtype with the same bytes
    refused_dir(edited_dir("hf", no_edit, [&](auto& h) { h[q + ".qweight"]["dtype"] = "F32"; }),
                "'" + q + ".qweight' is F32 [128, 16], AWQ GEMM needs I32 [128, 16]");
    // the same bytes in another shape
    refused_dir(edited_dir("hf", no_edit, [&](auto& h) { h[q + ".qweight"]["shape"] = {64, 32}; }),
                "'" + q + ".qweight' is I32 [64, 32], AWQ GEMM needs I32 [128, 16]");
    // F32 scales in place of F16 (as many bytes: half the groups)
    refused_dir(edited_dir("hf", no_edit, [&](auto& h) {
                    h[q + ".scales"]["dtype"] = "F32";
                    h[q + ".scales"]["shape"] = {1, 128};
                }),
                "'" + q + ".scales' is F32 [1, 128], AWQ GEMM needs F16 [2, 128]");
    // a qweight without its scales
    refused_dir(edited_dir("hf", no_edit, [&](auto& h) {
                    h[q + ".scalez"] = h[q + ".scales"];
                    h.erase(q + ".scales");
                }),
                "has '" + q + ".qweight' but no '" + q + ".scales'");
    // a packed linear under a name no rule has: refused by name, not dropped
    refused_dir(edited_dir("hf", no_edit, [&](auto& h) {
                    for (const char* part : {".qweight", ".qzeros", ".scales"}) {
                        h[std::string("model.layers.1.mlp.fc") + part] = h[std::string("model.layers.1.mlp.down_proj") + part];
                        h.erase(std::string("model.layers.1.mlp.down_proj") + part);
                    }
                }),
                "tensor 'model.layers.1.mlp.fc.qweight' of the checkpoint is not one a LlamaForCausalLM is converted with");
}
