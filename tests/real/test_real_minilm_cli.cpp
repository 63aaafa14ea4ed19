// Suite 'real-models': `archetype embed --model DIR --text ...` on the
// all-MiniLM-L6-v2 sentence-transformers directory against sentence-transformers'
// embeddings of the 20 fixture sentences (tests/data/real/minilm.json).
// argv[1] = the archetype program. The texts (tabs, newlines, emoji) are passed
// with execv, no shell in between.
#define BOOST_TEST_MODULE real_minilm_cli
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {
std::string env_dir(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) BOOST_FAIL(std::string(name) + " is not set (configure with -Dmodels_dir=DIR, docs/real-models.md)");
    return v;
}
std::string program() {
    auto& m = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(m.argc > 1, "usage: test_real_minilm_cli PROGRAM");
    return m.argv[1];
}
nlohmann::json fixture() {
    const auto p = fs::path(env_dir("ARCHETYPE_REAL_DATA")) / "minilm.json";
    std::ifstream in(p);
    if (!in) BOOST_FAIL("cannot open fixture " + p.string());
    return nlohmann::json::parse(in);
}
/// Runs the program with these arguments (stderr to /dev/null); the exit status.
int run(std::vector<std::string> args) {
    args.insert(args.begin(), program());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        if (!std::freopen("/dev/null", "w", stderr)) ::_exit(120);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    BOOST_REQUIRE(WIFEXITED(st));
    return WEXITSTATUS(st);
}
std::vector<float> read_f32(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    BOOST_REQUIRE_MESSAGE(f, "cannot open " << path);
    std::vector<float> v(static_cast<std::size_t>(f.tellg()) / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
    return v;
}
double cos_distance(const float* a, const std::vector<double>& b) {
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += b[i] * b[i];
    }
    return 1.0 - ab / std::sqrt(aa * bb);
}
std::string tmp(const std::string& name) {
    return (fs::temp_directory_path() / ("archetype_minilm_cli_" + std::to_string(::getpid()) + "_" + name)).string();
}
} // namespace

BOOST_AUTO_TEST_CASE(text_embeddings_match_sentence_transformers) {
    const auto fx = fixture();
    const auto dir = fs::path(env_dir("ARCHETYPE_MODELS_DIR")) / fx.at("model").get<std::string>();
    BOOST_REQUIRE_MESSAGE(fs::exists(dir / "model.safetensors"),
                          "model file " << (dir / "model.safetensors").string() << " is missing: run tools/fetch-models.sh");
    const auto out = tmp("out.f32.bin");
    std::vector<std::string> args = {"embed", "--model", dir.string(), "--out", out, "--threads", "2"};
    for (const auto& c : fx.at("cases")) {
        args.push_back("--text");
        args.push_back(c.at("text").get<std::string>());
    }
    BOOST_REQUIRE_EQUAL(run(args), 0); // defaults from the directory: mean pooling, L2
    const auto got = read_f32(out);
    std::remove(out.c_str());
    const auto& cases = fx.at("cases");
    BOOST_REQUIRE_EQUAL(got.size(), cases.size() * 384);
    double worst = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const double d = cos_distance(got.data() + i * 384, cases[i].at("embedding").get<std::vector<double>>());
        BOOST_TEST(d <= 1e-4, "sentence " << i << ": cosine distance " << d);
        worst = std::max(worst, d);
    }
    BOOST_TEST_MESSAGE("archetype embed --model DIR --text x20: max cosine distance " << worst);

    // --ids mixed with --text keeps the flag order; --normalize -1 gives the mean-pooled vectors
    const auto& c0 = cases[0];
    std::string ids;
    for (auto id : c0.at("ids")) {
        if (!ids.empty()) ids += ',';
        ids += std::to_string(id.get<int>());
    }
    BOOST_REQUIRE_EQUAL(run({"embed", "--model", dir.string(), "--out", out, "--normalize", "-1", "--text",
                             cases[1].at("text").get<std::string>(), "--ids", ids}),
                        0);
    const auto two = read_f32(out);
    std::remove(out.c_str());
    BOOST_REQUIRE_EQUAL(two.size(), 2u * 384u);
    BOOST_TEST(cos_distance(two.data(), cases[1].at("mean_pooled").get<std::vector<double>>()) <= 1e-4);
    BOOST_TEST(cos_distance(two.data() + 384, c0.at("mean_pooled").get<std::vector<double>>()) <= 1e-4);
    double n2 = 0;
    for (std::size_t i = 0; i < 384; ++i) n2 += double(two[i]) * two[i];
    BOOST_TEST(std::fabs(n2 - 1.0) > 1e-3); // really not normalised
}

BOOST_AUTO_TEST_CASE(bad_input_exits_below_64) {
    const auto fx = fixture();
    const auto dir = (fs::path(env_dir("ARCHETYPE_MODELS_DIR")) / fx.at("model").get<std::string>()).string();
    const auto out = tmp("bad.f32.bin");
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"embed", "--model", dir, "--out", out, "--text"},
             {"embed", "--model", dir, "--out", out, "--ids", "101,99999,102"},
             {"embed", "--model", dir + "/1_Pooling", "--out", out, "--text", "x"},
             {"embed", "--model", dir, "--out", out, "--text", "x", "--pooling", "rank"}}) {
        const int rc = run(args);
        BOOST_TEST((rc > 0 && rc < 64), "exit status " << rc << " for " << args.back());
    }
    std::remove(out.c_str());
}
