// The architecture registry (models/registry.hpp, architectures.hpp): each model
// file of the shared fixtures maps to the entry of its architecture — GGUF by
// general.architecture (with a predicate where the name is not enough: mellum with
// a window), rwkv.cpp .bin by its bytes — an unknown architecture is a shape_error
// naming it and the known ones, and an application's list extends the library's.
#define BOOST_TEST_MODULE registry
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <type_traits>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/models/architectures.hpp"

using namespace archetype;

namespace {
std::string fixtures() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return mts.argc > 1 ? mts.argv[1] : "../shared/fixtures";
}
template <class List = default_architectures>
std::string entry_of(const std::string& path) {
    return with_architecture<List>(path, []<class E>(std::type_identity<E>) { return std::string(E::gguf_name); });
}
template <class List = default_architectures>
bool picks(const std::string& path, auto expected) {
    using Want = typename decltype(expected)::type;
    return with_architecture<List>(path, []<class E>(std::type_identity<E>) { return std::is_same_v<E, Want>; });
}
struct other_arch {
    static constexpr std::string_view gguf_name = "my-arch";
    using model = presets::Llama;
};
} // namespace

// Families that compute differently are different types (issue 37): Granite's multipliers
// and SmolLM3's NoPE layers are policies of their presets, not flags of a shared Llama.
static_assert(!std::is_same_v<presets::Llama, presets::Granite> && !std::is_same_v<presets::Llama, presets::SmolLM3> &&
              !std::is_same_v<presets::Granite, presets::SmolLM3>);

BOOST_AUTO_TEST_CASE(fixture_files_map_to_their_entries) {
    const std::string t = fixtures() + "/transformer/", r = fixtures() + "/rwkv/";
    BOOST_TEST(picks(t + "llama-gqa/model.gguf", std::type_identity<presets::llama_architecture>{}));
    BOOST_TEST(picks(t + "mellum-swa/model.gguf", std::type_identity<presets::mellum_swa_architecture>{}));
    BOOST_TEST(picks(t + "bert-tiny/model.gguf", std::type_identity<presets::bert_architecture>{}));
    BOOST_TEST(picks(r + "tiny-rwkv-6v0-1m-F32.gguf", std::type_identity<presets::rwkv6_architecture>{}));
    BOOST_TEST(picks(r + "tiny-rwkv-6v0-1m-FP32.bin", std::type_identity<presets::rwkv6_bin_architecture>{}));
    BOOST_TEST(picks(r + "tiny-rwkv-6v0-1m-FP16.bin", std::type_identity<presets::rwkv6_bin_architecture>{}));
    BOOST_TEST(picks(r + "tiny-rwkv-5v2-730K-FP32.bin", std::type_identity<presets::rwkv5_bin_architecture>{}));
}

BOOST_AUTO_TEST_CASE(unknown_architectures_are_named_and_lists_extend) {
    const auto path = (std::filesystem::temp_directory_path() / "archetype_registry_my_arch.gguf").string();
    gguf::writer w;
    w.set("general.architecture", std::string("my-arch"));
    w.write(path);
    try {
        (void)entry_of(path);
        BOOST_ERROR("an unregistered architecture was accepted");
    } catch (const shape_error& e) {
        const std::string m = e.what();
        BOOST_TEST(m.find("'my-arch'") != std::string::npos, m);
        BOOST_TEST(m.find("qwen2") != std::string::npos, m); // the known ones are listed
    }
    using mine = extend_t<default_architectures, other_arch>;
    BOOST_TEST(entry_of<mine>(path) == "my-arch");
    std::filesystem::remove(path);
}
