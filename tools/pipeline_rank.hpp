#pragma once
// What every pipelined command does on its rank once its stage session exists
// (run_pipelined), and --pipeline-stats: the line each rank writes at the end
// (what docs/distributed.md's figures and benchmarks/distributed read).
#include <cstdio>
#include <fstream>
#include <string>

#include "archetype/distributed/pipeline.hpp"
#include "pipeline_launch.hpp"

namespace archetype::tools {

/// The peak resident set of this process in kB (Linux: VmHWM), 0 when unknown.
inline long peak_resident_kb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
    return 0;
}

/// "archetype: rank R: layers A-B, weights 1234 bytes, peak resident 5678 kB, 9 passes, 40 rows, 4321 bytes sent"
template <class Pipe>
void report_pipeline_stats(const Pipe& pipe, std::size_t weight_bytes) {
    if (!pipeline_launch().stats) return;
    const auto st = pipe.stats();
    const auto& own = pipe.split()[std::size_t(pipe.rank())];
    std::fprintf(stderr,
                 "archetype: rank %d: layers %s, weights %zu bytes, peak resident %ld kB, %llu passes, %llu rows, "
                 "%llu bytes sent\n",
                 pipe.rank(), own.to_string().c_str(), weight_bytes, peak_resident_kb(),
                 static_cast<unsigned long long>(st.frames), static_cast<unsigned long long>(st.rows),
                 static_cast<unsigned long long>(st.bytes_sent));
}

/// "archetype: rank R of N: layers A-B" on stderr: every rank says its share at start.
inline void say_share(const layer_range& own) {
    const auto& launch = pipeline_launch();
    std::fprintf(stderr, "archetype: rank %d of %d: layers %s\n", launch.rank, launch.size, own.to_string().c_str());
    std::fflush(stderr);
}

/// Joins this rank's stage to the pipeline of the launch: rank 0 runs `job` on it (a
/// session like the others) and stops the pipeline; the other ranks serve it. The job's
/// status, or 0 on a serving rank.
template <class Stage, class Job>
int run_pipelined(Stage& stage, std::size_t weight_bytes, Job&& job) {
    const auto& launch = pipeline_launch();
    distributed::pipeline_session pipe(stage, {.comm = MPI_COMM_WORLD, .timeout_s = launch.timeout_s,
                                               .micro_batch = launch.micro_batch});
    int rc = 0;
    if (pipe.is_driver()) {
        rc = job(pipe);
        pipe.stop();
    } else {
        pipe.serve();
    }
    report_pipeline_stats(pipe, weight_bytes);
    return rc;
}

} // namespace archetype::tools
