#pragma once
// A pipeline-parallel session over MPI ranks: each rank holds a contiguous
// range of the model's layers (a stage: the model loaded with that
// layer_range, its session keeping the cache or state of those layers only).
// Rank 0 embeds and drives; hidden rows pass rank to rank; the last rank
// applies the output norm and head and sends the logits back to rank 0.
//
//   auto split = distributed::balanced_split(distributed::weight_bytes(file, n_layer), n_ranks);
//   auto model = load_model<E>(path, {.layers = split[rank]});
//   auto stage = session(model, opts);                     // the same opts on every rank
//   distributed::pipeline_session pipe(stage, {.comm = MPI_COMM_WORLD});
//   if (pipe.is_driver()) { pipe.prefill(0, prompt, logits); pipe.decode(0, t, logits); pipe.stop(); }
//   else pipe.serve();                                     // until rank 0 stops the pipeline
//
// On rank 0 it is a session like the others (prefill, decode, remove_sequence,
// copy_sequence, n_past, n_vocab, options: perplexity() runs on it). The
// stage session may be a decoder_session or an rwkv_session: any type with
// run_stage / check_feed / chunk_rows / max_rows (the Stage concept below).
//
// Pipelining: prefill is cut into micro-batches of `micro_batch` rows (0: the
// stages' own chunk), and a batched decode into groups of `micro_batch`
// sequences; rank 0 sends each as soon as its layers are done and goes on with
// the next, so that the stages compute at the same time. Sends are
// non-blocking (MPI_Isend) and each stage's pending transfers are advanced
// between its layers; the next frame's receive is posted before a stage
// computes the current one. Results return by MPI_Irecv posted straight into
// the caller's logits. Rows are cut at the same boundaries as a one-process
// session fed the same calls when micro_batch is 0, so the logits are then
// bitwise those of one process.
//
// Agreement: at construction every rank sends the others its model's layer
// count, width, vocabulary, its layer range and its session's context and
// sequences; a split with a gap or an overlap, or any other difference, is a
// distributed_error on every rank naming the ranks and the values. Every wait
// has a deadline (timeout_s, mpi_link.hpp).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/distributed/mpi_link.hpp" // <mpi.h>, its C API only
#include "archetype/models/layer_range.hpp"
#include "archetype/runtime/session_args.hpp"

namespace archetype::distributed {

/// What a pipeline needs of a stage session (decoder_session, rwkv_session).
template <class S>
concept Stage = requires(S& s, const S& cs, std::span<const stage_rows> g, const std::int32_t* t, const float* xi,
                         float* xo, std::span<const std::int32_t> toks) {
    s.run_stage(g, t, xi, xo, std::size_t{}, std::size_t{}, xo, xo);
    cs.check_feed(seq_id{}, toks);
    { cs.chunk_rows() } -> std::convertible_to<std::size_t>;
    { cs.max_rows() } -> std::convertible_to<std::size_t>;
    { cs.layers() } -> std::convertible_to<layer_range>;
    { cs.n_layer() } -> std::convertible_to<std::size_t>;
    { cs.n_embd() } -> std::convertible_to<std::size_t>;
    { cs.n_vocab() } -> std::convertible_to<std::size_t>;
    { cs.max_sequences() } -> std::convertible_to<std::size_t>;
    { cs.context_limit() } -> std::convertible_to<std::size_t>;
    s.remove_sequence(seq_id{});
    s.copy_sequence(seq_id{}, seq_id{});
    s.on_each_layer(static_cast<void (*)(void*)>(nullptr), static_cast<void*>(nullptr));
};

struct pipeline_options {
    MPI_Comm comm = MPI_COMM_WORLD;
    /// The longest any rank waits for a frame, a result or the start-up exchange.
    double timeout_s = 60.0;
    /// Rows per pass in prefill, sequences per pass in a batched decode; 0 = the
    /// stages' chunk (prefill) and the whole batch (decode): no extra cuts.
    std::size_t micro_batch = 0;
};

/// What one rank sent and did (for the benchmark and the scaling model).
struct pipeline_stats {
    std::uint64_t frames = 0;     ///< forward passes this rank ran
    std::uint64_t rows = 0;       ///< rows those passes carried
    std::uint64_t bytes_sent = 0; ///< bytes this rank sent (frames and results)
};

template <Stage S>
class pipeline_session {
public:
    pipeline_session(S& stage, const pipeline_options& o) : stage_(&stage), opt_(o) {
        if (!(o.timeout_s > 0)) throw argument_error("pipeline timeout must be positive");
        mpi_check(MPI_Comm_set_errhandler(opt_.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        rank_ = comm_rank(opt_.comm);
        size_ = comm_size(opt_.comm);
        agree();
        stage_->on_each_layer(&pipeline_session::progress_hook, this);
    }
    pipeline_session(const pipeline_session&) = delete;
    pipeline_session& operator=(const pipeline_session&) = delete;
    ~pipeline_session() {
        stage_->on_each_layer(nullptr, nullptr);
        // not while an error unwinds: the program is about to end every rank (MPI_Abort),
        // and a broken pipeline would only make stop() wait out its timeout
        if (is_driver() && !stopped_ && std::uncaught_exceptions() == 0) try {
                stop();
            } catch (...) {
            }
    }

    int rank() const noexcept { return rank_; }
    int n_ranks() const noexcept { return size_; }
    bool is_driver() const noexcept { return rank_ == 0; }
    /// The layers each rank holds (index = rank).
    const std::vector<layer_range>& split() const noexcept { return split_; }
    /// Rows of one prefill pass (the least chunk of all stages, or micro_batch).
    std::size_t pass_rows() const noexcept { return pass_rows_; }
    pipeline_stats stats() const noexcept {
        pipeline_stats st = stats_;
        st.bytes_sent = sends_.bytes_sent();
        return st;
    }

    // ---- the session API (rank 0) -------------------------------------------------
    std::size_t n_vocab() const noexcept { return stage_->n_vocab(); }
    auto options() const { return stage_->options(); }
    std::int64_t n_past(seq_id s) const { return stage_->n_past(s); }

    /// As a session's prefill: logits [n x n_vocab] (rows all) or [n_vocab] (last).
    void prefill(seq_id seq, std::span<const std::int32_t> tokens, float* logits, logits_rows rows = logits_rows::all,
                 float* hidden = nullptr) {
        driver_only("prefill");
        stage_->check_feed(seq, tokens); // the whole prompt, before its first pass leaves
        const std::size_t V = n_vocab(), E = stage_->n_embd(), T = tokens.size();
        for (std::size_t b = 0; b < T; b += pass_rows_) {
            const std::size_t n = std::min(pass_rows_, T - b);
            const stage_rows g{seq, n};
            std::size_t out_first = 0, out_n = 0, at = 0;
            if (rows == logits_rows::all) {
                out_n = n;
                at = b;
            } else if (b + n == T) {
                out_first = n - 1;
                out_n = 1;
            }
            pass(std::span(&g, 1), tokens.data() + b, out_first, out_n, logits ? logits + at * V : nullptr,
                 hidden ? hidden + at * E : nullptr);
        }
        collect();
    }

    /// As a session's batched decode: one token per sequence, logits [seqs x n_vocab].
    void decode(std::span<const seq_id> seqs, std::span<const std::int32_t> tokens, float* logits,
                float* hidden = nullptr) {
        driver_only("decode");
        runtime::check_decode_batch(seqs, tokens, stage_->max_sequences(), n_vocab());
        for (std::size_t i = 0; i < seqs.size(); ++i) stage_->check_feed(seqs[i], tokens.subspan(i, 1));
        const std::size_t V = n_vocab(), E = stage_->n_embd();
        const std::size_t per = opt_.micro_batch ? opt_.micro_batch : std::max<std::size_t>(1, seqs.size());
        std::vector<stage_rows> g;
        for (std::size_t b = 0; b < seqs.size(); b += per) {
            const std::size_t k = std::min(per, seqs.size() - b);
            g.clear();
            for (std::size_t i = 0; i < k; ++i) g.push_back({seqs[b + i], 1});
            pass(g, tokens.data() + b, 0, k, logits ? logits + b * V : nullptr, hidden ? hidden + b * E : nullptr);
        }
        collect();
    }
    void decode(seq_id seq, std::int32_t token, float* logits, float* hidden = nullptr) {
        decode(std::span<const seq_id>(&seq, 1), std::span<const std::int32_t>(&token, 1), logits, hidden);
    }

    /// As a session's: on every stage.
    void remove_sequence(seq_id s) {
        driver_only("remove_sequence");
        stage_->remove_sequence(s); // checks s
        command(op::remove_sequence, s, 0);
    }
    void copy_sequence(seq_id src, seq_id dst) {
        driver_only("copy_sequence");
        stage_->copy_sequence(src, dst);
        command(op::copy_sequence, src, dst);
    }

    /// Ends serve() on every other rank (the destructor does it too).
    void stop() {
        driver_only("stop");
        if (stopped_) return;
        stopped_ = true;
        command(op::stop, 0, 0);
        sends_.drain(opt_.timeout_s, rank_);
    }

    // ---- the other ranks ----------------------------------------------------------
    /// Runs the frames rank 0 sends through this rank's layers until it stops the pipeline.
    void serve() {
        if (is_driver()) throw argument_error("serve: rank 0 drives the pipeline; the other ranks serve it");
        const std::size_t E = stage_->n_embd();
        const std::size_t cap = frame_bytes(stage_->max_sequences(), max_pass_rows_, E);
        std::array<std::vector<std::byte>, 2> in{std::vector<std::byte>(cap), std::vector<std::byte>(cap)};
        std::size_t cur = 0;
        post_receive(in[cur]);
        std::uint64_t serial = 0;
        for (;;) {
            const MPI_Status st = wait_for(recv_, opt_.timeout_s, rank_, "frame from rank " + std::to_string(rank_ - 1));
            int count = 0;
            mpi_check(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
            std::vector<std::byte>& frame = in[cur];
            const frame_header h = read_header(frame, std::size_t(count), serial++);
            if (h.what != op::stop) {
                cur ^= 1;
                post_receive(in[cur]); // the next frame may arrive while this one computes
            }
            const bool last = rank_ == size_ - 1;
            switch (h.what) {
            case op::stop:
                if (!last) forward_bytes(frame, std::size_t(count));
                sends_.drain(opt_.timeout_s, rank_);
                return;
            case op::remove_sequence:
                stage_->remove_sequence(h.a);
                if (!last) forward_bytes(frame, std::size_t(count));
                break;
            case op::copy_sequence:
                stage_->copy_sequence(h.a, h.b);
                if (!last) forward_bytes(frame, std::size_t(count));
                break;
            case op::forward: run_frame(h, frame, last); break;
            }
            sends_.progress();
        }
    }

private:
    void driver_only(const char* what) const {
        if (!is_driver())
            throw argument_error(std::string(what) + ": rank " + std::to_string(rank_) +
                                 " serves the pipeline (call serve()); rank 0 drives it");
    }

    /// Every rank's view of the model and its share, checked alike on every rank.
    void agree() {
        constexpr int K = 9;
        const layer_range own = stage_->layers();
        const std::array<std::uint64_t, K> mine{stage_->n_layer(), own.first,       own.count,
                                                stage_->n_embd(),  stage_->n_vocab(), stage_->chunk_rows(),
                                                stage_->max_rows(), stage_->context_limit(), stage_->max_sequences()};
        std::vector<std::uint64_t> all(std::size_t(K) * std::size_t(size_));
        MPI_Request req = MPI_REQUEST_NULL;
        mpi_check(MPI_Iallgather(mine.data(), K, MPI_UINT64_T, all.data(), K, MPI_UINT64_T, opt_.comm, &req),
                  "MPI_Iallgather");
        wait_for(req, opt_.timeout_s, rank_, "start-up exchange with every rank");
        const char* what[K] = {"layers", "", "", "n_embd", "n_vocab", "", "", "n_ctx", "max_sequences"};
        auto at = [&](int r, int k) { return all[std::size_t(r) * K + std::size_t(k)]; };
        auto share = [&](int r) {
            return at(r, 2) == 0 ? std::string("none")
                                 : std::to_string(at(r, 1)) + "-" + std::to_string(at(r, 1) + at(r, 2) - 1);
        };
        std::size_t next = 0;
        pass_rows_ = max_pass_rows_ = ~std::size_t(0);
        for (int r = 0; r < size_; ++r) {
            for (int k : {0, 3, 4, 7, 8})
                if (at(r, k) != at(0, k))
                    throw distributed_error("the ranks disagree on the model: rank 0 has " + std::string(what[k]) + " " +
                                            std::to_string(at(0, k)) + ", rank " + std::to_string(r) + " has " +
                                            std::to_string(at(r, k)));
            if (at(r, 1) != next || at(r, 2) == 0)
                throw distributed_error("the ranks disagree on the layer split: rank " + std::to_string(r) + " holds layers " +
                                        share(r) + " but the layers before it end at " +
                                        (next == 0 ? std::string("none (rank 0 must start at layer 0)")
                                                   : "layer " + std::to_string(next - 1)));
            next += at(r, 2);
            split_.push_back({std::size_t(at(r, 1)), std::size_t(at(r, 2))});
            pass_rows_ = std::min<std::size_t>(pass_rows_, at(r, 5));
            max_pass_rows_ = std::min<std::size_t>(max_pass_rows_, at(r, 6));
        }
        if (next != at(0, 0))
            throw distributed_error("the ranks disagree on the layer split: the last rank ends at layer " +
                                    std::to_string(next - 1) + " but the model has " + std::to_string(at(0, 0)) +
                                    " layers");
        if (opt_.micro_batch) pass_rows_ = std::min(pass_rows_, opt_.micro_batch);
    }

    /// The driver's pass: its own layers, then the frame to rank 1 (results come back
    /// into `logits` / `hidden` through receives posted first).
    void pass(std::span<const stage_rows> groups, const std::int32_t* tokens, std::size_t out_first, std::size_t out_n,
              float* logits, float* hidden) {
        std::size_t n = 0;
        for (const auto& g : groups) n += g.n;
        ++stats_.frames;
        stats_.rows += n;
        if (size_ == 1) {
            stage_->run_stage(groups, tokens, nullptr, nullptr, out_first, out_n, logits, hidden);
            return;
        }
        const std::size_t E = stage_->n_embd(), V = n_vocab();
        frame_header h;
        h.what = op::forward;
        h.serial = serial_++;
        h.n_groups = std::uint32_t(groups.size());
        h.n_rows = std::uint32_t(n);
        h.out_first = std::uint32_t(out_first);
        h.out_n = std::uint32_t(out_n);
        std::uint32_t back = 0;
        if (out_n && logits) {
            back |= std::uint32_t(reply::logits);
            expect(logits, out_n * V);
        }
        if (out_n && hidden) {
            back |= std::uint32_t(reply::hidden);
            expect(hidden, out_n * E);
        }
        h.back = reply(back);
        std::vector<std::byte> frame(frame_bytes(groups.size(), n, E));
        write_head(frame, h, groups);
        float* x = rows_of(frame, groups.size());
        stage_->run_stage(groups, tokens, nullptr, x, 0, 0, nullptr, nullptr);
        sends_.post(std::move(frame), 1, tag_frame, opt_.comm);
        sends_.progress();
    }

    /// A receive of n floats from the last rank straight into dst, in pass order.
    void expect(float* dst, std::size_t n) {
        auto& r = results_.emplace_back();
        r.n = n;
        mpi_check(MPI_Irecv(dst, int(n), MPI_FLOAT, size_ - 1, tag_result, opt_.comm, &r.req), "MPI_Irecv");
    }
    /// Waits for every result of the passes sent so far.
    void collect() {
        while (!results_.empty()) {
            auto& r = results_.front();
            const MPI_Status st =
                wait_for(r.req, opt_.timeout_s, rank_, "logits from rank " + std::to_string(size_ - 1));
            int count = 0;
            mpi_check(MPI_Get_count(&st, MPI_FLOAT, &count), "MPI_Get_count");
            if (std::size_t(count) != r.n)
                throw distributed_error("rank 0 expected " + std::to_string(r.n) + " floats of output from rank " +
                                        std::to_string(size_ - 1) + " but received " + std::to_string(count));
            results_.pop_front();
        }
        sends_.progress();
    }

    void command(op what, seq_id a, seq_id b) {
        if (size_ == 1) return;
        frame_header h;
        h.what = what;
        h.serial = serial_++;
        h.a = a;
        h.b = b;
        std::vector<std::byte> frame(frame_bytes(0, 0, 0));
        write_head(frame, h, {});
        sends_.post(std::move(frame), 1, tag_frame, opt_.comm);
    }

    void post_receive(std::vector<std::byte>& buf) {
        mpi_check(MPI_Irecv(buf.data(), int(buf.size()), MPI_BYTE, rank_ - 1, tag_frame, opt_.comm, &recv_),
                  "MPI_Irecv");
    }

    /// A served forward frame: this rank's layers, then on to the next rank or back to rank 0.
    void run_frame(const frame_header& h, const std::vector<std::byte>& frame, bool last) {
        std::vector<stage_rows> groups(h.n_groups);
        const auto* fg = reinterpret_cast<const frame_group*>(frame.data() + sizeof(frame_header));
        std::size_t n = 0;
        for (std::size_t i = 0; i < groups.size(); ++i) {
            groups[i] = {fg[i].seq, fg[i].n};
            n += fg[i].n;
        }
        if (n != h.n_rows)
            throw distributed_error("frame from rank " + std::to_string(rank_ - 1) + " has groups of " +
                                    std::to_string(n) + " rows in all but says " + std::to_string(h.n_rows));
        const float* x_in = reinterpret_cast<const float*>(frame.data() + sizeof(frame_header) +
                                                           h.n_groups * sizeof(frame_group));
        const std::size_t E = stage_->n_embd(), V = n_vocab();
        ++stats_.frames;
        stats_.rows += h.n_rows;
        if (!last) {
            std::vector<std::byte> out(frame_bytes(h.n_groups, h.n_rows, E));
            std::memcpy(out.data(), frame.data(), sizeof(frame_header) + h.n_groups * sizeof(frame_group));
            stage_->run_stage(groups, nullptr, x_in, rows_of(out, h.n_groups), 0, 0, nullptr, nullptr);
            sends_.post(std::move(out), rank_ + 1, tag_frame, opt_.comm);
            return;
        }
        const bool want_logits = (std::uint32_t(h.back) & std::uint32_t(reply::logits)) != 0;
        const bool want_hidden = (std::uint32_t(h.back) & std::uint32_t(reply::hidden)) != 0;
        std::vector<std::byte> lg(want_logits ? h.out_n * V * sizeof(float) : 0);
        std::vector<std::byte> hd(want_hidden ? h.out_n * E * sizeof(float) : 0);
        stage_->run_stage(groups, nullptr, x_in, nullptr, h.out_first, h.out_n,
                          want_logits ? reinterpret_cast<float*>(lg.data()) : nullptr,
                          want_hidden ? reinterpret_cast<float*>(hd.data()) : nullptr);
        if (want_logits) sends_.post(std::move(lg), 0, tag_result, opt_.comm);
        if (want_hidden) sends_.post(std::move(hd), 0, tag_result, opt_.comm);
    }

    void forward_bytes(const std::vector<std::byte>& frame, std::size_t count) {
        sends_.post(std::vector<std::byte>(frame.begin(), frame.begin() + std::ptrdiff_t(count)), rank_ + 1, tag_frame,
                    opt_.comm);
    }

    /// The header of a received frame, checked against its size and the expected order.
    frame_header read_header(const std::vector<std::byte>& frame, std::size_t count, std::uint64_t serial) const {
        const std::string from = "frame from rank " + std::to_string(rank_ - 1);
        if (count < sizeof(frame_header))
            throw distributed_error(from + " has " + std::to_string(count) + " bytes, less than its header");
        frame_header h;
        std::memcpy(&h, frame.data(), sizeof h);
        if (h.magic != frame_header::magic_value) throw distributed_error(from + " has a bad magic number");
        if (h.serial != serial)
            throw distributed_error(from + " is number " + std::to_string(h.serial) + ", expected " + std::to_string(serial));
        const std::size_t E = h.what == op::forward ? stage_->n_embd() : 0;
        if (h.n_groups > stage_->max_sequences() || h.n_rows > max_pass_rows_ ||
            count != frame_bytes(h.n_groups, h.n_rows, E) || h.out_first + std::size_t(h.out_n) > h.n_rows)
            throw distributed_error(from + " is malformed (" + std::to_string(h.n_groups) + " groups, " +
                                    std::to_string(h.n_rows) + " rows, " + std::to_string(count) + " bytes)");
        return h;
    }
    static void write_head(std::vector<std::byte>& frame, const frame_header& h, std::span<const stage_rows> groups) {
        std::memcpy(frame.data(), &h, sizeof h);
        auto* fg = reinterpret_cast<frame_group*>(frame.data() + sizeof(frame_header));
        for (std::size_t i = 0; i < groups.size(); ++i) fg[i] = {groups[i].seq, std::uint32_t(groups[i].n)};
    }
    static float* rows_of(std::vector<std::byte>& frame, std::size_t n_groups) {
        return reinterpret_cast<float*>(frame.data() + sizeof(frame_header) + n_groups * sizeof(frame_group));
    }

    /// Between layers: lets MPI move the pending frames while this rank computes.
    static void progress_hook(void* self) {
        auto* p = static_cast<pipeline_session*>(self);
        p->sends_.progress();
        if (p->recv_ != MPI_REQUEST_NULL) {
            int flag = 0;
            MPI_Request_get_status(p->recv_, &flag, MPI_STATUS_IGNORE); // advances progress, keeps the request
        }
    }

    struct pending_result {
        std::size_t n = 0;
        MPI_Request req = MPI_REQUEST_NULL;
    };

    S* stage_;
    pipeline_options opt_;
    int rank_ = 0, size_ = 1;
    std::vector<layer_range> split_;
    std::size_t pass_rows_ = 0, max_pass_rows_ = 0;
    std::uint64_t serial_ = 0;
    bool stopped_ = false;
    send_queue sends_;
    std::deque<pending_result> results_;
    MPI_Request recv_ = MPI_REQUEST_NULL;
    pipeline_stats stats_;
};

} // namespace archetype::distributed
