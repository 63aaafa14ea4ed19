// pipeline: one decoder split over MPI ranks (docs/distributed.md). Each rank
// loads only its layers (the split balanced by the layers' parameter bytes),
// makes a session of them, and joins a pipeline_session; rank 0 drives it as it
// would drive a one-process session — prefill a prompt, then greedy decoding —
// while the other ranks serve. Rank 0 then runs the same prompt on the whole
// model in one process and checks that the tokens and logits are the same.
//
//   mpirun -np 2 ./build/examples/pipeline    (writes a tiny random 4-layer llama GGUF)
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "archetype/distributed/layer_split.hpp"
#include "archetype/distributed/pipeline.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "tiny_decoder.hpp"

namespace {
using Entry = archetype::presets::llama_architecture;
constexpr std::size_t n_new = 12;

/// The prompt, then n_new greedy tokens; the last logits in `last`.
template <class Session>
std::vector<std::int32_t> greedy(Session& sess, const std::vector<std::int32_t>& prompt, std::vector<float>& last) {
    last.assign(sess.n_vocab(), 0.f);
    sess.prefill(0, prompt, last.data(), archetype::logits_rows::last);
    std::vector<std::int32_t> out;
    for (;;) {
        out.push_back(std::int32_t(std::max_element(last.begin(), last.end()) - last.begin()));
        if (out.size() == n_new) return out;
        sess.decode(0, out.back(), last.data());
    }
}

int run(int rank, int size, const std::string& path) {
    using namespace archetype;
    const gguf::file header = gguf::file::open(path); // the tensor table: no weight is read
    const std::size_t n_layer = header.get<std::uint32_t>("llama.block_count");
    const auto split = distributed::balanced_split(distributed::weight_bytes(header, n_layer), std::size_t(size));
    const layer_range own = split[std::size_t(rank)];
    std::printf("rank %d of %d: layers %s\n", rank, size, own.to_string().c_str());

    const auto model = load_model<Entry>(path, decoder_options{.layers = own});
    const decoder_session_options opts{.n_threads = 1, .max_sequences = 1, .n_ctx = 64};
    auto stage = session(model, opts); // the cache of this rank's layers only
    distributed::pipeline_session pipe(stage, {.comm = MPI_COMM_WORLD, .timeout_s = 30});
    if (!pipe.is_driver()) {
        pipe.serve(); // until rank 0 stops the pipeline
        return 0;
    }
    const std::vector<std::int32_t> prompt = {5, 17, 3, 42, 8, 1, 29};
    std::vector<float> piped_logits, whole_logits;
    const auto piped = greedy(pipe, prompt, piped_logits);
    pipe.stop();

    const auto whole = load_model<Entry>(path); // the same model in one process
    auto one = session(whole, opts);
    const auto alone = greedy(one, prompt, whole_logits);
    std::printf("pipeline over %d ranks:", size);
    for (auto t : piped) std::printf(" %d", t);
    std::printf("\none process:          ");
    for (auto t : alone) std::printf(" %d", t);
    std::printf("\n");
    const bool same = piped == alone && piped_logits == whole_logits;
    std::printf(same ? "OK: the same tokens and, bit for bit, the same logits\n" : "FAIL: the runs differ\n");
    return same ? 0 : 1;
}
} // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::string path =
        (std::filesystem::temp_directory_path() / ("archetype_pipeline_" + std::to_string(getppid()) + ".gguf")).string();
    if (rank == 0) {
        examples::tiny_decoder m;
        m.n_layer = 4;
        m.randomise(11);
        m.write(path);
    }
    MPI_Barrier(MPI_COMM_WORLD); // the file exists before any rank opens it
    int rc = 1;
    try {
        rc = run(rank, size, path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) std::filesystem::remove(path);
    MPI_Finalize();
    return rc;
}
