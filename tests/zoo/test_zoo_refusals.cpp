// What the hooks of gemma2, olmo2 and granite refuse, on copies of their zoo fixtures
// with one key or tensor changed (written to a temporary file): each refusal is an
// exception of the documented type whose message names the key, tensor or policy.
//   - Granite's multipliers belong to architectures that register them
//     (gguf_conventions::multipliers): the key in another architecture's file is refused;
//   - a multiplier or soft cap that is not a finite number of the right sign;
//   - NormAfterSublayer on a file with pre-norms, a pre-norm decoder on a file without;
//   - a per-head QK norm on a file whose norm spans the whole projection.
// Arguments after `--`: tests/data/zoo.
#define BOOST_TEST_MODULE zoo_refusals
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/gemma2.hpp"
#include "archetype/models/presets/granite.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/models/presets/olmo2.hpp"

using namespace archetype;

namespace {
std::string zoo(const std::string& family) {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/" + family + "/model.gguf";
}

/// A copy of a fixture with `edit` applied to the writer, at a temporary path.
struct edited_file {
    std::string path;
    edited_file(const std::string& family, const std::function<void(gguf::writer&, const gguf::file&)>& edit) {
        const auto f = gguf::file::open(zoo(family));
        gguf::writer w;
        for (const auto& e : f.metadata()) w.set(e.key, e.value);
        for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
        edit(w, f);
        path = (std::filesystem::temp_directory_path() / ("archetype_zoo_refusal_" + family + ".gguf")).string();
        w.write(path);
    }
    ~edited_file() { std::filesystem::remove(path); }
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
