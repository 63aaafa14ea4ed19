#pragma once
// The OpenAI API's request bodies as `archetype serve` reads them (tools/cmd_serve.cpp):
// each route's fields checked by name and type before anything runs, and the error
// object every refusal carries. No HTTP here: the server hands a parsed body in and gets
// a serving::request's parameters, or an api_error with the status to answer.
//
// What is refused (400, naming the field): a field the route does not know (those the
// `openai` Python client sends are all known), a wrong JSON type, a value out of range,
// and what this server does not do (presence / frequency penalties other than 0, n > 1,
// logprobs, tools). An unknown model is 404 (OpenAI's model_not_found). Beyond OpenAI's
// fields: top_k, min_p, repeat_penalty, and llama-server's ignore_eos (a load benchmark
// asks for exactly N tokens).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/runtime/chat_template.hpp"
#include "archetype/runtime/sampling.hpp"

namespace archetype::tools::openai {

using json = nlohmann::json;

/// A refusal: the HTTP status and OpenAI's error object {message, type, param, code}.
struct api_error {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;
    std::string code;
};

inline json error_body(const api_error& e) {
    json err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
    if (!e.param.empty()) err["param"] = e.param;
    if (!e.code.empty()) err["code"] = e.code;
    return json{{"error", err}};
}

inline api_error bad(std::string message, std::string param = {}) {
    return api_error{400, std::move(message), "invalid_request_error", std::move(param), {}};
}

/// A JSON text that never throws on the way out (every string here is valid UTF-8, but
/// a broken character must not take the server down).
inline std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/// The body as a JSON object (400 for anything else: malformed JSON, invalid UTF-8 in a string).
inline json parse_body(const std::string& body) {
    json j;
    try {
        j = json::parse(body);
    } catch (const json::exception& e) {
        throw bad(std::string("the body is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) throw bad("the body must be a JSON object, got " + std::string(j.type_name()));
    return j;
}

/// 400 naming the first field of j that is not in `known`.
inline void check_fields(const json& j, std::initializer_list<std::string_view> known, std::string_view where) {
    for (const auto& [k, v] : j.items())
        if (std::find(known.begin(), known.end(), k) == known.end()) {
            std::string list;
            for (const auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
            throw bad("unknown field '" + k + "' in " + std::string(where) + " (known: " + list + ")", k);
        }
}

/// Whether j has `key` with a non-null value.
inline bool given(const json& j, std::string_view key) {
    const auto it = j.find(key);
    return it != j.end() && !it->is_null();
}

inline double number(const json& j, std::string_view key, double lo, double hi, double fallback) {
    if (!given(j, key)) return fallback;
    const auto& v = j.at(std::string(key));
    if (!v.is_number()) throw bad("'" + std::string(key) + "' must be a number, got " + v.type_name(), std::string(key));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
        throw bad("'" + std::string(key) + "' = " + v.dump() + " is outside " + json(lo).dump() + " .. " + json(hi).dump(),
                  std::string(key));
    return d;
}

inline std::int64_t integer(const json& j, std::string_view key, std::int64_t lo, std::int64_t hi, std::int64_t fallback) {
    if (!given(j, key)) return fallback;
    const auto& v = j.at(std::string(key));
    if (!v.is_number_integer())
        throw bad("'" + std::string(key) + "' must be an integer, got " + v.type_name(), std::string(key));
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > std::uint64_t(hi) : v.get<std::int64_t>() < lo ||
                                                                                 v.get<std::int64_t>() > hi)
        throw bad("'" + std::string(key) + "' = " + v.dump() + " is outside " + std::to_string(lo) + " .. " +
                      std::to_string(hi),
                  std::string(key));
    return v.get<std::int64_t>();
}

inline bool boolean(const json& j, std::string_view key, bool fallback) {
    if (!given(j, key)) return fallback;
    const auto& v = j.at(std::string(key));
    if (!v.is_boolean()) throw bad("'" + std::string(key) + "' must be true or false, got " + v.type_name(), std::string(key));
    return v.get<bool>();
}

inline std::string string(const json& j, std::string_view key) {
    const auto& v = j.at(std::string(key));
    if (!v.is_string()) throw bad("'" + std::string(key) + "' must be a string, got " + v.type_name(), std::string(key));
    return v.get<std::string>();
}

/// "model": required, and the one this server runs (404 otherwise).
inline void check_model(const json& j, const std::string& served) {
    if (!given(j, "model")) throw bad("'model' is required (this server runs '" + served + "')", "model");
    const std::string m = string(j, "model");
    if (m != served)
        throw api_error{404, "the model '" + m + "' does not exist (this server runs '" + served + "')",
                        "invalid_request_error", "model", "model_not_found"};
}

/// What the completion routes share: sampling, limits, stops, streaming.
struct completion_params {
    sampling_params sampling{};
    std::size_t max_tokens = 0; ///< 0: until the context is full
    std::vector<std::string> stop;
    bool stream = false, include_usage = false;
    bool ignore_eos = false; ///< llama-server's extension: the end-of-sequence tokens do not stop it
};

inline completion_params completion_fields(const json& j, std::size_t max_tokens_limit, std::uint64_t default_seed) {
    completion_params p;
    p.sampling.temperature = float(number(j, "temperature", 0, 2, 1));
    p.sampling.top_p = float(number(j, "top_p", 0, 1, 1));
    if (p.sampling.top_p == 0.f) p.sampling.temperature = 0.f; // no token survives a nucleus of 0: the best one
    if (p.sampling.top_p == 0.f) p.sampling.top_p = 1.f;
    p.sampling.top_k = std::size_t(integer(j, "top_k", 0, 1 << 30, 0));
    p.sampling.min_p = float(number(j, "min_p", 0, 1, 0));
    p.sampling.repeat_penalty = float(number(j, "repeat_penalty", 0.01, 100, 1));
    p.sampling.seed = std::uint64_t(integer(j, "seed", INT64_MIN, INT64_MAX, std::int64_t(default_seed)));
    for (const char* k : {"presence_penalty", "frequency_penalty"})
        if (number(j, k, -2, 2, 0) != 0)
            throw bad(std::string("'") + k + "' is not supported by this server (only 0); repeat_penalty is", k);
    const char* mt = given(j, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (given(j, mt)) {
        const std::int64_t m = integer(j, mt, 1, INT64_MAX, 0);
        if (std::uint64_t(m) > max_tokens_limit)
            throw bad(std::string("'") + mt + "' = " + std::to_string(m) + " is over this server's limit of " +
                          std::to_string(max_tokens_limit) + " tokens (the context of one sequence, --ctx)",
                      mt);
        p.max_tokens = std::size_t(m);
    }
    if (integer(j, "n", 1, 1, 1) != 1) throw bad("'n' must be 1", "n");
    if (given(j, "stop")) {
        const auto& s = j.at("stop");
        if (s.is_string()) p.stop.push_back(s.get<std::string>());
        else if (s.is_array() && s.size() <= 16) {
            for (const auto& x : s) {
                if (!x.is_string()) throw bad("'stop' must be a string or an array of strings", "stop");
                p.stop.push_back(x.get<std::string>());
            }
        } else
            throw bad("'stop' must be a string or an array of at most 16 strings", "stop");
        for (const auto& x : p.stop)
            if (x.empty()) throw bad("'stop' strings must not be empty", "stop");
    }
    p.stream = boolean(j, "stream", false);
    p.ignore_eos = boolean(j, "ignore_eos", false);
    if (given(j, "stream_options")) {
        const auto& o = j.at("stream_options");
        if (!o.is_object()) throw bad("'stream_options' must be an object", "stream_options");
        check_fields(o, {"include_usage"}, "stream_options");
        p.include_usage = boolean(o, "include_usage", false);
    }
    if (boolean(j, "logprobs", false) || given(j, "top_logprobs"))
        throw bad("'logprobs' is not supported by this server", "logprobs");
    if (given(j, "user")) (void)string(j, "user");
    return p;
}

/// POST /v1/chat/completions's fields; the conversation into `messages`.
inline completion_params chat_fields(const json& j, std::vector<chat::message>& messages, const std::string& model,
                                     std::size_t max_tokens_limit, std::uint64_t default_seed) {
    check_fields(j, {"model", "messages", "stream", "stream_options", "temperature", "top_p", "top_k", "min_p",
                     "repeat_penalty", "max_tokens", "max_completion_tokens", "stop", "seed", "presence_penalty",
                     "frequency_penalty", "n", "user", "logprobs", "top_logprobs", "ignore_eos"},
                 "a chat completion request");
    check_model(j, model);
    if (!given(j, "messages") || !j.at("messages").is_array() || j.at("messages").empty())
        throw bad("'messages' must be a non-empty array of {role, content}", "messages");
    for (const auto& m : j.at("messages")) {
        if (!m.is_object()) throw bad("each of 'messages' must be an object", "messages");
        check_fields(m, {"role", "content", "name"}, "a message");
        if (!given(m, "role") || !given(m, "content")) throw bad("each message needs 'role' and 'content'", "messages");
        std::string role = string(m, "role");
        if (role == "developer") role = "system";
        if (role != "system" && role != "user" && role != "assistant")
            throw bad("message role '" + role + "' is not system, user or assistant", "messages");
        std::string content;
        const auto& c = m.at("content");
        if (c.is_string()) content = c.get<std::string>();
        else if (c.is_array()) {
            for (const auto& part : c) {
                if (!part.is_object() || !given(part, "type") || !part.at("type").is_string() ||
                    part.at("type").get<std::string>() != "text" || !given(part, "text") || !part.at("text").is_string())
                    throw bad("message content parts must be {\"type\": \"text\", \"text\": ...} (no images or audio)",
                              "messages");
                content += part.at("text").get<std::string>();
            }
        } else
            throw bad("message 'content' must be a string or an array of text parts", "messages");
        messages.push_back({role, content});
    }
    return completion_fields(j, max_tokens_limit, default_seed);
}

/// POST /v1/completions's fields; the prompt as text, or token ids.
inline completion_params text_completion_fields(const json& j, std::string& text, std::vector<std::int32_t>& ids,
                                                const std::string& model, std::size_t max_tokens_limit,
                                                std::uint64_t default_seed) {
    check_fields(j, {"model", "prompt", "stream", "stream_options", "temperature", "top_p", "top_k", "min_p",
                     "repeat_penalty", "max_tokens", "stop", "seed", "presence_penalty", "frequency_penalty", "n",
                     "user", "logprobs", "echo", "best_of", "suffix", "ignore_eos"},
                 "a completion request");
    check_model(j, model);
    if (boolean(j, "echo", false)) throw bad("'echo' is not supported by this server", "echo");
    if (integer(j, "best_of", 1, 1, 1) != 1) throw bad("'best_of' must be 1", "best_of");
    if (given(j, "suffix")) throw bad("'suffix' is not supported by this server", "suffix");
    if (given(j, "logprobs")) throw bad("'logprobs' is not supported by this server", "logprobs");
    if (!given(j, "prompt")) throw bad("'prompt' is required", "prompt");
    const auto& p = j.at("prompt");
    const json* one = &p;
    if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) one = &p[0];
    if (one->is_string()) text = one->get<std::string>();
    else if (one->is_array() && !one->empty() && std::all_of(one->begin(), one->end(), [](const json& x) { return x.is_number_integer(); })) {
        for (const auto& x : *one) {
            const auto v = x.get<std::int64_t>();
            if (v < 0 || v > INT32_MAX) throw bad("prompt token " + std::to_string(v) + " is not a token id", "prompt");
            ids.push_back(std::int32_t(v));
        }
    } else
        throw bad("'prompt' must be a string, an array of token ids, or an array of one of those (one prompt per "
                  "request)",
                  "prompt");
    json rest = j;
    rest.erase("logprobs"); // checked above; completion_fields reads the chat meaning of it
    return completion_fields(rest, max_tokens_limit, default_seed);
}

/// POST /v1/embeddings's fields: the inputs as texts or token-id lists; base64 or float.
struct embedding_params {
    std::vector<std::string> texts;
    std::vector<std::vector<std::int32_t>> ids;
    bool base64 = false;
};

inline embedding_params embedding_fields(const json& j, const std::string& model, std::size_t max_inputs) {
    check_fields(j, {"model", "input", "encoding_format", "user", "dimensions"}, "an embedding request");
    check_model(j, model);
    embedding_params e;
    if (given(j, "encoding_format")) {
        const std::string f = string(j, "encoding_format");
        if (f != "float" && f != "base64")
            throw bad("'encoding_format' '" + f + "' is not float or base64", "encoding_format");
        e.base64 = f == "base64";
    }
    if (given(j, "dimensions")) throw bad("'dimensions' is not supported by this server", "dimensions");
    if (given(j, "user")) (void)string(j, "user");
    if (!given(j, "input")) throw bad("'input' is required", "input");
    const auto& in = j.at("input");
    auto ids_of = [](const json& a) {
        std::vector<std::int32_t> v;
        for (const auto& x : a) {
            const auto t = x.get<std::int64_t>();
            if (t < 0 || t > INT32_MAX) throw bad("input token " + std::to_string(t) + " is not a token id", "input");
            v.push_back(std::int32_t(t));
        }
        return v;
    };
    auto all_ints = [](const json& a) {
        return a.is_array() && !a.empty() && std::all_of(a.begin(), a.end(), [](const json& x) { return x.is_number_integer(); });
    };
    if (in.is_string()) e.texts.push_back(in.get<std::string>());
    else if (all_ints(in)) e.ids.push_back(ids_of(in));
    else if (in.is_array() && !in.empty() && std::all_of(in.begin(), in.end(), [](const json& x) { return x.is_string(); }))
        for (const auto& x : in) e.texts.push_back(x.get<std::string>());
    else if (in.is_array() && !in.empty() && std::all_of(in.begin(), in.end(), all_ints))
        for (const auto& x : in) e.ids.push_back(ids_of(x));
    else
        throw bad("'input' must be a string, an array of strings, an array of token ids or an array of those", "input");
    if (e.texts.size() + e.ids.size() > max_inputs)
        throw bad("'input' has " + std::to_string(e.texts.size() + e.ids.size()) + " items, over the limit of " +
                      std::to_string(max_inputs),
                  "input");
    for (const auto& t : e.texts)
        if (t.empty()) throw bad("'input' strings must not be empty", "input");
    return e;
}

/// Standard base64 of bytes (the embeddings' encoding_format "base64": little-endian float32).
inline std::string base64(const void* data, std::size_t n) {
    static constexpr char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const auto* b = static_cast<const unsigned char*>(data);
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (std::size_t i = 0; i < n; i += 3) {
        const unsigned v = unsigned(b[i]) << 16 | (i + 1 < n ? unsigned(b[i + 1]) << 8 : 0u) | (i + 2 < n ? b[i + 2] : 0u);
        out += tab[v >> 18 & 63];
        out += tab[v >> 12 & 63];
        out += i + 1 < n ? tab[v >> 6 & 63] : '=';
        out += i + 2 < n ? tab[v & 63] : '=';
    }
    return out;
}

} // namespace archetype::tools::openai
