#pragma once
// The key ledger: every metadata key of a model file is read by a policy of the
// compiled structure, or listed here as known-unused with a reason, or the load
// fails naming it. Tensors have had their ledger since the first round
// (check_all_bound); a key that no policy reads is the same hazard: a file carrying
// `{arch}.layer_residual_scale` (a per-layer gate) ran on a plain Decoder with no
// error and logits off by 1.56.
//
// How "read" is known: every lookup of a key through gguf::file (has, get, get_or,
// find) marks it (gguf::file::was_read). A policy that reads its own keys in its
// bind hook therefore answers for them; one that only checks a key's presence to
// refuse it throws before the ledger is consulted.
//
// Not counted: `general.*`, `tokenizer.*`, `quantize.*` and `split.*` (file
// provenance, the tokenizer, the quantiser's notes and shard bookkeeping, read by
// their own code). Everything else counts, keys outside `{arch}.` included.
//
// Known-unused keys (below) are what converters write for information only; an
// entry may require a value (`expert_group_count = 1` is harmless, 8 groups change
// the router). A user's own architecture adds its own list through the loaders'
// options (decoder_options::known_unused_keys, ...).
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype {

/// What a load does with a key no policy read: refuse the file (default) or warn on
/// stderr and go on (the file's key then has no effect on the computation).
enum class unread_keys { error, warn };

/// A key a loader accepts without reading. `key` is the full name, or "{arch}." followed
/// by the rest for the file's architecture prefix. With `only_value`, only when the
/// file's value (any integer, float or bool) equals it.
struct known_unused_key {
    std::string_view key;
    std::string_view reason;
    std::optional<double> only_value = std::nullopt;
};

/// Keys converters write that no computation depends on (llama.cpp's
/// convert_hf_to_gguf.py and gguf-py writers).
inline constexpr known_unused_key shared_known_unused_keys[] = {
    // (granitehybrid's entries read it in accepts(): llama.cpp's RoPE switch there, presets/granitehybrid.hpp)
    {"{arch}.rope.scaling.finetuned", "informational: whether the checkpoint was fine-tuned at the scaled context"},
    {"{arch}.nextn_predict_layers", "no multi-token-prediction layers", 0.0},
    {"{arch}.expert_group_count", "one expert group routes as plain top-k", 1.0},
    {"{arch}.expert_group_used_count", "one expert group routes as plain top-k", 1.0},
    {"{arch}.attention.causal", "decoders are causal by construction", 1.0},
};

namespace detail {
/// A metadata value as a number, when it is one (integers, floats, bools).
inline std::optional<double> key_number(const gguf::file& f, const gguf::metadata_entry& e) {
    using vt = gguf::value_type;
    switch (e.value.type) {
    case vt::BOOL: return f.get<bool>(e.key) ? 1.0 : 0.0;
    case vt::FLOAT32:
    case vt::FLOAT64: return f.get<double>(e.key);
    case vt::UINT8: case vt::UINT16: case vt::UINT32: case vt::UINT64:
        return double(f.get<std::uint64_t>(e.key));
    case vt::INT8: case vt::INT16: case vt::INT32: case vt::INT64:
        return double(f.get<std::int64_t>(e.key));
    default: return std::nullopt;
    }
}
inline bool key_matches(std::string_view pattern, std::string_view key, std::string_view arch) {
    constexpr std::string_view a = "{arch}.";
    if (pattern.starts_with(a)) {
        return key.size() == arch.size() + 1 + (pattern.size() - a.size()) && key.starts_with(arch) &&
               key[arch.size()] == '.' && key.substr(arch.size() + 1) == pattern.substr(a.size());
    }
    return key == pattern;
}
} // namespace detail

/// Whether `key` is outside the ledger (general.*, tokenizer.*, quantize.*, split.*).
inline bool key_outside_ledger(std::string_view key) noexcept {
    for (std::string_view p : {"general.", "tokenizer.", "quantize.", "split."})
        if (key.starts_with(p)) return true;
    return false;
}

/// The keys of `f` that no lookup read and no known-unused entry (shared or `extra`)
/// covers, in file order.
inline std::vector<std::string> unread_model_keys(const gguf::file& f, std::span<const known_unused_key> extra = {}) {
    const std::string arch(f.architecture());
    std::vector<std::string> out;
    const auto& md = f.metadata();
    for (std::size_t i = 0; i < md.size(); ++i) {
        const auto& e = md[i];
        if (key_outside_ledger(e.key) || f.was_read(i)) continue;
        bool known = false;
        auto try_list = [&](std::span<const known_unused_key> list) {
            for (const auto& k : list) {
                if (known || !detail::key_matches(k.key, e.key, arch)) continue;
                if (!k.only_value) { known = true; continue; }
                const auto v = detail::key_number(f, e);
                known = v && *v == *k.only_value;
            }
        };
        try_list(shared_known_unused_keys);
        try_list(extra);
        if (!known) out.emplace_back(e.key);
    }
    return out;
}

/// The ledger's verdict at the end of a load: a shape_error naming the first unread key
/// (and how many more), or with unread_keys::warn one line per key on stderr.
inline void check_keys_read(const gguf::file& f, unread_keys mode, std::span<const known_unused_key> extra = {}) {
    const auto unread = unread_model_keys(f, extra);
    if (unread.empty()) return;
    if (mode == unread_keys::warn) {
        for (const auto& k : unread)
            std::fprintf(stderr, "archetype: warning: metadata key '%s' = %s is not read by the compiled structure "
                                 "(ignored)\n", gguf::file::printable_name(k).c_str(), f.entry(k).value.to_string().c_str());
        return;
    }
    const auto& first = unread.front();
    throw shape_error("metadata key '" + gguf::file::printable_name(first) + "' = " + f.entry(first).value.to_string() +
                      " is not read by the compiled structure: the model would run as if the file did not say it" +
                      (unread.size() > 1 ? " (and " + std::to_string(unread.size() - 1) + " more unread keys)" : "") +
                      "; compose the policy that reads it, list it as known-unused with a reason, or load with "
                      "unread_keys::warn");
}

} // namespace archetype
