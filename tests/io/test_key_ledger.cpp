// The key ledger (io/key_ledger.hpp): a metadata key that no policy of the compiled
// structure reads is refused by name, for decoders, encoders and RWKV alike; the shared
// known-unused list takes only its listed values; a loader's own list and the warn mode
// let a user through, and a key read by a policy changes what the model computes
// (ALiBi's maximum bias). Copies of the zoo fixtures with one key added, written to a
// temporary file.
// Arguments after `--`: tests/data/zoo; $ARCHETYPE_FIXTURES: the shared fixtures.
#define BOOST_TEST_MODULE key_ledger
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/io/key_ledger.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/models/presets/bloom.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/models/presets/modern_bert.hpp"
#include "archetype/models/rwkv_load.hpp"
#include "decoder_test_util.hpp"
#include "edited_gguf.hpp"

using namespace archetype;

namespace {
std::string zoo(const std::string& family) {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/" + family + "/model.gguf";
}

/// A copy of `src` with `edit` applied to the writer, at a temporary path.
struct edited_file : test_util::edited_gguf {
    edited_file(const std::string& src, const std::string& tag, const std::function<void(gguf::writer&)>& edit)
        : edited_gguf(src, "key_ledger_" + tag, [&](gguf::writer& w, const gguf::file&) { edit(w); }) {}
};

template <class F>
void refused(F&& load, const std::string& needle) {
    try {
        load();
        BOOST_ERROR("loaded; expected a shape_error naming " << needle);
    } catch (const shape_error& e) {
        BOOST_TEST_CONTEXT(e.what()) { BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos); }
    }
}

const std::vector<std::int32_t> prompt = {3, 17, 42, 99, 5, 64, 1};
} // namespace

BOOST_AUTO_TEST_CASE(a_key_no_policy_reads_is_refused_by_name) {
    // a per-layer gate the plain Decoder does not apply: logits would be wrong, silently
    edited_file gate(zoo("llama3"), "gate", [](gguf::writer& w) {
        w.set("llama.layer_residual_scale", std::vector<float>{0.5f, 0.25f});
    });
    refused([&] { (void)load_model<presets::llama_architecture>(gate.path); }, "'llama.layer_residual_scale'");
    // a key outside {arch}. counts too (apertus's xielu.*), and the message counts the rest
    edited_file two(zoo("llama3"), "two", [](gguf::writer& w) {
        w.set("llama.layer_residual_scale", std::vector<float>{0.5f, 0.25f});
        w.set("xielu.alpha_p", std::vector<float>{0.8f, 0.8f});
    });
    refused([&] { (void)load_model<presets::llama_architecture>(two.path); }, "(and 1 more unread keys)");
    const auto f = gguf::file::open(two.path);
    (void)f.get<std::uint32_t>("llama.block_count");
    const auto unread = unread_model_keys(f);
    auto listed = [&](const char* k) { return std::find(unread.begin(), unread.end(), k) != unread.end(); };
    BOOST_TEST(listed("xielu.alpha_p"));
    BOOST_TEST(listed("llama.layer_residual_scale"));
    BOOST_TEST(!listed("llama.block_count"));    // read above
    BOOST_TEST(!listed("general.architecture")); // outside the ledger
    // the unedited fixture loads: every one of its keys is read
    BOOST_CHECK_NO_THROW((void)load_model<presets::llama_architecture>(zoo("llama3")));
}

BOOST_AUTO_TEST_CASE(warn_mode_loads_and_the_key_changes_nothing) {
    edited_file gate(zoo("llama3"), "warn", [](gguf::writer& w) {
        w.set("llama.layer_residual_scale", std::vector<float>{0.5f, 0.25f});
    });
    const auto warned = load_model<presets::llama_architecture>(gate.path, {.unread = unread_keys::warn});
    const auto plain = load_model<presets::llama_architecture>(zoo("llama3"));
    const auto a = decoder_test::feed(warned, prompt, 0), b = decoder_test::feed(plain, prompt, 0);
    BOOST_TEST(a == b); // bitwise: the unread key had no effect, as the warning says
}

BOOST_AUTO_TEST_CASE(known_unused_keys_are_taken_only_with_their_listed_values) {
    auto loads = [](const std::string& tag, const std::function<void(gguf::writer&)>& edit) {
        edited_file f(zoo("llama3"), tag, edit);
        (void)load_model<presets::llama_architecture>(f.path);
    };
    BOOST_CHECK_NO_THROW(loads("finetuned", [](gguf::writer& w) { w.set("llama.rope.scaling.finetuned", true); }));
    BOOST_CHECK_NO_THROW(loads("groups1", [](gguf::writer& w) { w.set("llama.expert_group_count", std::uint32_t(1)); }));
    BOOST_CHECK_NO_THROW(loads("causal", [](gguf::writer& w) { w.set("llama.attention.causal", true); }));
    refused([&] { loads("groups8", [](gguf::writer& w) { w.set("llama.expert_group_count", std::uint32_t(8)); }); },
            "'llama.expert_group_count' = 8");
    refused([&] { loads("noncausal", [](gguf::writer& w) { w.set("llama.attention.causal", false); }); },
            "'llama.attention.causal' = false");
    // a loader's own list
    edited_file note(zoo("llama3"), "note", [](gguf::writer& w) { w.set("llama.my_note", std::string("x")); });
    refused([&] { (void)load_model<presets::llama_architecture>(note.path); }, "'llama.my_note'");
    static constexpr known_unused_key mine[] = {{"{arch}.my_note", "documentation only"}};
    BOOST_CHECK_NO_THROW((void)load_model<presets::llama_architecture>(note.path, {.known_unused_keys = mine}));
}

BOOST_AUTO_TEST_CASE(alibi_reads_its_maximum_bias) {
    const auto plain = decoder_test::feed(load_model<presets::bloom_architecture>(zoo("bloom")), prompt, 0);
    edited_file eight(zoo("bloom"), "alibi8", [](gguf::writer& w) { w.set("bloom.attention.max_alibi_bias", 8.f); });
    edited_file four(zoo("bloom"), "alibi4", [](gguf::writer& w) { w.set("bloom.attention.max_alibi_bias", 4.f); });
    edited_file bad(zoo("bloom"), "alibi0", [](gguf::writer& w) { w.set("bloom.attention.max_alibi_bias", -1.f); });
    BOOST_TEST(decoder_test::feed(load_model<presets::bloom_architecture>(eight.path), prompt, 0) == plain);
    const auto other = decoder_test::feed(load_model<presets::bloom_architecture>(four.path), prompt, 0);
    float diff = 0.f;
    for (std::size_t i = 0; i < other.size(); ++i) diff = std::max(diff, std::abs(other[i] - plain[i]));
    BOOST_TEST(diff > 1e-3f); // the slopes follow the key
    BOOST_CHECK_THROW((void)load_model<presets::bloom_architecture>(bad.path), format_error);
}

BOOST_AUTO_TEST_CASE(encoders_keep_the_same_ledger) {
    edited_file enc(zoo("modern-bert"), "enc", [](gguf::writer& w) { w.set("modern-bert.layer_scale", 0.5f); });
    refused([&] { (void)load_model<presets::modern_bert_architecture>(enc.path); }, "'modern-bert.layer_scale'");
    BOOST_CHECK_NO_THROW((void)load_model<presets::modern_bert_architecture>(zoo("modern-bert")));
}

// run as its own test where the shared fixtures are (tests/io/meson.build)
BOOST_AUTO_TEST_CASE(rwkv_keeps_the_same_ledger) {
    const char* fx = std::getenv("ARCHETYPE_FIXTURES");
    BOOST_REQUIRE_MESSAGE(fx, "ARCHETYPE_FIXTURES is not set");
    const std::string rwkv = std::string(fx) + "/rwkv/tiny-rwkv-6v0-1m-F32.gguf";
    using Finch = Rwkv6<dynamic, dynamic>;
    BOOST_CHECK_NO_THROW((void)load_model<Finch>(rwkv));
    // (the stray key was rwkv6.token_shift_count, which RwkvBlock now reads: a key no RWKV policy reads)
    edited_file r(rwkv, "rwkv", [](gguf::writer& w) { w.set("rwkv6.attention.clamp_kqv", 8.0f); });
    refused([&] { (void)load_model<Finch>(r.path); }, "'rwkv6.attention.clamp_kqv'");
    BOOST_CHECK_NO_THROW((void)load_model<Finch>(r.path, {.unread = unread_keys::warn}));
    edited_file heads(rwkv, "heads", [](gguf::writer& w) { w.set("rwkv6.attention.head_count", std::uint32_t(3)); });
    BOOST_CHECK_THROW((void)load_model<Finch>(heads.path), format_error);
}
