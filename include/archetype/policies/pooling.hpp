#pragma once
// Pooling axis: how an encoder's per-token hidden states become one vector per
// sequence. Values of `pooling_type` are llama.cpp's ids (GGUF `bert.pooling_type`),
// except `max`, which llama.cpp lacks and no file names.
#include <optional>
#include <string>
#include <string_view>

#include "archetype/core/policy.hpp"

namespace archetype {

enum class pooling_type : int { from_file = -1, none = 0, mean = 1, cls = 2, last = 3, rank = 4, max = 100 };

inline constexpr std::string_view pooling_name(pooling_type p) noexcept {
    switch (p) {
    case pooling_type::from_file: return "from file";
    case pooling_type::none: return "none";
    case pooling_type::mean: return "mean";
    case pooling_type::cls: return "cls";
    case pooling_type::last: return "last";
    case pooling_type::rank: return "rank";
    case pooling_type::max: return "max";
    }
    return "?";
}

/// "none|mean|cls|last|max|rank" -> pooling_type; nullopt otherwise.
inline constexpr std::optional<pooling_type> pooling_from_name(std::string_view s) noexcept {
    for (auto p : {pooling_type::none, pooling_type::mean, pooling_type::cls, pooling_type::last,
                   pooling_type::max, pooling_type::rank})
        if (pooling_name(p) == s) return p;
    return std::nullopt;
}

/// A pooling value as stored in a GGUF file (0..4); nullopt for any other number.
inline constexpr std::optional<pooling_type> pooling_from_file_value(long long v) noexcept {
    if (v < 0 || v > 4) return std::nullopt;
    return static_cast<pooling_type>(v);
}

/// The file's `bert.pooling_type` (llama.cpp's default when the context leaves it unspecified).
struct PoolingFromFile {
    using axis = archetype::axis::pooling;
    static constexpr pooling_type type = pooling_type::from_file;
    static std::string describe() { return "pooling from the file (bert.pooling_type)"; }
};
/// No pooling: one embedding per token.
struct NoPooling {
    using axis = archetype::axis::pooling;
    static constexpr pooling_type type = pooling_type::none;
    static std::string describe() { return "NoPooling (one vector per token)"; }
};
/// Mean of all token states of the sequence (nothing excluded, as llama.cpp).
struct MeanPooling {
    using axis = archetype::axis::pooling;
    static constexpr pooling_type type = pooling_type::mean;
    static std::string describe() { return "MeanPooling"; }
};
/// The state of the first position (BERT's [CLS] when the caller feeds it first).
struct ClsPooling {
    using axis = archetype::axis::pooling;
    static constexpr pooling_type type = pooling_type::cls;
    static std::string describe() { return "ClsPooling (first position)"; }
};
/// The state of the last position.
struct LastPooling {
    using axis = archetype::axis::pooling;
    static constexpr pooling_type type = pooling_type::last;
    static std::string describe() { return "LastPooling (last position)"; }
};
/// Per-dimension maximum over the sequence (llama.cpp has no such mode).
struct MaxPooling {
    using axis = archetype::axis::pooling;
    static constexpr pooling_type type = pooling_type::max;
    static std::string describe() { return "MaxPooling (per-dimension max)"; }
};
/// Reranker: the first position's state through the file's classifier head
/// (cls: tanh(W x + b), then cls.output: W x + b), giving a score per sequence.
struct RankPooling {
    using axis = archetype::axis::pooling;
    static constexpr pooling_type type = pooling_type::rank;
    static std::string describe() { return "RankPooling (classifier head on the first position)"; }
};

} // namespace archetype
