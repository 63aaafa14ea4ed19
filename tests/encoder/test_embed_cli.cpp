// `archetype embed` against the bert-tiny golden files: argv[1] = program,
// argv[2] = bert-tiny folder. Output files are compared with the fixtures
// (2e-3 raw, 1e-3 L2-normalised), and bad input must exit 1..63 with one line.
#define BOOST_TEST_MODULE encoder_embed_cli
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {
std::string arg(int i) {
    auto& m = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(m.argc > i, "usage: test_embed_cli PROGRAM BERT_TINY_DIR");
    return m.argv[i];
}
std::vector<float> read_f32(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    BOOST_REQUIRE_MESSAGE(f, "cannot open " << path);
    std::vector<float> v(static_cast<std::size_t>(f.tellg()) / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
    return v;
}
int run(const std::string& args) {
    const int st = std::system((arg(1) + " " + args + " 2>/dev/null").c_str());
    BOOST_REQUIRE(WIFEXITED(st));
    return WEXITSTATUS(st);
}
std::string tmp(const std::string& name) {
    return "/tmp/archetype_embed_cli_" + std::to_string(::getpid()) + "_" + name;
}
void compare(const std::string& flags, const std::string& golden, float tol) {
    const std::string dir = arg(2), out = tmp("out.f32.bin");
    BOOST_REQUIRE_EQUAL(run("embed --model " + dir + "/model.gguf --tokens " + dir + "/tokens_7.i32.bin --out " + out +
                            " " + flags),
                        0);
    const auto got = read_f32(out), want = read_f32(dir + "/" + golden);
    std::remove(out.c_str());
    BOOST_REQUIRE_EQUAL(got.size(), want.size());
    float d = 0;
    for (std::size_t i = 0; i < got.size(); ++i) d = std::max(d, std::fabs(got[i] - want[i]));
    BOOST_TEST_MESSAGE(golden << " via `archetype embed " << flags << "`: max |diff| = " << d);
    BOOST_TEST(d <= tol, golden << ": " << d);
}
} // namespace

BOOST_AUTO_TEST_CASE(golden_files) {
    compare("", "pooled_mean_l2_7.f32.bin", 1e-3f); // file pooling (mean), normalise 2
    compare("--pooling mean --normalize -1", "pooled_mean_7.f32.bin", 2e-3f);
    compare("--pooling cls --normalize -1 --threads 2", "pooled_cls_7.f32.bin", 2e-3f);
    compare("--pooling cls", "pooled_cls_l2_7.f32.bin", 1e-3f);
    compare("--pooling last --normalize -1", "pooled_last_7.f32.bin", 2e-3f);
    compare("--pooling last --normalize 2", "pooled_last_l2_7.f32.bin", 1e-3f);
    compare("--pooling none --normalize -1", "embd_none_7.f32.bin", 2e-3f);
    compare("--pooling none", "embd_none_l2_7.f32.bin", 1e-3f);
}

BOOST_AUTO_TEST_CASE(ids_flags_and_shapes) {
    const std::string dir = arg(2), out = tmp("ids.f32.bin");
    // the same 7 ids given with --ids, plus a second sequence: [2 x 64]
    BOOST_REQUIRE_EQUAL(run("embed --model " + dir + "/model.gguf --ids 6,9,91,104,83,82,10 --ids 4,5 --out " + out +
                            " --pooling max"),
                        0);
    BOOST_TEST(read_f32(out).size() == 2 * 64u);
    BOOST_REQUIRE_EQUAL(run("embed --model " + dir + "/model.gguf --ids 6,9,91 --ids 4,5 --out " + out +
                            " --pooling none"),
                        0);
    BOOST_TEST(read_f32(out).size() == 5 * 64u);
    std::remove(out.c_str());
}

BOOST_AUTO_TEST_CASE(bad_input_exits_below_64) {
    const std::string m = "embed --model " + arg(2) + "/model.gguf --out " + tmp("bad.bin");
    for (const std::string& bad : {m + " --ids 1,2,128", m + " --ids 1,,2", m + " --ids 1 --pooling avg",
                                  m + " --ids 1 --normalize -3", m + " --ids 1 --pooling rank",
                                  "embed --model /nonexistent.gguf --ids 1 --out " + tmp("bad.bin"),
                                  "embed --ids 1 --out " + tmp("bad.bin"), m}) {
        const int rc = run(bad);
        BOOST_TEST((rc > 0 && rc < 64), "`" << bad << "` exited " << rc);
    }
    std::string long_seq = "1";
    for (int i = 0; i < 64; ++i) long_seq += ",1";
    const int rc = run(m + " --ids " + long_seq);
    BOOST_TEST((rc > 0 && rc < 64));
}

// `archetype describe` on a `bert` file (the registry's BERT entry, describe(m) as for
// decoders and RWKV): the dimensions and pooling of the fixture README's table.
BOOST_AUTO_TEST_CASE(describe_names_the_files_encoder) {
    const std::string out = tmp("describe.txt");
    const int st = std::system((arg(1) + " describe --model " + arg(2) + "/model.gguf >" + out + " 2>&1").c_str());
    BOOST_REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    std::ifstream f(out);
    const std::string d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::remove(out.c_str());
    BOOST_TEST_CONTEXT(d) {
        BOOST_TEST(d.find("Encoder\n") == 0u);
        BOOST_TEST(d.find("n_embd 64, layers 2, heads 4 x 16, ffn 128, vocab 128") != std::string::npos);
        BOOST_TEST(d.find("learned, 64 rows") != std::string::npos);
        BOOST_TEST(d.find("token types: 2") != std::string::npos);
        BOOST_TEST(d.find("pooling:   mean") != std::string::npos);
    }
}

// `archetype embed` on a ModernBERT GGUF and on its Hugging Face checkpoint directory
// (argv[3] = tests/data/zoo/modern-bert): the registry's modern-bert entry, the last hidden
// states of transformers (hidden_40.f32.bin) within 1e-4 x max(1, max |ref|); and
// `describe` names its windowed layers.
BOOST_AUTO_TEST_CASE(modern_bert_from_the_gguf_and_the_checkpoint) {
    auto& m = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(m.argc > 3, "pass tests/data/zoo/modern-bert as the third argument");
    const std::string dir = m.argv[3], out = tmp("mb.f32.bin");
    const auto want = read_f32(dir + "/hidden_40.f32.bin");
    float ref = 1;
    for (float v : want) ref = std::max(ref, std::fabs(v));
    for (const std::string& model : {dir + "/model.gguf", dir + "/hf"}) {
        BOOST_REQUIRE_EQUAL(run("embed --model " + model + " --tokens " + dir + "/tokens_40.i32.bin --pooling none "
                                "--normalize -1 --threads 2 --out " + out), 0);
        const auto got = read_f32(out);
        std::remove(out.c_str());
        BOOST_REQUIRE_EQUAL(got.size(), want.size());
        float d = 0;
        for (std::size_t i = 0; i < got.size(); ++i) d = std::max(d, std::fabs(got[i] - want[i]));
        BOOST_TEST(d <= 1e-4f * ref, model << ": max |diff| " << d);
    }
    const std::string txt = tmp("mb_describe.txt");
    const int st = std::system((arg(1) + " describe --model " + dir + "/hf >" + txt + " 2>&1").c_str());
    BOOST_REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    std::ifstream f(txt);
    const std::string d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::remove(txt.c_str());
    BOOST_TEST(d.find("arch:      modern-bert") != std::string::npos, d);
    BOOST_TEST(d.find("8 (symmetric) on layers 1,2") != std::string::npos, d);
    BOOST_TEST(d.find("LayerNorm without bias") != std::string::npos, d);
}
