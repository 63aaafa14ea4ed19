#pragma once
// Serving an encoder (BERT, nomic-bert, ModernBERT): embedding requests behind the same
// scheduler_interface as the decoder scheduler (scheduler.hpp), so `archetype serve` answers
// /v1/embeddings for an encoder file the way it does for a decoder.
//
// An encoder keeps no memory between requests: there is nothing to batch continuously and
// no sequence to hold, so requests run one at a time, first come first served, on the
// engine's own thread, each a whole forward pass over its tokens with the file's pooling
// (mean where the file says none) and L2 normalisation. Chat and completion requests are
// refused at submit (argument_error): an encoder produces no tokens.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "archetype/runtime/serving/request.hpp"

namespace archetype::serving {

struct encoder_engine_options {
    std::size_t n_threads = 1;
    std::size_t max_queued = 16; ///< requests waiting past the running one (submit refuses past it)
};

template <class Enc>
class encoder_engine final : public scheduler_interface {
public:
    encoder_engine(const encoder_model<Enc>& m, encoder_engine_options o)
        : session_(m, {.n_threads = std::max<std::size_t>(1, o.n_threads)}), opt_(o) {
        pool_ = session_.default_pooling();
        if (pool_ == pooling_type::none) pool_ = pooling_type::mean; // one vector per input
        if (pool_ == pooling_type::rank)
            throw argument_error("this encoder's pooling is 'rank' (a reranker's score, not an embedding): "
                                 "archetype serve's /v1/embeddings needs an embedding model");
        thread_ = std::thread([this] { loop(); });
    }
    ~encoder_engine() override {
        {
            std::lock_guard lk(mu_);
            quit_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    encoder_engine(const encoder_engine&) = delete;
    encoder_engine& operator=(const encoder_engine&) = delete;

    std::shared_ptr<ticket> submit(request r) override {
        if (!r.embedding)
            throw argument_error("this model is an encoder: it serves embeddings only (POST /v1/embeddings)");
        if (r.prompt.empty()) throw argument_error("an embedding request needs at least one token");
        if (r.prompt.size() > context_limit())
            throw argument_error("the input has " + std::to_string(r.prompt.size()) + " tokens, more than the " +
                                 std::to_string(context_limit()) + " this encoder accepts");
        for (auto t : r.prompt)
            if (t < 0 || static_cast<std::size_t>(t) >= n_vocab())
                throw argument_error("token id " + std::to_string(t) + " is outside the vocabulary of " +
                                     std::to_string(n_vocab()));
        std::lock_guard lk(mu_);
        if (stopping_) throw capacity_error("the server is shutting down");
        if (queue_.size() >= opt_.max_queued + (busy_ ? 0 : 1))
            throw capacity_error("the queue is full (" + std::to_string(opt_.max_queued) + " waiting requests)");
        auto t = std::make_shared<ticket>(++next_id_);
        queue_.push_back({std::move(r), t});
        cv_.notify_all();
        return t;
    }

    scheduler_counts counts() const override {
        std::lock_guard lk(mu_);
        scheduler_counts c;
        c.active = busy_ ? 1 : 0;
        c.queued = queue_.size();
        c.max_active = 1;
        c.max_queued = opt_.max_queued;
        c.requests_total = done_;
        c.requests_failed = failed_;
        c.prompt_tokens_total = prompt_tokens_;
        return c;
    }
    std::size_t context_limit() const override { return session_.model().max_sequence(); }
    std::size_t n_vocab() const override { return session_.model().n_vocab(); }
    std::size_t n_embd() const override { return session_.model().n_embd(); }

    void stop(std::chrono::milliseconds grace) override {
        std::unique_lock lk(mu_);
        stopping_ = true;
        cv_.wait_for(lk, grace, [&] { return queue_.empty() && !busy_; });
        for (auto& j : queue_) j.t->cancel(); // the loop ends them with a cancelled event
        cv_.notify_all();
        cv_.wait(lk, [&] { return queue_.empty() && !busy_; });
    }

private:
    struct job {
        request r;
        std::shared_ptr<ticket> t;
    };

    void loop() {
        std::vector<float> out;
        for (;;) {
            job j;
            {
                std::unique_lock lk(mu_);
                cv_.wait(lk, [&] { return quit_ || !queue_.empty(); });
                if (queue_.empty()) return;
                j = std::move(queue_.front());
                queue_.pop_front();
                busy_ = true;
            }
            event ev;
            ev.prompt_tokens = j.r.prompt.size();
            std::string error;
            if (j.t->cancelled()) {
                ev.finished = finish_reason::cancelled;
            } else {
                try {
                    const token_span span(j.r.prompt);
                    out.assign(session_.output_size(std::span(&span, 1), pool_), 0.f);
                    session_.embed(std::span(&span, 1), out, pool_, 2);
                    ev.finished = finish_reason::stop;
                    ev.embedding = out;
                } catch (const std::exception& e) {
                    error = e.what();
                    ev.finished = finish_reason::error;
                    ev.error = error;
                }
            }
            if (j.r.on_event) j.r.on_event(ev);
            j.t->mark_done();
            {
                std::lock_guard lk(mu_);
                busy_ = false;
                ++done_;
                if (ev.finished == finish_reason::error) ++failed_;
                if (ev.finished == finish_reason::stop) prompt_tokens_ += ev.prompt_tokens;
            }
            cv_.notify_all();
        }
    }

    encoder_session<Enc> session_;
    encoder_engine_options opt_;
    pooling_type pool_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<job> queue_;
    bool busy_ = false, stopping_ = false, quit_ = false;
    std::uint64_t next_id_ = 0, done_ = 0, failed_ = 0, prompt_tokens_ = 0;
    std::thread thread_;
};

} // namespace archetype::serving
