#pragma once
// The regular expressions of BPE pre-tokenizers (llama.cpp's table keyed by
// tokenizer.ggml.pre, and the Split patterns of Hugging Face tokenizer.json files),
// matched over code points with the semantics of Oniguruma / PCRE that Hugging Face
// uses: leftmost-first alternation, greedy (or lazy) quantifiers with backtracking,
// lookahead. A small backtracking matcher rather than std::regex, because std::regex
// knows no \p{L}; the Unicode classes come from unicode_tables.hpp.
//
// Dialect: literals (UTF-8), `.`, `^`, `$` (bounds of the piece being split), groups
// `(...)` `(?:...)` `(?i:...)` (ASCII case folding), lookahead `(?=...)` `(?!...)`,
// quantifiers `? * + {n} {n,} {n,m}` and their lazy `?` forms, classes `[...]` with
// ranges and negation, escapes \s \S \d \D \w \W \r \n \t \f \v and escaped
// punctuation, \p{X} / \P{X} for the general categories L, M, N, P, S, Z, C (and
// their long names). What it does not know (\p{Lu}, \b, backreferences, possessive
// quantifiers, lookbehind) is a format_error naming the pattern and the position, never
// a silent difference.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/unicode.hpp"

namespace archetype::tokenizer {

/// A code point that stands for an invalid UTF-8 byte: it is in no class but "other".
inline constexpr char32_t invalid_cp = 0xFFFFFFFF;

class split_regex {
public:
    static constexpr std::size_t no_match = static_cast<std::size_t>(-1);

    explicit split_regex(std::string_view pattern) : pattern_(pattern) {
        std::size_t i = 0;
        root_ = parse_alt(i, false);
        if (i != pattern_.size()) fail(i, "unbalanced ')'");
        for (auto& n : nodes_)
            if (n.op == kind::repeat) n.unit = is_unit(n.children[0]);
    }

    const std::string& pattern() const noexcept { return pattern_; }

    /// End of the match starting at `pos` within [begin, end) of `cps`, or no_match
    /// (an empty match counts as none, as in a split).
    std::size_t match_at(std::span<const char32_t> cps, std::size_t begin, std::size_t end, std::size_t pos) const {
        const subject s{cps, begin, end};
        std::size_t result = no_match;
        auto accept = [&](std::size_t p) { result = p; return true; };
        budget b{frame(), max_steps_base + max_steps_per_cp * (end - pos)};
        match(s, root_, pos, cont::of(accept), b);
        return result == pos ? no_match : result;
    }

    /// Splits [begin, end) as a Split pre-tokenizer with behaviour "isolated": every
    /// match is a piece and so is every gap between matches. Appends the pieces'
    /// [first, last) code-point ranges to `out`.
    void split(std::span<const char32_t> cps, std::size_t begin, std::size_t end,
               std::vector<std::pair<std::size_t, std::size_t>>& out) const {
        std::size_t gap = begin;
        for (std::size_t p = begin; p < end;) {
            const auto e = match_at(cps, begin, end, p);
            if (e == no_match) { ++p; continue; }
            if (p > gap) out.emplace_back(gap, p);
            out.emplace_back(p, e);
            p = gap = e;
        }
        if (end > gap) out.emplace_back(gap, end);
    }

private:
    enum class kind : std::uint8_t { set, seq, alt, repeat, look, bol, eol };

    // One code-point test: ranges, whole general categories, \s / \S, `.`; negatable.
    struct cp_set {
        std::vector<std::pair<char32_t, char32_t>> ranges;
        std::uint16_t cats = 0, not_cats = 0; // bit per unicode::category
        bool space = false, not_space = false, any_but_newline = false, negate = false;

        bool test(char32_t c) const noexcept {
            bool in = false;
            for (const auto& [a, b] : ranges)
                if (c >= a && c <= b) { in = true; break; }
            if (!in && (cats | not_cats)) {
                const auto bit = static_cast<std::uint16_t>(1u << static_cast<unsigned>(c == invalid_cp
                    ? unicode::category::other : unicode::category_of(c)));
                in = (cats & bit) || (not_cats && !(not_cats & bit));
            }
            if (!in && (space || not_space)) {
                const bool ws = c != invalid_cp && unicode::is_whitespace(c);
                in = (space && ws) || (not_space && !ws);
            }
            if (!in && any_but_newline) in = c != '\n';
            return in != negate;
        }
    };

    struct node {
        kind op = kind::seq;
        cp_set set;
        std::vector<std::size_t> children;
        std::size_t min = 0, max = 0;
        bool lazy = false, negative = false, unit = false;
    };

    struct subject {
        std::span<const char32_t> cps;
        std::size_t begin, end;
    };

    // A continuation: what must match after the current node, called with the position.
    struct cont {
        const void* obj;
        bool (*call)(const void*, std::size_t);
        bool operator()(std::size_t p) const { return call(obj, p); }
        template <class F> static cont of(const F& f) {
            return {&f, [](const void* o, std::size_t p) { return (*static_cast<const F*>(o))(p); }};
        }
    };

    // Bounds on one match attempt: the stack it may use (the matcher recurses once per
    // node and iteration on the current path; measured from the frame addresses, since
    // frame sizes differ between builds, sanitizers included) and the steps it may take
    // (exponential backtracking, e.g. a hostile file's `(a|aa)+b`). Real pre-tokenizer
    // patterns use a few steps per code point and repeat single code points, which run as
    // loops; only a repeat of a longer group nests (exaone-moe's `(?:\p{L}\p{M}*...)+`:
    // a word of some thousands of letters exceeds the stack bound and is an error).
    static constexpr std::size_t max_stack_bytes = std::size_t(1) << 20;
    static constexpr std::size_t max_steps_base = 1u << 20, max_steps_per_cp = 256;
    static constexpr std::size_t unbounded = static_cast<std::size_t>(-1);
    struct budget {
        std::uintptr_t stack_base;
        std::size_t steps_left;
    };
    static std::uintptr_t frame() noexcept { return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)); }

    [[noreturn]] void fail(std::size_t at, const std::string& what) const {
        throw format_error("pre-tokenizer pattern '" + shown() + "': " + what + " at byte " + std::to_string(at));
    }

    std::string shown() const { return pattern_.size() <= 160 ? pattern_ : pattern_.substr(0, 160) + "..."; }

    std::size_t add(node n) { nodes_.push_back(std::move(n)); return nodes_.size() - 1; }

    // ---- parsing ------------------------------------------------------------------
    char32_t next_cp(std::size_t& i) const {
        const auto u = unicode::decode_utf8(pattern_, i);
        if (!u.valid) fail(i, "invalid UTF-8");
        i += u.len;
        return u.cp;
    }

    std::size_t parse_alt(std::size_t& i, bool icase) {
        // Groups nest by recursion: a hostile pattern of 100 000 '(' must not overflow the stack.
        if (++nesting_ > max_nesting) fail(i, "groups nested deeper than " + std::to_string(max_nesting));
        struct unnest { std::size_t& n; ~unnest() { --n; } } u{nesting_};
        node alt;
        alt.op = kind::alt;
        alt.children.push_back(parse_seq(i, icase));
        while (i < pattern_.size() && pattern_[i] == '|') {
            ++i;
            alt.children.push_back(parse_seq(i, icase));
        }
        return alt.children.size() == 1 ? alt.children[0] : add(std::move(alt));
    }

    std::size_t parse_seq(std::size_t& i, bool icase) {
        node seq;
        seq.op = kind::seq;
        while (i < pattern_.size() && pattern_[i] != '|' && pattern_[i] != ')') {
            const std::size_t at = i;
            std::size_t a = parse_atom(i, icase);
            if (i < pattern_.size() && (pattern_[i] == '?' || pattern_[i] == '*' || pattern_[i] == '+' ||
                                        pattern_[i] == '{')) {
                node r;
                r.op = kind::repeat;
                r.children.push_back(a);
                const char q = pattern_[i++];
                if (q == '?') { r.min = 0; r.max = 1; }
                else if (q == '*') { r.min = 0; r.max = unbounded; }
                else if (q == '+') { r.min = 1; r.max = unbounded; }
                else {
                    r.min = parse_count(i);
                    r.max = r.min;
                    if (i < pattern_.size() && pattern_[i] == ',') {
                        ++i;
                        r.max = i < pattern_.size() && pattern_[i] == '}' ? unbounded : parse_count(i);
                    }
                    if (i >= pattern_.size() || pattern_[i] != '}') fail(i, "expected '}'");
                    ++i;
                    if (r.max < r.min) fail(at, "quantifier {n,m} with m < n");
                }
                if (nodes_[a].op == kind::bol || nodes_[a].op == kind::eol || nodes_[a].op == kind::look)
                    fail(at, "quantifier on a zero-width assertion");
                if (i < pattern_.size() && pattern_[i] == '?') { r.lazy = true; ++i; }
                else if (i < pattern_.size() && pattern_[i] == '+') fail(i, "possessive quantifier not supported");
                a = add(std::move(r));
            }
            seq.children.push_back(a);
        }
        return seq.children.size() == 1 ? seq.children[0] : add(std::move(seq));
    }

    std::size_t parse_count(std::size_t& i) const {
        std::size_t n = 0, digits = 0;
        while (i < pattern_.size() && pattern_[i] >= '0' && pattern_[i] <= '9') {
            n = n * 10 + static_cast<std::size_t>(pattern_[i++] - '0');
            if (++digits > 5) fail(i, "repeat count too large");
        }
        if (digits == 0) fail(i, "expected a repeat count");
        return n;
    }

    std::size_t parse_atom(std::size_t& i, bool icase) {
        const char c = pattern_[i];
        if (c == '(') {
            ++i;
            bool look = false, negative = false, inner_icase = icase;
            if (i < pattern_.size() && pattern_[i] == '?') {
                const std::string_view rest = std::string_view(pattern_).substr(i);
                if (rest.starts_with("?:")) i += 2;
                else if (rest.starts_with("?i:")) { i += 3; inner_icase = true; }
                else if (rest.starts_with("?=")) { i += 2; look = true; }
                else if (rest.starts_with("?!")) { i += 2; look = true; negative = true; }
                else fail(i, "group kind '(" + std::string(rest.substr(0, 3)) + "' not supported");
            }
            const std::size_t inner = parse_alt(i, inner_icase);
            if (i >= pattern_.size() || pattern_[i] != ')') fail(i, "missing ')'");
            ++i;
            if (!look) return inner;
            node n;
            n.op = kind::look;
            n.negative = negative;
            n.children.push_back(inner);
            return add(std::move(n));
        }
        node n;
        n.op = kind::set;
        if (c == '[') {
            ++i;
            parse_class(i, n.set, icase);
        } else if (c == '.') {
            ++i;
            n.set.any_but_newline = true;
        } else if (c == '^' || c == '$') {
            ++i;
            n.op = c == '^' ? kind::bol : kind::eol;
        } else if (c == '\\') {
            ++i;
            if (!parse_escape(i, n.set)) add_literal(n.set, escaped_literal(i), icase);
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            fail(i, "quantifier without an operand");
        } else {
            add_literal(n.set, next_cp(i), icase);
        }
        return add(std::move(n));
    }

    static void add_literal(cp_set& s, char32_t cp, bool icase) {
        s.ranges.emplace_back(cp, cp);
        if (icase && cp < 128) {
            if (cp >= 'a' && cp <= 'z') s.ranges.emplace_back(cp - 32, cp - 32);
            else if (cp >= 'A' && cp <= 'Z') s.ranges.emplace_back(cp + 32, cp + 32);
        }
    }

    // After a backslash: a class escape (\s, \p{L}, ...) into `s`; false when it is a
    // literal (then escaped_literal reads it).
    bool parse_escape(std::size_t& i, cp_set& s) const {
        if (i >= pattern_.size()) fail(i, "trailing backslash");
        const char e = pattern_[i];
        using unicode::category;
        auto bit = [](category k) { return static_cast<std::uint16_t>(1u << static_cast<unsigned>(k)); };
        switch (e) {
        case 's': ++i; s.space = true; return true;
        case 'S': ++i; s.not_space = true; return true;
        case 'd': ++i; s.ranges.emplace_back('0', '9'); return true; // ASCII digits, as llama.cpp
        case 'w': ++i;
            s.cats |= bit(category::letter) | bit(category::mark_nonspacing) | bit(category::mark_other) |
                      bit(category::number);
            s.ranges.emplace_back('_', '_');
            return true;
        case 'p': case 'P': {
            ++i;
            if (i >= pattern_.size() || pattern_[i] != '{') fail(i, "expected '{' after \\p");
            const auto close = pattern_.find('}', i);
            if (close == std::string::npos) fail(i, "missing '}' after \\p{");
            const std::string name = pattern_.substr(i + 1, close - i - 1);
            std::uint16_t m = 0;
            if (name == "L" || name == "Letter") m = bit(category::letter);
            else if (name == "M" || name == "Mark") m = bit(category::mark_nonspacing) | bit(category::mark_other);
            else if (name == "N" || name == "Number") m = bit(category::number);
            else if (name == "P" || name == "Punctuation") m = bit(category::punctuation);
            else if (name == "S" || name == "Symbol") m = bit(category::symbol);
            else if (name == "Z" || name == "Separator") m = bit(category::separator);
            else if (name == "C" || name == "Other") m = bit(category::other) | bit(category::unassigned);
            else fail(i, "Unicode class \\p{" + name + "} not supported (known: L, M, N, P, S, Z, C)");
            i = close + 1;
            if (e == 'p') s.cats |= m;
            else s.not_cats |= m;
            return true;
        }
        default: return false;
        }
    }

    char32_t escaped_literal(std::size_t& i) const {
        const char e = pattern_[i];
        switch (e) {
        case 'r': ++i; return '\r';
        case 'n': ++i; return '\n';
        case 't': ++i; return '\t';
        case 'f': ++i; return '\f';
        case 'v': ++i; return '\v';
        default: break;
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
            fail(i, std::string("escape '\\") + e + "' not supported");
        return next_cp(i);
    }

    void parse_class(std::size_t& i, cp_set& s, bool icase) const {
        if (i < pattern_.size() && pattern_[i] == '^') { s.negate = true; ++i; }
        bool first = true;
        while (true) {
            if (i >= pattern_.size()) fail(i, "missing ']'");
            if (pattern_[i] == ']' && !first) { ++i; return; }
            first = false;
            char32_t lo;
            if (pattern_[i] == '\\') {
                ++i;
                if (parse_escape(i, s)) continue;
                lo = escaped_literal(i);
            } else if (pattern_[i] == '[') {
                fail(i, "nested class not supported");
            } else {
                lo = next_cp(i);
            }
            char32_t hi = lo;
            if (i + 1 < pattern_.size() && pattern_[i] == '-' && pattern_[i + 1] != ']') {
                ++i;
                if (pattern_[i] == '\\') { ++i; hi = escaped_literal(i); }
                else hi = next_cp(i);
                if (hi < lo) fail(i, "class range out of order");
            }
            s.ranges.emplace_back(lo, hi);
            if (icase)
                for (char32_t c = lo; c <= hi && c < 128; ++c) add_literal(s, c, true);
        }
    }

    // A node that always consumes exactly one code point and decides by that code point
    // alone (a set, or lookaheads over sets beside one set): its repeats run in a loop.
    bool is_unit(std::size_t id) const {
        const auto& n = nodes_[id];
        if (n.op == kind::set) return true;
        if (n.op == kind::alt) {
            for (auto c : n.children)
                if (!is_unit(c)) return false;
            return true;
        }
        if (n.op == kind::seq) {
            std::size_t consuming = 0;
            for (auto c : n.children) {
                const auto& k = nodes_[c];
                if (k.op == kind::look) { if (!is_unit(k.children[0])) return false; }
                else if (is_unit(c)) ++consuming;
                else return false;
            }
            return consuming == 1;
        }
        return false;
    }

    bool unit_test(std::size_t id, char32_t c) const {
        const auto& n = nodes_[id];
        switch (n.op) {
        case kind::set: return n.set.test(c);
        case kind::alt:
            for (auto k : n.children)
                if (unit_test(k, c)) return true;
            return false;
        case kind::seq:
            for (auto k : n.children) {
                const auto& m = nodes_[k];
                if (m.op == kind::look) { if (unit_test(m.children[0], c) == m.negative) return false; }
                else if (!unit_test(k, c)) return false;
            }
            return true;
        default: return false;
        }
    }

    // ---- matching -----------------------------------------------------------------
    bool match(const subject& s, std::size_t id, std::size_t pos, cont k, budget& depth) const {
        const std::uintptr_t here = frame();
        const std::size_t used = here < depth.stack_base ? depth.stack_base - here : here - depth.stack_base;
        if (used > max_stack_bytes || depth.steps_left-- == 0)
            throw format_error("pre-tokenizer pattern '" + shown() + "' needs more than " +
                               (used > max_stack_bytes ? std::string("1 MiB of stack (a repeated group matching "
                                                                     "thousands of times)")
                                                       : std::string("its step budget (catastrophic backtracking)")) +
                               " to match at one position");
        const auto& n = nodes_[id];
        switch (n.op) {
        case kind::set:
            return pos < s.end && n.set.test(s.cps[pos]) && k(pos + 1);
        case kind::bol: return pos == s.begin && k(pos);
        case kind::eol: return pos == s.end && k(pos);
        case kind::alt:
            for (auto c : n.children)
                if (match(s, c, pos, k, depth)) return true;
            return false;
        case kind::seq: return match_seq(s, n, 0, pos, k, depth);
        case kind::look: {
            auto any = [](std::size_t) { return true; };
            const bool found = match(s, n.children[0], pos, cont::of(any), depth);
            return found != n.negative && k(pos);
        }
        case kind::repeat:
            if (n.unit) {
                std::size_t run = 0;
                while (run < n.max && pos + run < s.end && unit_test(n.children[0], s.cps[pos + run])) ++run;
                if (run < n.min) return false;
                if (n.lazy) {
                    for (std::size_t j = n.min; j <= run; ++j)
                        if (k(pos + j)) return true;
                } else {
                    for (std::size_t j = run + 1; j-- > n.min;)
                        if (k(pos + j)) return true;
                }
                return false;
            }
            return match_repeat(s, n, 0, pos, k, depth);
        }
        return false;
    }

    bool match_seq(const subject& s, const node& n, std::size_t i, std::size_t pos, cont k, budget& depth) const {
        if (i == n.children.size()) return k(pos);
        auto rest = [&](std::size_t p) { return match_seq(s, n, i + 1, p, k, depth); };
        return match(s, n.children[i], pos, cont::of(rest), depth);
    }

    bool match_repeat(const subject& s, const node& n, std::size_t count, std::size_t pos, cont k,
                      budget& depth) const {
        auto more = [&] {
            if (count >= n.max) return false;
            // An iteration that consumes nothing ends the loop (as PCRE does).
            auto again = [&](std::size_t p) { return p != pos && match_repeat(s, n, count + 1, p, k, depth); };
            return match(s, n.children[0], pos, cont::of(again), depth);
        };
        if (n.lazy) return (count >= n.min && k(pos)) || more();
        return more() || (count >= n.min && k(pos));
    }

    static constexpr std::size_t max_nesting = 200;
    std::string pattern_;
    std::vector<node> nodes_;
    std::size_t root_ = 0, nesting_ = 0;
};

/// Splits `text` by `patterns` applied in turn, each to every piece the previous one left
/// (a pre-tokenizer's list); appends the non-empty pieces as (byte offset, byte length).
inline void split_text(std::string_view text, std::span<const split_regex> patterns,
                       std::vector<std::pair<std::size_t, std::size_t>>& words) {
    std::vector<char32_t> cps;
    std::vector<std::size_t> off;
    cps.reserve(text.size());
    off.reserve(text.size() + 1);
    for (std::size_t i = 0; i < text.size();) {
        const auto u = unicode::decode_utf8(text, i);
        cps.push_back(u.valid ? u.cp : invalid_cp);
        off.push_back(i);
        i += u.len;
    }
    off.push_back(text.size());
    std::vector<std::pair<std::size_t, std::size_t>> pieces{{0, cps.size()}}, next;
    for (const auto& re : patterns) {
        next.clear();
        for (const auto& [a, b] : pieces) re.split(cps, a, b, next);
        pieces.swap(next);
    }
    for (const auto& [a, b] : pieces)
        if (b > a) words.emplace_back(off[a], off[b] - off[a]);
}

} // namespace archetype::tokenizer
