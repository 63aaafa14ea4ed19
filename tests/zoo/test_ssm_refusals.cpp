// What the state-space families refuse (issue 38), each an exception naming the value:
// hostile variants of the zoo's mamba2 / nemotron_h / qwen3next GGUFs (a head count of 0
// under an attention mixer, ssm keys out of range or inconsistent, a per-layer rule the file
// does not give) and of the mamba2 / granitehybrid Hugging Face checkpoints (a dt clamp the
// GGUF cannot carry, unknown layer kinds, experts, a RoPE type other than the default);
// and which granitehybrid entry takes which file (NoPE or RoPE by rope.scaling.finetuned).
// Arguments after `--`: tests/data/zoo.
#define BOOST_TEST_MODULE ssm_refusals
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "archetype/io/hf_checkpoint.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/granitehybrid.hpp"
#include "archetype/models/presets/mamba2.hpp"
#include "archetype/models/presets/nemotron_h.hpp"
#include "archetype/models/presets/qwen3next.hpp"
#include "edited_gguf.hpp"

using namespace archetype;

namespace {
std::string zoo_root() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return mts.argc > 1 ? mts.argv[1] : "tests/data/zoo";
}

struct edited_file : test_util::edited_gguf {
    edited_file(const std::string& family, const std::function<void(gguf::writer&, const gguf::file&)>& edit)
        : edited_gguf(zoo_root() + "/" + family + "/model.gguf", "ssm_refusal_" + family, edit) {}
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

/// A copy of a fixture's hf/ directory with config.json edited.
struct edited_checkpoint {
    std::filesystem::path dir;
    edited_checkpoint(const std::string& family, const std::function<void(nlohmann::json&)>& edit_config) {
        namespace fs = std::filesystem;
        const fs::path src = fs::path(zoo_root()) / family / "hf";
        dir = fs::temp_directory_path() / ("archetype_ssm_hf_refusal_" + family);
        fs::remove_all(dir);
        fs::create_directories(dir);
        fs::copy_file(src / "model.safetensors", dir / "model.safetensors");
        std::ifstream in(src / "config.json");
        auto j = nlohmann::json::parse(in);
        edit_config(j);
        std::ofstream(dir / "config.json") << j.dump(1);
    }
    ~edited_checkpoint() { std::filesystem::remove_all(dir); }
};

void hf_refused(const std::string& family, const std::function<void(nlohmann::json&)>& edit, const std::string& needle) {
    edited_checkpoint c(family, edit);
    refused<format_error>([&] { (void)hf::open_as_gguf(c.dir.string()); }, needle);
}
} // namespace

BOOST_AUTO_TEST_CASE(a_file_without_attention_is_refused_by_an_attention_mixer) {
    // mamba2's head_count is 0: a model whose mixer attends names the key
    using Attending = Decoder<GQA<dynamic, dynamic>, NoPE, Causal, FullCache, RMSNorm, SelfAttention, MixerOnlyBlock>;
    refused<shape_error>([] { (void)load_model<Attending>(zoo_root() + "/mamba2/model.gguf"); }, "attention.head_count = 0");
    // and a file with no feed-forward under a block that has one
    using WithFfn = Decoder<NoPE, Causal, FullCache, RMSNorm, Mamba2>;
    refused<format_error>([] { (void)load_model<WithFfn>(zoo_root() + "/mamba2/model.gguf"); }, "feed-forward length");
    // no heads but KV heads
    edited_file f("mamba2", [](gguf::writer& w, const gguf::file&) { w.set("mamba2.attention.head_count_kv", std::uint32_t(2)); });
    refused<format_error>([&] { (void)load_model<presets::mamba2_architecture>(f.path); }, "head_count = 0");
}

BOOST_AUTO_TEST_CASE(ssm_keys_out_of_range_or_inconsistent_are_refused_by_name) {
    auto with = [](const char* key, std::uint32_t v, const std::string& needle, bool shape) {
        edited_file f("mamba2", [&](gguf::writer& w, const gguf::file&) { w.set(key, v); });
        if (shape) refused<shape_error>([&] { (void)load_model<presets::mamba2_architecture>(f.path); }, needle);
        else refused<format_error>([&] { (void)load_model<presets::mamba2_architecture>(f.path); }, needle);
    };
    with("mamba2.ssm.conv_kernel", 0, "mamba2.ssm.conv_kernel", false);
    with("mamba2.ssm.state_size", 1u << 20, "mamba2.ssm.state_size", false);
    with("mamba2.ssm.group_count", 3, "ssm.group_count = 3", true);
    with("mamba2.ssm.time_step_rank", 7, "ssm.time_step_rank = 7", true);
    // a state size the tensors do not have: the tensor is named
    with("mamba2.ssm.state_size", 8, "blk.0.ssm_in.weight", true);
}

BOOST_AUTO_TEST_CASE(per_layer_rules_the_file_does_not_give_are_refused) {
    // nemotron_h's one-sublayer layers need feed_forward_length per layer
    edited_file f("nemotron_h", [](gguf::writer& w, const gguf::file&) {
        w.set("nemotron_h.feed_forward_length", std::uint32_t(128));
    });
    refused<shape_error>([&] { (void)load_model<presets::nemotron_h_architecture>(f.path); }, "feed_forward_length per layer");
    // a per-layer array of the wrong length
    edited_file g("nemotron_h", [](gguf::writer& w, const gguf::file&) {
        w.set("nemotron_h.feed_forward_length", std::vector<std::uint32_t>{0, 0, 128});
    });
    refused<format_error>([&] { (void)load_model<presets::nemotron_h_architecture>(g.path); }, "3 values for 6 layers");
    // qwen3next's attention interval
    edited_file q("qwen3next", [](gguf::writer& w, const gguf::file&) {
        w.set("qwen3next.full_attention_interval", std::uint32_t(0));
    });
    refused<format_error>([&] { (void)load_model<presets::qwen3next_architecture>(q.path); }, "full_attention_interval");
}

BOOST_AUTO_TEST_CASE(hugging_face_state_space_checkpoints_are_refused_by_name) {
    using nlohmann::json;
    hf_refused("mamba2", [](json& j) { j["time_step_limit"] = {0.001, 0.1}; }, "time_step_limit");
    hf_refused("mamba2", [](json& j) { j["head_dim"] = 48; }, "head_dim");
    hf_refused("granitehybrid", [](json& j) { j["layer_types"][1] = "sliding_attention"; }, "sliding_attention");
    hf_refused("granitehybrid", [](json& j) { j["layer_types"].erase(0); }, "layer_types");
    hf_refused("granitehybrid", [](json& j) { j["num_local_experts"] = 4; }, "num_local_experts");
    hf_refused("granitehybrid", [](json& j) { j["position_embedding_type"] = "alibi"; }, "position_embedding_type");
    hf_refused("granitehybrid-rope", [](json& j) { j["rope_parameters"]["rope_type"] = "linear"; }, "rope_type");
    hf_refused("granitehybrid", [](json& j) { j["mamba_n_groups"] = 3; }, "groups");
}

BOOST_AUTO_TEST_CASE(the_hub_layer_names_convert_as_transformers_5s) {
    // "mamba" / "attention" (the Hub's names) give the same file as transformers 5's names
    edited_checkpoint hub("granitehybrid", [](nlohmann::json& j) {
        for (auto& t : j["layer_types"]) t = t == "full_attention" ? "attention" : "mamba";
    });
    const auto a = hf::open_as_gguf(hub.dir.string());
    const auto kv = a.get<std::vector<std::uint64_t>>("granitehybrid.attention.head_count_kv");
    BOOST_TEST(kv == (std::vector<std::uint64_t>{0, 2, 0}), boost::test_tools::per_element());
}

namespace {
using granitehybrid_entries = architecture_list<presets::granitehybrid_architecture, presets::granitehybrid_moe_architecture,
                                                presets::granitehybrid_rope_architecture>;
/// The name of the granitehybrid entry the registry picks for this file.
std::string granitehybrid_entry_for(const gguf::file& f) {
    return with_architecture<granitehybrid_entries>(f, []<class E>(std::type_identity<E>) -> std::string {
        if constexpr (std::is_same_v<E, presets::granitehybrid_architecture>) return "granitehybrid";
        else if constexpr (std::is_same_v<E, presets::granitehybrid_moe_architecture>) return "granitehybrid_moe";
        else return "granitehybrid_rope";
    });
}
test_util::edited_gguf edited(const std::string& family, const std::string& tag,
                              const std::function<void(gguf::writer&)>& edit) {
    return test_util::edited_gguf(zoo_root() + "/" + family + "/model.gguf", "granitehybrid_entry_" + tag,
                                  [&](gguf::writer& w, const gguf::file&) { edit(w); });
}
} // namespace

// llama.cpp switches RoPE on granitehybrid.rope.scaling.finetuned (granite-hybrid.cpp: absent
// reads as true); neither structure reads the key, so the entries tell the files apart by it
// and an entry given a file of the other kind refuses it rather than run it wrong.
BOOST_AUTO_TEST_CASE(granitehybrid_files_go_to_the_nope_or_rope_entry_by_rope_scaling_finetuned) {
    BOOST_TEST(granitehybrid_entry_for(gguf::file::open(zoo_root() + "/granitehybrid/model.gguf")) == "granitehybrid");
    BOOST_TEST(granitehybrid_entry_for(gguf::file::open(zoo_root() + "/granitehybrid-moe/model.gguf")) == "granitehybrid_moe");
    BOOST_TEST(granitehybrid_entry_for(gguf::file::open(zoo_root() + "/granitehybrid-rope/model.gguf")) == "granitehybrid_rope");
    {   // no key: RoPE, as llama.cpp reads it
        const auto absent = edited("granitehybrid-rope", "absent", [](gguf::writer& w) { w.erase("granitehybrid.rope.scaling.finetuned"); });
        BOOST_TEST(granitehybrid_entry_for(gguf::file::open(absent.path)) == "granitehybrid_rope");
        const auto nope_absent = edited("granitehybrid", "nope_absent", [](gguf::writer& w) { w.erase("granitehybrid.rope.scaling.finetuned"); });
        BOOST_TEST(granitehybrid_entry_for(gguf::file::open(nope_absent.path)) == "granitehybrid_rope");
    }
    {   // the RoPE file saying false goes to the NoPE entry
        const auto off = edited("granitehybrid-rope", "off", [](gguf::writer& w) { w.set("granitehybrid.rope.scaling.finetuned", false); });
        BOOST_TEST(granitehybrid_entry_for(gguf::file::open(off.path)) == "granitehybrid");
    }
    {   // experts with RoPE: no entry, said as such (not "not registered")
        const auto moe_rope = edited("granitehybrid-moe", "moe_rope", [](gguf::writer& w) { w.set("granitehybrid.rope.scaling.finetuned", true); });
        refused<shape_error>([&] { (void)granitehybrid_entry_for(gguf::file::open(moe_rope.path)); },
                             "no entry for architecture 'granitehybrid' takes this file");
    }
    // an entry loaded by name on the other kind's file refuses it
    refused<shape_error>([] { (void)load_model<presets::granitehybrid_architecture>(zoo_root() + "/granitehybrid-rope/model.gguf"); },
                         "accepts() is false");
    refused<shape_error>([] { (void)load_model<presets::granitehybrid_rope_architecture>(zoo_root() + "/granitehybrid/model.gguf"); },
                         "accepts() is false");
    refused<shape_error>([] { (void)load_model<presets::granitehybrid_moe_architecture>(zoo_root() + "/granitehybrid-rope/model.gguf"); },
                         "accepts() is false");
    // the HF directory writes the switch from position_embedding_type
    BOOST_TEST(hf::open_as_gguf(zoo_root() + "/granitehybrid-rope/hf").get<bool>("granitehybrid.rope.scaling.finetuned"));
    BOOST_TEST(!hf::open_as_gguf(zoo_root() + "/granitehybrid/hf").get<bool>("granitehybrid.rope.scaling.finetuned"));
    edited_checkpoint hub("granitehybrid", [](nlohmann::json& j) { j["position_embedding_type"] = "nope"; });
    BOOST_TEST(!hf::open_as_gguf(hub.dir.string()).get<bool>("granitehybrid.rope.scaling.finetuned"));
}
