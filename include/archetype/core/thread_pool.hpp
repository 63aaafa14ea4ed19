#pragma once
// A small fork-join thread pool. `parallel_for(n, f)` splits [0, n) into
// contiguous ranges and calls f(begin, end) on the caller and the workers.
//
// Why this shape: kernels split work by output rows, so each output element is
// computed by exactly one thread with the same instruction sequence whatever the
// thread count -> results do not depend on the number of threads.
// Workers spin briefly and then sleep on a condition variable: spinning keeps
// decode latency low, sleeping keeps a busy neighbour core usable (llama.cpp's
// pure spinning collapses when another process holds a core).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace archetype {

class thread_pool {
public:
    /// n_threads counts the caller: thread_pool(1) runs everything inline.
    explicit thread_pool(std::size_t n_threads = std::max(1u, std::thread::hardware_concurrency()))
        : n_threads_(std::max<std::size_t>(1, n_threads)) {
        workers_.reserve(n_threads_ - 1);
        for (std::size_t i = 1; i < n_threads_; ++i)
            workers_.emplace_back([this](std::stop_token st) { worker_loop(st); });
    }
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;
    ~thread_pool() {
        {
            std::lock_guard lk(mutex_);
            stopping_ = true;
        }
        cv_.notify_all();
        for (auto& w : workers_) w.request_stop();
        workers_.clear(); // joins
    }

    std::size_t size() const noexcept { return n_threads_; }

    /// Calls f(begin, end) over a partition of [0, n) into at most size()
    /// non-empty ranges. Blocks until all are done; the first exception thrown
    /// by f is rethrown on the caller.
    template <class F>
    void parallel_for(std::size_t n, F&& f) {
        if (n == 0) return;
        const std::size_t parts = std::min(n, n_threads_);
        if (parts == 1 || inside_task()) {
            f(std::size_t{0}, n);
            return;
        }
        auto task = [&](std::size_t part) { f(n * part / parts, n * (part + 1) / parts); };
        run(parts, task);
    }

    /// Calls f(i) for every i in [0, n_tasks), handed out dynamically (for
    /// uneven work such as attention rows of different lengths).
    template <class F>
    void for_each_task(std::size_t n_tasks, F&& f) {
        if (n_tasks == 0) return;
        if (n_threads_ == 1 || n_tasks == 1 || inside_task()) {
            for (std::size_t i = 0; i < n_tasks; ++i) f(i);
            return;
        }
        std::atomic<std::size_t> next{0};
        auto task = [&](std::size_t) {
            for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n_tasks;) f(i);
        };
        run(std::min(n_tasks, n_threads_), task);
    }

private:
    // The ticket counter packs the job's generation (high 32 bits) with the
    // next part index (low 32 bits), so a worker late from an earlier job can
    // never take a part of the next one.
    template <class Task>
    void run(std::size_t parts, Task& task) {
        std::lock_guard run_lock(run_mutex_); // one job at a time per pool
        job_fn_ = [&task](std::size_t p) { task(p); };
        job_parts_.store(parts, std::memory_order_relaxed);
        error_ = nullptr;
        pending_.store(parts, std::memory_order_relaxed);
        const std::uint64_t gen = (generation_.load(std::memory_order_relaxed) + 1) & 0xFFFFFFFFu;
        tickets_.store(gen << 32, std::memory_order_release);
        {
            std::lock_guard lk(mutex_);
            generation_.store(gen, std::memory_order_release);
        }
        cv_.notify_all();
        work_on(gen, parts);
        for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin)
            if (spin > 4000) std::this_thread::yield();
        job_fn_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

    void work_on(std::uint64_t gen, std::size_t parts) {
        for (;;) {
            // Take a ticket only if it belongs to this job: a plain fetch_add by a
            // worker late from the previous job would burn a part of the next one
            // (that part never runs and run() waits forever).
            std::uint64_t t = tickets_.load(std::memory_order_acquire);
            do {
                if ((t >> 32) != gen || (t & 0xFFFFFFFFu) >= parts) return;
            } while (!tickets_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                                     std::memory_order_acquire));
            inside_task() = true;
            try {
                job_fn_(static_cast<std::size_t>(t & 0xFFFFFFFFu));
            } catch (...) {
                std::lock_guard lk(error_mutex_);
                if (!error_) error_ = std::current_exception();
            }
            inside_task() = false;
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }

    void worker_loop(std::stop_token st) {
        std::uint64_t seen = 0;
        while (!st.stop_requested()) {
            bool got = false;
            for (int spin = 0; spin < 20000 && !got; ++spin) {
                got = generation_.load(std::memory_order_acquire) != seen;
                if (!got && (spin & 63) == 63) std::this_thread::yield();
            }
            if (!got) {
                std::unique_lock lk(mutex_);
                cv_.wait(lk, [&] { return stopping_ || generation_.load() != seen; });
                if (stopping_) return;
            }
            seen = generation_.load(std::memory_order_acquire);
            work_on(seen, job_parts_.load(std::memory_order_acquire));
        }
    }

    static bool& inside_task() noexcept {
        thread_local bool flag = false;
        return flag;
    }

    std::size_t n_threads_;
    std::vector<std::jthread> workers_;
    std::mutex mutex_, run_mutex_, error_mutex_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<std::uint64_t> tickets_{0};
    std::atomic<std::size_t> job_parts_{0};
    std::atomic<std::size_t> pending_{0};
    std::function<void(std::size_t)> job_fn_;
    std::exception_ptr error_;
};

} // namespace archetype
