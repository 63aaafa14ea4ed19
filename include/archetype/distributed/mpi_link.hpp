#pragma once
// The MPI plumbing of a pipeline (distributed/pipeline.hpp): how a rank waits,
// and the frames that pass from stage to stage.
//
// How ranks wait: never in a blocking MPI call and never spinning. A wait tests
// its request (MPI_Test drives Open MPI's progress engine), yielding the core
// between tests (sched_yield: a rank that computes on the same core runs
// instead) 200 times, then sleeps between tests, 5 µs doubling to 50 µs (Linux
// rounds a sleep up to its 50 µs timer slack): a rank with nothing to do leaves
// its core to the rank that computes (three ranks on two cores). The yields
// come first because a transfer in flight needs both ranks to test: without
// the single-copy mechanism, 196 KB of logits cross shared memory in fragments,
// each one a test on both sides (SmolLM2 decode over 2 ranks: 87-89 tok/s with
// 20 yields and 200 µs sleeps, 88-93 with these; one rank: 108). Every wait has a
// deadline: past it the wait throws distributed_error naming the rank, what it
// waited for and for how long; the program then ends every rank with
// MPI_Abort (never a hang when a rank dies or stops).
// the C API only: Open MPI's and MPICH's deprecated C++ bindings stay out (they
// warn under -Wextra and slow every translation unit that includes us)
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <sched.h>
#include <string>
#include <thread>
#include <vector>

#include "archetype/core/error.hpp"

namespace archetype::distributed {

/// A pipeline could not go on: a rank stopped answering (timeout), the ranks
/// disagree on the model or the split, a frame is malformed, or MPI failed.
struct distributed_error : error {
    using error::error;
};

/// Throws distributed_error when an MPI call did not return MPI_SUCCESS (the
/// pipeline's communicator returns errors instead of aborting).
inline void mpi_check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw distributed_error(std::string(what) + " failed: " + std::string(msg, std::size_t(len)));
}

inline int comm_rank(MPI_Comm c) {
    int r = 0;
    mpi_check(MPI_Comm_rank(c, &r), "MPI_Comm_rank");
    return r;
}
inline int comm_size(MPI_Comm c) {
    int n = 0;
    mpi_check(MPI_Comm_size(c, &n), "MPI_Comm_size");
    return n;
}

/// Waits for one request with the backoff above; distributed_error after timeout_s.
inline MPI_Status wait_for(MPI_Request& req, double timeout_s, int rank, const std::string& what) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s);
    MPI_Status st{};
    int yields = 0;
    long sleep_us = 5;
    for (;;) {
        int done = 0;
        mpi_check(MPI_Test(&req, &done, &st), "MPI_Test");
        if (done) return st;
        if (clock::now() > deadline)
            throw distributed_error("rank " + std::to_string(rank) + ": no " + what + " within " +
                                    std::to_string(int(timeout_s)) +
                                    " s (a rank died or stopped answering; the limit is pipeline_options::timeout_s, "
                                    "archetype's --pipeline-timeout)");
        if (yields < 200) {
            ++yields;
            sched_yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
            sleep_us = std::min(sleep_us * 2, 50L);
        }
    }
}

/// Message tags of a pipeline.
enum tag : int {
    tag_frame = 71,  ///< stage r -> r + 1: a pass (or a command) and its rows
    tag_result = 72, ///< last stage -> rank 0: the logits / hidden rows of a pass
};

/// What a frame asks of the stages.
enum class op : std::uint32_t { forward = 1, remove_sequence = 2, copy_sequence = 3, stop = 4 };
/// What the last stage sends back of a forward pass's output rows.
enum class reply : std::uint32_t { none = 0, logits = 1, hidden = 2 };

/// The fixed head of every frame; the groups (seq, n) and then n_rows x n_embd floats follow.
struct frame_header {
    static constexpr std::uint32_t magic_value = 0x31465041; // "APF1"
    std::uint32_t magic = magic_value;
    op what = op::forward;
    std::uint64_t serial = 0; ///< frames the driver sent before this one (each stage checks the order)
    std::uint32_t n_groups = 0, n_rows = 0;
    std::uint32_t out_first = 0, out_n = 0; ///< the rows whose output returns to rank 0
    reply back = reply::none;
    std::int32_t a = 0, b = 0; ///< the sequences of remove_sequence (a) / copy_sequence (a -> b)
};
struct frame_group {
    std::int32_t seq = 0;
    std::uint32_t n = 0;
};

/// Bytes of a frame of g groups and r rows of width E.
constexpr std::size_t frame_bytes(std::size_t g, std::size_t r, std::size_t E) noexcept {
    return sizeof(frame_header) + g * sizeof(frame_group) + r * E * sizeof(float);
}

/// Sends that complete in the background: each keeps its buffer until MPI is done
/// with it; progress() reclaims the finished ones (called between layers).
class send_queue {
public:
    void post(std::vector<std::byte> bytes, int dest, int tag, MPI_Comm comm) {
        auto& s = pending_.emplace_back();
        s.bytes = std::move(bytes);
        mpi_check(MPI_Isend(s.bytes.data(), int(s.bytes.size()), MPI_BYTE, dest, tag, comm, &s.req), "MPI_Isend");
        bytes_sent_ += s.bytes.size();
    }
    /// Advances MPI and drops the sends that completed (in order).
    void progress() {
        while (!pending_.empty()) {
            int done = 0;
            mpi_check(MPI_Test(&pending_.front().req, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (!done) return;
            pending_.pop_front();
        }
    }
    /// Waits until every send has completed.
    void drain(double timeout_s, int rank) {
        while (!pending_.empty()) {
            wait_for(pending_.front().req, timeout_s, rank, "acknowledgement of a sent frame");
            pending_.pop_front();
        }
    }
    bool empty() const noexcept { return pending_.empty(); }
    std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }

private:
    struct pending {
        std::vector<std::byte> bytes;
        MPI_Request req = MPI_REQUEST_NULL;
    };
    std::deque<pending> pending_;
    std::uint64_t bytes_sent_ = 0;
};

} // namespace archetype::distributed
