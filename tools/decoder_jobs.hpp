#pragma once
// What the commands ask of a decoder, independent of its compiled structure. A
// command fills a decoder_job and calls run_registered_decoder(); the registry
// (archetype::with_architecture) picks the file's entry, and run_decoder<Entry>
// is compiled once per entry in tools/arch/<name>.cpp, so that no translation
// unit instantiates every architecture for every command.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "archetype/io/gguf.hpp"
#include "archetype/kernels/batch_activations.hpp"
#include "archetype/runtime/kv_cache_type.hpp"
#include "archetype/runtime/sampling.hpp"
#include "archetype/runtime/serving/request.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"

namespace archetype::tools {

/// archetype logits: every position's logits into a file.
struct decoder_logits_job {
    std::vector<std::int32_t> tokens;
    std::size_t step = 1; // tokens per prefill call
    std::size_t threads = 1;
    kv_cache_type kv = kv_cache_type::f32;
    std::string out;
};

/// archetype generate: a prompt, then sampled tokens printed as text.
struct decoder_generate_job {
    const tokenizer::tokenizer* tok = nullptr;
    std::vector<std::int32_t> prompt;
    std::vector<std::int32_t> stop;
    std::size_t n = 128;
    std::size_t threads = 1;
    kv_cache_type kv = kv_cache_type::f32;
    sampling_params sp{};
    std::chrono::steady_clock::time_point t_load{};
};

/// archetype perplexity: llama-perplexity's measure over a tokenized text.
struct decoder_perplexity_job {
    std::vector<std::int32_t> tokens;
    std::size_t n_ctx = 512, n_batch = 512, n_chunks = 0, threads = 1;
    std::int32_t bos = -1; ///< >= 0: replaces each chunk's first token
    kv_cache_type kv = kv_cache_type::f32;
    kernels::batch_activations activations = kernels::batch_activations::mixed;
};

/// archetype serve: a session of `parallel` sequences under a serving scheduler
/// (runtime/serving/scheduler.hpp), handed to `run` (the HTTP server of cmd_serve.cpp,
/// which needs no model type: it sees the scheduler through its interface).
struct decoder_serve_job {
    std::size_t threads = 1, parallel = 1, n_ctx = 0, max_queued = 16, prefix_cache_bytes = 0, chunk_tokens = 0;
    std::size_t prefill_tokens_per_pass = 65536;
    kv_cache_type kv = kv_cache_type::f32;
    const tokenizer::tokenizer* tok = nullptr;
    std::function<int(serving::scheduler_interface&)> run;
};

struct decoder_job {
    enum class kind { describe, logits, generate, perplexity, serve } what = kind::describe;
    const decoder_logits_job* logits = nullptr;
    const decoder_generate_job* generate = nullptr;
    const decoder_perplexity_job* perplexity = nullptr;
    const decoder_serve_job* serve = nullptr;
};

/// Defined in tools/run_decoder.hpp, instantiated in tools/arch/<entry>.cpp.
template <class Entry>
int run_decoder(gguf::file file, const decoder_job& job);

/// Whether the file's architecture is one of the registered decoders.
bool is_registered_decoder(const gguf::file& file);
/// Runs the job on the file's registered decoder (shape_error when none takes it).
int run_registered_decoder(gguf::file file, const decoder_job& job);

} // namespace archetype::tools
