// archetype serve --model FILE|DIR [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N]
//                 [--threads N] [--api-key K] [--pooling last|mean] [--queue N] ...
// An OpenAI-compatible HTTP server (cpp-httplib, nlohmann-json) over the serving scheduler
// (runtime/serving/scheduler.hpp): the decoder's session holds --parallel sequences of
// --ctx positions each (per sequence: llama-server's -c is the total split over -np), and
// requests join and leave its batch between passes. docs/serving.md has the routes, flags,
// limits and metrics.
//
// Threads: cpp-httplib 0.11 serves each connection on a worker of a fixed pool, and a
// streaming response holds its worker for its whole life, so the pool has
// parallel + queue + 4 workers (the running and queued streams, /health and /metrics
// beside them). Admission is decided here from the scheduler's counts: past
// parallel + queue requests, 503. SIGTERM and SIGINT are taken by a sigwait thread (every
// other thread blocks them): new requests get 503, the running and queued ones may finish
// for --grace seconds, the rest end with a final chunk (finish_reason "stop") and
// data: [DONE]; then the listener closes and the program exits 0.
#include <signal.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <httplib.h>

#include "archetype/core/error.hpp"
#include "archetype/models/architectures.hpp"
#include "archetype/runtime/chat_tokens.hpp"
#include "archetype/runtime/serving/encoder_engine.hpp"
#include "archetype/runtime/serving/text_stream.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "commands.hpp"
#include "decoder_jobs.hpp"
#include "model_file.hpp"
#include "serve_openai.hpp"

namespace archetype::tools {

namespace {
namespace oa = openai;
using json = nlohmann::json;

constexpr const char* serve_usage =
    "usage: archetype serve --model FILE|DIR [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N]\n"
    "                       [--threads N] [--api-key K] [--pooling last|mean] [--queue N]\n"
    "                       [--max-body BYTES] [--prefix-cache MIB] [--grace S] [--kv f32|f16] [--chunk N]\n"
    "                       [--prefill-per-pass N] [--chat-template NAME] [--alias NAME]\n"
    "  --host H          address to bind (default 127.0.0.1: this machine only)\n"
    "  --port P          default 8080 (0: any free port, printed on stderr)\n"
    "  --parallel N      sequences decoded together (default 4)\n"
    "  --ctx N           positions of each sequence (default: min(4096, the file's); llama-server's -c\n"
    "                    is the total over its -np sequences, this is per sequence)\n"
    "  --threads N       compute threads (default: the number of cores)\n"
    "  --api-key K       every route but /health requires 'Authorization: Bearer K'\n"
    "  --pooling P       /v1/embeddings of a decoder: the last token's final-norm row, or the\n"
    "                    mean of all (default last); L2-normalised either way. An encoder file\n"
    "                    (bert, nomic-bert, modern-bert) serves /v1/embeddings only, pooled as\n"
    "                    the file says (mean where it says none), L2-normalised\n"
    "  --queue N         requests waiting for a sequence before 503 (default 16)\n"
    "  --max-body B      largest request body in bytes (default 1048576)\n"
    "  --prefix-cache M  MiB of prompt-prefix snapshots kept for reuse (default 256, 0: none)\n"
    "  --grace S         on SIGTERM, seconds running requests may take to finish (default 10)\n"
    "  --kv f32|f16      KV cache elements (default f32)\n"
    "  --chunk N         prompt tokens per prefill pass, between decode steps (default 256): smaller\n"
    "                    keeps the running streams' inter-token latency down, larger reads prompts faster\n"
    "  --prefill-per-pass N  prompt tokens read per pass, in whole chunks, before the running\n"
    "                    streams' next decode step (default 65536: a burst of prompts in one pass;\n"
    "                    0: one chunk per pass, better when prompts keep arriving)\n"
    "  --chat-template NAME  chatml|gemma|llama3|phi3|mistral instead of the file's template\n"
    "  --alias NAME      the model id of the API (default: the file's name)\n";

struct serve_args {
    std::string model, host = "127.0.0.1", api_key, chat_template, alias;
    int port = 8080;
    std::size_t parallel = 4, ctx = 0, queue = 16, max_body = 1 << 20, prefix_mib = 256, grace_s = 10, chunk = 0,
                prefill_per_pass = 65536;
    std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
    serving::pooling pool = serving::pooling::last;
    kv_cache_type kv = kv_cache_type::f32;
};

/// Compares in time that depends on the lengths only, not on where the texts differ.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    const std::size_t n = std::max(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i)
        diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

std::size_t resident_bytes() {
    std::ifstream f("/proc/self/statm");
    std::size_t pages = 0, rss = 0;
    f >> pages >> rss;
    return rss * std::size_t(sysconf(_SC_PAGESIZE));
}

std::int64_t unix_time() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A request's results on their way from the scheduler's thread to its HTTP worker:
/// server-sent-event frames (streaming), or the whole text and the final counts.
struct channel {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::string> frames;
    std::string text;
    std::vector<float> embedding;
    serving::finish_reason why = serving::finish_reason::none;
    std::string error;
    std::size_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
    bool done = false;
};

std::string finish_name(serving::finish_reason r) {
    // OpenAI's reasons: a request cut short by shutdown or cancel ends as "stop"
    return r == serving::finish_reason::length ? "length" : "stop";
}

json usage_of(const channel& c) {
    return {{"prompt_tokens", c.prompt_tokens},
            {"completion_tokens", c.completion_tokens},
            {"total_tokens", c.prompt_tokens + c.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", c.cached_tokens}}}};
}

class server {
public:
    server(serving::scheduler_interface& sched, const tokenizer::tokenizer& tok, chat::chat_template tp,
           const serve_args& a, std::string model_id)
        : sched_(sched), tok_(tok), tp_(std::move(tp)), a_(a), model_(std::move(model_id)),
          chat_stop_(chat::stop_tokens(tok, tp_)) {
        if (tok.eos_id() >= 0) eos_.push_back(tok.eos_id());
        seed_ = std::random_device{}();
    }

    int run() {
        httplib::Server svr;
        const std::size_t workers = a_.parallel + a_.queue + 4;
        svr.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
        svr.set_payload_max_length(a_.max_body);
        svr.set_keep_alive_timeout(2);
        // SO_REUSEADDR alone: a restarted server binds over its predecessor's TIME_WAIT
        // connections (cpp-httplib 0.11's default, SO_REUSEPORT, fails there and would let
        // a second server share the port)
        svr.set_socket_options([](socket_t sock) {
            const int yes = 1;
            setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        });
        svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            if (a_.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
            const std::string auth = req.get_header_value("Authorization");
            const std::string_view bearer = "Bearer ";
            if (auth.size() > bearer.size() && auth.compare(0, bearer.size(), bearer) == 0 &&
                same_secret(std::string_view(auth).substr(bearer.size()), a_.api_key))
                return httplib::Server::HandlerResponse::Unhandled;
            reply_error(res, {401, "missing or wrong API key (send 'Authorization: Bearer KEY')", "invalid_request_error",
                              {}, "invalid_api_key"});
            return httplib::Server::HandlerResponse::Handled;
        });
        svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
            if (!res.body.empty()) return;
            const int s = res.status;
            const std::string msg = s == 404 ? "no such route" : s == 413 ? "the request body is over the server's limit (--max-body)" :
                                    s == 405 ? "method not allowed" : "bad request";
            res.set_content(oa::dump(oa::error_body({s, msg, s >= 500 ? "server_error" : "invalid_request_error", {}, {}})),
                            "application/json");
        });
        svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string msg = "internal error";
            try {
                if (ep) std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                msg = e.what();
            } catch (...) {
            }
            res.status = 500;
            res.set_content(oa::dump(oa::error_body({500, msg, "server_error", {}, {}})), "application/json");
        });
        svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
            res.set_content(draining_ ? R"({"status":"shutting down"})" : R"({"status":"ok"})", "application/json");
            if (draining_) res.status = 503;
        });
        svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
            const json m = {{"object", "list"},
                            {"data", json::array({{{"id", model_},
                                                   {"object", "model"},
                                                   {"created", started_},
                                                   {"owned_by", "archetype"}}})}};
            res.set_content(oa::dump(m), "application/json");
        });
        svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
            res.set_content(metrics(), "text/plain; version=0.0.4");
        });
        svr.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& r) { guarded(q, r, &server::chat); });
        svr.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { guarded(q, r, &server::completion); });
        svr.Post("/v1/embeddings", [this](const httplib::Request& q, httplib::Response& r) { guarded(q, r, &server::embeddings); });

        if (a_.port == 0) {
            const int p = svr.bind_to_any_port(a_.host);
            if (p < 0) throw io_error("archetype serve: cannot bind " + a_.host);
            port_ = p;
        } else {
            if (!svr.bind_to_port(a_.host, a_.port)) throw io_error("cannot bind " + a_.host + ":" + std::to_string(a_.port));
            port_ = a_.port;
        }
        std::fprintf(stderr, "archetype serve: %s on http://%s:%d (%zu sequences of %zu positions, queue %zu, %zu threads)\n",
                     model_.c_str(), a_.host.c_str(), port_, a_.parallel, sched_.context_limit(), a_.queue, a_.threads);
        std::fflush(stderr);
        // the signal thread: the first SIGTERM / SIGINT drains and stops the server
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        std::atomic<bool> listening_over{false};
        std::thread signals([&] {
            int sig = 0;
            sigwait(&set, &sig);
            if (listening_over) return;
            std::fprintf(stderr, "archetype serve: signal %d: draining (at most %zu s)\n", sig, a_.grace_s);
            draining_ = true; // new requests get 503 from here on
            sched_.stop(std::chrono::seconds(a_.grace_s)); // every request has its final event after this
            // the streams' last frames on their way out (cpp-httplib's stop() would cut them)
            for (int i = 0; i < 200 && open_streams_ > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            svr.stop();
        });
        const bool ok = svr.listen_after_bind();
        listening_over = true;
        if (!draining_) pthread_kill(signals.native_handle(), SIGTERM); // wake it to end
        signals.join();
        sched_.stop(std::chrono::milliseconds(0));
        std::fprintf(stderr, "archetype serve: stopped\n");
        return ok || draining_ ? 0 : 1;
    }

private:
    using route = void (server::*)(const httplib::Request&, httplib::Response&);

    /// Runs a route with its refusals as OpenAI error objects; nothing escapes.
    void guarded(const httplib::Request& req, httplib::Response& res, route r) {
        try {
            (this->*r)(req, res);
        } catch (const oa::api_error& e) {
            reply_error(res, e);
        } catch (const capacity_error& e) {
            ++rejected_;
            reply_error(res, {503, e.what(), "server_error", {}, "overloaded"});
        } catch (const argument_error& e) {
            reply_error(res, oa::bad(e.what()));
        } catch (const std::exception& e) {
            reply_error(res, {500, e.what(), "server_error", {}, {}});
        }
    }
    static void reply_error(httplib::Response& res, const oa::api_error& e) {
        res.status = e.status;
        res.set_content(oa::dump(oa::error_body(e)), "application/json");
    }

    /// 503 when the running and queued requests fill the sequences and the queue.
    void admit() {
        if (draining_) throw capacity_error("the server is shutting down");
        const auto c = sched_.counts();
        if (c.active + c.queued >= c.max_active + c.max_queued)
            throw capacity_error("the server is busy: " + std::to_string(c.active) + " requests running and " +
                                 std::to_string(c.queued) + " queued (--parallel " + std::to_string(c.max_active) +
                                 ", --queue " + std::to_string(c.max_queued) + "); retry later");
    }

    std::uint64_t next_seed() { return seed_ + counter_++; }

    void chat(const httplib::Request& req, httplib::Response& res) {
        const json j = oa::parse_body(req.body);
        std::vector<chat::message> msgs;
        const auto p = oa::chat_fields(j, msgs, model_, sched_.context_limit(), next_seed());
        std::vector<std::int32_t> prompt;
        try {
            prompt = chat::prompt_tokens(tok_, tp_, msgs, chat::options_for(tok_));
        } catch (const error& e) {
            throw oa::bad(std::string("the conversation cannot be rendered with the ") + std::string(tp_.name()) +
                              " template: " + e.what(),
                          "messages");
        }
        generate(res, std::move(prompt), p, chat_stop_, true);
    }

    void completion(const httplib::Request& req, httplib::Response& res) {
        const json j = oa::parse_body(req.body);
        std::string text;
        std::vector<std::int32_t> ids;
        const auto p = oa::text_completion_fields(j, text, ids, model_, sched_.context_limit(), next_seed());
        if (ids.empty()) ids = tok_.encode(text, true);
        generate(res, std::move(ids), p, eos_, false);
    }

    /// Submits a completion and answers it: server-sent events, or one JSON object.
    void generate(httplib::Response& res, std::vector<std::int32_t> prompt, const oa::completion_params& p,
                  const std::vector<std::int32_t>& stops, bool is_chat) {
        if (prompt.empty()) throw oa::bad("the prompt encodes to no tokens", is_chat ? "messages" : "prompt");
        if (prompt.size() > sched_.context_limit())
            throw oa::bad("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                              std::to_string(sched_.context_limit()) + " tokens per sequence (--ctx)",
                          is_chat ? "messages" : "prompt");
        admit();
        const std::string id = (is_chat ? "chatcmpl-" : "cmpl-") + std::to_string(++ids_);
        const std::int64_t created = unix_time();
        auto ch = std::make_shared<channel>();
        const std::string model = model_;
        const bool stream = p.stream, usage = p.include_usage;
        // one frame of a stream: a chat delta or a completion's text
        auto frame = [id, created, model, is_chat](const std::string& text, const char* finish, bool role) {
            json choice = {{"index", 0}, {"finish_reason", finish ? json(finish) : json(nullptr)}, {"logprobs", nullptr}};
            if (is_chat) {
                json delta = json::object();
                if (role) delta["role"] = "assistant";
                if (role || !text.empty()) delta["content"] = text;
                choice["delta"] = delta;
            } else
                choice["text"] = text;
            const json c = {{"id", id},
                            {"object", is_chat ? "chat.completion.chunk" : "text_completion"},
                            {"created", created},
                            {"model", model},
                            {"choices", json::array({choice})}};
            return "data: " + oa::dump(c) + "\n\n";
        };
        serving::request r;
        r.prompt = std::move(prompt);
        r.sampling = p.sampling;
        r.max_tokens = p.max_tokens ? p.max_tokens : sched_.context_limit();
        if (!p.ignore_eos) r.stop_tokens = stops;
        r.stop = p.stop;
        r.on_event = [ch, stream, usage, frame, id, created, model, is_chat](const serving::event& e) {
            std::lock_guard lk(ch->mu);
            ch->prompt_tokens = e.prompt_tokens;
            ch->completion_tokens = e.completion_tokens;
            ch->cached_tokens = e.cached_tokens;
            if (stream) {
                if (!e.text.empty()) ch->frames.push_back(frame(std::string(e.text), nullptr, false));
                if (e.finished != serving::finish_reason::none) {
                    if (e.finished == serving::finish_reason::error) {
                        ch->frames.push_back("data: " + oa::dump(oa::error_body({500, std::string(e.error), "server_error", {}, {}})) + "\n\n");
                    } else {
                        ch->frames.push_back(frame("", finish_name(e.finished).c_str(), false));
                        if (usage) {
                            const json u = {{"id", id}, {"object", is_chat ? "chat.completion.chunk" : "text_completion"},
                                            {"created", created}, {"model", model}, {"choices", json::array()},
                                            {"usage", usage_of(*ch)}};
                            ch->frames.push_back("data: " + oa::dump(u) + "\n\n");
                        }
                    }
                    ch->frames.push_back("data: [DONE]\n\n");
                }
            } else
                ch->text += e.text;
            if (e.finished != serving::finish_reason::none) {
                ch->why = e.finished;
                ch->error = e.error;
                ch->done = true;
            }
            ch->cv.notify_all();
        };
        if (stream) ch->frames.push_back(frame("", nullptr, is_chat)); // the role first, as OpenAI sends it
        const auto tk = sched_.submit(std::move(r));
        if (stream) {
            ++open_streams_;
            res.set_header("Cache-Control", "no-cache");
            // exactly text/event-stream: cpp-httplib 0.11 would gzip other text/* types
            res.set_chunked_content_provider(
                "text/event-stream",
                [ch, tk](std::size_t, httplib::DataSink& sink) {
                    std::unique_lock lk(ch->mu);
                    ch->cv.wait_for(lk, std::chrono::milliseconds(50), [&] { return !ch->frames.empty() || ch->done; });
                    while (!ch->frames.empty()) {
                        const std::string f = std::move(ch->frames.front());
                        ch->frames.pop_front();
                        lk.unlock();
                        if (!sink.write(f.data(), f.size())) { // the client went away: free its sequence
                            tk->cancel();
                            return false;
                        }
                        lk.lock();
                    }
                    if (ch->done) {
                        lk.unlock();
                        sink.done();
                        return true;
                    }
                    lk.unlock();
                    if (!sink.is_writable()) {
                        tk->cancel();
                        return false;
                    }
                    return true;
                },
                [this, tk](bool success) {
                    if (!success) tk->cancel();
                    --open_streams_;
                });
            return;
        }
        std::unique_lock lk(ch->mu);
        ch->cv.wait(lk, [&] { return ch->done; });
        if (ch->why == serving::finish_reason::error) throw std::runtime_error(ch->error);
        json choice = {{"index", 0}, {"finish_reason", finish_name(ch->why)}, {"logprobs", nullptr}};
        if (is_chat) choice["message"] = {{"role", "assistant"}, {"content", ch->text}};
        else choice["text"] = ch->text;
        const json out = {{"id", id},
                          {"object", is_chat ? "chat.completion" : "text_completion"},
                          {"created", created},
                          {"model", model_},
                          {"choices", json::array({choice})},
                          {"usage", usage_of(*ch)}};
        res.set_content(oa::dump(out), "application/json");
    }

    void embeddings(const httplib::Request& req, httplib::Response& res) {
        const json j = oa::parse_body(req.body);
        auto e = oa::embedding_fields(j, model_, 256);
        std::vector<std::vector<std::int32_t>> inputs = std::move(e.ids);
        for (const auto& t : e.texts) inputs.push_back(tok_.encode(t, true));
        for (const auto& in : inputs) {
            if (in.empty()) throw oa::bad("an input encodes to no tokens", "input");
            if (in.size() > sched_.context_limit())
                throw oa::bad("an input has " + std::to_string(in.size()) + " tokens, more than the context of " +
                                  std::to_string(sched_.context_limit()) + " tokens per sequence (--ctx)",
                              "input");
        }
        admit();
        std::vector<std::shared_ptr<channel>> chs;
        for (auto& in : inputs) {
            auto ch = std::make_shared<channel>();
            serving::request r;
            r.prompt = std::move(in);
            r.embedding = true;
            r.pool = a_.pool;
            r.on_event = [ch](const serving::event& ev) {
                std::lock_guard lk(ch->mu);
                ch->prompt_tokens = ev.prompt_tokens;
                if (ev.finished == serving::finish_reason::none) return;
                ch->embedding.assign(ev.embedding.begin(), ev.embedding.end());
                ch->why = ev.finished;
                ch->error = ev.error;
                ch->done = true;
                ch->cv.notify_all();
            };
            sched_.submit(std::move(r));
            chs.push_back(ch);
        }
        json data = json::array();
        std::size_t tokens = 0;
        for (std::size_t i = 0; i < chs.size(); ++i) {
            auto& ch = *chs[i];
            std::unique_lock lk(ch.mu);
            ch.cv.wait(lk, [&] { return ch.done; });
            if (ch.why != serving::finish_reason::stop)
                throw std::runtime_error(ch.error.empty() ? "the embedding request was cancelled" : ch.error);
            tokens += ch.prompt_tokens;
            json item = {{"object", "embedding"}, {"index", i}};
            if (e.base64) item["embedding"] = oa::base64(ch.embedding.data(), ch.embedding.size() * sizeof(float));
            else item["embedding"] = ch.embedding;
            data.push_back(std::move(item));
        }
        const json out = {{"object", "list"},
                          {"data", std::move(data)},
                          {"model", model_},
                          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
        res.set_content(oa::dump(out), "application/json");
    }

    std::string metrics() const {
        const auto c = sched_.counts();
        std::string m;
        auto put = [&](const char* name, const char* type, const char* help, double v) {
            char line[64];
            std::snprintf(line, sizeof line, "%.17g", v);
            m += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + line + "\n";
        };
        put("archetype_requests_total", "counter", "Requests finished (any reason).", double(c.requests_total));
        put("archetype_requests_failed_total", "counter", "Requests that ended in an error.", double(c.requests_failed));
        put("archetype_requests_rejected_total", "counter", "Requests answered 503 (queue full or shutting down).",
            double(rejected_.load()));
        put("archetype_prompt_tokens_total", "counter", "Prompt tokens computed.", double(c.prompt_tokens_total));
        put("archetype_prompt_tokens_cached_total", "counter", "Prompt tokens restored from the prefix cache.",
            double(c.cached_tokens_total));
        put("archetype_generated_tokens_total", "counter", "Tokens generated.", double(c.generated_tokens_total));
        put("archetype_generated_tokens_per_second", "gauge", "Tokens generated per second over the last seconds.",
            c.generated_tokens_per_second);
        put("archetype_active_sequences", "gauge", "Requests holding a sequence.", double(c.active));
        put("archetype_queued_requests", "gauge", "Requests waiting for a sequence.", double(c.queued));
        put("archetype_max_sequences", "gauge", "Sequences of the session (--parallel).", double(c.max_active));
        put("archetype_kv_cache_bytes", "gauge", "KV cache memory allocated.", double(c.kv_bytes));
        put("archetype_prefix_cache_bytes", "gauge", "Prefix-cache snapshots held.", double(c.prefix_cache_bytes));
        put("archetype_resident_memory_bytes", "gauge", "Resident memory of the process.", double(resident_bytes()));
        return m;
    }

    serving::scheduler_interface& sched_;
    const tokenizer::tokenizer& tok_;
    chat::chat_template tp_;
    serve_args a_;
    std::string model_;
    std::vector<std::int32_t> chat_stop_, eos_;
    std::uint64_t seed_ = 0;
    std::atomic<std::uint64_t> counter_{0}, ids_{0}, rejected_{0};
    std::atomic<bool> draining_{false};
    std::atomic<int> open_streams_{0}; // streaming responses not yet released
    std::int64_t started_ = unix_time();
    int port_ = 0;
};

} // namespace

int cmd_serve(int argc, char** argv) {
    serve_args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o == "--help" || o == "-h") {
            std::printf("%s", serve_usage);
            return 0;
        }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(o) + "' needs a value");
        const std::string_view v = argv[++i];
        if (o == "--model") a.model = v;
        else if (o == "--host") a.host = v;
        else if (o == "--port") a.port = parse_number<int>(o, v, 0, 65535);
        else if (o == "--parallel") a.parallel = parse_number<std::size_t>(o, v, 1, 256);
        else if (o == "--ctx") a.ctx = parse_number<std::size_t>(o, v, 1, std::size_t(1) << 24);
        else if (o == "--threads") a.threads = parse_number<std::size_t>(o, v, 1, 1024);
        else if (o == "--api-key") a.api_key = v;
        else if (o == "--queue") a.queue = parse_number<std::size_t>(o, v, 0, 4096);
        else if (o == "--max-body") a.max_body = parse_number<std::size_t>(o, v, 1024, std::size_t(1) << 30);
        else if (o == "--prefix-cache") a.prefix_mib = parse_number<std::size_t>(o, v, 0, std::size_t(1) << 20);
        else if (o == "--grace") a.grace_s = parse_number<std::size_t>(o, v, 0, 3600);
        else if (o == "--alias") a.alias = v;
        else if (o == "--chunk") a.chunk = parse_number<std::size_t>(o, v, 1, 4096);
        else if (o == "--prefill-per-pass") a.prefill_per_pass = parse_number<std::size_t>(o, v, 0, 1 << 20);
        else if (o == "--chat-template") {
            a.chat_template = v;
            (void)chat::named(a.chat_template);
        } else if (o == "--pooling") {
            if (v == "last") a.pool = serving::pooling::last;
            else if (v == "mean") a.pool = serving::pooling::mean;
            else throw argument_error("--pooling '" + std::string(v) + "' is not last or mean");
        } else if (o == "--kv") {
            if (v == "f32") a.kv = kv_cache_type::f32;
            else if (v == "f16") a.kv = kv_cache_type::f16;
            else throw argument_error("--kv '" + std::string(v) + "' is not f32 or f16");
        } else throw argument_error("unknown option '" + std::string(o) + "' (try --help)");
    }
    if (a.model.empty()) throw argument_error("--model FILE is required");
    if (a.api_key.empty())
        if (const char* k = std::getenv("ARCHETYPE_API_KEY")) a.api_key = k;

    // every thread made from here on (the scheduler's, the HTTP workers, the compute
    // pool) inherits this mask: only the sigwait thread takes SIGTERM / SIGINT
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN); // a client gone mid-write is an error return, not a signal

    auto file = open_model_file(a.model);
    const bool encoder = takes_file(file, encoder_architectures{});
    if (!encoder && !is_registered_decoder(file))
        throw argument_error("architecture '" + std::string(file.architecture()) +
                             "' is neither a registered decoder nor an encoder (" +
                             architecture_names(encoder_architectures{}) +
                             "); archetype describe --model FILE names the known ones");
    const auto tok = open_model_tokenizer(a.model, file);
    std::string id = a.alias;
    if (id.empty()) id = std::filesystem::path(a.model).filename().string();
    if (id.empty()) id = std::filesystem::path(a.model).parent_path().filename().string();
    if (encoder) // /v1/embeddings only (runtime/serving/encoder_engine.hpp); chat and completions get a 400
        return with_architecture<encoder_architectures>(file, [&]<class E>(std::type_identity<E>) {
            const auto model = load_model<E>(std::move(file));
            serving::encoder_engine<typename E::model> engine(model, {.n_threads = a.threads, .max_queued = a.queue});
            return server(engine, *tok, chat::named("chatml"), a, id).run();
        });
    std::string note;
    auto tp = chat_template_for(file, a.chat_template, note);
    if (!note.empty()) std::fprintf(stderr, "archetype serve: %s\n", note.c_str());

    decoder_serve_job sj;
    sj.threads = a.threads;
    sj.parallel = a.parallel;
    sj.n_ctx = a.ctx;
    sj.max_queued = a.queue;
    sj.prefix_cache_bytes = a.prefix_mib << 20;
    sj.kv = a.kv;
    sj.chunk_tokens = a.chunk;
    sj.prefill_tokens_per_pass = a.prefill_per_pass;
    sj.tok = tok.get();
    sj.run = [&](serving::scheduler_interface& sched) { return server(sched, *tok, tp, a, id).run(); };
    decoder_job job;
    job.what = decoder_job::kind::serve;
    job.serve = &sj;
    return run_registered_decoder(std::move(file), job);
}

} // namespace archetype::tools
