#pragma once
// run_decoder<Entry>: loads a file as a registry entry's structure and runs a
// command's job on it. Included only by tools/arch/<entry>.cpp, each of which
// instantiates it for one entry. A job runs on any session with the decoder
// session's front (prefill, decode, options): one process's decoder_session, or,
// launched by mpirun, rank 0's pipeline_session (tools/run_pipeline.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/perplexity.hpp"
#include "archetype/runtime/serving/scheduler.hpp"
#include "commands.hpp"
#include "decoder_jobs.hpp"
#include "entry_handle_of.hpp"
#include "pipeline_launch.hpp"

namespace archetype::tools {

namespace detail {
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class Model>
int describe_job(const Model& m) {
    std::fputs(m.describe().c_str(), stdout);
    return 0;
}

/// The session a job runs on (the same on every rank of a pipeline).
inline decoder_session_options session_options_of(const decoder_job& job) {
    switch (job.what) {
    case decoder_job::kind::logits: {
        const auto& a = *job.logits;
        return {.n_threads = a.threads, .max_sequences = 1, .n_ctx = std::max<std::size_t>(a.tokens.size(), 1), .kv_type = a.kv};
    }
    case decoder_job::kind::generate: {
        const auto& a = *job.generate;
        return {.n_threads = a.threads, .max_sequences = 1, .n_ctx = a.prompt.size() + a.n + 1, .kv_type = a.kv};
    }
    case decoder_job::kind::perplexity: {
        const auto& a = *job.perplexity;
        return {.n_threads = a.threads, .max_sequences = 1, .n_ctx = a.n_ctx, .kv_type = a.kv,
                .batch_activations = a.activations};
    }
    case decoder_job::kind::serve: {
        const auto& a = *job.serve;
        return {.n_threads = a.threads, .max_sequences = a.parallel, .n_ctx = a.n_ctx, .kv_type = a.kv,
                .batch_invariant_decode = true};
    }
    case decoder_job::kind::describe: break;
    }
    return {};
}

template <class Session>
int logits_job(Session& sess, const decoder_logits_job& a) {
    const std::size_t n = a.tokens.size(), V = sess.n_vocab();
    std::vector<float> logits(n * V);
    for (std::size_t b = 0; b < n; b += a.step) {
        const std::size_t c = std::min(a.step, n - b);
        sess.prefill(0, std::span<const std::int32_t>(a.tokens.data() + b, c), logits.data() + b * V);
    }
    write_f32_file(a.out, logits.data(), logits.size());
    return 0;
}

template <class Model, class Session>
int generate_job(const Model& model, Session& sess, const decoder_generate_job& a) {
    const std::size_t V = model.n_vocab();
    const auto& prompt = a.prompt;
    std::fprintf(stderr, " %zu layers, %zu-token vocabulary, %.2f s\n", model.hparams().dims.n_layer, V,
                 seconds_since(a.t_load));
    std::fprintf(stderr, "prompt: %zu tokens\n", prompt.size());
    std::vector<float> logits(V);
    sampler smp(a.sp);
    for (const auto t : prompt) smp.accept(t);

    const auto t_prompt = std::chrono::steady_clock::now();
    sess.prefill(0, prompt, logits.data(), logits_rows::last);
    const double prompt_s = seconds_since(t_prompt);

    const auto t_gen = std::chrono::steady_clock::now();
    std::size_t produced = 0, decoded = 0;
    const int seq = 0;
    while (produced < a.n) {
        const std::int32_t t = smp.sample(logits);
        ++produced;
        if (std::find(a.stop.begin(), a.stop.end(), t) != a.stop.end()) break;
        const std::string piece = a.tok->token_to_piece(t);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        if (produced == a.n) break;
        sess.decode(std::span<const int>(&seq, 1), std::span<const std::int32_t>(&t, 1), logits.data());
        ++decoded;
    }
    const double gen_s = seconds_since(t_gen);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "prompt:     %zu tokens in %.3f s = %.1f tokens/s\n", prompt.size(), prompt_s,
                 double(prompt.size()) / std::max(prompt_s, 1e-9));
    std::fprintf(stderr, "generation: %zu tokens in %.3f s = %.1f tokens/s (%zu decode steps, %zu threads)\n",
                 produced, gen_s, double(produced) / std::max(gen_s, 1e-9), decoded, a.threads);
    return 0;
}
template <class Session>
int perplexity_job(Session& sess, const decoder_perplexity_job& a) {
    perplexity_options o{.n_ctx = a.n_ctx, .n_batch = a.n_batch, .n_chunks = a.n_chunks, .bos = std::nullopt,
                         .n_threads = a.threads};
    if (a.bos >= 0) o.bos = a.bos;
    const std::size_t n_chunks = a.n_chunks ? std::min(a.n_chunks, a.tokens.size() / a.n_ctx) : a.tokens.size() / a.n_ctx;
    std::fprintf(stderr, "perplexity: %zu tokens, %zu chunks of %zu, batch %zu, %zu threads\n", a.tokens.size(),
                 n_chunks, a.n_ctx, a.n_batch, a.threads);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = perplexity(sess, a.tokens, o, [](const perplexity_progress& p) {
        std::fprintf(stderr, "[%zu]%.4f,", p.chunk, p.ppl); // llama-perplexity's progress form
        std::fflush(stderr);
    });
    const double s = seconds_since(t0);
    std::fprintf(stderr, "\n");
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
    std::printf("%zu chunks, %zu tokens scored, %zu tokens evaluated in %.2f s = %.1f tokens/s\n", r.n_chunks,
                r.n_scored, r.n_chunks * a.n_ctx, s, double(r.n_chunks * a.n_ctx) / std::max(s, 1e-9));
    return 0;
}
/// archetype serve: the scheduler over the session, on its own thread, for the server.
template <class Session>
int serve_job(Session& sess, const decoder_serve_job& a) {
    const tokenizer::tokenizer* tok = a.tok;
    serving::scheduler sched(sess, {.max_queued = a.max_queued,
                                    .chunk_tokens = a.chunk_tokens,
                                    .prefix_cache_bytes = a.prefix_cache_bytes,
                                    .prefill_tokens_per_pass = a.prefill_tokens_per_pass,
                                    .batch_invariant = true,
                                    .piece = [tok](std::int32_t t) { return tok->token_to_piece(t); }});
    sched.start();
    return a.run(sched);
}
/// Runs a job (not describe) on a session made for it.
template <class Model, class Session>
int run_job(const Model& model, Session& sess, const decoder_job& job) {
    switch (job.what) {
    case decoder_job::kind::logits: return logits_job(sess, *job.logits);
    case decoder_job::kind::generate: return generate_job(model, sess, *job.generate);
    case decoder_job::kind::perplexity: return perplexity_job(sess, *job.perplexity);
    case decoder_job::kind::serve:
        if constexpr (requires { sess.set_batch_invariant_decode(true); }) return serve_job(sess, *job.serve);
        else throw argument_error("archetype serve does not run under mpirun (one process serves)");
    case decoder_job::kind::describe: break;
    }
    return 0;
}
} // namespace detail
} // namespace archetype::tools

#if ARCHETYPE_HAVE_MPI
#include "run_pipeline.hpp" // run_decoder_pipeline: the same jobs over MPI ranks
#endif

namespace archetype::tools {

template <class Entry>
int run_decoder(gguf::file file, const decoder_job& job) {
#if ARCHETYPE_HAVE_MPI
    if (pipeline_launch().active && job.what != decoder_job::kind::describe)
        return run_decoder_pipeline<Entry>(std::move(file), job);
#endif
    const auto model = load_model<Entry>(std::move(file));
    if (job.what == decoder_job::kind::describe) return detail::describe_job(model);
    auto sess = session(model, detail::session_options_of(job));
    return detail::run_job(model, sess, job);
}

} // namespace archetype::tools

/// One line per registry entry in tools/arch/<entry>.cpp: the program's jobs on it, and
/// the same compiled model behind a model_handle (entry_handle.hpp) for the zoo tests.
#define ARCHETYPE_TOOLS_DECODER(Entry)                                                       \
    template int archetype::tools::run_decoder<Entry>(gguf::file, const decoder_job&);      \
    template std::unique_ptr<archetype::tools::model_handle> archetype::tools::open_handle<Entry>(gguf::file)
