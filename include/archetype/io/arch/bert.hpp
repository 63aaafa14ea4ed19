#pragma once
// Hyperparameters of llama.cpp's encoder GGUF architectures (`bert`, and any
// other a registry entry maps to an Encoder, e.g. `modern-bert`), read from the
// metadata with llama.cpp's defaults where a key is absent (commit d32676d;
// ../shared/fixtures/README.md §4.1, §5.6, §5.7). {arch} is general.architecture:
//
//   {arch}.context_length, embedding_length, block_count,
//   {arch}.feed_forward_length, attention.head_count          required
//   {arch}.attention.head_count_kv          default head_count
//   {arch}.attention.layer_norm_epsilon     the LayerNorm eps (default 1e-12; with
//                                           gguf_conventions::layer_norm_eps_in_rms_key the
//                                           RMS key's value when this one is absent)
//   {arch}.attention.layer_norm_rms_epsilon used by RMSNorm encoders (default 1e-12)
//   {arch}.attention.causal                 default false; true is refused (not an encoder)
//   {arch}.pooling_type                     0 none, 1 mean, 2 cls, 3 last, 4 rank; default none
//   {arch}.attention.sliding_window         symmetric window (0 = none)
//   {arch}.attention.sliding_window_pattern which layers it windows: a period N (or one bool
//                                           per layer); default the conventions' period
//                                           (0 = every layer), the global layer first or
//                                           last as the conventions say
//   {arch}.rope.freq_base / rope.dimension_count   for RoPE encoders (default 10000 / head dim)
//   {arch}.rope.freq_base_swa               the windowed layers' base (default: rope.freq_base)
//   {arch}.hidden_activation                the FFN activation the converter recorded
//                                           (checked against the compiled FFN policy)
//   {arch}.vocab_size                       default: rows of token_embd.weight
//   tokenizer.ggml.token_type_count         default: rows of token_types.weight (0 when absent)
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/arch/window_pattern.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/policies/pooling.hpp"

namespace archetype::arch {

struct bert_hparams {
    std::string arch;                  // "bert"
    std::size_t n_vocab = 0, n_ctx_train = 0, n_embd = 0, n_layer = 0, n_ff = 0;
    std::size_t n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
    std::size_t n_token_types = 0;     // rows of token_types.weight (0 = no token types)
    float norm_eps = 1e-12f;           // LayerNorm eps (or RMSNorm eps for RMSNorm encoders)
    float rms_eps = 1e-12f;
    bool causal = false;
    pooling_type pooling = pooling_type::none; // the file's default pooling
    std::size_t n_swa = 0;             // symmetric window (0 = none)
    std::vector<bool> swa_layers;      // per layer, when n_swa > 0: which layers it windows
    bool swa_pattern_in_file = false;  // the pattern came from the file (or its conventions)
    float rope_freq_base = 10000.f;
    float rope_freq_base_swa = 0.f;    // the windowed layers' base (0 = rope_freq_base)
    std::string hidden_act;            // {arch}.hidden_activation ("" = absent)
};

namespace bert_detail {
inline constexpr std::uint64_t dim_limit = std::uint64_t(1) << 20;
inline std::size_t checked(const std::string& key, std::uint64_t v, std::uint64_t limit) {
    if (v == 0 || v > limit)
        throw format_error("metadata key '" + key + "' = " + std::to_string(v) + " is out of range (1.." +
                           std::to_string(limit) + ")");
    return static_cast<std::size_t>(v);
}
inline float checked_eps(const std::string& key, float v) {
    if (!std::isfinite(v) || v < 0.f)
        throw format_error("metadata key '" + key + "' = " + std::to_string(v) + " is not a finite non-negative number");
    return v;
}
} // namespace bert_detail

/// Reads the hyperparameters of an encoder file of any architecture name, with what
/// that architecture implies beyond its keys (its registry entry's conventions).
inline bert_hparams read_encoder_hparams(const gguf::file& f, const gguf_conventions& conv) {
    bert_hparams h;
    h.arch = std::string(f.architecture());
    const std::string a = h.arch + ".";
    auto req = [&](const char* k, std::uint64_t limit = bert_detail::dim_limit) {
        const std::string key = a + k;
        return bert_detail::checked(key, f.get<std::uint64_t>(key), limit);
    };
    auto opt = [&](const char* k, std::size_t def, std::uint64_t limit = bert_detail::dim_limit) {
        const std::string key = a + k;
        if (!f.has(key)) return def;
        return bert_detail::checked(key, f.get<std::uint64_t>(key), limit);
    };
    h.n_ctx_train = req("context_length", std::uint64_t(1) << 24);
    h.n_embd = req("embedding_length");
    h.n_layer = req("block_count", 4096);
    h.n_ff = req("feed_forward_length");
    h.n_head = req("attention.head_count", 4096);
    h.n_head_kv = opt("attention.head_count_kv", h.n_head, 4096);
    if (h.n_head % h.n_head_kv != 0)
        throw format_error(a + "attention.head_count = " + std::to_string(h.n_head) +
                           " is not a multiple of head_count_kv = " + std::to_string(h.n_head_kv));
    if (h.n_embd % h.n_head != 0)
        throw format_error(a + "embedding_length = " + std::to_string(h.n_embd) +
                           " is not a multiple of head_count = " + std::to_string(h.n_head));
    h.head_dim = h.n_embd / h.n_head;
    // nomic-bert's converter states the head width; the encoder's heads are n_embd / n_head wide
    for (const char* k : {"attention.key_length", "attention.value_length"})
        if (const std::size_t v = opt(k, h.head_dim, 65536); v != h.head_dim)
            throw shape_error(a + k + " = " + std::to_string(v) + ": the encoder's heads are embedding_length / "
                              "head_count = " + std::to_string(h.head_dim) + " wide");
    h.n_rot = opt("rope.dimension_count", h.head_dim, 65536);
    if (h.n_rot > h.head_dim || h.n_rot % 2 != 0)
        throw format_error(a + "rope.dimension_count = " + std::to_string(h.n_rot) +
                           " must be even and at most the head dimension " + std::to_string(h.head_dim));
    h.rope_freq_base = f.get_or<float>(a + "rope.freq_base", 10000.f);
    if (!(h.rope_freq_base > 0.f) || !std::isfinite(h.rope_freq_base))
        throw format_error(a + "rope.freq_base = " + std::to_string(h.rope_freq_base) + " must be positive");
    // the encoders rotate unscaled positions: a scaling (linear with a factor, YaRN) is refused
    if (const auto st = f.get_or<std::string>(a + "rope.scaling.type", "none"); st != "none" && st != "linear")
        throw shape_error(a + "rope.scaling.type = '" + st + "' is not supported by the encoders (none)");
    for (const char* k : {"rope.scaling.factor", "rope.scale_linear"})
        if (const float v = f.get_or<float>(a + k, 1.f); v != 1.f && v != 0.f)
            throw shape_error(a + k + " = " + std::to_string(v) + ": the encoders rotate unscaled positions");
    h.rms_eps = bert_detail::checked_eps(a + "attention.layer_norm_rms_epsilon",
                                         f.get_or<float>(a + "attention.layer_norm_rms_epsilon", 1e-12f));
    if (f.has(a + "attention.layer_norm_epsilon"))
        h.norm_eps = bert_detail::checked_eps(a + "attention.layer_norm_epsilon",
                                              f.get<float>(a + "attention.layer_norm_epsilon"));
    else if (conv.layer_norm_eps_in_rms_key && f.has(a + "attention.layer_norm_rms_epsilon"))
        h.norm_eps = h.rms_eps;
    h.causal = f.get_or<bool>(a + "attention.causal", false);
    if (h.causal)
        throw shape_error(a + "attention.causal = true: this file is a causal model, not an encoder");
    const auto pt = f.get_or<std::int64_t>(a + "pooling_type", 0);
    const auto p = pooling_from_file_value(pt);
    if (!p)
        throw format_error(a + "pooling_type = " + std::to_string(pt) +
                           " is not 0 (none), 1 (mean), 2 (cls), 3 (last) or 4 (rank)");
    h.pooling = *p;
    h.n_swa = f.has(a + "attention.sliding_window")
                  ? f.get<std::size_t>(a + "attention.sliding_window") : 0;
    if (h.n_swa > (std::size_t(1) << 24))
        throw format_error(a + "attention.sliding_window = " + std::to_string(h.n_swa) + " is out of range");
    if (h.n_swa > 0) {
        const std::string pk = a + "attention.sliding_window_pattern";
        h.swa_pattern_in_file = f.has(pk) || conv.window_period_default != 0;
        h.swa_layers = window_layers(f, pk, h.n_layer, conv);
    }
    if (f.has(a + "rope.freq_base_swa")) {
        h.rope_freq_base_swa = f.get<float>(a + "rope.freq_base_swa");
        if (!(h.rope_freq_base_swa > 0.f) || !std::isfinite(h.rope_freq_base_swa))
            throw format_error(a + "rope.freq_base_swa = " + std::to_string(h.rope_freq_base_swa) + " must be positive");
    }
    if (f.has(a + "hidden_activation")) h.hidden_act = f.get<std::string>(a + "hidden_activation");

    if (const auto* t = f.find_tensor("token_embd.weight"); t && t->ne.size() >= 2)
        h.n_vocab = opt("vocab_size", static_cast<std::size_t>(t->ne[1]), std::uint64_t(1) << 31);
    else
        h.n_vocab = req("vocab_size", std::uint64_t(1) << 31);
    const auto* tt = f.find_tensor("token_types.weight");
    const std::size_t tt_rows = tt && tt->ne.size() >= 2 ? static_cast<std::size_t>(tt->ne[1]) : (tt ? 1 : 0);
    h.n_token_types = f.has("tokenizer.ggml.token_type_count")
                          ? f.get<std::size_t>("tokenizer.ggml.token_type_count") : tt_rows;
    if (tt && h.n_token_types != tt_rows)
        throw format_error("tokenizer.ggml.token_type_count = " + std::to_string(h.n_token_types) +
                           " but token_types.weight has " + std::to_string(tt_rows) + " rows");
    return h;
}

/// Reads the hyperparameters of a `bert` file (llama's conventions).
inline bert_hparams read_bert_hparams(const gguf::file& f) {
    if (f.architecture() != "bert")
        throw shape_error("general.architecture is '" + std::string(f.architecture()) + "', expected 'bert'");
    return read_encoder_hparams(f, gguf_conventions{});
}

} // namespace archetype::arch
