#pragma once
// --pipeline-stats: the line each rank writes at the end of a pipelined run
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

} // namespace archetype::tools
