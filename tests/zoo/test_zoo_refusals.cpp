// What the hooks of gemma2, olmo2 and granite refuse, on copies of their zoo fixtures
// with one key or tensor changed (written to a temporary file): each refusal is an
// exception of the documented type whose message names the key, tensor or policy.
//   - Granite's multipliers, the soft caps and the attention-scale key belong to presets that
//     name their policies: the key in another architecture's file is refused by the key ledger;
//   - a multiplier or soft cap that is not a finite number of the right sign;
//   - NormAfterSublayer on a file with pre-norms, a pre-norm decoder on a file without;
//   - a per-head QK norm on a file whose norm spans the whole projection;
//   - Hugging Face checkpoint directories (io/hf_checkpoint.hpp): an unknown class, a
//     tensor no rule names, a shard outside the directory, a tensor in two shards, a
//     misshaped config, a RoPE scaling the library does not implement.
// Arguments after `--`: tests/data/zoo.
#define BOOST_TEST_MODULE zoo_refusals
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"
#include "edited_gguf.hpp"
#include "archetype/io/hf_checkpoint.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/gemma2.hpp"
#include "archetype/models/presets/granite.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/models/presets/olmo2.hpp"
#include "archetype/models/presets/stablelm.hpp"

using namespace archetype;

namespace {
std::string zoo(const std::string& family) {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/" + family + "/model.gguf";
}

/// A copy of a fixture with `edit` applied to the writer, at a temporary path.
struct edited_file : test_util::edited_gguf {
    edited_file(const std::string& family, const std::function<void(gguf::writer&, const gguf::file&)>& edit)
        : edited_gguf(zoo(family), "zoo_refusal_" + family, edit) {}
};

template <class Error, class F>
void refused(F&& load, const std::string& needle) {
    try {
        load();
        BOOST_ERROR("loaded; expected an error naming " << needle);
    } catch (const Error& e) {
        BOOST_TEST_CONTEXT(e.what()) { BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos); }
    }
}
} // namespace

BOOST_AUTO_TEST_CASE(a_multiplier_is_read_only_where_the_architecture_registers_it) {
    // the olmo2 fixture with Granite's residual multiplier: olmo2 does not register multipliers
    edited_file f("olmo2", [](gguf::writer& w, const gguf::file&) { w.set("olmo2.residual_scale", 0.5f); });
    refused<shape_error>([&] { (void)load_model<presets::olmo2_architecture>(f.path); }, "olmo2.residual_scale");
    // and the granite file keeps loading with its own
    BOOST_CHECK_NO_THROW((void)load_model<presets::granite_architecture>(zoo("granite")));
}

BOOST_AUTO_TEST_CASE(a_quirk_key_is_read_only_where_the_preset_names_its_policy) {
    // the soft caps and the attention scale in an olmo2 file, whose preset names none of
    // AttentionSoftCap, LogitSoftCap, AttentionScaleKey: the key ledger refuses each by name
    for (const char* key : {"olmo2.attn_logit_softcapping", "olmo2.final_logit_softcapping", "olmo2.attention.scale"}) {
        edited_file f("olmo2", [&](gguf::writer& w, const gguf::file&) { w.set(key, 30.f); });
        refused<shape_error>([&] { (void)load_model<presets::olmo2_architecture>(f.path); }, key);
    }
    // the gemma2 file (both soft caps) with Gemma 2's structure less its soft-cap policies
    using NoCaps = Decoder<GQA<dynamic, dynamic>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache,
                           SelfAttentionWith<qk_norm::none>, GeGLU, PrePostNorm<RMSNorm>, ScaledEmbedding,
                           QueryPreAttnScale<46>>;
    using ScoreCapOnly = Decoder<GQA<dynamic, dynamic>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>,
                                 RollingCache, SelfAttentionWith<qk_norm::none>, GeGLU, PrePostNorm<RMSNorm>,
                                 ScaledEmbedding, QueryPreAttnScale<46>, AttentionSoftCap>;
    refused<shape_error>([&] { (void)load_model<NoCaps>(zoo("gemma2")); }, "gemma2.attn_logit_softcapping");
    refused<shape_error>([&] { (void)load_model<ScoreCapOnly>(zoo("gemma2")); }, "gemma2.final_logit_softcapping");
    static_assert(!std::is_same_v<presets::Gemma2, NoCaps> && !std::is_same_v<presets::Gemma2, ScoreCapOnly>);
    // and the preset, which names both, loads and reads them
    const auto m = load_model<presets::gemma2_architecture>(zoo("gemma2"));
    BOOST_TEST(m.score_cap().cap == 4.f);
    BOOST_TEST(m.logit_policy().cap == 30.f);
    // the embedding scale has no key: a Decoder<...> without an entry must agree with the preset
    // registered for the file's architecture
    using Unscaled = Decoder<GQA<dynamic, dynamic>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache,
                             SelfAttentionWith<qk_norm::none>, GeGLU, PrePostNorm<RMSNorm>, AttentionSoftCap,
                             LogitSoftCap, QueryPreAttnScale<46>>;
    refused<shape_error>([&] { (void)load_model<Unscaled>(zoo("gemma2")); }, "use ScaledEmbedding");
}

BOOST_AUTO_TEST_CASE(multipliers_and_soft_caps_must_be_finite_and_of_the_right_sign) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (const auto& [key, value] : std::vector<std::pair<std::string, float>>{{"granite.logit_scale", 0.f},
                                                                               {"granite.residual_scale", -1.f},
                                                                               {"granite.embedding_scale", nan},
                                                                               {"granite.attention.scale", 0.f}}) {
        edited_file f("granite", [&](gguf::writer& w, const gguf::file&) { w.set(key, value); });
        refused<format_error>([&] { (void)load_model<presets::granite_architecture>(f.path); }, key);
    }
    for (const auto& [key, value] : std::vector<std::pair<std::string, float>>{
             {"gemma2.attn_logit_softcapping", -3.f}, {"gemma2.final_logit_softcapping", nan}}) {
        edited_file f("gemma2", [&](gguf::writer& w, const gguf::file&) { w.set(key, value); });
        refused<format_error>([&] { (void)load_model<presets::gemma2_architecture>(f.path); }, key);
    }
}

BOOST_AUTO_TEST_CASE(norm_placement_must_match_the_file) {
    // an OLMo 2 file with a norm before the attention: NormAfterSublayer refuses it
    edited_file f("olmo2", [](gguf::writer& w, const gguf::file& src) {
        const auto& t = src.tensor("blk.0.post_attention_norm.weight");
        w.add_tensor("blk.0.attn_norm.weight", t.type, t.ne, t.data);
    });
    refused<shape_error>([&] { (void)load_model<presets::olmo2_architecture>(f.path); }, "blk.0.attn_norm.weight");
    // a pre-norm decoder on the OLMo 2 file misses its attn_norm
    using PreNormOLMo2 = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SelfAttentionWith<qk_norm::rms_whole>,
                                 SwiGLU, PrePostNorm<RMSNorm>>;
    refused<format_error>([&] { (void)load_model<PreNormOLMo2>(zoo("olmo2")); }, "blk.0.attn_norm.weight");
}

BOOST_AUTO_TEST_CASE(a_per_head_qk_norm_does_not_take_a_whole_row_norm) {
    using PerHead = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SelfAttentionWith<qk_norm::rms>, SwiGLU,
                            NormAfterSublayer<RMSNorm>>;
    refused<shape_error>([&] { (void)load_model<PerHead>(zoo("olmo2")); }, "attn_q_norm.weight");
    // from_file reads the width: the same model with qk_norm::from_file loads
    using FromFile = Decoder<GQA<dynamic, dynamic>, RoPE, Causal, FullCache, SelfAttention, SwiGLU, NormAfterSublayer<RMSNorm>>;
    const auto m = load_model<FromFile>(zoo("olmo2"));
    BOOST_TEST(m.layer_at(0).attn.qk_norm_whole);
}

namespace {
/// A copy of a fixture's hf/ directory with config.json edited and extra files written.
struct edited_checkpoint {
    std::filesystem::path dir;
    edited_checkpoint(const std::string& family, const std::function<void(nlohmann::json&)>& edit_config,
                      const std::function<void(const std::filesystem::path&)>& extra = {}) {
        namespace fs = std::filesystem;
        const auto& mts = boost::unit_test::framework::master_test_suite();
        const fs::path src = fs::path(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") / family / "hf";
        dir = fs::temp_directory_path() / ("archetype_hf_refusal_" + family);
        fs::remove_all(dir);
        fs::create_directories(dir);
        fs::copy_file(src / "model.safetensors", dir / "model.safetensors");
        std::ifstream in(src / "config.json");
        auto j = nlohmann::json::parse(in);
        edit_config(j);
        std::ofstream(dir / "config.json") << j.dump(1);
        if (extra) extra(dir);
    }
    ~edited_checkpoint() { std::filesystem::remove_all(dir); }
};

/// A one-tensor safetensors file (F32 [2]) written by hand: u64 header size, JSON, data.
void write_one_tensor(const std::filesystem::path& p, const std::string& name) {
    const std::string header = "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    const std::uint64_t n = header.size();
    const float data[2] = {1.f, 2.f};
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(header.data(), std::streamsize(n));
    out.write(reinterpret_cast<const char*>(data), 8);
}

void index_with(const std::filesystem::path& dir, const std::string& extra_shard, const std::string& extra_tensor) {
    // every tensor of model.safetensors in its own shard, plus one more shard
    namespace fs = std::filesystem;
    fs::rename(dir / "model.safetensors", dir / "model-00001.safetensors");
    const safetensors::file f((dir / "model-00001.safetensors").string());
    nlohmann::json map = nlohmann::json::object();
    for (const auto& t : f.tensors()) map[t.name] = "model-00001.safetensors";
    map[extra_tensor] = extra_shard;
    std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
}

template <class F>
void hf_refused(F&& edit_config, const std::string& needle,
                const std::function<void(const std::filesystem::path&)>& extra = {},
                const std::string& family = "granite") {
    edited_checkpoint c(family, edit_config, extra);
    refused<format_error>([&] { (void)hf::open_as_gguf(c.dir.string()); }, needle);
}
} // namespace

BOOST_AUTO_TEST_CASE(hugging_face_checkpoints_are_refused_by_name) {
    auto same = [](nlohmann::json&) {};
    hf_refused([](nlohmann::json& j) { j["architectures"] = {"FalconForCausalLM"}; }, "FalconForCausalLM");
    hf_refused([](nlohmann::json& j) { j["num_attention_heads"] = 0; }, "num_attention_heads");
    hf_refused([](nlohmann::json& j) { j["num_key_value_heads"] = 3; }, "num_key_value_heads");
    hf_refused([](nlohmann::json& j) { j.erase("hidden_size"); }, "hidden_size");
    hf_refused([](nlohmann::json& j) { j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}}; },
               "yarn");
    hf_refused([](nlohmann::json& j) { j["logits_scaling"] = "big"; }, "logits_scaling");
    // a tensor no rule names, in a second shard
    hf_refused(same, "model.layers.0.mlp.stray.weight", [](const std::filesystem::path& d) {
        write_one_tensor(d / "model-00002.safetensors", "model.layers.0.mlp.stray.weight");
        index_with(d, "model-00002.safetensors", "model.layers.0.mlp.stray.weight");
    });
    // a shard outside the directory
    hf_refused(same, "../outside.safetensors", [](const std::filesystem::path& d) {
        index_with(d, "../outside.safetensors", "model.layers.0.mlp.other.weight");
    });
    // the same tensor in two shards
    hf_refused(same, "two shards", [](const std::filesystem::path& d) {
        write_one_tensor(d / "model-00002.safetensors", "model.norm.weight");
        index_with(d, "model-00002.safetensors", "model.layers.0.extra");
    });
    // a misshaped tensor: hidden_size that the weights do not have (the loader names the tensor)
    edited_checkpoint c("granite", [](nlohmann::json& j) { j["hidden_size"] = 32; });
    refused<shape_error>([&] { (void)load_model<presets::granite_architecture>(hf::open_as_gguf(c.dir.string())); },
                         "has shape");
}

BOOST_AUTO_TEST_CASE(family_rules_of_hugging_face_checkpoints_are_checked) {
    // Qwen3-MoE: the preset renormalises the top-k weights, so a checkpoint that does not is
    // refused; a config naming more experts than the weights hold is named by tensor.
    hf_refused([](nlohmann::json& j) { j["norm_topk_prob"] = false; }, "norm_topk_prob", {}, "qwen3moe");
    hf_refused([](nlohmann::json& j) { j["num_local_experts"] = 5; }, "'model.layers.0.mlp.gate.weight' is not [5, 64]",
               {}, "qwen3moe");
    hf_refused([](nlohmann::json& j) { j["mlp_only_layers"] = {1}; }, "mlp_only_layers", {}, "qwen3moe");
    // Phi-3: LongRoPE factors must cover the rotary pairs.
    hf_refused([](nlohmann::json& j) { j["rope_parameters"]["long_factor"].erase(0); }, "long_factor", {}, "phi3");
    // GPT-2's causal-mask buffers are not weights; anything else unnamed still is refused.
    hf_refused([](nlohmann::json&) {}, "transformer.h.0.mlp.stray", [](const std::filesystem::path& d) {
        write_one_tensor(d / "model-00002.safetensors", "transformer.h.0.mlp.stray");
        index_with(d, "model-00002.safetensors", "transformer.h.0.mlp.stray");
    }, "gpt2");
    // BLOOM's fused q/k/v must be 3 x hidden_size rows.
    hf_refused([](nlohmann::json& j) { j["n_head"] = 8; j["hidden_size"] = 32; }, "hidden_size", {}, "bloom");
}

BOOST_AUTO_TEST_CASE(a_parallel_residual_file_is_refused_by_a_sequential_block) {
    // StableLM-2 12B / GPT-NeoX run attention and MLP in parallel; the stablelm preset's block
    // is sequential (SequentialBlock reads the key), so a file (or a checkpoint) that asks for
    // it is refused, never run as a sequential block.
    edited_file f("stablelm", [](gguf::writer& w, const gguf::file&) { w.set("stablelm.use_parallel_residual", true); });
    refused<shape_error>([&] { (void)load_model<presets::stablelm_architecture>(f.path); }, "use_parallel_residual");
    edited_checkpoint c("stablelm", [](nlohmann::json& j) { j["use_parallel_residual"] = true; });
    refused<shape_error>([&] { (void)load_model<presets::stablelm_architecture>(hf::open_as_gguf(c.dir.string())); },
                         "use_parallel_residual");
    edited_checkpoint ok("stablelm", [](nlohmann::json& j) { j["use_parallel_residual"] = false; });
    BOOST_CHECK_NO_THROW((void)load_model<presets::stablelm_architecture>(hf::open_as_gguf(ok.dir.string())));
}
