// archetype logits --model FILE (--tokens FILE.i32.bin | --ids 1,2,3) --out FILE.f32.bin
//                  [--mode batch|sequential|chunked] [--chunk N] [--threads N] [--kv f32|f16]
//                  [--group-norm-eps X]   (RWKV: eps of ln_x, default 64e-5, the official value)
// Logits of every position, float32 [n_tokens x n_vocab], row-major, no header.
// The ids are fed exactly as given (no BOS). Modes: batch = the whole prompt in
// one call (the library chunks internally as its cache needs); sequential = one
// token per call; chunked = calls of --chunk tokens (default 5).
//
// One branch per model family, chosen by the library's architecture registry
// (models/architectures.hpp): every registered decoder (tools/arch/), RWKV-5/6
// (GGUF `rwkv6` or an rwkv.cpp .bin, told apart by its bytes).
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/rwkv_api.hpp"
#include "model_file.hpp"
#include "commands.hpp"
#include "archetype/models/architectures.hpp"
#include "decoder_jobs.hpp"
#include "pipeline_launch.hpp"
#if ARCHETYPE_HAVE_MPI
#include "archetype/distributed/layer_split.hpp"
#include "archetype/distributed/pipeline.hpp"
#include "pipeline_rank.hpp"
#endif

namespace archetype::tools {

namespace {
enum class feed_mode { batch, sequential, chunked };

struct logits_args {
    std::string model, out;
    std::vector<std::int32_t> tokens;
    bool have_tokens = false;
    feed_mode mode = feed_mode::batch;
    std::size_t chunk = 5;
    std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
    float group_norm_eps = 64e-5f;
    kv_cache_type kv = kv_cache_type::f32;
};

constexpr const char* logits_usage =
    "usage: archetype logits --model FILE (--tokens FILE.i32.bin | --ids 1,2,3) --out FILE.f32.bin\n"
    "                        [--mode batch|sequential|chunked] [--chunk N] [--threads N]\n"
    "                        [--group-norm-eps X]   (RWKV ln_x eps; default 64e-5)\n"
    "                        [--kv f32|f16]         (KV cache elements of attention models; default f32)\n"
    "--ids takes ids separated by commas or spaces.\n";

std::size_t parse_count(std::string_view flag, std::string_view s, std::size_t max) {
    unsigned long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < 1 || v > max)
        throw argument_error("bad value '" + std::string(s) + "' for " + std::string(flag) + " (1.." +
                             std::to_string(max) + ")");
    return static_cast<std::size_t>(v);
}

/// Size of each call of the given mode for n tokens.
std::size_t step_of(const logits_args& a, std::size_t n) {
    switch (a.mode) {
    case feed_mode::sequential: return 1;
    case feed_mode::chunked: return a.chunk;
    default: return std::max<std::size_t>(n, 1);
    }
}

// ---- family: decoders (every registered architecture, tools/arch/) -------------
int logits_decoder(gguf::file file, const logits_args& a) {
    decoder_logits_job j;
    j.tokens = a.tokens;
    j.step = step_of(a, a.tokens.size());
    j.threads = a.threads;
    j.kv = a.kv;
    j.out = a.out;
    decoder_job job;
    job.what = decoder_job::kind::logits;
    job.logits = &j;
    return run_registered_decoder(std::move(file), job);
}

// ---- family: RWKV-5/6 (GGUF rwkv6, rwkv.cpp .bin) ---------------------------
/// Every position's logits, fed in calls of the mode's size, into the output file.
template <class Session>
int write_rwkv_logits(Session& sess, const logits_args& a) {
    const std::size_t n = a.tokens.size(), V = sess.n_vocab();
    std::vector<float> logits(n * V);
    const std::size_t step = step_of(a, n);
    for (std::size_t b = 0; b < n; b += step) {
        const std::size_t c = std::min(step, n - b);
        sess.prefill(0, std::span<const std::int32_t>(a.tokens.data() + b, c), logits.data() + b * V);
    }
    write_f32_file(a.out, logits.data(), logits.size());
    return 0;
}

#if ARCHETYPE_HAVE_MPI
/// Launched by mpirun: this rank's layers of an RWKV model in a pipeline (tools/run_pipeline.hpp
/// for decoders). The split weighs a layer by its matrices' elements (every layer alike) and the
/// last stage by the head's too, read off a first look at the file's layer 0.
template <class Arch>
int logits_rwkv_pipeline(const logits_args& a) {
    const auto& launch = pipeline_launch();
    std::vector<layer_range> split;
    {
        const auto probe = load_model<Arch>(a.model, {.group_norm_eps = a.group_norm_eps, .layers = {0, 1}});
        const auto& hp = probe.hparams();
        // every layer holds at least its five C x C time-mix matrices, at >= 4 bits a weight:
        // a layer count the file's size cannot hold is refused before the split is sized by it
        const std::uintmax_t file_bytes = std::filesystem::file_size(a.model);
        if (hp.n_layer > file_bytes / std::max<std::uintmax_t>(1, 5 * hp.n_embd * hp.n_embd / 2))
            throw format_error("'" + a.model + "' says " + std::to_string(hp.n_layer) + " layers of " +
                               std::to_string(hp.n_embd) + " channels but has only " + std::to_string(file_bytes) + " bytes");
        distributed::model_weight_bytes w;
        w.layer.assign(hp.n_layer, 6 * hp.n_embd * hp.n_embd + 2 * hp.n_ffn * hp.n_embd);
        w.head = hp.n_vocab * hp.n_embd;
        split = launch.layer_split.empty() ? distributed::balanced_split(w, std::size_t(launch.size))
                                           : distributed::explicit_split(launch.layer_split, hp.n_layer, std::size_t(launch.size));
    }
    const layer_range own = split[std::size_t(launch.rank)];
    say_share(own);
    const auto model = load_model<Arch>(a.model, {.group_norm_eps = a.group_norm_eps, .layers = own});
    auto stage = session(model, {.n_threads = a.threads, .max_sequences = 1});
    // RWKV weights are views of the file: not counted
    return run_pipelined(stage, 0, [&](auto& pipe) { return write_rwkv_logits(pipe, a); });
}
#endif

/// The RWKV structures compiled into the program: every dimension from the file.
template <class Arch>
int logits_rwkv_as(const logits_args& a) {
#if ARCHETYPE_HAVE_MPI
    if (pipeline_launch().active) return logits_rwkv_pipeline<Arch>(a);
#endif
    const auto model = load_model<Arch>(a.model, {.group_norm_eps = a.group_norm_eps});
    auto sess = session(model, {.n_threads = a.threads, .max_sequences = 1});
    return write_rwkv_logits(sess, a);
}

} // namespace

int cmd_logits(int argc, char** argv) {
    logits_args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o == "--help" || o == "-h") {
            if (writes_output()) std::printf("%s", logits_usage); // under mpirun: rank 0 alone
            return 0;
        }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(o) + "' needs a value");
        const std::string_view v = argv[++i];
        if (o == "--model") a.model = v;
        else if (o == "--out") a.out = v;
        else if (o == "--ids" || o == "--tokens") {
            if (a.have_tokens) throw argument_error("give the tokens once, with --ids or --tokens");
            std::string ids(v); // the fixtures' prompts are space-separated: accept both
            std::replace(ids.begin(), ids.end(), ' ', ',');
            a.tokens = o == "--ids" ? parse_ids(ids) : read_i32_file(std::string(v));
            a.have_tokens = true;
        } else if (o == "--mode") {
            if (v == "batch") a.mode = feed_mode::batch;
            else if (v == "sequential") a.mode = feed_mode::sequential;
            else if (v == "chunked") a.mode = feed_mode::chunked;
            else throw argument_error("--mode '" + std::string(v) + "' is not batch, sequential or chunked");
        } else if (o == "--chunk") a.chunk = parse_count(o, v, std::size_t(1) << 20);
        else if (o == "--threads") a.threads = parse_count(o, v, 256);
        else if (o == "--kv") {
            if (v == "f32") a.kv = kv_cache_type::f32;
            else if (v == "f16") a.kv = kv_cache_type::f16;
            else throw argument_error("--kv '" + std::string(v) + "' is not f32 or f16");
        } else if (o == "--group-norm-eps") {
            const std::string sv(v);
            char* end = nullptr;
            const float e = std::strtof(sv.c_str(), &end);
            if (sv.empty() || end != sv.c_str() + sv.size() || !(e > 0.f) || e > 1.f)
                throw argument_error("bad value '" + sv + "' for --group-norm-eps (a number in (0, 1])");
            a.group_norm_eps = e;
        }
        else throw argument_error("unknown option '" + std::string(o) + "'");
    }
    if (a.model.empty()) throw argument_error("--model FILE is required");
    if (a.out.empty()) throw argument_error("--out FILE is required");
    if (!a.have_tokens) throw argument_error("give the tokens with --ids or --tokens");

    // RWKV: GGUF rwkv6 / rwkv7 or an rwkv.cpp .bin (v5.2 / v6 / v7, told apart by its bytes), as the registry says
    if (!hf::is_checkpoint(a.model) && takes(a.model, rwkv_architectures{}))
        return with_architecture<rwkv_architectures>(
            a.model, [&]<class E>(std::type_identity<E>) { return logits_rwkv_as<typename E::model>(a); });
    return logits_decoder(open_model_file(a.model), a); // every registered decoder; names the known ones otherwise
}

} // namespace archetype::tools
