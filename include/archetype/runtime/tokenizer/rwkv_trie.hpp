#pragma once
// The RWKV "world" tokenizer: a vocabulary of byte strings, encoded by greedy longest
// match over the UTF-8 bytes (a trie), as the rwkv package's TRIE_TOKENIZER does. No
// normalisation, no special tokens; id 0 is the end-of-text token by convention.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/unicode.hpp"

namespace archetype::tokenizer {

class rwkv_tokenizer final : public tokenizer {
public:
    /// vocab: (bytes, id) pairs; ids need not be dense, but must be below 2^24.
    explicit rwkv_tokenizer(const std::vector<std::pair<std::string, std::int32_t>>& vocab) {
        std::int32_t max_id = 0;
        for (const auto& [bytes, id] : vocab) {
            if (id < 0 || id >= (1 << 24))
                throw format_error("RWKV vocabulary id " + std::to_string(id) + " is out of range");
            if (bytes.empty()) throw format_error("RWKV vocabulary token " + std::to_string(id) + " is empty");
            max_id = std::max(max_id, id);
        }
        pieces_.assign(static_cast<std::size_t>(max_id) + 1, std::string());
        present_.assign(pieces_.size(), false);
        for (const auto& [bytes, id] : vocab) {
            if (present_[static_cast<std::size_t>(id)])
                throw format_error("RWKV vocabulary id " + std::to_string(id) + " appears twice");
            present_[static_cast<std::size_t>(id)] = true;
            pieces_[static_cast<std::size_t>(id)] = bytes;
            trie_.insert(bytes, id);
        }
        n_vocab_ = pieces_.size();
        eos_ = 0;
    }

    std::vector<std::int32_t> encode(std::string_view text, bool /*add_special*/) const override {
        std::vector<std::int32_t> ids;
        for (std::size_t i = 0; i < text.size();) {
            const auto [len, id] = trie_.longest(text, i);
            if (len == 0)
                throw argument_error("byte " + std::to_string(static_cast<unsigned char>(text[i])) + " at offset " +
                                     std::to_string(i) + " has no token in the RWKV vocabulary");
            ids.push_back(id);
            i += len;
        }
        return ids;
    }
    std::string decode(std::span<const std::int32_t> ids) const override {
        std::string out;
        for (auto id : ids) out += token_to_piece(id);
        return out;
    }
    std::string token_to_piece(std::int32_t id) const override {
        check_id(id);
        if (!present_[static_cast<std::size_t>(id)])
            throw argument_error("token id " + std::to_string(id) + " is not in the RWKV vocabulary");
        return pieces_[static_cast<std::size_t>(id)];
    }
    std::string_view kind() const noexcept override { return "rwkv"; }
    bool lossless() const noexcept override { return true; }

private:
    std::vector<std::string> pieces_;
    std::vector<bool> present_;
    byte_trie trie_;
};

namespace detail {

/// Parses one Python literal of rwkv_vocab_v20230424.txt: '...' (a str, stored as
/// UTF-8) or b'...' (bytes), with \\ \' \" \n \t \r \xNN \uNNNN \UNNNNNNNN escapes.
inline std::string parse_py_literal(std::string_view s, std::size_t line) {
    auto fail = [&](std::string_view why) -> std::string {
        throw format_error("RWKV vocabulary line " + std::to_string(line) + ": " + std::string(why));
    };
    bool bytes = false;
    if (!s.empty() && s[0] == 'b') { bytes = true; s.remove_prefix(1); }
    if (s.size() < 2 || (s[0] != '\'' && s[0] != '"') || s.back() != s[0]) return fail("expected a quoted literal");
    s = s.substr(1, s.size() - 2);
    std::string out;
    auto hexval = [&](std::string_view h) -> std::uint32_t {
        std::uint32_t v = 0;
        for (char ch : h) {
            int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
            if (d < 0) fail("bad hex escape");
            v = v * 16 + static_cast<std::uint32_t>(d);
        }
        return v;
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\') { out += s[i]; continue; }
        if (++i >= s.size()) return fail("dangling backslash");
        const char e = s[i];
        std::size_t n = 0;
        switch (e) {
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': n = 2; break;
        case 'u': n = bytes ? 0 : 4; break;
        case 'U': n = bytes ? 0 : 8; break;
        default: return fail(std::string("unknown escape \\") + e);
        }
        if (n == 0 && (e == 'u' || e == 'U')) return fail("\\u in a bytes literal");
        if (n) {
            if (i + n >= s.size()) return fail("truncated escape");
            const auto v = hexval(s.substr(i + 1, n));
            i += n;
            if (e == 'x' && bytes) out += static_cast<char>(v);
            else {
                if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return fail("escape is not a code point");
                unicode::append_utf8(out, static_cast<char32_t>(v));
            }
        }
    }
    return out;
}

} // namespace detail

/// Reads rwkv_vocab_v20230424.txt (lines "id literal length"; the rwkv package ships it).
inline std::vector<std::pair<std::string, std::int32_t>> read_rwkv_vocab(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error("cannot open RWKV vocabulary '" + path + "'");
    std::vector<std::pair<std::string, std::int32_t>> v;
    std::string l;
    for (std::size_t line = 1; std::getline(in, l); ++line) {
        if (!l.empty() && l.back() == '\r') l.pop_back();
        if (l.empty()) continue;
        const auto a = l.find(' '), b = l.rfind(' ');
        if (a == std::string::npos || b == a)
            throw format_error("RWKV vocabulary line " + std::to_string(line) + " is not 'id literal length'");
        std::int64_t id = 0, len = 0;
        try {
            id = std::stoll(l.substr(0, a));
            len = std::stoll(l.substr(b + 1));
        } catch (const std::exception&) {
            throw format_error("RWKV vocabulary line " + std::to_string(line) + " has a bad id or length");
        }
        if (id < 0 || id >= (1 << 24))
            throw format_error("RWKV vocabulary line " + std::to_string(line) + " id " + std::to_string(id) + " is out of range");
        auto bytes = detail::parse_py_literal(std::string_view(l).substr(a + 1, b - a - 1), line);
        if (static_cast<std::int64_t>(bytes.size()) != len)
            throw format_error("RWKV vocabulary line " + std::to_string(line) + " says length " + std::to_string(len) +
                               " but the literal has " + std::to_string(bytes.size()) + " bytes");
        v.emplace_back(std::move(bytes), static_cast<std::int32_t>(id));
    }
    return v;
}

} // namespace archetype::tokenizer
