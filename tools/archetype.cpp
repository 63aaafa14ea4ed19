// The archetype command-line program: `archetype COMMAND [options]`.
// Each command lives in its own cmd_<name>.cpp and is listed in `commands` below.
// Contract shared by every command: exit 0 on success; on any error one line on
// stderr and a non-zero status below 64 (never a signal or a hang).
//
// Launched by mpirun (Open MPI's environment says so: OMPI_COMM_WORLD_SIZE), the
// program initialises MPI and runs logits, generate and perplexity as one
// pipeline over the ranks (tools/run_pipeline.hpp); the other commands run on
// rank 0 alone. An error on any rank ends every rank (MPI_Abort) with status 1.
// A plain run never touches MPI.
//
// `main` is not here: main_native.cpp (a build for one instruction-set level) or
// main_dispatch.cpp (one copy of this program per level, chosen at start) calls
// cli_main.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#if ARCHETYPE_HAVE_MPI
#include <mpi.h>
#endif

#include "commands.hpp"
#include "pipeline_launch.hpp"

namespace {
struct command {
    std::string_view name;
    int (*run)(int argc, char** argv); // argv[0] is the command name
    std::string_view help;
};
constexpr command commands[] = {
    {"version", archetype::tools::cmd_version, "print the library version"},
    {"embed", archetype::tools::cmd_embed, "embeddings of a bert GGUF model (pooled, normalised)"},
    {"mask", archetype::tools::cmd_mask, "print an attention mask (causal, window, symmetric)"},
    {"inspect", archetype::tools::cmd_inspect, "print a GGUF file's metadata and tensor table"},
    {"quantize", archetype::tools::cmd_quantize, "rewrite a GGUF with weights as F16, BF16, Q8_0, Q4_0 ..."},
    {"logits", archetype::tools::cmd_logits, "logits of every position of a prompt (decoders, RWKV)"},
    {"describe", archetype::tools::cmd_describe, "print the resolved architecture of a model file"},
    {"tokenize", archetype::tools::cmd_tokenize, "a text's token ids and pieces, as llama-tokenize prints them"},
    {"generate", archetype::tools::cmd_generate, "generate text from a prompt with a decoder GGUF (streams tokens)"},
    {"perplexity", archetype::tools::cmd_perplexity, "perplexity of a text file, llama-perplexity's conventions"},
#if ARCHETYPE_HAVE_SERVE
    {"serve", archetype::tools::cmd_serve, "an OpenAI-compatible HTTP server over a decoder (docs/serving.md)"},
#endif
    // commands are added here, one line each
};

/// The commands that run as one pipeline over the ranks of an mpirun launch.
[[maybe_unused]] bool pipelined(std::string_view name) { return name == "logits" || name == "generate" || name == "perplexity"; }

/// mpirun (Open MPI, or a PMIx launcher) set this process's rank in its environment.
bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }
[[maybe_unused]] int launched_size() {
    const char* s = std::getenv("OMPI_COMM_WORLD_SIZE");
    return s ? std::atoi(s) : 1;
}

/// Takes the pipeline flags out of argv (they belong to no command); argument_error
/// when one is given outside an mpirun launch or with a bad value.
std::vector<char*> strip_pipeline_flags(int argc, char** argv, archetype::tools::pipeline_launch_state& st,
                                        bool launched) {
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o != "--layer-split" && o != "--micro-batch" && o != "--pipeline-timeout" && o != "--pipeline-stats") {
            rest.push_back(argv[i]);
            continue;
        }
        if (!launched)
            throw archetype::argument_error("option '" + std::string(o) +
                                            "' applies only to a pipeline over MPI ranks (launch with mpirun -np N)");
        if (o == "--pipeline-stats") {
            st.stats = true;
            continue;
        }
        if (i + 1 >= argc) throw archetype::argument_error("option '" + std::string(o) + "' needs a value");
        const std::string_view v = argv[++i];
        if (o == "--layer-split") st.layer_split = v;
        else if (o == "--micro-batch")
            st.micro_batch = archetype::tools::parse_number<std::size_t>(o, v, 1, std::size_t(1) << 20);
        else st.timeout_s = double(archetype::tools::parse_number<unsigned>(o, v, 1, 86400));
    }
    rest.push_back(nullptr);
    return rest;
}

int run_command(const command& c, int argc, char** argv, const char* name) {
    try {
        auto& st = archetype::tools::pipeline_launch();
        std::vector<char*> args = strip_pipeline_flags(argc, argv, st, launched_by_mpirun());
        return c.run(int(args.size()) - 1, args.data());
    } catch (const std::exception& e) {
        const auto& st = archetype::tools::pipeline_launch();
        const bool names_rank = std::string_view(e.what()).starts_with("rank "); // the pipeline's own errors do
        if (st.active && !names_rank) std::fprintf(stderr, "archetype %s: rank %d: %s\n", name, st.rank, e.what());
        else std::fprintf(stderr, "archetype %s: %s\n", name, e.what());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "archetype %s: unknown error\n", name);
        return 1;
    }
}

void usage(std::FILE* f) {
    std::fprintf(f, "usage: archetype COMMAND [options]\ncommands:\n");
    for (const auto& c : commands)
        std::fprintf(f, "  %-10.*s %.*s\n", int(c.name.size()), c.name.data(), int(c.help.size()),
                     c.help.data());
}
} // namespace

int archetype::tools::cli_main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string_view name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        usage(stdout);
        return 0;
    }
    for (const auto& c : commands) {
        if (c.name != name) continue;
        if (!launched_by_mpirun()) return run_command(c, argc - 1, argv + 1, argv[1]);
#if ARCHETYPE_HAVE_MPI
        int provided = 0; // the thread pools' workers never call MPI: the main thread does
        if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            std::fprintf(stderr, "archetype %s: MPI_Init_thread failed\n", argv[1]);
            return 1;
        }
        auto& st = archetype::tools::pipeline_launch();
        st.active = true;
        MPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &st.size);
        int rc = 0;
        if (pipelined(name) || st.rank == 0) rc = run_command(c, argc - 1, argv + 1, argv[1]);
        // one rank's error ends every rank: the others may be waiting for its frames
        if (rc != 0 && st.size > 1) MPI_Abort(MPI_COMM_WORLD, rc);
        MPI_Finalize();
        return rc;
#else
        if (launched_size() > 1) {
            std::fprintf(stderr, "archetype %s: launched by mpirun on %d ranks, but this archetype was built without MPI "
                                 "(install libopenmpi-dev and reconfigure)\n",
                         argv[1], launched_size());
            return 1;
        }
        return run_command(c, argc - 1, argv + 1, argv[1]);
#endif
    }
    std::fprintf(stderr, "archetype: unknown command '%s' (try archetype --help)\n", argv[1]);
    return 2;
}

archetype::tools::pipeline_launch_state& archetype::tools::pipeline_launch() {
    static pipeline_launch_state st;
    return st;
}
