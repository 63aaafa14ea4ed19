#pragma once
// Whether this archetype process is one rank of an mpirun launch, and the
// pipeline flags every command accepts then (archetype.cpp strips them from the
// command line before the command parses its own):
//   --layer-split 10,12,8   layers per rank (default: balanced by parameter bytes)
//   --micro-batch N         rows per pass through the pipeline (default: no extra cuts)
//   --pipeline-timeout S    the longest any rank waits for another (default 60 s)
//   --pipeline-stats        each rank ends with a line of what it held, sent and used
// No MPI type here: the commands that do not run over ranks include it freely.
#include <cstddef>
#include <string>

namespace archetype::tools {

struct pipeline_launch_state {
    bool active = false; ///< launched by mpirun and built with MPI: MPI is initialised
    int rank = 0, size = 1;
    std::string layer_split; ///< empty: balanced_split
    std::size_t micro_batch = 0;
    double timeout_s = 60.0;
    bool stats = false;
};

/// The process's launch state (set once by main).
pipeline_launch_state& pipeline_launch();
/// Whether this process writes the command's output and notes: a plain run, or rank 0.
inline bool writes_output() { return pipeline_launch().rank == 0; }

} // namespace archetype::tools
