#pragma once
// Perplexity of a token stream with llama-perplexity's conventions (llama.cpp
// tools/perplexity/perplexity.cpp, d32676d), so that the two numbers compare:
//   - the stream is cut into non-overlapping chunks of n_ctx tokens; the tokens after
//     the last whole chunk are not scored; at least 2 chunks are required;
//   - each chunk starts from an empty sequence; when the vocabulary adds BOS, the
//     chunk's first token is replaced by BOS (the stream itself comes from tokenizing
//     the whole text with its special tokens);
//   - the logits at positions n_ctx/2 .. n_ctx-2 of a chunk score the next token:
//     nll = -log softmax(logits)[next], with the max in float and the sum of expf
//     terms in double, as llama.cpp does;
//   - PPL = exp(mean nll); "+/-" is its delta-method standard error,
//     PPL * sqrt((mean nll^2 - mean nll^2) / (count - 1)).
// Works on any session with prefill(seq, tokens, logits, rows), remove_sequence(seq),
// n_vocab() and options().n_ctx (decoders, RWKV).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/runtime/session_args.hpp"

namespace archetype {

struct perplexity_options {
    std::size_t n_ctx = 512;                ///< tokens per chunk (llama-perplexity's -c)
    std::size_t n_batch = 512;              ///< tokens per prefill call
    std::size_t n_chunks = 0;               ///< score only the first n chunks (0: all)
    std::optional<std::int32_t> bos = std::nullopt; ///< replaces each chunk's first token (the vocabulary's add_bos)
    std::size_t n_threads = 1;              ///< for the log-softmax of the scored rows
};

struct perplexity_result {
    double ppl = 0;           ///< exp(mean nll)
    double ppl_error = 0;     ///< the delta-method standard error of ppl
    double mean_nll = 0;
    std::size_t n_chunks = 0; ///< chunks scored
    std::size_t n_scored = 0; ///< tokens scored (n_chunks * (n_ctx - n_ctx/2 - 1))
};

/// Running state after each chunk: the chunk count so far and the perplexity so far.
struct perplexity_progress {
    std::size_t chunk = 0, n_chunks = 0;
    double ppl = 0;
};

namespace detail {
/// -log softmax(row)[tok], llama-perplexity's arithmetic.
inline double next_token_nll(const float* row, std::size_t V, std::int32_t tok) noexcept {
    float mx = row[0];
    for (std::size_t i = 1; i < V; ++i) mx = std::max(mx, row[i]);
    double sum = 0.0;
    for (std::size_t i = 0; i < V; ++i) sum += std::exp(row[i] - mx); // float exp, as its expf
    return -(double(row[tok] - mx) - std::log(sum));
}
} // namespace detail

template <class Session, class Progress>
perplexity_result perplexity(Session& s, std::span<const std::int32_t> tokens, const perplexity_options& o,
                             Progress&& on_chunk) {
    const std::size_t n_ctx = o.n_ctx;
    if (n_ctx < 4) throw argument_error("perplexity: context " + std::to_string(n_ctx) + " is too small (at least 4 tokens)");
    if (o.n_batch == 0) throw argument_error("perplexity: batch size 0");
    if (n_ctx > s.options().n_ctx)
        throw argument_error("perplexity: context " + std::to_string(n_ctx) + " exceeds the session's " +
                             std::to_string(s.options().n_ctx) + " positions");
    if (tokens.size() < 2 * n_ctx)
        throw argument_error("perplexity: the text has " + std::to_string(tokens.size()) + " tokens; a context of " +
                             std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx));
    runtime::check_tokens(tokens, s.n_vocab());
    if (o.bos) runtime::check_tokens(std::span<const std::int32_t>(&*o.bos, 1), s.n_vocab());
    std::size_t n_chunks = tokens.size() / n_ctx;
    if (o.n_chunks) n_chunks = std::min(n_chunks, o.n_chunks);

    const std::size_t V = s.n_vocab(), first = n_ctx / 2;
    const std::size_t rows_per_call = std::min<std::size_t>(o.n_batch, 64); // bounds the logits buffer
    std::vector<float> logits(rows_per_call * V), last(V);
    std::vector<std::int32_t> chunk(n_ctx);
    std::vector<double> nll(n_ctx);
    thread_pool pool(std::max<std::size_t>(1, o.n_threads));
    double sum = 0, sum2 = 0;
    std::size_t count = 0;
    const seq_id seq = 0;
    for (std::size_t c = 0; c < n_chunks; ++c) {
        std::copy_n(tokens.begin() + std::ptrdiff_t(c * n_ctx), n_ctx, chunk.begin());
        if (o.bos) chunk[0] = *o.bos;
        s.remove_sequence(seq);
        // positions 0 .. first-1: no row is scored
        for (std::size_t b = 0; b < first; b += o.n_batch) {
            const std::size_t n = std::min(o.n_batch, first - b);
            s.prefill(seq, std::span<const std::int32_t>(chunk.data() + b, n), last.data(), logits_rows::last);
        }
        // positions first .. n_ctx-1: row p scores chunk[p + 1] (p <= n_ctx - 2)
        for (std::size_t b = first; b < n_ctx; b += rows_per_call) {
            const std::size_t n = std::min(rows_per_call, n_ctx - b);
            s.prefill(seq, std::span<const std::int32_t>(chunk.data() + b, n), logits.data(), logits_rows::all);
            const std::size_t scored = std::min(n, n_ctx - 1 - b);
            pool.parallel_for(scored, [&](std::size_t i0, std::size_t i1) {
                for (std::size_t i = i0; i < i1; ++i)
                    nll[b + i] = detail::next_token_nll(logits.data() + i * V, V, chunk[b + i + 1]);
            });
            for (std::size_t i = 0; i < scored; ++i) sum += nll[b + i], sum2 += nll[b + i] * nll[b + i];
            count += scored;
        }
        on_chunk(perplexity_progress{c + 1, n_chunks, std::exp(sum / double(count))});
    }
    s.remove_sequence(seq);
    perplexity_result r;
    r.n_chunks = n_chunks;
    r.n_scored = count;
    r.mean_nll = sum / double(count);
    r.ppl = std::exp(r.mean_nll);
    const double var = sum2 / double(count) - r.mean_nll * r.mean_nll;
    r.ppl_error = var > 0 && count > 1 ? std::sqrt(var / double(count - 1)) * r.ppl : 0.0;
    return r;
}

template <class Session>
perplexity_result perplexity(Session& s, std::span<const std::int32_t> tokens, const perplexity_options& o = {}) {
    return perplexity(s, tokens, o, [](const perplexity_progress&) {});
}

} // namespace archetype
