// `archetype logits` on RWKV files against the shared fixtures: every position,
// the three feeding modes, --group-norm-eps, and clean refusals of bad input.
// Arguments after `--`: the archetype program's path.
#define BOOST_TEST_MODULE rwkv_cli
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixture_util.hpp"

using rwkv_test::fixtures_dir;
using rwkv_test::max_diff;
using rwkv_test::read_f32;

namespace {

std::string program() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(mts.argc >= 2, "pass the archetype program's path after --");
    return mts.argv[1];
}

std::string tmp_file(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("archetype_rwkv_cli_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string ids_of(const std::string& prompt) {
    std::ifstream f(fixtures_dir() + "/prompts/" + prompt + ".tokens.txt");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

/// `-- program --emulated` (suite isa's qemu-x86_64 runs, where the program runs some 10x
/// slower): two feeding modes, batch (many tokens a call) and sequential (one), and
/// the longer prompt where a file has two: the code paths of all the checks, in 14
/// program runs instead of 36. What is proved there is that no instruction of a higher
/// level runs; the values are checked at every level in full on the real CPU.
bool emulated() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return mts.argc >= 3 && std::string(mts.argv[2]) == "--emulated";
}

int run(const std::string& args) {
    // the program is a command line (suite isa passes "qemu-x86_64 -cpu ... archetype"), not quoted;
    // built with append: g++ 12 warns (-Wrestrict, a false positive) on "..." + std::string
    std::string cmd = program();
    cmd += " logits ";
    cmd += args;
    cmd += " 2>";
    cmd += tmp_file("stderr.txt");
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1000 + rc; // a signal is never acceptable
}

void check(const std::string& model, const std::string& expected_dir, const std::string& extra,
           const std::vector<std::string>& prompts = {"prompt3", "fox88-utf16le"}) {
    const bool quick = emulated();
    for (const std::string& prompt : prompts)
        for (const std::string mode : {"batch", "sequential", "chunked"}) {
            if (quick && (mode == "chunked" || (prompts.size() > 1 && prompt != prompts.back()))) continue;
            const std::string out = tmp_file("logits.bin");
            const int rc = run("--model '" + fixtures_dir() + "/" + model + "' --ids '" + ids_of(prompt) +
                               "' --out '" + out + "' --mode " + mode + " --threads 2 " + extra);
            BOOST_REQUIRE_EQUAL(rc, 0);
            const auto got = read_f32(out), want = read_f32(expected_dir + "/" + prompt + ".logits.f32.bin");
            BOOST_REQUIRE_EQUAL(got.size(), want.size());
            const double d = max_diff(got.data(), want.data(), want.size());
            BOOST_TEST_MESSAGE(model << " " << prompt << " " << mode << " " << extra << ": max |diff| " << d);
            BOOST_TEST(d <= 1e-5);
            std::filesystem::remove(out);
        }
}

} // namespace

BOOST_AUTO_TEST_CASE(v6_files) {
    const auto exp = fixtures_dir() + "/expected/tiny-rwkv-6v0-1m/gn64e-5";
    check("tiny-rwkv-6v0-1m-F32.gguf", exp, "");
    check("tiny-rwkv-6v0-1m-FP32.bin", exp, "");
    check("tiny-rwkv-6v0-1m-FP16.bin", exp, "--group-norm-eps 64e-5");
}

BOOST_AUTO_TEST_CASE(v7_files) {
    const auto exp = fixtures_dir() + "/expected/tiny-rwkv-7v0-834K/gn64e-5";
    check("tiny-rwkv-7v0-834K-F32.gguf", exp, "", {"prompt3"});
    check("tiny-rwkv-7v0-834K-FP32.bin", exp, "", {"prompt3"});
}

BOOST_AUTO_TEST_CASE(v5_both_eps) {
    check("tiny-rwkv-5v2-730K-FP32.bin", fixtures_dir() + "/expected/tiny-rwkv-5v2-730K/gn64e-5", "");
    check("tiny-rwkv-5v2-730K-FP32.bin", fixtures_dir() + "/expected/tiny-rwkv-5v2-730K/gn1e-5", "--group-norm-eps 1e-5");
}

BOOST_AUTO_TEST_CASE(bad_input_is_one_line_and_a_small_status) {
    const std::string m = "--model '" + fixtures_dir() + "/tiny-rwkv-5v2-730K-FP32.bin' --out '" + tmp_file("x.bin") + "'";
    const std::vector<std::string> bad_args{
        m + " --ids 34,105,256", m + " --ids 1 --group-norm-eps abc", m + " --ids 1 --group-norm-eps -1",
        "--model '" + fixtures_dir() + "/expected-logits-5v2-730K.bin' --ids 1 --out '" + tmp_file("x.bin") + "'"};
    for (const auto& bad : bad_args) {
        const int rc = run(bad);
        BOOST_TEST((rc > 0 && rc < 64), "status " << rc << " for " << bad);
    }
}

// `archetype describe` on RWKV files (the registry's RWKV entries, describe(m) as for
// decoders): the GGUF and the rwkv.cpp .bin of the same model report the file's
// dimensions (12 blocks, 64 wide, 256 tokens: tiny-rwkv-6v0-1m-F32.tensors.txt) and the
// state the RWKV-6 formula gives: n_layer x (2 + head size) x n_embd floats.
BOOST_AUTO_TEST_CASE(describe_reads_the_files_dimensions) {
    auto describe = [](const std::string& model) {
        const std::string out = tmp_file("describe.txt");
        std::string cmd = program();
        cmd += " describe --model '" + fixtures_dir() + "/" + model + "' >'" + out + "' 2>&1";
        BOOST_REQUIRE_EQUAL(std::system(cmd.c_str()), 0);
        std::ifstream f(out);
        return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    };
    const std::size_t state_bytes = 12 * (2 + 8) * 64 * sizeof(float);
    for (const std::string model : {"tiny-rwkv-6v0-1m-F32.gguf", "tiny-rwkv-6v0-1m-FP32.bin"}) {
        const std::string d = describe(model);
        BOOST_TEST_CONTEXT(model << ":\n" << d) {
            BOOST_TEST(d.find("Rwkv6") != std::string::npos);
            BOOST_TEST(d.find("layers:    12\n") != std::string::npos);
            BOOST_TEST(d.find("embd:      64\n") != std::string::npos);
            BOOST_TEST(d.find("vocab:     256\n") != std::string::npos);
            BOOST_TEST(d.find("state:     " + std::to_string(state_bytes) + " bytes") != std::string::npos);
        }
    }
}
