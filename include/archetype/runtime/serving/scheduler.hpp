#pragma once
// Continuous batching over one decoder session: requests (runtime/serving/request.hpp)
// join and leave a running batch between forward passes.
//
//   auto sess = archetype::session(model, {.n_threads = 8, .max_sequences = 8, .n_ctx = 4096});
//   serving::scheduler sched(sess, {.max_queued = 32, .piece = [&](int t) { return tok.token_to_piece(t); }});
//   sched.start();                                    // its own thread runs the passes
//   auto t = sched.submit({.prompt = ids, .max_tokens = 64, .on_event = [](const serving::event& e) { ... }});
//
// One pass (step()):
//   1. admission: queued requests take free sequences (first come, first served); a
//      prompt whose first k chunks are in the prefix cache restores that snapshot
//      (prefix_cache.hpp) instead of computing them;
//   2. cancelled requests release their sequences;
//   3. one decode over every request that has a token to feed (one batch, one row each);
//   4. prefill chunks of the requests still reading their prompts (round robin, one chunk
//      at a time) until the pass has read prefill_tokens_per_pass prompt tokens or no
//      prompt is left, so a long prompt is read between decode steps.
// The budget trades the streams' inter-token latency against how many passes a burst of
// new prompts stalls them: one chunk per pass (budget 0) gives the shortest gaps, but a
// burst of N prompts of C chunks each stalls every running stream N x C times, which is
// what a p99 inter-token latency counts. The default (65536) reads a burst in one pass, as
// llama-server was measured to (all of a burst's first tokens at the same time); prompts
// that keep arriving while others stream are better read one chunk per pass
// (docs/serving.md has the numbers of both).
// A request's prompt is cut into chunks of chunk_tokens from position 0, whatever else
// runs: its chunk schedule depends on its own length only. Decode and prefill are separate
// passes (a decode row never shares a pass with a prefill chunk), and the session's decode
// takes its batch-invariant path (decoder_session_options::batch_invariant_decode): a
// request's logits are bitwise the same whichever requests share its batch, and the same
// as that request alone, one token at a time (tests/serving).
//
// Each request owns one sequence of the session from admission to its end (finish,
// cancel or error), which then is removed for the next. submit() is thread-safe; events
// are delivered on the thread that runs step() (the scheduler's own after start()).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/sampling.hpp"
#include "archetype/runtime/session_args.hpp"
#include "archetype/runtime/serving/prefix_cache.hpp"
#include "archetype/runtime/serving/request.hpp"
#include "archetype/runtime/serving/text_stream.hpp"

namespace archetype::serving {

struct scheduler_options {
    std::size_t max_queued = 64;         ///< requests waiting for a sequence; submit refuses more
    std::size_t chunk_tokens = 0;        ///< prompt tokens per prefill pass (0: min(256, the session's chunk_rows))
    std::size_t prefix_cache_bytes = 0;  ///< snapshots kept for prefix reuse (0: none)
    /// prompt tokens read per pass, in whole chunks (at least one chunk; 0: one chunk)
    std::size_t prefill_tokens_per_pass = 65536;
    bool batch_invariant = true;         ///< decode rows bitwise independent of the batch (the session's mode)
    /// A token's bytes (the tokenizer's token_to_piece); null: events carry tokens only.
    std::function<std::string(std::int32_t)> piece{};
    /// Test hook: every row of logits a token is sampled from (request id, index of the
    /// token in its completion, the row), on the scheduler's thread.
    std::function<void(std::uint64_t, std::size_t, std::span<const float>)> on_logits{};
};

template <class Session>
class scheduler final : public scheduler_interface {
public:
    scheduler(Session& sess, scheduler_options o = {})
        : sess_(&sess), opt_(std::move(o)), cache_(opt_.prefix_cache_bytes) {
        chunk_ = opt_.chunk_tokens ? std::min(opt_.chunk_tokens, sess.chunk_rows())
                                   : std::min<std::size_t>(256, sess.chunk_rows());
        if constexpr (requires { sess.set_batch_invariant_decode(true); })
            sess.set_batch_invariant_decode(opt_.batch_invariant);
        slots_.resize(sess.max_sequences());
        const std::size_t S = sess.max_sequences(), V = sess.n_vocab();
        dec_seqs_.reserve(S);
        dec_tokens_.reserve(S);
        dec_owner_.reserve(S);
        dec_logits_.assign(S * V, 0.f);
        pre_logits_.assign(V, 0.f);
        hidden_.assign(chunk_ * sess.n_embd(), 0.f);
    }
    ~scheduler() override { stop(std::chrono::milliseconds(0)); }
    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    std::size_t chunk_tokens() const noexcept { return chunk_; }
    std::size_t context_limit() const override { return sess_->context_limit(); }
    std::size_t n_vocab() const override { return sess_->n_vocab(); }
    std::size_t n_embd() const override { return sess_->n_embd(); }
    const prefix_cache& prefixes() const noexcept { return cache_; }

    std::shared_ptr<ticket> submit(request r) override {
        check(r);
        std::lock_guard lk(mu_);
        if (closed_) throw capacity_error("the scheduler is shutting down: no new requests");
        if (queue_.size() >= opt_.max_queued)
            throw capacity_error("the queue is full (" + std::to_string(opt_.max_queued) + " requests waiting, " +
                                 std::to_string(n_active_) + " running)");
        auto t = std::make_shared<ticket>(++next_id_);
        queue_.push_back({std::move(r), t});
        cv_.notify_all();
        return t;
    }

    scheduler_counts counts() const override {
        std::lock_guard lk(mu_);
        scheduler_counts c = stats_;
        c.active = n_active_;
        c.queued = queue_.size();
        c.max_active = slots_.size();
        c.max_queued = opt_.max_queued;
        c.prefix_cache_bytes = cache_bytes_;
        c.kv_bytes = kv_bytes_;
        // generated tokens per second over the window of recent passes
        if (rate_.size() >= 2) {
            const double dt = std::chrono::duration<double>(rate_.back().first - rate_.front().first).count();
            if (dt > 0) c.generated_tokens_per_second = double(rate_.back().second - rate_.front().second) / dt;
        }
        return c;
    }

    /// One pass (the header's steps 1-4); false when there was nothing to do.
    bool step() {
        admit();
        release_cancelled();
        const bool decoded = decode_pass();
        bool prefilled = false;
        for (std::size_t read = 0; read == 0 || read < opt_.prefill_tokens_per_pass;) {
            const std::size_t n = prefill_chunk();
            if (n == 0) break;
            prefilled = true;
            read += n;
        }
        publish();
        return decoded || prefilled;
    }
    /// Runs passes until no request is queued or running (single-threaded use, tests).
    void run_until_idle() {
        while (step() || pending()) {
        }
    }

    /// Runs the passes on a thread of its own until stop().
    void start() {
        if (worker_.joinable()) return;
        worker_ = std::thread([this] { loop(); });
    }
    /// Stops accepting requests, lets running and queued ones finish for at most `grace`,
    /// then cancels the rest (each gets its final event) and joins the thread.
    void stop(std::chrono::milliseconds grace) override {
        {
            std::lock_guard lk(mu_);
            closed_ = true;
            deadline_ = std::chrono::steady_clock::now() + grace;
            stopping_ = true;
            cv_.notify_all();
        }
        if (worker_.joinable()) worker_.join();
        else cancel_all();
    }

private:
    struct queued {
        request req;
        std::shared_ptr<ticket> tk;
    };
    struct running {
        request req;
        std::shared_ptr<ticket> tk;
        std::size_t fed = 0;      // prompt tokens in the sequence
        std::size_t cached = 0;   // of those, restored from the prefix cache
        std::size_t produced = 0; // tokens sampled
        bool decoding = false;    // has a sampled token to feed
        std::int32_t next = 0;    // that token
        std::optional<sampler> smp{};
        std::optional<text_stream> text{};
        std::vector<std::int32_t> fresh{}; // tokens since the last event
        std::vector<float> pooled{};     // embedding: the sum (mean) or the last row
        std::uint64_t order = 0;         // admission order (prefill round robin)
    };

    void check(const request& r) const {
        if (r.prompt.empty()) throw argument_error("the prompt has no tokens");
        const std::size_t V = sess_->n_vocab(), ctx = sess_->context_limit();
        for (const auto t : r.prompt)
            if (t < 0 || std::size_t(t) >= V)
                throw argument_error("prompt token " + std::to_string(t) + " is outside the vocabulary of " +
                                     std::to_string(V));
        if (r.prompt.size() > ctx)
            throw argument_error("the prompt has " + std::to_string(r.prompt.size()) +
                                 " tokens, more than the context of " + std::to_string(ctx) + " tokens per sequence");
        if (!r.embedding && r.max_tokens == 0) throw argument_error("max_tokens must be at least 1");
        if (!r.embedding) sampler probe(r.sampling); // argument_error for bad sampling parameters
    }

    bool pending() const {
        std::lock_guard lk(mu_);
        return !queue_.empty() || n_active_ != 0;
    }

    void loop() {
        for (;;) {
            {
                std::unique_lock lk(mu_);
                if (stopping_ && std::chrono::steady_clock::now() >= deadline_) break;
                if (stopping_ && queue_.empty() && n_active_ == 0) break;
                if (queue_.empty() && n_active_ == 0) {
                    if (stopping_) cv_.wait_until(lk, deadline_);
                    else cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
                    continue;
                }
            }
            step();
        }
        cancel_all();
    }

    void cancel_all() {
        std::deque<queued> q;
        {
            std::lock_guard lk(mu_);
            q.swap(queue_);
        }
        for (auto& e : q) {
            running r{std::move(e.req), std::move(e.tk)};
            deliver_final(r, finish_reason::cancelled, {});
        }
        for (std::size_t s = 0; s < slots_.size(); ++s)
            if (slots_[s]) finish(s, finish_reason::cancelled, {});
        publish();
    }

    void admit() {
        for (std::size_t s = 0; s < slots_.size(); ++s) {
            if (slots_[s]) continue;
            queued q;
            {
                std::lock_guard lk(mu_);
                if (queue_.empty()) return;
                q = std::move(queue_.front());
                queue_.pop_front();
                ++n_active_;
            }
            auto& r = slots_[s].emplace(running{std::move(q.req), std::move(q.tk)});
            r.order = ++admitted_;
            if (r.tk->cancelled()) {
                finish(s, finish_reason::cancelled, {});
                continue;
            }
            try {
                if (!r.req.embedding) {
                    r.smp.emplace(r.req.sampling);
                    for (const auto t : r.req.prompt) r.smp->accept(t);
                    r.text.emplace(r.req.stop);
                }
                sess_->remove_sequence(seq(s));
                restore_prefix(s, r);
            } catch (const std::exception& e) {
                finish(s, finish_reason::error, e.what());
            }
        }
    }

    /// The longest cached prefix that ends on a chunk boundary before the prompt's last
    /// token (at least one token is left to prefill: its logits start the completion).
    void restore_prefix(std::size_t s, running& r) {
        if (cache_.max_bytes() == 0 || r.req.embedding) return;
        const auto& p = r.req.prompt;
        for (std::size_t k = (p.size() - 1) / chunk_; k >= 1; --k) {
            const std::span<const std::int32_t> head(p.data(), k * chunk_);
            if (const auto* snap = cache_.find(head)) {
                sess_->restore_sequence(seq(s), *snap);
                r.fed = r.cached = head.size();
                return;
            }
        }
    }

    void release_cancelled() {
        std::deque<queued> gone; // cancelled while waiting: they never take a sequence
        {
            std::lock_guard lk(mu_);
            for (auto it = queue_.begin(); it != queue_.end();)
                if (it->tk->cancelled()) {
                    gone.push_back(std::move(*it));
                    it = queue_.erase(it);
                } else
                    ++it;
        }
        for (auto& e : gone) {
            running r{std::move(e.req), std::move(e.tk)};
            deliver_final(r, finish_reason::cancelled, {});
        }
        for (std::size_t s = 0; s < slots_.size(); ++s)
            if (slots_[s] && slots_[s]->tk->cancelled()) finish(s, finish_reason::cancelled, {});
    }

    bool decode_pass() {
        dec_seqs_.clear();
        dec_tokens_.clear();
        dec_owner_.clear();
        for (std::size_t s = 0; s < slots_.size(); ++s)
            if (slots_[s] && slots_[s]->decoding) {
                dec_seqs_.push_back(seq(s));
                dec_tokens_.push_back(slots_[s]->next);
                dec_owner_.push_back(s);
            }
        if (dec_seqs_.empty()) return false;
        try {
            sess_->decode(dec_seqs_, dec_tokens_, dec_logits_.data());
        } catch (const std::exception& e) {
            for (const auto s : dec_owner_) finish(s, finish_reason::error, e.what());
            return true;
        }
        const std::size_t V = sess_->n_vocab();
        for (std::size_t i = 0; i < dec_owner_.size(); ++i)
            sample(dec_owner_[i], std::span<const float>(dec_logits_.data() + i * V, V));
        return true;
    }

    /// One prefill chunk; returns its prompt tokens (0: no prompt left to read).
    std::size_t prefill_chunk() {
        // the prompt-reading request admitted longest ago after the last one served
        std::size_t best = slots_.size();
        for (std::size_t pass = 0; pass < 2 && best == slots_.size(); ++pass)
            for (std::size_t s = 0; s < slots_.size(); ++s) {
                const auto& r = slots_[s];
                if (!r || r->decoding || r->fed >= r->req.prompt.size()) continue;
                if (pass == 0 && r->order <= last_prefilled_) continue;
                if (best == slots_.size() || r->order < slots_[best]->order) best = s;
            }
        if (best == slots_.size()) return 0;
        auto& r = *slots_[best];
        last_prefilled_ = r.order;
        const auto& p = r.req.prompt;
        const std::size_t n = std::min(chunk_, p.size() - r.fed);
        const bool last = r.fed + n == p.size();
        const std::span<const std::int32_t> chunk(p.data() + r.fed, n);
        try {
            if (r.req.embedding) {
                sess_->prefill(seq(best), chunk, nullptr, logits_rows::all, hidden_.data());
                pool_rows(r, n);
            } else {
                sess_->prefill(seq(best), chunk, last ? pre_logits_.data() : nullptr, logits_rows::last);
            }
        } catch (const std::exception& e) {
            finish(best, finish_reason::error, e.what());
            return n;
        }
        r.fed += n;
        {
            std::lock_guard lk(mu_);
            stats_.prompt_tokens_total += n;
        }
        if (!r.req.embedding && r.fed % chunk_ == 0 && cache_.max_bytes() != 0) {
            const std::span<const std::int32_t> head(p.data(), r.fed);
            if (!cache_.contains(head)) cache_.insert(head, sess_->save_sequence(seq(best)));
        }
        if (!last) return n;
        if (r.req.embedding) finish_embedding(best);
        else sample(best, std::span<const float>(pre_logits_.data(), sess_->n_vocab()));
        return n;
    }

    void pool_rows(running& r, std::size_t n) {
        const std::size_t E = sess_->n_embd();
        if (r.pooled.empty()) r.pooled.assign(E, 0.f);
        if (r.req.pool == pooling::last) std::copy_n(hidden_.data() + (n - 1) * E, E, r.pooled.data());
        else
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < E; ++j) r.pooled[j] += hidden_[i * E + j];
    }

    void finish_embedding(std::size_t s) {
        auto& r = *slots_[s];
        auto& v = r.pooled;
        if (r.req.pool == pooling::mean)
            for (auto& x : v) x /= float(r.req.prompt.size());
        double ss = 0;
        for (const float x : v) ss += double(x) * x;
        const float inv = ss > 0 ? float(1.0 / std::sqrt(ss)) : 0.f;
        for (auto& x : v) x *= inv;
        finish(s, finish_reason::stop, {});
    }

    /// The next token of slot s from its row of logits, and what follows from it.
    void sample(std::size_t s, std::span<const float> logits) {
        auto& r = *slots_[s];
        if (opt_.on_logits) opt_.on_logits(r.tk->id(), r.produced, logits);
        std::int32_t t;
        try {
            t = r.smp->sample(logits);
        } catch (const std::exception& e) {
            finish(s, finish_reason::error, e.what());
            return;
        }
        ++r.produced;
        {
            std::lock_guard lk(mu_);
            ++stats_.generated_tokens_total;
        }
        if (std::find(r.req.stop_tokens.begin(), r.req.stop_tokens.end(), t) != r.req.stop_tokens.end()) {
            finish(s, finish_reason::stop, {});
            return;
        }
        r.fresh.push_back(t);
        std::string text;
        if (opt_.piece) text = r.text->push(opt_.piece(t));
        if (r.text->stopped()) {
            emit(s, text);
            if (slots_[s]) finish(s, finish_reason::stop, {});
            return;
        }
        const std::size_t past = r.req.prompt.size() + r.produced; // positions once t is fed
        if (r.produced >= r.req.max_tokens || past > sess_->context_limit()) {
            emit(s, text);
            if (slots_[s]) finish(s, finish_reason::length, {});
            return;
        }
        r.decoding = true;
        r.next = t;
        if (!text.empty()) emit(s, text);
    }

    /// A streaming event of slot s (a throwing callback cancels its request).
    void emit(std::size_t s, std::string_view text) {
        auto& r = *slots_[s];
        event e;
        e.text = text;
        e.tokens = r.fresh;
        e.prompt_tokens = r.req.prompt.size();
        e.completion_tokens = r.produced;
        e.cached_tokens = r.cached;
        bool ok = true;
        if (r.req.on_event) try {
                r.req.on_event(e);
            } catch (...) {
                ok = false;
            }
        r.fresh.clear();
        if (!ok) finish(s, finish_reason::cancelled, {});
    }

    void deliver_final(running& r, finish_reason why, std::string_view error) {
        std::string tail;
        if (r.text && why != finish_reason::error) tail = r.text->finish();
        event e;
        e.text = tail;
        e.tokens = r.fresh;
        e.finished = why;
        e.error = error;
        e.prompt_tokens = r.req.prompt.size();
        e.completion_tokens = r.produced;
        e.cached_tokens = r.cached;
        if (r.req.embedding && why == finish_reason::stop) e.embedding = r.pooled;
        if (r.req.on_event) try {
                r.req.on_event(e);
            } catch (...) {
            }
        r.tk->mark_done();
        std::lock_guard lk(mu_);
        ++stats_.requests_total;
        if (why == finish_reason::error) ++stats_.requests_failed;
        stats_.cached_tokens_total += r.cached;
    }

    /// Ends slot s's request: its final event, then its sequence is released.
    void finish(std::size_t s, finish_reason why, std::string_view error) {
        running r = std::move(*slots_[s]);
        slots_[s].reset();
        try {
            sess_->remove_sequence(seq(s));
        } catch (...) {
        }
        {
            std::lock_guard lk(mu_);
            --n_active_;
        }
        deliver_final(r, why, error);
    }

    /// Copies what counts() reports from this thread's state.
    void publish() {
        const auto now = std::chrono::steady_clock::now();
        std::lock_guard lk(mu_);
        cache_bytes_ = cache_.bytes();
        kv_bytes_ = sess_->cache().allocated_bytes();
        rate_.emplace_back(now, stats_.generated_tokens_total);
        while (rate_.size() > 2 && now - rate_.front().first > std::chrono::seconds(5)) rate_.pop_front();
        while (rate_.size() > 4096) rate_.pop_front();
    }

    static seq_id seq(std::size_t s) noexcept { return seq_id(s); }

    Session* sess_;
    scheduler_options opt_;
    prefix_cache cache_;
    std::size_t chunk_ = 0;
    std::vector<std::optional<running>> slots_; // slot s runs on sequence s
    std::uint64_t admitted_ = 0, last_prefilled_ = 0;
    std::vector<seq_id> dec_seqs_;
    std::vector<std::int32_t> dec_tokens_;
    std::vector<std::size_t> dec_owner_;
    std::vector<float> dec_logits_, pre_logits_, hidden_;

    mutable std::mutex mu_; // guards what submit() and counts() share with the passes
    std::condition_variable cv_;
    std::deque<queued> queue_;
    std::size_t n_active_ = 0, cache_bytes_ = 0, kv_bytes_ = 0;
    std::uint64_t next_id_ = 0;
    scheduler_counts stats_;
    std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> rate_;
    bool closed_ = false, stopping_ = false;
    std::chrono::steady_clock::time_point deadline_{};
    std::thread worker_;
};

} // namespace archetype::serving
