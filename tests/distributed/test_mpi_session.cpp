// The library's pipeline_session under mpirun (any number of ranks up to the
// model's 5 layers): rank 0 drives several sequences through the pipeline —
// prompts of different lengths, batched decode with and without micro-batches
// (sequences in flight through the stages at once), copy_sequence and
// remove_sequence — and checks every logit against one process's session on
// the whole model, bit for bit. Exit status 0 when all agree; the other ranks
// serve. Run by meson as `mpirun -np 3 test_mpi_session`.
#include "archetype/distributed/layer_split.hpp"
#include "archetype/distributed/pipeline.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/runtime/decoder_session.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include "../decoder/random_decoder.hpp"

namespace {
using namespace archetype;
using Entry = presets::llama_architecture;
int failures = 0;

void expect_same(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    if (got != want) {
        ++failures;
        std::printf("FAIL: %s differs from one process\n", what.c_str());
    } else {
        std::printf("ok: %s\n", what.c_str());
    }
}

/// The same calls on a pipeline and on a whole-model session; the session is fed in
/// the pipeline's passes (micro rows of a prompt, micro sequences of a batch), so that
/// every pass has the same rows and the logits are bitwise the same.
template <class A, class B>
void drive(A& pipe, B& one, std::size_t V, std::size_t micro, const char* label) {
    auto prefill_one = [&](seq_id s, const std::vector<std::int32_t>& t, float* out, logits_rows rows) {
        const std::size_t step = micro ? micro : t.size();
        for (std::size_t b = 0; b < t.size(); b += step) {
            const std::size_t n = std::min(step, t.size() - b);
            const bool last = b + n == t.size();
            float* o = rows == logits_rows::all ? out + b * V : (last ? out : nullptr);
            one.prefill(s, std::span<const std::int32_t>(t.data() + b, n), o, rows);
        }
    };
    auto decode_one = [&](const std::vector<seq_id>& q, const std::vector<std::int32_t>& t, float* out) {
        const std::size_t step = micro ? micro : q.size();
        for (std::size_t b = 0; b < q.size(); b += step) {
            const std::size_t n = std::min(step, q.size() - b);
            one.decode(std::span<const seq_id>(q.data() + b, n), std::span<const std::int32_t>(t.data() + b, n),
                       out + b * V);
        }
    };
    // three prompts of 9, 4 and 13 tokens (all rows' logits)
    for (seq_id s = 0; s < 3; ++s) {
        std::vector<std::int32_t> t(4 + std::size_t(s * s) + (s == 0 ? 5 : 0));
        for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::int32_t((i * 31 + std::size_t(s) * 7) % V);
        std::vector<float> a(t.size() * V), b(t.size() * V);
        pipe.prefill(s, t, a.data());
        prefill_one(s, t, b.data(), logits_rows::all);
        expect_same(a, b, std::string(label) + " prefill of sequence " + std::to_string(s));
    }
    // a fork: sequence 3 continues sequence 1
    pipe.copy_sequence(1, 3);
    one.copy_sequence(1, 3);
    // batched decode, four steps, sequences in a scrambled order
    const std::vector<seq_id> seqs{2, 0, 3, 1};
    for (int step = 0; step < 4; ++step) {
        std::vector<std::int32_t> t;
        for (std::size_t i = 0; i < seqs.size(); ++i) t.push_back(std::int32_t((step * 13 + int(i) * 5 + 1) % int(V)));
        std::vector<float> a(seqs.size() * V), b(seqs.size() * V);
        pipe.decode(seqs, t, a.data());
        decode_one(seqs, t, b.data());
        expect_same(a, b, std::string(label) + " batched decode step " + std::to_string(step));
    }
    // forget sequence 0 and start it again
    pipe.remove_sequence(0);
    one.remove_sequence(0);
    const std::vector<std::int32_t> t{3, 1, 4};
    std::vector<float> a(V), b(V);
    pipe.prefill(0, t, a.data(), logits_rows::last);
    prefill_one(0, t, b.data(), logits_rows::last);
    expect_same(a, b, std::string(label) + " sequence 0 after remove_sequence");
    if (pipe.n_past(3) != one.n_past(3)) {
        ++failures;
        std::printf("FAIL: n_past(3) %lld vs %lld\n", (long long)pipe.n_past(3), (long long)one.n_past(3));
    }
}
} // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::string path =
        (std::filesystem::temp_directory_path() / ("archetype_mpi_session_" + std::to_string(getppid()) + ".gguf")).string();
    if (rank == 0) {
        random_decoder::spec s;
        s.n_layer = 5;
        s.n_vocab = 96;
        s.seed = 17;
        random_decoder::write(s, path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    try {
        const auto header = gguf::file::open(path);
        const auto split = distributed::balanced_split(distributed::weight_bytes(header, 5), std::size_t(size));
        const auto model = load_model<Entry>(path, decoder_options{.layers = split[std::size_t(rank)]});
        const decoder_session_options opts{.n_threads = 1, .max_sequences = 4, .n_ctx = 64};
        for (const std::size_t micro : {std::size_t(0), std::size_t(1), std::size_t(3)}) {
            auto stage = session(model, opts);
            distributed::pipeline_session pipe(stage, {.comm = MPI_COMM_WORLD, .timeout_s = 30, .micro_batch = micro});
            if (!pipe.is_driver()) {
                pipe.serve();
                continue;
            }
            const auto whole = load_model<Entry>(path);
            auto one = session(whole, opts);
            const std::string label = "micro_batch " + std::to_string(micro) + ":";
            drive(pipe, one, whole.n_vocab(), micro, label.c_str());
            pipe.stop();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        std::filesystem::remove(path);
        std::printf(failures ? "%d checks failed\n" : "every check agrees with one process\n", failures);
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
