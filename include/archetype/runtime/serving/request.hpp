#pragma once
// What an application hands the scheduler (runtime/serving/scheduler.hpp) and what it
// gets back. A request is a prompt of token ids (an application renders chat messages
// with runtime/chat_tokens.hpp first), how to sample, when to stop, and a callback that
// receives its events on the scheduler's thread: text as it settles (whole UTF-8
// characters, no part of a stop string: text_stream.hpp), then one final event with the
// finish reason, or the pooled embedding of an embedding request.
//
// The ticket submit() returns is the application's side of a running request: cancel()
// sets a flag the scheduler reads between forward passes (the request's sequence is then
// released and a final event with finish_reason::cancelled follows).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/runtime/sampling.hpp"

namespace archetype::serving {

enum class finish_reason {
    none,      ///< not finished (a streaming event)
    stop,      ///< a stop token (end of sequence, end of turn) or a stop string
    length,    ///< max_tokens produced, or the sequence's context is full
    cancelled, ///< ticket::cancel, or the scheduler stopped
    error,     ///< the request could not run (event::error says why)
};

inline std::string_view finish_reason_name(finish_reason r) noexcept {
    switch (r) {
    case finish_reason::none: return "none";
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "cancelled";
    case finish_reason::error: return "error";
    }
    return "?";
}

/// How an embedding request pools the final-norm rows of its prompt (then L2-normalised).
enum class pooling { last, mean };

/// One thing that happened to a request, handed to its callback on the scheduler's thread.
struct event {
    std::string_view text;                 ///< newly settled text (may be empty)
    std::span<const std::int32_t> tokens;  ///< the tokens produced since the last event
    finish_reason finished = finish_reason::none;
    std::string_view error;                ///< finish_reason::error: why
    std::span<const float> embedding;      ///< an embedding request's final event: the pooled row
    std::size_t prompt_tokens = 0;         ///< the prompt's length
    std::size_t completion_tokens = 0;     ///< tokens produced so far
    std::size_t cached_tokens = 0;         ///< prompt tokens restored from the prefix cache
};

struct request {
    std::vector<std::int32_t> prompt{};    ///< at least one token
    sampling_params sampling{};            ///< temperature 0 = greedy
    std::size_t max_tokens = 256;          ///< most tokens to produce
    std::vector<std::int32_t> stop_tokens{}; ///< a produced token of these ends the request (not streamed)
    std::vector<std::string> stop{};       ///< stop strings (text_stream.hpp)
    bool embedding = false;                ///< prefill only, then the pooled final-norm row
    serving::pooling pool = serving::pooling::last;
    std::function<void(const event&)> on_event{}; ///< called on the scheduler's thread
};

/// The application's handle on a submitted request.
class ticket {
public:
    explicit ticket(std::uint64_t id) : id_(id) {}
    std::uint64_t id() const noexcept { return id_; }
    /// Asks the scheduler to end the request at its next pass (thread-safe).
    void cancel() noexcept { cancel_.store(true, std::memory_order_relaxed); }
    bool cancelled() const noexcept { return cancel_.load(std::memory_order_relaxed); }
    /// Whether its final event has been delivered.
    bool done() const noexcept { return done_.load(std::memory_order_acquire); }
    void mark_done() noexcept { done_.store(true, std::memory_order_release); }

private:
    std::uint64_t id_;
    std::atomic<bool> cancel_{false}, done_{false};
};

/// What the scheduler reports about itself (thread-safe snapshot).
struct scheduler_counts {
    std::size_t active = 0;            ///< requests holding a sequence
    std::size_t queued = 0;            ///< requests waiting for one
    std::size_t max_active = 0;        ///< sequences (the session's max_sequences)
    std::size_t max_queued = 0;        ///< the queue's bound (submit refuses past it)
    std::uint64_t requests_total = 0;  ///< requests finished, any reason
    std::uint64_t requests_failed = 0; ///< of those, finish_reason::error
    std::uint64_t prompt_tokens_total = 0;
    std::uint64_t cached_tokens_total = 0; ///< prompt tokens restored from the prefix cache
    std::uint64_t generated_tokens_total = 0;
    double generated_tokens_per_second = 0; ///< over the last few seconds of passes
    std::size_t kv_bytes = 0;              ///< the session's KV cells allocated
    std::size_t prefix_cache_bytes = 0;
};

/// The scheduler as an application without its session type sees it.
class scheduler_interface {
public:
    virtual ~scheduler_interface() = default;
    /// Queues a request (argument_error for a bad one; capacity_error when the queue is
    /// at its bound: the caller answers 503 or retries later).
    virtual std::shared_ptr<ticket> submit(request r) = 0;
    virtual scheduler_counts counts() const = 0;
    /// Tokens of positions one sequence holds (the session's n_ctx).
    virtual std::size_t context_limit() const = 0;
    virtual std::size_t n_vocab() const = 0;
    virtual std::size_t n_embd() const = 0;
    /// Stops accepting requests, lets the running and queued ones finish for at most
    /// `grace`, then cancels the rest (each gets its final event).
    virtual void stop(std::chrono::milliseconds grace) = 0;
};

} // namespace archetype::serving
