#pragma once
// The pre-tokenizers of byte-level BPE vocabularies, keyed by the name llama.cpp's
// converter writes to tokenizer.ggml.pre: each is a list of split patterns applied in
// turn (each splits every piece the previous one left, matches and gaps both kept) and
// whether whole words found in the vocabulary skip the merges (Hugging Face's BPE
// `ignore_merges`, Llama 3's tokenizer.json). The patterns are llama.cpp's
// (src/llama-vocab.cpp), which rewrites `(?i:'s|...)` as `'[sS]|...`; they are the
// tokenizer.json patterns of the models named. Names whose llama.cpp handling is not a
// list of patterns (custom digit grouping, Han-script rules, SentencePiece-style BPE over
// raw UTF-8) are not here: they are refused by name, never approximated.
#include <span>
#include <string_view>
#include <vector>

namespace archetype::tokenizer {

struct bpe_pre_rule {
    std::span<const std::string_view> names;     // tokenizer.ggml.pre values
    std::span<const std::string_view> patterns;  // split patterns, in order
    bool ignore_merges = false;
    bool gpt2_fast_path = false;   // exactly GPT-2's pattern: the hand-written splitter
    bool digits_then_gpt2 = false; // \p{N} then GPT-2's: the hand-written splitter too
    bool add_bos = false;          // llama.cpp's add_bos when the file has no add_bos_token
};

namespace detail::pre {
using sv = std::string_view;
inline constexpr sv gpt2_re = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
inline constexpr sv contractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
inline constexpr sv llama3_re =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr sv qwen2_re =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline constexpr sv gpt2_names[] = {"gpt2", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
                                    "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jina-v1-en",
                                    "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais", "trillion",
                                    "granite-docling"};
inline constexpr sv gpt2_pats[] = {gpt2_re};

// llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT: "default", and a file without tokenizer.ggml.pre
// (older conversions: GPT-NeoX, Aquila). Not GPT-2's pattern: punctuation runs and digit
// triples are split off first.
inline constexpr sv default_names[] = {"default"};
inline constexpr sv default_pats[] = {R"([\p{P}\$\+<=>\^~\|]+)", gpt2_re, R"(\p{N}+)", "[0-9][0-9][0-9]"};

inline constexpr sv starcoder_names[] = {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone",
                                         "minerva-7b", "mellum2"};
inline constexpr sv starcoder_pats[] = {R"(\p{N})", gpt2_re};

inline constexpr sv llama3_names[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                                      "midm-2.0", "lfm2", "jina-v5-nano"};
inline constexpr sv llama3_pats[] = {llama3_re};
inline constexpr sv dbrx_names[] = {"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"};

inline constexpr sv qwen2_names[] = {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2",
                                     "hunyuan", "solar-open", "grok-2"};
inline constexpr sv qwen2_pats[] = {qwen2_re};

inline constexpr sv qwen35_names[] = {"qwen35"};
inline constexpr sv qwen35_pats[] = {
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};

inline constexpr sv deepseek_coder_names[] = {"deepseek-coder"};
inline constexpr sv deepseek_coder_pats[] = {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)",
                                             "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", R"(\p{N})"};

inline constexpr sv deepseek_llm_names[] = {"deepseek-llm"};
inline constexpr sv deepseek_llm_pats[] = {
    "[\r\n]",
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373"
    "\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f"
    "\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d"
    "\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4"
    "\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d"
    "\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a"
    "\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2"
    "\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
    "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
    R"(\s+$)",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    R"(\p{N}+)"};

inline constexpr sv deepseek3_names[] = {"deepseek-v3", "hunyuan-dense", "joyai-llm"};
inline constexpr sv deepseek3_pats[] = {
    R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};

inline constexpr sv falcon_names[] = {"falcon"};
inline constexpr sv falcon_pats[] = {R"([\p{P}\$\+<=>\^~\|`]+)", gpt2_re, "[0-9][0-9][0-9]"};

inline constexpr sv bloom_names[] = {"bloom", "poro-chat", "gpt3-finnish"};
inline constexpr sv bloom_pats[] = {" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"};

inline constexpr sv viking_names[] = {"viking"};
inline constexpr sv viking_pats[] = {" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+", R"(\p{N})"};

inline constexpr sv tekken_names[] = {"tekken"};
inline constexpr sv tekken_pats[] = {
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};

inline constexpr sv gpt4o_names[] = {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"};
inline constexpr sv gpt4o_pats[] = {
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};

inline constexpr sv seed_coder_names[] = {"seed-coder"};
inline constexpr sv seed_coder_pats[] = {
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"};

inline constexpr sv bailing_names[] = {"bailingmoe", "bailingmoe2", "llada-moe"};
inline constexpr sv bailing_pats[] = {
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"};

inline constexpr sv laguna_names[] = {"laguna"};
inline constexpr sv laguna_pats[] = {R"([^\n]+|[\n]+)", qwen2_re};

inline constexpr sv exaone_moe_names[] = {"exaone-moe"};
inline constexpr sv exaone_moe_pats[] = {
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)"};

inline constexpr sv minicpm5_names[] = {"minicpm5"};
inline constexpr sv minicpm5_pats[] = {
    R"(\p{N}{1,3})",
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};

inline constexpr bpe_pre_rule rules[] = {
    {gpt2_names, gpt2_pats, false, true, false},
    {starcoder_names, starcoder_pats, false, false, true},
    {llama3_names, llama3_pats, true, false, false, true},
    {default_names, default_pats, false},
    {dbrx_names, llama3_pats, false},
    {qwen2_names, qwen2_pats, false},
    {qwen35_names, qwen35_pats, false},
    {deepseek_coder_names, deepseek_coder_pats, false},
    {deepseek_llm_names, deepseek_llm_pats, false},
    {deepseek3_names, deepseek3_pats, false},
    {falcon_names, falcon_pats, false},
    {bloom_names, bloom_pats, false},
    {viking_names, viking_pats, false},
    {tekken_names, tekken_pats, true, false, false, true},
    {gpt4o_names, gpt4o_pats, false},
    {seed_coder_names, seed_coder_pats, false},
    {bailing_names, bailing_pats, false},
    {laguna_names, laguna_pats, false},
    {exaone_moe_names, exaone_moe_pats, false},
    {minicpm5_names, minicpm5_pats, true},
};
} // namespace detail::pre

/// The rule llama.cpp keys by `name`, or nullptr when it has none (the caller refuses it).
inline const bpe_pre_rule* bpe_pre_by_name(std::string_view name) noexcept {
    for (const auto& r : detail::pre::rules)
        for (auto n : r.names)
            if (n == name) return &r;
    return nullptr;
}

} // namespace archetype::tokenizer
