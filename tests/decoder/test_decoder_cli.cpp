// `archetype logits` against llama.cpp's golden logits, every mode, and its
// error contract (one line on stderr, status 1..63); a Hugging Face checkpoint
// directory as --model. Arguments after --: the folder of the transformer fixtures,
// the archetype program, tests/data/zoo.
#define BOOST_TEST_MODULE decoder_cli
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture_common.hpp"

namespace {
std::string program() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE(mts.argc > 2);
    return mts.argv[2];
}
int run(const std::string& cmd) {
    const int st = std::system(cmd.c_str());
    BOOST_REQUIRE(WIFEXITED(st)); // never a signal
    return WEXITSTATUS(st);
}
std::string tmp(const std::string& name) {
    const char* d = std::getenv("TMPDIR");
    return std::string(d ? d : "/tmp") + "/archetype_dec_cli_" + std::to_string(::getpid()) + "_" + name;
}
} // namespace

BOOST_AUTO_TEST_CASE(logits_match_llama_cpp_in_every_mode) {
    const std::string dir = fixture::transformer_dir();
    struct c { const char* model; int n; };
    for (auto [model, n] : {c{"llama-gqa", 7}, c{"llama-gqa", 40}, c{"llama-mqa", 7}, c{"mellum-swa", 7}, c{"mellum-swa", 40}})
        for (const char* mode : {"batch", "sequential", "chunked"}) {
            const std::string d = dir + "/" + model + "/", out = tmp("logits.bin");
            const std::string cmd = program() + " logits --model " + d + "model.gguf --tokens " + d + "tokens_" +
                                    std::to_string(n) + ".i32.bin --out " + out + " --mode " + mode +
                                    " --chunk 5 --threads 2";
            BOOST_REQUIRE_EQUAL(run(cmd), 0);
            const auto got = fixture::read_raw<float>(out);
            const auto want = fixture::read_raw<float>(d + "logits_" + std::to_string(n) + ".f32.bin");
            std::remove(out.c_str());
            BOOST_TEST_MESSAGE(model << " n=" << n << " " << mode << " max abs err " << fixture::max_abs_err(got, want));
            BOOST_TEST(fixture::max_rel_err(got, want) <= 1e-4);
        }
}

BOOST_AUTO_TEST_CASE(ids_equal_tokens_file) {
    const std::string d = fixture::transformer_dir() + "/llama-gqa/", out = tmp("ids.bin");
    BOOST_REQUIRE_EQUAL(run(program() + " logits --model " + d + "model.gguf --ids 6,9,91,104,83,82,10 --out " + out), 0);
    const auto got = fixture::read_raw<float>(out);
    std::remove(out.c_str());
    BOOST_TEST(fixture::max_rel_err(got, fixture::read_raw<float>(d + "logits_7.f32.bin")) <= 1e-4);
}

BOOST_AUTO_TEST_CASE(half_kv_cache_stays_close_to_llama_cpp) {
    // --kv f16 rounds K and V to half (2^-11 relative): the logits move by about that
    // much, in every mode; a wrong cell or position would move them by far more.
    const std::string d = fixture::transformer_dir() + "/mellum-swa/", out = tmp("kv16.bin");
    const auto want = fixture::read_raw<float>(d + "logits_40.f32.bin");
    for (const char* mode : {"batch", "sequential", "chunked"}) {
        BOOST_REQUIRE_EQUAL(run(program() + " logits --model " + d + "model.gguf --tokens " + d + "tokens_40.i32.bin --out " +
                                out + " --kv f16 --mode " + mode),
                            0);
        const auto got = fixture::read_raw<float>(out);
        BOOST_TEST_MESSAGE("f16 " << mode << " max rel err " << fixture::max_rel_err(got, want));
        BOOST_TEST(fixture::max_rel_err(got, want) <= 5e-3);
        BOOST_TEST(fixture::max_rel_err(got, want) > 0.0);
    }
    std::remove(out.c_str());
}

BOOST_AUTO_TEST_CASE(bad_input_is_a_status_not_a_signal) {
    const std::string d = fixture::transformer_dir() + "/llama-gqa/", out = tmp("bad.bin"), err = tmp("err.txt");
    const std::string base = program() + " logits --model " + d + "model.gguf --out " + out;
    for (const std::string& extra : {std::string(" --ids 1,2,128"), std::string(" --ids 1,-2"), std::string(" --ids 1 --mode fast"),
                                     std::string(" --ids 1 --chunk 0"), std::string(""), std::string(" --tokens /nonexistent"),
                                     std::string(" --ids 1 --kv f8")}) {
        const int rc = run(base + extra + " 2>" + err);
        BOOST_TEST((rc > 0 && rc < 64), extra << " -> " << rc);
        const auto e = fixture::read_raw<char>(err);
        BOOST_TEST(std::count(e.begin(), e.end(), '\n') == 1, extra);
    }
    const int rc = run(program() + " logits --model /nonexistent.gguf --ids 1 --out " + out + " 2>" + err);
    BOOST_TEST((rc > 0 && rc < 64));
    BOOST_TEST(run(program() + " describe --model " + d + "model.gguf > " + err) == 0);
    std::remove(err.c_str());
}

// --model DIR: a Hugging Face checkpoint gives the logits of the GGUF converted from it,
// byte for byte; describe names its architecture; a class the library does not convert
// is one line on stderr and a status.
BOOST_AUTO_TEST_CASE(a_hugging_face_directory_is_a_model) {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE(mts.argc > 3);
    const std::string zoo = mts.argv[3], d = zoo + "/granite/";
    const std::string from_dir = tmp("hf.bin"), from_gguf = tmp("gguf.bin"), err = tmp("hf_err.txt");
    BOOST_REQUIRE_EQUAL(run(program() + " logits --model " + d + "hf --tokens " + d + "tokens_40.i32.bin --out " + from_dir), 0);
    BOOST_REQUIRE_EQUAL(run(program() + " logits --model " + d + "model.gguf --tokens " + d + "tokens_40.i32.bin --out " + from_gguf), 0);
    const auto a = fixture::read_raw<float>(from_dir), b = fixture::read_raw<float>(from_gguf);
    BOOST_TEST(a.size() == 40u * 128u);
    BOOST_TEST(a == b);
    BOOST_REQUIRE_EQUAL(run(program() + " describe --model " + d + "hf > " + err), 0);
    const auto text = fixture::read_raw<char>(err);
    BOOST_TEST(std::string(text.begin(), text.end()).find("granite") != std::string::npos);
    // the same checkpoint claiming a class the library does not convert
    const std::string other = tmp("falcon");
    BOOST_REQUIRE_EQUAL(run("mkdir -p " + other + " && cp " + d + "hf/model.safetensors " + other +
                            " && sed s/GraniteForCausalLM/FalconForCausalLM/ " + d + "hf/config.json > " + other +
                            "/config.json"), 0);
    const int rc = run(program() + " logits --model " + other + " --ids 1 --out " + from_dir + " 2>" + err);
    BOOST_TEST((rc > 0 && rc < 64));
    const auto msg = fixture::read_raw<char>(err);
    BOOST_TEST(std::string(msg.begin(), msg.end()).find("FalconForCausalLM") != std::string::npos);
    BOOST_TEST(std::count(msg.begin(), msg.end(), '\n') == 1);
    run("rm -rf " + other);
    for (const auto& f : {from_dir, from_gguf, err}) std::remove(f.c_str());
}
