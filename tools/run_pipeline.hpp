#pragma once
// run_decoder_pipeline<Entry>: the job of one archetype process, on one rank of
// an mpirun launch. Every rank reads the file's header, computes the same split
// (balanced by parameter bytes, or --layer-split), says its share on stderr in
// one line, loads only its layers and serves them; rank 0 runs the job on the
// pipeline as one process runs it on a session, and alone writes the output.
#include <cstdio>
#include <string>

#include "archetype/distributed/layer_split.hpp"
#include "archetype/distributed/pipeline.hpp"
#include "archetype/io/arch/llama.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "decoder_jobs.hpp"
#include "pipeline_launch.hpp"
#include "pipeline_rank.hpp"

namespace archetype::tools {

template <class Entry>
int run_decoder_pipeline(gguf::file file, const decoder_job& job) {
    const auto& launch = pipeline_launch();
    static constexpr arch::gguf_conventions conv = conventions_of<Entry>();
    const std::size_t n_layer = arch::read_llama_hparams(file, conv).n_layer;
    const auto split = launch.layer_split.empty()
                           ? distributed::balanced_split(distributed::weight_bytes(file, n_layer), std::size_t(launch.size))
                           : distributed::explicit_split(launch.layer_split, n_layer, std::size_t(launch.size));
    const layer_range own = split[std::size_t(launch.rank)];
    say_share(own);
    const auto model = load_model<Entry>(std::move(file), decoder_options{.layers = own});
    auto stage = session(model, detail::session_options_of(job));
    return run_pipelined(stage, model.weight_bytes(), [&](auto& pipe) { return detail::run_job(model, pipe, job); });
}

} // namespace archetype::tools
