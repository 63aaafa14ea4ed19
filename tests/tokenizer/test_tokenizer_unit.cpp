// Tokenizers on tiny handmade vocabularies (no model file): expected ids worked out by
// hand from each algorithm's definition, UTF-8 edge cases, hostile inputs.
#define BOOST_TEST_MODULE tokenizer_unit
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/runtime/tokenizer/bpe_pre.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "archetype/runtime/tokenizer/split_regex.hpp"
#include "archetype/runtime/unicode.hpp"

using namespace archetype;
using namespace archetype::tokenizer;
using ids_t = std::vector<std::int32_t>;

BOOST_AUTO_TEST_SUITE(utf8)

BOOST_AUTO_TEST_CASE(valid_sequences) {
    const std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"; // a é 中 😀
    std::vector<char32_t> cps;
    for (std::size_t i = 0; i < s.size();) {
        const auto u = unicode::decode_utf8(s, i);
        BOOST_TEST(u.valid);
        cps.push_back(u.cp);
        i += u.len;
    }
    BOOST_TEST((cps == std::vector<char32_t>{U'a', 0xE9, 0x4E2D, 0x1F600}));
    std::string back;
    for (auto c : cps) unicode::append_utf8(back, c);
    BOOST_TEST(back == s);
}

BOOST_AUTO_TEST_CASE(invalid_sequences_are_one_byte) {
    // overlong '/', surrogate D800, truncated 3-byte, stray continuation, F5 lead, > U+10FFFF
    for (std::string s : {std::string("\xC0\xAF"), std::string("\xED\xA0\x80"), std::string("\xE2\x82"),
                          std::string("\x80"), std::string("\xF5\x80\x80\x80"), std::string("\xF4\x90\x80\x80")}) {
        const auto u = unicode::decode_utf8(s, 0);
        BOOST_TEST(!u.valid);
        BOOST_TEST(u.len == 1);
        BOOST_TEST(!unicode::is_valid_utf8(s));
    }
}

BOOST_AUTO_TEST_CASE(categories_and_case) {
    using unicode::category;
    BOOST_TEST((unicode::category_of(U'a') == category::letter));
    BOOST_TEST((unicode::category_of(0x4E2D) == category::letter));
    BOOST_TEST((unicode::category_of(U'7') == category::number));
    BOOST_TEST((unicode::category_of(0x00BD) == category::number)); // ½ is No
    BOOST_TEST((unicode::category_of(U'!') == category::punctuation));
    BOOST_TEST((unicode::category_of(U'$') == category::symbol));
    BOOST_TEST((unicode::category_of(0x0301) == category::mark_nonspacing));
    BOOST_TEST((unicode::category_of(0x0007) == category::other));
    BOOST_TEST((unicode::category_of(0xE000) == category::other));       // private use (Co)
    BOOST_TEST((unicode::category_of(0x10FFFF) == category::unassigned)); // noncharacter (Cn)
    BOOST_TEST((unicode::category_of(0x200000) == category::unassigned)); // beyond Unicode: no crash
    BOOST_TEST(unicode::is_whitespace(0x3000));
    BOOST_TEST(!unicode::is_whitespace(0x200B)); // zero width space is Cf, not White_Space
    BOOST_TEST(std::uint32_t(unicode::to_lower(U'A')) == std::uint32_t(U'a'));
    BOOST_TEST(std::uint32_t(unicode::to_lower(0xC4)) == std::uint32_t(char32_t(0xE4)));     // Ä
    BOOST_TEST(std::uint32_t(unicode::to_lower(0x3A3)) == std::uint32_t(char32_t(0x3C3)));   // Σ
    BOOST_TEST(std::uint32_t(unicode::to_lower(0x100)) == std::uint32_t(char32_t(0x101)));   // Ā (stride-2 run)
    BOOST_TEST(std::uint32_t(unicode::to_lower(0x101)) == std::uint32_t(char32_t(0x101)));
    BOOST_TEST(std::uint32_t(unicode::to_lower(0x410)) == std::uint32_t(char32_t(0x430)));   // А
    std::u32string out;
    unicode::append_stripped(out, 0xE9);   // é -> e
    unicode::append_stripped(out, 0x1E09); // ḉ -> c
    unicode::append_stripped(out, 0x0344); // combining dialytika tonos -> nothing
    unicode::append_stripped(out, 0xAC01); // 각 -> ᄀ ᅡ ᆨ
    BOOST_TEST((out == std::u32string{U'e', U'c', 0x1100, 0x1161, 0x11A8}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(gpt2_bpe)

// The GPT-2 alphabet spelling of a string's bytes.
static std::string spell(std::string_view s) {
    const auto m = gpt2_byte_to_cp();
    std::string out;
    for (unsigned char b : s) unicode::append_utf8(out, m[b]);
    return out;
}

static bpe_tokenizer make_bpe(bpe_pre pre = bpe_pre::gpt2) {
    bpe_tokenizer::config c;
    for (int b = 0; b < 256; ++b) c.tokens.push_back(spell(std::string(1, char(b))));
    // 256 he, 257 ll, 258 hell, 259 hello, 260 Ġh, 261 Ġhello, 262 <|end|> (control)
    for (auto t : {"he", "ll", "hell", "hello", " h", " hello"}) c.tokens.push_back(spell(t));
    c.tokens.push_back("<|end|>");
    c.types.assign(c.tokens.size(), 1);
    c.types.back() = 3;
    c.merges = {spell("h") + " " + spell("e"), spell("l") + " " + spell("l"), spell("he") + " " + spell("ll"),
                spell("hell") + " " + spell("o"), spell(" ") + " " + spell("h"), spell(" h") + " " + spell("ello")};
    c.merges.push_back(spell(" h") + " " + spell("e")); // result " he" is not a token: skipped
    c.eos = 262;
    c.pre = pre;
    return bpe_tokenizer(std::move(c));
}

BOOST_AUTO_TEST_CASE(pre_tokenizer_words) {
    const std::string text = "Hello world  x\n\ny 's 123 !!";
    std::vector<std::pair<std::size_t, std::size_t>> w;
    gpt2_split(text, w);
    std::vector<std::string> got;
    for (auto [a, n] : w) got.push_back(text.substr(a, n));
    const std::vector<std::string> want = {"Hello", " world", " ", " x", "\n", "\n", "y", " '", "s", " 123", " !!"};
    BOOST_TEST(got == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(merges_by_rank) {
    const auto t = make_bpe();
    // "hello": h e -> he, l l -> ll, he ll -> hell, hell o -> hello.
    BOOST_TEST(t.encode("hello", false) == (ids_t{259}), boost::test_tools::per_element());
    // " hello" is one pre-token; h e (rank 0) goes before Ġ h (rank 4), then ll, hell,
    // hello; Ġ + hello has no merge -> [Ġ (byte 32), hello].
    BOOST_TEST(t.encode(" hello", false) == (ids_t{32, 259}), boost::test_tools::per_element());
    BOOST_TEST(t.encode(" h", false) == (ids_t{260}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("hex<|end|>", false) == (ids_t{256, 'x', 262}), boost::test_tools::per_element());
    BOOST_TEST(t.decode(t.encode("hello <|end|> hex", false)) == "hello <|end|> hex");
}

BOOST_AUTO_TEST_CASE(smollm_digits) {
    const auto t = make_bpe(bpe_pre::smollm);
    BOOST_TEST(t.encode("a12", false) == (ids_t{'a', '1', '2'}), boost::test_tools::per_element());
    std::vector<std::pair<std::size_t, std::size_t>> w;
    gpt2_split(" 12", w);
    BOOST_TEST(w.size() == 1u);
}

// ---- split patterns (split_regex.hpp): semantics worked out from PCRE/Oniguruma's rules

static std::vector<std::string> split_with(std::initializer_list<std::string_view> patterns, const std::string& text) {
    std::vector<split_regex> res;
    for (auto p : patterns) res.emplace_back(p);
    std::vector<std::pair<std::size_t, std::size_t>> words;
    split_text(text, res, words);
    std::vector<std::string> out;
    for (auto [a, n] : words) out.push_back(text.substr(a, n));
    return out;
}

using strings = std::vector<std::string>;

BOOST_AUTO_TEST_CASE(split_regex_backtracks_greedy_runs) {
    // \s+(?!\S) gives back the last space before a word; the gap between matches is a piece.
    BOOST_TEST(split_with({R"(\s+(?!\S)| ?\p{L}+)"}, "a   b") == (strings{"a", "  ", " b"}), boost::test_tools::per_element());
    // Leftmost-first alternation: the first alternative that matches wins, not the longest.
    BOOST_TEST(split_with({"ab|abc"}, "abcx") == (strings{"ab", "cx"}), boost::test_tools::per_element());
    // {1,3} counted greedily, lazy forms take the fewest.
    BOOST_TEST(split_with({R"(\p{N}{1,3})"}, "1234567") == (strings{"123", "456", "7"}), boost::test_tools::per_element());
    BOOST_TEST(split_with({"a+?"}, "aaa") == (strings{"a", "a", "a"}), boost::test_tools::per_element());
    BOOST_TEST(split_with({"x(?:ab)+"}, "xababy") == (strings{"xabab", "y"}), boost::test_tools::per_element());
    // A lookahead inside a repeated group (tekken/gpt-4o): a run of non-lower-case
    // letters, then non-upper-case ones; "D" alone cannot end in one, so it is a gap.
    BOOST_TEST(split_with({R"(((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)"}, "HTMLParser ABcD") ==
                   (strings{"HTMLParser", " ", "ABc", "D"}), boost::test_tools::per_element());
    // (?i:...) folds ASCII case; [^...] classes with \p and escapes; $ is the piece's end.
    BOOST_TEST(split_with({"(?i:'ll)"}, "I'LL we'll") == (strings{"I", "'LL", " we", "'ll"}), boost::test_tools::per_element());
    BOOST_TEST(split_with({R"([^\r\n\p{L}\p{N}]?\p{L}+)"}, "\xC2\xA1Hola\n\xC3\xA9t\xC3\xA9") ==
                   (strings{"\xC2\xA1Hola", "\n", "\xC3\xA9t\xC3\xA9"}), boost::test_tools::per_element());
    BOOST_TEST(split_with({R"(\s+$)"}, "a  \nb  ") == (strings{"a  \nb", "  "}), boost::test_tools::per_element());
    // Pieces of a first pattern are split again by the next, never joined.
    BOOST_TEST(split_with({R"(\p{N})", R"( ?\p{N}+| ?\p{L}+)"}, "ab 12c") == (strings{"ab", " ", "1", "2", "c"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(split_regex_matches_the_hand_written_gpt2_splitter) {
    // Two implementations of one pattern must agree (the pattern list says gpt2 takes the
    // hand-written path).
    const std::string texts[] = {"Hello world  x\n\ny 's 123 !!", "   leading", "trailing   ", "\t\n \n  \t x",
                                 "I'm can't WE'RE they've", "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80\xF0\x9F\x98\x80 ok",
                                 "a\xFF\xFE b \xC3", "3.14 + x_1 == ''", "  \n\n   \t", ""};
    const auto* rule = bpe_pre_by_name("gpt-2");
    BOOST_REQUIRE(rule && rule->gpt2_fast_path && rule->patterns.size() == 1u);
    for (const auto& t : texts) {
        std::vector<std::pair<std::size_t, std::size_t>> w;
        gpt2_split(t, w);
        strings hand;
        for (auto [a, n] : w) hand.push_back(t.substr(a, n));
        auto engine = split_with({rule->patterns[0]}, t);
        if (t.empty()) engine.clear();
        BOOST_TEST(engine == hand, boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_CASE(split_regex_refuses_what_it_does_not_know) {
    auto refused = [](const std::string& p, std::string_view part) {
        try {
            split_regex re(p);
        } catch (const format_error& e) {
            const std::string what = e.what();
            return what.find(p.substr(0, 100)) != std::string::npos && what.find(std::string(part)) != std::string::npos;
        }
        return false;
    };
    BOOST_TEST(refused(R"(\p{Lu}+)", "\\p{Lu}"));
    BOOST_TEST(refused(R"(a\b)", "'\\b'"));
    BOOST_TEST(refused("(?<=a)b", "(?<"));
    BOOST_TEST(refused("a++", "possessive"));
    BOOST_TEST(refused("(ab", "')'"));
    BOOST_TEST(refused("ab)", "')'"));
    BOOST_TEST(refused("[ab", "']'"));
    BOOST_TEST(refused("a{3,1}", "m < n"));
    BOOST_TEST(refused("*a", "quantifier"));
    BOOST_TEST(refused(std::string(100000, '(') + "a" + std::string(100000, ')'), "nested deeper"));
    BOOST_TEST(refused("a{999999}", "too large"));
    // Catastrophic backtracking is bounded: an error, not a hang or a stack overflow.
    const split_regex bad("(?:a|aa)+b");
    const std::u32string many(3000, U'a');
    const std::vector<char32_t> cps(many.begin(), many.end());
    BOOST_CHECK_THROW(bad.match_at(cps, 0, cps.size(), 0), format_error);
    // A repeated group nests once per iteration: 200 000 of them are an error, not a stack
    // overflow (in every build, the sanitizer's included: there ~250 iterations fit, ~1 300
    // without it); a hundred match.
    const split_regex nested("(?:ab)+");
    std::vector<char32_t> abab;
    for (int i = 0; i < 200000; ++i) abab.push_back(i % 2 ? U'b' : U'a');
    BOOST_CHECK_THROW(nested.match_at(abab, 0, abab.size(), 0), format_error);
    BOOST_TEST(nested.match_at(abab, 0, 200, 0) == 200u);
}

BOOST_AUTO_TEST_CASE(pre_tokenizer_names_follow_llama_cpp) {
    // Every rule's patterns compile; the names the zoo's families write are known.
    for (auto name : {"gpt-2", "llama-bpe", "qwen2", "smollm", "starcoder", "olmo", "stablelm2", "deepseek-llm",
                      "deepseek-coder", "deepseek-v3", "falcon", "bloom", "viking", "tekken", "gpt-4o", "qwen35",
                      "seed-coder", "bailingmoe", "laguna", "exaone-moe", "minicpm5", "command-r", "refact", "mpt"}) {
        const auto* r = bpe_pre_by_name(name);
        BOOST_REQUIRE_MESSAGE(r, name);
        for (auto p : r->patterns) BOOST_CHECK_NO_THROW(split_regex{p});
    }
    BOOST_TEST(bpe_pre_by_name("llama-bpe")->ignore_merges);
    BOOST_TEST(!bpe_pre_by_name("qwen2")->ignore_merges);
    BOOST_TEST(bpe_pre_by_name("kimi-k2") == nullptr); // custom code in llama.cpp: refused
}

BOOST_AUTO_TEST_CASE(ignore_merges_takes_a_whole_word_token) {
    bpe_tokenizer::config c;
    for (int b = 0; b < 256; ++b) c.tokens.push_back(spell(std::string(1, char(b))));
    for (auto t : {"ab", "abc"}) c.tokens.push_back(spell(t)); // 256 ab, 257 abc
    c.merges = {spell("a") + " " + spell("b")};                 // no merge makes "abc"
    c.pre = bpe_pre::patterns;
    c.patterns = {R"(\p{L}+)"};
    auto with = c;
    with.ignore_merges = true;
    BOOST_TEST(bpe_tokenizer(std::move(c)).encode("abc", false) == (ids_t{256, 'c'}), boost::test_tools::per_element());
    BOOST_TEST(bpe_tokenizer(std::move(with)).encode("abc", false) == (ids_t{257}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_utf8_round_trips) {
    const auto t = make_bpe();
    const std::string s = "\xFF\xFE h\xC3 \x80\xED\xA0\x80 hello";
    BOOST_TEST(t.decode(t.encode(s, false)) == s);
}

BOOST_AUTO_TEST_CASE(long_word_is_not_quadratic) {
    const auto t = make_bpe();
    const std::string s(200000, 'l');
    const auto ids = t.encode(s, false);
    BOOST_TEST(ids.size() == 100000u);
    BOOST_TEST(ids.front() == 257);
}

BOOST_AUTO_TEST_CASE(bad_ids_and_files) {
    const auto t = make_bpe();
    BOOST_CHECK_THROW(t.token_to_piece(263), argument_error);
    BOOST_CHECK_THROW(t.token_to_piece(-1), argument_error);
    // A vocabulary without some bytes drops them (as HF's BPE without unk does) and
    // says it is not lossless.
    bpe_tokenizer::config c;
    c.tokens = {"!", "?", "!?"};
    c.merges = {"! ?"};
    const bpe_tokenizer small(std::move(c));
    // One pre-token "!\x04?"; \x04 has no token, so ! and ? meet and merge.
    BOOST_TEST(small.encode("!\x04?", false) == (ids_t{2}), boost::test_tools::per_element());
    BOOST_TEST(!small.lossless());
    bpe_tokenizer::config d;
    d.tokens = {"a"};
    d.merges = {"a"};
    BOOST_CHECK_THROW(bpe_tokenizer(std::move(d)), format_error); // a merge without two parts
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sentencepiece)

static spm_tokenizer::config spm_config() {
    spm_tokenizer::config c;
    // 0 <unk>, 1 <s>, 2 </s>, 3..258 bytes, 259 ▁, 260 a, 261 b, 262 ab, 263 ▁ab, 264 <t>
    c.tokens = {"<unk>", "<s>", "</s>"};
    c.types = {2, 3, 3};
    c.scores = {0, 0, 0};
    char buf[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        c.tokens.push_back(buf);
        c.types.push_back(6);
        c.scores.push_back(0);
    }
    for (auto [t, s] : std::vector<std::pair<std::string, float>>{
             {"\xE2\x96\x81", -1}, {"a", -2}, {"b", -3}, {"ab", -4}, {"\xE2\x96\x81" "ab", -5}}) {
        c.tokens.push_back(t);
        c.types.push_back(1);
        c.scores.push_back(s);
    }
    c.tokens.push_back("<t>");
    c.types.push_back(4);
    c.scores.push_back(0);
    c.unk = 0;
    c.bos = 1;
    c.eos = 2;
    return c;
}

BOOST_AUTO_TEST_CASE(merges_by_score_with_prefix) {
    const spm_tokenizer t(spm_config());
    // "ab ab" -> "▁ab▁ab": ▁a is no token; a+b (ab, -4) merges before ▁+ab (▁ab, -5).
    BOOST_TEST(t.encode("ab ab", true) == (ids_t{1, 263, 263}), boost::test_tools::per_element());
    BOOST_TEST(t.decode(t.encode("ab ab", false)) == "ab ab");
}

BOOST_AUTO_TEST_CASE(no_prefix_byte_fallback_and_user_tokens) {
    auto c = spm_config();
    c.add_space_prefix = false;
    c.add_bos = false;
    const spm_tokenizer t(std::move(c));
    BOOST_TEST(t.encode("ab ab", true) == (ids_t{262, 263}), boost::test_tools::per_element());
    // é is not in the vocabulary: its two bytes through <0xC3> <0xA9>.
    BOOST_TEST(t.encode("\xC3\xA9", false) == (ids_t{3 + 0xC3, 3 + 0xA9}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("a<t>b</s>", false) == (ids_t{260, 264, 261, 2}), boost::test_tools::per_element());
    const std::string bad = "a\xFF\xC3" "b\x80 b";
    BOOST_TEST(t.decode(t.encode(bad, false)) == bad);
    BOOST_TEST(t.lossless());
}

// Invalid UTF-8 is cut as llama.cpp's llm_tokenizer_spm_session cuts it (unicode_len_utf8):
// a lead byte's high bits give the symbol's length, unchecked and cut at the end of the
// text, so a stray lead byte takes the bytes after it into its byte tokens. Found by
// fuzz/fuzz_tokenizer_spm.cpp (issue 43); llama.cpp's ids on Gemma 3 and llama-spm agree.
BOOST_AUTO_TEST_CASE(invalid_utf8_is_cut_as_llama_cpp_does) {
    auto c = spm_config();
    c.add_space_prefix = false;
    c.add_bos = false;
    const spm_tokenizer t(std::move(c));
    auto bytes = [](std::string_view s) {
        ids_t out;
        for (unsigned char ch : s) out.push_back(3 + ch);
        return out;
    };
    // E4 announces three bytes: "\xE4ab" is one symbol, not <0xE4> + "ab" (262)
    BOOST_TEST(t.encode("\xE4" "ab", false) == bytes("\xE4" "ab"), boost::test_tools::per_element());
    // the fuzzer's case: a truncated 中 before a space swallows the first byte of its "▁"
    ids_t want = bytes("\xE4\xB8\xE2\x96\x81");
    want.push_back(262);
    BOOST_TEST(t.encode("\xE4\xB8 ab", false) == want, boost::test_tools::per_element());
    // ... so that space comes back as the bytes of "▁", as from llama.cpp's detokenizer
    BOOST_TEST(t.decode(t.encode("\xE4\xB8 ab", false)) == "\xE4\xB8\xE2\x96\x81" "ab");
    // F8..FF count as four-byte leads, C0 80 (overlong) as one two-byte symbol, a lone
    // continuation byte as one byte; a lead byte at the end is cut there
    BOOST_TEST(t.encode("\xF8" "abab", false) == (ids_t{3 + 0xF8, 3 + 'a', 3 + 'b', 3 + 'a', 261}),
               boost::test_tools::per_element());
    BOOST_TEST(t.encode("\xC0\x80" "ab\x80" "ab", false) == (ids_t{3 + 0xC0, 3 + 0x80, 262, 3 + 0x80, 262}),
               boost::test_tools::per_element());
    BOOST_TEST(t.encode("ab\xF0", false) == (ids_t{262, 3 + 0xF0}), boost::test_tools::per_element());
}

// lossless() needs a normal "▁" token besides the byte tokens: without one a space falls
// back to the bytes of "▁" and comes back as "▁" (fuzz/fuzz_tokenizer_spm.cpp).
BOOST_AUTO_TEST_CASE(lossless_needs_a_space_token) {
    auto c = spm_config();
    c.tokens[259] = "\xE2\x96\x81" "\xE2\x96\x81"; // ▁▁ instead of ▁
    c.add_space_prefix = false;
    const spm_tokenizer t(std::move(c));
    BOOST_TEST(!t.lossless());
    BOOST_TEST(t.encode("a b", false) == (ids_t{260, 3 + 0xE2, 3 + 0x96, 3 + 0x81, 261}),
               boost::test_tools::per_element());
    BOOST_TEST(t.decode(t.encode("a b", false)) == "a\xE2\x96\x81" "b");
    BOOST_TEST(spm_tokenizer(spm_config()).lossless());
}

// llama.cpp (and SentencePiece) cut user-defined tokens out whole, longest first: Gemma's
// space runs (2..31 spaces) leave what is past the longest to the text after it (issue 43).
BOOST_AUTO_TEST_CASE(user_defined_space_runs_are_cut_whole) {
    auto c = spm_config();
    c.add_space_prefix = false;
    c.add_bos = false;
    // 265 "  ", 266 "   " (user-defined, raw spaces, score -1000 as Gemma's), 267 x, 268 ▁y
    for (auto t : {"  ", "   "}) {
        c.tokens.push_back(t);
        c.types.push_back(4);
        c.scores.push_back(-1000);
    }
    for (auto [t, sc] : std::vector<std::pair<std::string, float>>{{"x", -6}, {"\xE2\x96\x81y", -7}}) {
        c.tokens.push_back(t);
        c.types.push_back(1);
        c.scores.push_back(sc);
    }
    const spm_tokenizer t(std::move(c));
    BOOST_TEST(t.encode("x   y", false) == (ids_t{267, 266, 3 + 'y'}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("x    y", false) == (ids_t{267, 266, 268}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("x     y", false) == (ids_t{267, 266, 265, 3 + 'y'}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("x       y", false) == (ids_t{267, 266, 266, 268}), boost::test_tools::per_element());
    const std::string many = "x" + std::string(1000, ' ') + "y";
    BOOST_TEST(t.decode(t.encode(many, false)) == many);
}

// With add_space_prefix, llama.cpp puts "▁" before every stretch of text that starts the
// text or follows a special token; decoding drops it again.
BOOST_AUTO_TEST_CASE(space_prefix_after_each_special_token) {
    const spm_tokenizer t(spm_config());
    BOOST_TEST(t.encode("a<t>b", false) == (ids_t{259, 260, 264, 259, 261}), boost::test_tools::per_element());
    BOOST_TEST(t.decode(t.encode("a<t>b", false)) == "a<t>b");
    BOOST_TEST(t.decode(t.encode("ab <t> ab", false)) == "ab <t> ab");
}

BOOST_AUTO_TEST_CASE(special_texts_cut_longest_first) {
    // llama.cpp's order: "bcd" (longer) is cut out before "ab", wherever it is.
    const std::vector<std::string> texts = {"ab", "bcd", "xy"};
    ordered_specials sp;
    sp.build({0, 1, 2}, [&](std::int32_t id) -> const std::string& { return texts[static_cast<std::size_t>(id)]; });
    std::string got;
    sp.split("abcd ab xyxy abc", [&](std::string_view s) { got += "[" + std::string(s) + "]"; },
             [&](std::int32_t id) { got += "<" + std::to_string(id) + ">"; });
    BOOST_TEST(got == "[a]<1>[ ]<0>[ ]<2><2>[ ]<0>[c]");
    std::string none;
    sp.split("plain", [&](std::string_view s) { none += s; }, [&](std::int32_t) { none += "?"; });
    BOOST_TEST(none == "plain");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(wordpiece)

static wordpiece_tokenizer make_wp() {
    wordpiece_tokenizer::config c;
    c.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##lo", "hel", "world", "!", ",",
                "cafe", "un", "##aff", "##able", "\xE4\xB8\xAD"};
    return wordpiece_tokenizer(std::move(c));
}

BOOST_AUTO_TEST_CASE(bert_uncased) {
    const auto t = make_wp();
    BOOST_TEST(t.encode("Hello, World!", true) == (ids_t{2, 5, 10, 8, 9, 3}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("CAF\xC3\x89", false) == (ids_t{11}), boost::test_tools::per_element()); // CAFÉ
    BOOST_TEST(t.encode("unaffable", false) == (ids_t{12, 13, 14}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("hellolo", false) == (ids_t{5, 6}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("helo", false) == (ids_t{1}), boost::test_tools::per_element()); // hel + "##o": no such piece
    BOOST_TEST(t.encode("xyz hello", false) == (ids_t{1, 5}), boost::test_tools::per_element());
    // 中 is padded with spaces (a word of its own); 文 is unknown.
    BOOST_TEST(t.encode("\xE4\xB8\xAD\xE6\x96\x87", false) == (ids_t{15, 1}), boost::test_tools::per_element());
    BOOST_TEST(t.encode(std::string(101, 'a'), false) == (ids_t{1}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("[MASK] hello[SEP]", false) == (ids_t{4, 5, 3}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("\xFF\x07 hello", false) == (ids_t{5}), boost::test_tools::per_element());
    BOOST_TEST(t.decode(ids_t{5, 10, 8, 9}) == "hello, world!");
    BOOST_TEST(t.decode(ids_t{12, 13, 14}) == "unaffable");
}

BOOST_AUTO_TEST_CASE(vocab_txt_and_tokenizer_json) {
    const std::string dir = std::filesystem::temp_directory_path().string();
    const std::string vt = dir + "/archetype_tok_vocab.txt";
    std::ofstream(vt) << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##lo\n";
    const auto a = load_wordpiece(vt);
    BOOST_TEST(a->encode("Hello hello", true) == (ids_t{2, 4, 4, 3}), boost::test_tools::per_element());
    const std::string tj = dir + "/archetype_tok_tokenizer.json";
    std::ofstream(tj) << R"({"added_tokens":[{"content":"[UNK]"}],"normalizer":{"type":"BertNormalizer","lowercase":false},
        "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":5,
        "vocab":{"[UNK]":0,"Hello":1,"[CLS]":2,"[SEP]":3,"hello":4}}})";
    const auto b = load_wordpiece(tj);
    BOOST_TEST(b->encode("Hello hello helloo", true) == (ids_t{2, 1, 4, 0, 3}), boost::test_tools::per_element());
    std::ofstream(tj) << R"({"model":{"type":"BPE","vocab":{}}})";
    BOOST_CHECK_THROW(load_wordpiece(tj), format_error);
    std::ofstream(tj) << R"({"model":{"type":"WordPiece","vocab":{"a":0,"b":5}}})";
    BOOST_CHECK_THROW(load_wordpiece(tj), format_error);
    std::remove(vt.c_str());
    std::remove(tj.c_str());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(rwkv_world)

BOOST_AUTO_TEST_CASE(greedy_longest_match) {
    const rwkv_tokenizer t({{"a", 1}, {"ab", 2}, {"abc", 3}, {"b", 4}, {"c", 5}, {"\xFF", 6}});
    BOOST_TEST(t.encode("abcab", false) == (ids_t{3, 2}), boost::test_tools::per_element());
    BOOST_TEST(t.encode("abab\xFF" "c", false) == (ids_t{2, 2, 6, 5}), boost::test_tools::per_element());
    BOOST_TEST(t.decode(ids_t{3, 6, 1}) == "abc\xFF" "a");
    BOOST_CHECK_THROW(t.encode("abd", false), argument_error);
    BOOST_CHECK_THROW(t.decode(ids_t{0}), argument_error); // id 0 is not in this vocabulary
    BOOST_CHECK_THROW(rwkv_tokenizer({{"a", 1}, {"b", 1}}), format_error);
}

BOOST_AUTO_TEST_CASE(vocabulary_file) {
    const std::string p = (std::filesystem::temp_directory_path() / "archetype_rwkv_vocab.txt").string();
    std::ofstream(p) << "1 'a' 1\n2 b'\\xff' 1\n3 '\\u00e9' 2\n4 '\\'x' 2\n5 ' ' 1\n6 \"q\\\"\" 2\n";
    const auto v = read_rwkv_vocab(p);
    BOOST_REQUIRE(v.size() == 6u);
    BOOST_TEST(v[1].first == "\xFF");
    BOOST_TEST(v[2].first == "\xC3\xA9");
    BOOST_TEST(v[3].first == "'x");
    BOOST_TEST(v[4].first == " ");
    BOOST_TEST(v[5].first == "q\"");
    std::ofstream(p) << "1 'ab' 3\n";
    BOOST_CHECK_THROW(read_rwkv_vocab(p), format_error);
    std::ofstream(p) << "1 'a\\x4' 2\n";
    BOOST_CHECK_THROW(read_rwkv_vocab(p), format_error);
    std::ofstream(p) << "x 'a' 1\n";
    BOOST_CHECK_THROW(read_rwkv_vocab(p), format_error);
    std::remove(p.c_str());
    BOOST_CHECK_THROW(read_rwkv_vocab(p), io_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(from_gguf)

BOOST_AUTO_TEST_CASE(picks_kind_from_metadata) {
    gguf::writer w;
    w.set("general.architecture", std::string("llama"));
    w.set("tokenizer.ggml.model", std::string("llama"));
    auto c = sentencepiece::spm_config();
    w.set("tokenizer.ggml.tokens", c.tokens);
    w.set("tokenizer.ggml.scores", c.scores);
    w.set("tokenizer.ggml.token_type", c.types);
    w.set("tokenizer.ggml.bos_token_id", std::uint32_t(1));
    w.set("tokenizer.ggml.eos_token_id", std::uint32_t(2));
    w.set("tokenizer.ggml.unknown_token_id", std::uint32_t(0));
    const auto bytes = w.write_to_memory();
    const auto f = gguf::file::from_memory(bytes);
    const auto t = load_tokenizer(f);
    BOOST_TEST(t->kind() == "spm");
    BOOST_TEST(t->bos_id() == 1);
    BOOST_TEST(t->encode("ab ab", true) == (ids_t{1, 263, 263}), boost::test_tools::per_element());

    gguf::writer w2;
    w2.set("tokenizer.ggml.model", std::string("unigram-x"));
    w2.set("tokenizer.ggml.tokens", std::vector<std::string>{"a"});
    const auto b2 = w2.write_to_memory();
    BOOST_CHECK_THROW(load_tokenizer(gguf::file::from_memory(b2)), format_error);

    gguf::writer w3; // bos id past the vocabulary
    w3.set("tokenizer.ggml.model", std::string("llama"));
    w3.set("tokenizer.ggml.tokens", std::vector<std::string>{"a"});
    w3.set("tokenizer.ggml.bos_token_id", std::uint32_t(7));
    const auto b3 = w3.write_to_memory();
    BOOST_CHECK_THROW(load_tokenizer(gguf::file::from_memory(b3)), format_error);
}

BOOST_AUTO_TEST_CASE(an_unknown_pre_tokenizer_is_refused_by_name) {
    gguf::writer w;
    w.set("tokenizer.ggml.model", std::string("gpt2"));
    w.set("tokenizer.ggml.pre", std::string("kimi-k2"));
    w.set("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b"});
    w.set("tokenizer.ggml.merges", std::vector<std::string>{"a b"});
    const auto b = w.write_to_memory();
    BOOST_CHECK_EXCEPTION(load_tokenizer(gguf::file::from_memory(b)), format_error, [](const format_error& e) {
        return std::string(e.what()).find("'kimi-k2'") != std::string::npos;
    });
}

BOOST_AUTO_TEST_SUITE_END()
