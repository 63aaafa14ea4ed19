// Differential libFuzzer target for the SentencePiece tokenizer of GGUF files
// (runtime/tokenizer/spm.hpp, ordered_specials in tokenizer.hpp) on whitespace runs and
// Unicode (issue 43). Every input builds a vocabulary and a text; archetype's ids must
// equal those of a deliberately naive reference written below, which shares no code
// with the library (only std::string and std::sort). The reference is llama.cpp's
// SentencePiece path (src/llama-vocab.cpp: tokenizer_st_partition, then
// llm_tokenizer_spm_session), restated the slow, obvious way:
//  1. special tokens (CONTROL, USER_DEFINED, UNKNOWN), ordered by std::sort on text
//     length, longest first, over the ascending ids (llama.cpp's cache_special_tokens);
//     each cuts every leftmost non-overlapping occurrence of its text out of the plain
//     stretches the longer ones left;
//  2. each plain stretch gets " " in front when add_space_prefix and it starts the text
//     or follows a special token; spaces become U+2581;
//  3. symbols: a lead byte's length by its high four bits (0xxx, 10xx: 1; 110x: 2;
//     1110: 3; 1111: 4), cut at the end of the stretch — llama.cpp's unicode_len_utf8,
//     which does not validate, so "\xE4ab" is one symbol;
//  4. O(n^2) merging: scan every adjacent pair, join the one whose joined text is a token
//     with the highest score (leftmost on ties, strict >), until no pair joins;
//  5. a symbol that is not a token: its bytes as <0xXX> tokens, or one unk without them.
// Properties besides equality: every id is inside the vocabulary; encode(x, true) is
// encode(x, false) with BOS / EOS around it; decode(encode(x)) == x where the tokenizer
// says it is lossless and the text is valid UTF-8 without a literal U+2581 or unk text.
//
// Vocabularies: a small synthetic one built from the input (control "<b>" / "<e>", unknown
// "<u>", 256 byte tokens or none or some, Gemma-like user-defined runs of 2..N spaces and
// of tabs and "\n\n", fuzzer-chosen user-defined/control tokens that overlap each other,
// and fuzzer-chosen normal pieces of spaces, tabs, newlines, letters, combining marks,
// CJK, emoji and ZWJ with fuzzer-chosen scores, ties included); or one of the real GGUF
// vocabularies named in $ARCHETYPE_FUZZ_SPM_VOCABS (colon-separated; fuzz/run.sh 1800 spm
// passes Gemma 3's and llama.cpp's ggml-vocab-llama-spm.gguf when present).
// Text: runs of an atom (space, tab, newline, CR, letters, U+0301, é both ways, CJK, emoji,
// ZWJ, a literal U+2581, special-token text, invalid bytes: lone continuation, 0xFF,
// truncated sequences, overlong, surrogate, 5-byte form), whitespace runs up to 70 long;
// or the input's bytes verbatim. At most 640 bytes, so the O(n^2) reference stays fast.
//
// Input: [flags][vocab][text] (see LLVMFuzzerTestOneInput). A mismatch prints both id
// lists and aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "archetype/io/gguf.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "archetype/runtime/tokenizer/spm.hpp"

namespace {

using archetype::tokenizer::spm_tokenizer;

// ---------------------------------------------------------------- the reference
constexpr int t_normal = 1, t_unknown = 2, t_control = 3, t_user = 4, t_byte = 6;

struct ref_vocab {
    std::vector<std::string> text;
    std::vector<float> score;
    std::vector<int> type;
    int bos = -1, eos = -1, unk = -1;
    bool add_bos = true, add_eos = false, add_space_prefix = true;
    // derived
    std::unordered_map<std::string, int> id_of; // every token; of equal texts the last
    std::vector<int> specials;                  // longest first

    void finish() {
        id_of.clear();
        specials.clear();
        for (int i = 0; i < int(text.size()); ++i) {
            id_of[text[i]] = i;
            if (type[i] == t_control || type[i] == t_user || type[i] == t_unknown) specials.push_back(i);
        }
        std::sort(specials.begin(), specials.end(),
                  [&](int a, int b) { return text[a].size() > text[b].size(); });
    }
    int find(const std::string& s) const {
        auto it = id_of.find(s);
        return it == id_of.end() ? -1 : it->second;
    }
};

std::size_t lead_len(unsigned char b) {
    static const std::size_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[b >> 4];
}

void ref_spm(const ref_vocab& v, const std::string& s, std::vector<int>& out) {
    std::vector<std::string> sym;
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = std::min(lead_len(static_cast<unsigned char>(s[i])), s.size() - i);
        sym.push_back(s.substr(i, n));
        i += n;
    }
    for (;;) {
        int best = -1;
        float best_score = 0;
        for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
            const int id = v.find(sym[i] + sym[i + 1]);
            if (id < 0) continue;
            if (best < 0 || v.score[id] > best_score) {
                best = int(i);
                best_score = v.score[id];
            }
        }
        if (best < 0) break;
        sym[best] += sym[best + 1];
        sym.erase(sym.begin() + best + 1);
    }
    for (const auto& p : sym) {
        const int id = v.find(p);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        bool all_bytes = true;
        std::vector<int> bytes;
        for (unsigned char c : p) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", c);
            const int b = v.find(name);
            if (b < 0 || v.type[b] != t_byte) all_bytes = false;
            bytes.push_back(b);
        }
        if (all_bytes) out.insert(out.end(), bytes.begin(), bytes.end());
        else out.push_back(v.unk);
    }
}

std::vector<int> ref_encode(const ref_vocab& v, const std::string& text, bool add_special) {
    struct frag {
        std::string s;
        int id; // -1: plain text
    };
    std::vector<frag> frags;
    if (!text.empty()) frags.push_back({text, -1});
    for (int sp : v.specials) {
        const std::string& t = v.text[sp];
        if (t.empty()) continue;
        std::vector<frag> next;
        for (auto& f : frags) {
            if (f.id >= 0) {
                next.push_back(f);
                continue;
            }
            std::size_t start = 0;
            for (;;) {
                const std::size_t m = f.s.find(t, start);
                if (m == std::string::npos) break;
                if (m > start) next.push_back({f.s.substr(start, m - start), -1});
                next.push_back({"", sp});
                start = m + t.size();
            }
            if (start < f.s.size()) next.push_back({f.s.substr(start), -1});
        }
        frags = std::move(next);
    }
    std::vector<int> out;
    if (add_special && v.add_bos) out.push_back(v.bos);
    bool prev_special = true;
    for (const auto& f : frags) {
        if (f.id >= 0) {
            out.push_back(f.id);
            prev_special = true;
            continue;
        }
        std::string s = v.add_space_prefix && prev_special ? " " : "";
        s += f.s;
        std::string esc;
        for (char c : s) {
            if (c == ' ') esc += "\xE2\x96\x81";
            else esc += c;
        }
        ref_spm(v, esc, out);
        prev_special = false;
    }
    if (add_special && v.add_eos) out.push_back(v.eos);
    return out;
}

bool ref_valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char b = static_cast<unsigned char>(s[i]);
        std::size_t n;
        std::uint32_t cp;
        if (b < 0x80) { ++i; continue; }
        else if (b >= 0xC2 && b <= 0xDF) { n = 2; cp = b & 0x1F; }
        else if (b >= 0xE0 && b <= 0xEF) { n = 3; cp = b & 0x0F; }
        else if (b >= 0xF0 && b <= 0xF4) { n = 4; cp = b & 0x07; }
        else return false;
        if (i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k) {
            const unsigned char c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cp = cp << 6 | (c & 0x3F);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}

// ---------------------------------------------------------------- input reading
struct reader {
    const std::uint8_t* p;
    std::size_t n;
    std::uint8_t byte() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
};

// Pieces of normal tokens (a space is U+2581 there) and of special tokens (a space is " ").
const char* const piece_atoms[16] = {"\xE2\x96\x81", "\t", "\n", "a", "b", "e", "\xCC\x81", "\xC3\xA9",
                                     "\xE4\xB8\xAD", "\xE6\x96\x87", "\xF0\x9F\x98\x80", "\xE2\x80\x8D",
                                     "\xF0\x9F\x91\x8D", "<", ">", "\r"};
const char* const text_atoms[32] = {
    " ", "\t", "\n", "a", "b", "e", "\xCC\x81", "\xC3\xA9", "\xE4\xB8\xAD", "\xE6\x96\x87",
    "\xF0\x9F\x98\x80", "\xE2\x80\x8D", "\xF0\x9F\x91\x8D", "<", ">", "\r",
    "\xE2\x96\x81",          // a literal U+2581
    "\x80", "\xFF", "\xE4",  // lone continuation byte, never a lead, a lone lead byte
    "\xF0\x9F\x98",          // a truncated emoji
    "\xC0\x80",              // overlong NUL
    "\xED\xA0\x80",          // a surrogate
    "\xF8\x88\x80\x80\x80",  // a 5-byte form
    "x", " \t", "\n ", "<b>", "<e>", "e\xCC\x81", "\xE4\xB8", "\xC3"};

std::string atom_text(bool special, std::uint8_t a) {
    const char* s = piece_atoms[a & 15];
    if (special && (a & 15) == 0) return " ";
    return s;
}

struct real_vocab {
    std::unique_ptr<archetype::tokenizer::tokenizer> lib;
    ref_vocab ref;
};

std::vector<real_vocab>& real_vocabs() {
    static std::vector<real_vocab> v;
    return v;
}

[[noreturn]] void mismatch(const char* what, const std::string& text, const std::vector<std::int32_t>& got,
                           const std::vector<int>& want) {
    std::fprintf(stderr, "\n%s\ntext (%zu bytes):", what, text.size());
    for (unsigned char c : text) std::fprintf(stderr, " %02x", c);
    std::fprintf(stderr, "\narchetype:");
    for (auto i : got) std::fprintf(stderr, " %d", i);
    std::fprintf(stderr, "\nreference:");
    for (auto i : want) std::fprintf(stderr, " %d", i);
    std::fprintf(stderr, "\n");
    std::abort();
}

void check(const archetype::tokenizer::tokenizer& t, const ref_vocab& v, const std::string& text, bool add_special,
           bool compare) {
    std::vector<std::int32_t> got;
    try {
        got = t.encode(text, add_special);
    } catch (const archetype::error&) {
        if (compare) mismatch("archetype threw", text, {}, {});
        return;
    }
    for (auto id : got)
        if (id < 0 || std::size_t(id) >= v.text.size()) mismatch("id outside the vocabulary", text, got, {});
    if (!compare) return;
    const auto want = ref_encode(v, text, add_special);
    if (std::vector<int>(got.begin(), got.end()) != want) mismatch("ids differ from the reference", text, got, want);
    // encode(x, true) is encode(x, false) framed by BOS / EOS
    const auto plain = t.encode(text, !add_special);
    const auto& with = add_special ? got : plain;
    const auto& without = add_special ? plain : got;
    std::vector<std::int32_t> framed;
    if (v.add_bos) framed.push_back(v.bos);
    framed.insert(framed.end(), without.begin(), without.end());
    if (v.add_eos) framed.push_back(v.eos);
    if (framed != with) mismatch("add_special is not BOS + ids + EOS", text, with, {framed.begin(), framed.end()});
    // lossless round trip
    const bool unk_text = v.unk >= 0 && !v.text[v.unk].empty() && text.find(v.text[v.unk]) != std::string::npos;
    if (t.lossless() && ref_valid_utf8(text) && text.find("\xE2\x96\x81") == std::string::npos && !unk_text) {
        const std::string back = t.decode(without);
        if (back != text) mismatch(("decode(encode(x)) != x: '" + back + "'").c_str(), text, without, {});
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* env = std::getenv("ARCHETYPE_FUZZ_SPM_VOCABS");
    if (!env) return 0;
    std::string list = env;
    for (std::size_t a = 0; a <= list.size();) {
        std::size_t b = list.find(':', a);
        if (b == std::string::npos) b = list.size();
        const std::string path = list.substr(a, b - a);
        a = b + 1;
        if (path.empty()) continue;
        const auto f = archetype::gguf::file::open(path);
        if (f.get<std::string>("tokenizer.ggml.model") != "llama") continue;
        real_vocab rv;
        rv.lib = archetype::tokenizer::load_tokenizer(f);
        auto& r = rv.ref;
        r.text = f.get<std::vector<std::string>>("tokenizer.ggml.tokens");
        r.score = f.get_or<std::vector<float>>("tokenizer.ggml.scores", std::vector<float>(r.text.size(), 0.0f));
        r.type = f.get_or<std::vector<std::int32_t>>("tokenizer.ggml.token_type",
                                                     std::vector<std::int32_t>(r.text.size(), t_normal));
        auto id = [&](const char* k) { return f.has(k) ? f.get<int>(k) : -1; };
        r.bos = id("tokenizer.ggml.bos_token_id");
        r.eos = id("tokenizer.ggml.eos_token_id");
        r.unk = id("tokenizer.ggml.unknown_token_id");
        r.add_bos = f.get_or<bool>("tokenizer.ggml.add_bos_token", true);
        r.add_eos = f.get_or<bool>("tokenizer.ggml.add_eos_token", false);
        r.add_space_prefix = f.get_or<bool>("tokenizer.ggml.add_space_prefix", true);
        r.finish();
        std::fprintf(stderr, "fuzz_tokenizer_spm: %s: %zu tokens, %zu special\n", path.c_str(), r.text.size(),
                     r.specials.size());
        real_vocabs().push_back(std::move(rv));
    }
    return 0;
}

// Input:
//  byte 0, flags: bit 0 add_space_prefix; bits 1-2 byte tokens (0, 1: all 256; 2: none,
//    unk instead; 3: some — ids not compared, the library's rule for a piece whose bytes
//    are partly missing is its own); bit 3 Gemma-like whitespace runs; bit 4 a normal "▁";
//    bit 5 add_special; bit 6 the rest of the input is the text verbatim; bit 7 every
//    prefix of a normal token is a token too.
//  byte 1: bit 7 set and real vocabularies loaded: real vocabulary (byte 1 & 127) % count,
//    the text follows at byte 2. Else the longest space run token (2 + byte % 40);
//  byte 2: the longest tab run token (2 + byte % 40); byte 3: normal tokens (% 65), each
//    [1 + h % 5 atoms, score byte, atoms]; then special tokens (% 9), each [type (even:
//    user-defined, odd: control), 1 + h % 4 atoms, atoms];
//  the text: verbatim, or pairs [atom % 32, count] (whitespace atoms repeat 1 + count % 70
//    times, the others 1 + count % 8), at most 640 bytes.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    reader in{data, size};
    const std::uint8_t flags = in.byte();
    const std::uint8_t sel = in.byte();
    const bool use_real = (sel & 0x80) && !real_vocabs().empty();

    ref_vocab own_v;
    const ref_vocab* vp = &own_v;
    std::unique_ptr<spm_tokenizer> own;
    const archetype::tokenizer::tokenizer* lib = nullptr;
    bool compare = true;
    if (use_real) {
        auto& rv = real_vocabs()[(sel & 127) % real_vocabs().size()];
        lib = rv.lib.get();
        vp = &rv.ref;
    } else {
        ref_vocab& v = own_v;
        const int bytes_mode = (flags >> 1) & 3;
        const bool ws_runs = flags & 8, has_space = flags & 16, closure = flags & 128;
        const int max_space = 2 + sel % 40, max_tab = 2 + in.byte() % 40;
        std::map<std::string, bool> seen;
        auto add = [&](const std::string& t, float score, int type) {
            if (t.empty() || seen.count(t)) return;
            seen[t] = true;
            v.text.push_back(t);
            v.score.push_back(score);
            v.type.push_back(type);
        };
        add("<u>", 0, t_unknown);
        add("<b>", 0, t_control);
        add("<e>", 0, t_control);
        v.unk = 0; v.bos = 1; v.eos = 2;
        v.add_space_prefix = flags & 1;
        v.add_bos = true;
        v.add_eos = sel & 64;
        if (bytes_mode != 2) {
            for (int b = 0; b < 256; ++b) {
                if (bytes_mode == 3 && ((b * 37 + sel) & 3) == 0) continue;
                char name[8];
                std::snprintf(name, sizeof name, "<0x%02X>", b);
                add(name, 0, t_byte);
            }
        }
        if (bytes_mode == 3) compare = false;
        if (has_space) add("\xE2\x96\x81", -1, t_normal);
        if (ws_runs) {
            for (int n = 2; n <= max_space; ++n) add(std::string(std::size_t(n), ' '), 0, t_user);
            for (int n = 2; n <= max_tab; ++n) add(std::string(std::size_t(n), '\t'), 0, t_user);
            add("\n\n", 0, t_user);
        }
        const int n_normal = in.byte() % 65;
        std::vector<std::pair<std::string, float>> normal;
        for (int k = 0; k < n_normal; ++k) {
            const std::uint8_t h = in.byte();
            const float score = float(static_cast<std::int8_t>(in.byte())) / 4.0f;
            std::string t;
            const int atoms = 1 + h % 5;
            for (int a = 0; a < atoms; ++a) {
                t += atom_text(false, in.byte());
                if (closure) normal.push_back({t, score - float(atoms - a)});
            }
            normal.push_back({t, score});
        }
        const int n_special = in.byte() % 9;
        std::vector<std::pair<std::string, int>> special;
        for (int k = 0; k < n_special; ++k) {
            const std::uint8_t h = in.byte();
            std::string t;
            for (int a = 0, atoms = 1 + (h >> 1) % 4; a < atoms; ++a) t += atom_text(true, in.byte());
            special.push_back({t, h & 1 ? t_control : t_user});
        }
        for (auto& [t, ty] : special) add(t, 0, ty);
        for (auto& [t, s] : normal) add(t, s, t_normal);
        v.finish();
        spm_tokenizer::config c;
        c.tokens = v.text;
        c.scores = v.score;
        c.types.assign(v.type.begin(), v.type.end());
        c.bos = v.bos; c.eos = v.eos; c.unk = v.unk;
        c.add_bos = v.add_bos; c.add_eos = v.add_eos; c.add_space_prefix = v.add_space_prefix;
        own = std::make_unique<spm_tokenizer>(std::move(c));
        lib = own.get();
    }

    std::string text;
    if (flags & 64) {
        text.assign(reinterpret_cast<const char*>(in.p), std::min<std::size_t>(in.n, 640));
    } else {
        while (in.n > 0 && text.size() < 640) {
            const std::uint8_t a = in.byte() % 32, c = in.byte();
            const bool ws = a <= 2 || a == 15;
            const int reps = 1 + (ws ? c % 70 : c % 8);
            for (int r = 0; r < reps; ++r) text += text_atoms[a];
        }
        if (text.size() > 640) text.resize(640);
    }
    check(*lib, *vp, text, flags & 32, compare);
    return 0;
}
