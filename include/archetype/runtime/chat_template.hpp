#pragma once
// Chat templates. A file's tokenizer.chat_template (a Jinja program) is the model's own
// statement of how a conversation becomes its prompt text. Debian 12 packages no C++
// Jinja engine, so the template families of the architectures archetype runs are
// recognised from the template's text and rendered here, string for string what
// Hugging Face transformers' apply_chat_template renders (tests/data/chat, made by
// tools/reference/make_chat_fixtures.py):
//
//   chatml   <|im_start|>role\n...<|im_end|>\n        SmolLM, Qwen 2/2.5, generic ChatML; a
//                                                      default system message the template
//                                                      adds when the conversation has none
//   gemma    <start_of_turn>user\n...<end_of_turn>\n   Gemma 2 (no system role) and Gemma 3
//                                                      (system text prefixed to the first turn)
//   llama3   <|start_header_id|>role<|end_header_id|>  Llama 3.1 / 3.2 / 3.3: the system header
//                                                      with "Cutting Knowledge Date" and
//                                                      "Today Date: <date_string>"
//   phi3     <|user|>\n...<|end|>\n                    Phi-3 / Phi-3.5
//   mistral  [INST]...[/INST]                          Mistral Nemo (system text joined to
//                                                      the last user turn)
//
// A template of none of these families is an argument_error that names it: the caller
// picks a family by name (archetype generate --chat-template NAME) rather than guessing.
// Tool calls, documents and multimodal content are not rendered.
#include <cctype>
#include <chrono>
#include <cstddef>
#include <ctime>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/error.hpp"

namespace archetype::chat {

struct message {
    std::string role; // "system", "user" or "assistant"
    std::string content;
};

enum class family { chatml, gemma, llama3, phi3, mistral };

inline std::string_view family_name(family f) noexcept {
    switch (f) {
    case family::chatml: return "chatml";
    case family::gemma: return "gemma";
    case family::llama3: return "llama3";
    case family::phi3: return "phi3";
    case family::mistral: return "mistral";
    }
    return "?";
}

/// A recognised template: its family and what the template text fixes within it.
struct chat_template {
    family fam = family::chatml;
    std::string default_system;      // chatml: system message added when the conversation has none
    bool system_role = true;         // gemma: false when the template refuses a system message (Gemma 2)
    std::string default_date;        // llama3: the template's date_string default ("" = today's date)
    std::string_view name() const noexcept { return family_name(fam); }
};

/// What the caller supplies: the tokenizer's special-token texts (as transformers passes
/// bos_token / eos_token to the template) and, for llama3, date_string.
struct render_options {
    bool add_generation_prompt = true;
    std::string bos_token, eos_token;
    std::string date_string; // "" = the template's default
};

namespace detail {

inline bool has(std::string_view s, std::string_view what) noexcept { return s.find(what) != std::string_view::npos; }

/// Jinja's `trim`: leading and trailing whitespace removed.
inline std::string trim(std::string_view s) {
    auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    std::size_t b = 0, e = s.size();
    while (b < e && ws(s[b])) ++b;
    while (e > b && ws(s[e - 1])) --e;
    return std::string(s.substr(b, e - b));
}

/// A Jinja string literal's text with \n, \t, \\, \' and \" unescaped.
inline std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    }
    return out;
}

/// ChatML's default system message: the literal text between "<|im_start|>system\n" and
/// "<|im_end|>" inside one string literal (SmolLM2, Qwen 2.5), or "".
inline std::string chatml_default_system(std::string_view t) {
    for (std::string_view head : {std::string_view("<|im_start|>system\\n"), std::string_view("<|im_start|>system\n")})
        for (std::size_t p = t.find(head); p != std::string_view::npos; p = t.find(head, p + 1)) {
            const std::size_t b = p + head.size(), e = t.find("<|im_end|>", b);
            if (e == std::string_view::npos) continue;
            const std::string_view text = t.substr(b, e - b);
            if (!text.empty() && text.find_first_of("'\"{}+") == std::string_view::npos) return unescape(text);
        }
    return {};
}

/// The llama3 templates' `set date_string = "..."` default, or "" when it calls strftime_now.
inline std::string llama3_default_date(std::string_view t) {
    if (has(t, "strftime_now")) return {};
    const std::size_t p = t.find("date_string = \"");
    if (p == std::string_view::npos) return {};
    const std::size_t b = p + 15, e = t.find('"', b);
    return e == std::string_view::npos ? std::string() : std::string(t.substr(b, e - b));
}

/// Today's date as strftime("%d %b %Y") (what transformers' strftime_now gives the template).
inline std::string today() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[32];
    return std::string(buf, std::strftime(buf, sizeof buf, "%d %b %Y", &tm));
}

/// The first line of a template (at most 60 characters), for messages.
inline std::string head_of(std::string_view t) {
    std::string_view h = t.substr(0, t.find('\n'));
    return std::string(h.substr(0, 60)) + (h.size() > 60 ? "..." : "");
}

/// Roles must be user / assistant / user / ... after an optional leading system message.
inline void check_alternation(std::span<const message> m, std::size_t first, std::string_view who) {
    for (std::size_t i = first; i < m.size(); ++i)
        if ((m[i].role == "user") != ((i - first) % 2 == 0))
            throw argument_error(std::string(who) + ": after the optional system message, roles must alternate "
                                 "user/assistant/user/...; message " + std::to_string(i) + " is '" + m[i].role + "'");
}

} // namespace detail

/// The family a template's text belongs to; argument_error naming the template if none.
inline chat_template recognise(std::string_view t) {
    using detail::has;
    chat_template r;
    if (has(t, "'<|im_start|>' + message") || has(t, "\"<|im_start|>\" + message")) {
        r.fam = family::chatml;
        r.default_system = detail::chatml_default_system(t);
        return r;
    }
    if (has(t, "<start_of_turn>") && has(t, "<end_of_turn>")) {
        r.fam = family::gemma;
        r.system_role = has(t, "first_user_prefix");
        return r;
    }
    if (has(t, "<|start_header_id|>") && has(t, "Cutting Knowledge Date")) {
        r.fam = family::llama3;
        r.default_date = detail::llama3_default_date(t);
        return r;
    }
    if (has(t, "<|user|>") && has(t, "<|assistant|>") && has(t, "<|end|>")) {
        r.fam = family::phi3;
        return r;
    }
    if (has(t, "\"[INST]\" + message[\"content\"] + \"[/INST]\"")) {
        r.fam = family::mistral;
        return r;
    }
    throw argument_error("chat template not recognised (it begins '" + detail::head_of(t) +
                         "'); name its family instead: chatml, gemma, llama3, phi3 or mistral");
}

/// A family by name (--chat-template NAME): its common form (gemma: Gemma 3's system
/// handling; llama3: today's date).
inline chat_template named(std::string_view name) {
    for (family f : {family::chatml, family::gemma, family::llama3, family::phi3, family::mistral})
        if (family_name(f) == name) {
            chat_template t;
            t.fam = f;
            return t;
        }
    throw argument_error("chat template '" + std::string(name) + "' is not one of chatml, gemma, llama3, phi3, mistral");
}

/// The conversation as the template renders it.
inline std::string render(const chat_template& tp, std::span<const message> msgs, const render_options& o) {
    for (const auto& m : msgs)
        if (m.role != "system" && m.role != "user" && m.role != "assistant")
            throw argument_error("chat message role '" + m.role + "' is not system, user or assistant");
    const bool sys = !msgs.empty() && msgs[0].role == "system";
    const std::size_t first = sys ? 1 : 0;
    std::string s;
    switch (tp.fam) {
    case family::chatml:
        if (!sys && !tp.default_system.empty()) s += "<|im_start|>system\n" + tp.default_system + "<|im_end|>\n";
        for (const auto& m : msgs) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        if (o.add_generation_prompt) s += "<|im_start|>assistant\n";
        return s;
    case family::gemma: {
        if (sys && !tp.system_role) throw argument_error("chat template (gemma): System role not supported");
        detail::check_alternation(msgs, first, "chat template (gemma)");
        s += o.bos_token;
        for (std::size_t i = first; i < msgs.size(); ++i) {
            s += "<start_of_turn>" + std::string(msgs[i].role == "assistant" ? "model" : msgs[i].role) + "\n";
            if (i == first && sys) s += msgs[0].content + "\n\n";
            s += detail::trim(msgs[i].content) + "<end_of_turn>\n";
        }
        if (o.add_generation_prompt) s += "<start_of_turn>model\n";
        return s;
    }
    case family::llama3: {
        const std::string date = !o.date_string.empty()    ? o.date_string
                                 : !tp.default_date.empty() ? tp.default_date
                                                            : detail::today();
        s += o.bos_token + "<|start_header_id|>system<|end_header_id|>\n\n";
        s += "Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n";
        if (sys) s += detail::trim(msgs[0].content);
        s += "<|eot_id|>";
        for (std::size_t i = first; i < msgs.size(); ++i)
            s += "<|start_header_id|>" + msgs[i].role + "<|end_header_id|>\n\n" + detail::trim(msgs[i].content) +
                 "<|eot_id|>";
        if (o.add_generation_prompt) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
        return s;
    }
    case family::phi3:
        for (const auto& m : msgs) {
            if (m.role == "system" && m.content.empty()) continue;
            s += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
        }
        s += o.add_generation_prompt ? std::string("<|assistant|>\n") : o.eos_token;
        return s;
    case family::mistral:
        detail::check_alternation(msgs, first, "chat template (mistral)");
        s += o.bos_token;
        for (std::size_t i = first; i < msgs.size(); ++i) {
            if (msgs[i].role == "user")
                s += "[INST]" + (i + 1 == msgs.size() && sys ? msgs[0].content + "\n\n" : std::string()) +
                     msgs[i].content + "[/INST]";
            else
                s += msgs[i].content + o.eos_token;
        }
        return s;
    }
    return s;
}

/// The texts that end the model's turn in this family (besides the tokenizer's EOS).
inline std::vector<std::string> end_of_turn(const chat_template& tp) {
    switch (tp.fam) {
    case family::chatml: return {"<|im_end|>"};
    case family::gemma: return {"<end_of_turn>"};
    case family::llama3: return {"<|eot_id|>", "<|eom_id|>"};
    case family::phi3: return {"<|end|>", "<|endoftext|>"};
    case family::mistral: return {};
    }
    return {};
}

} // namespace archetype::chat
