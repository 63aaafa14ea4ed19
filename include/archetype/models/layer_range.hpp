#pragma once
// A contiguous range of a model's layers: what one stage of a pipeline holds
// (distributed/pipeline.hpp). A model loaded with a range binds only the
// tensors of those layers, plus the token embedding when the range starts at
// layer 0 and the output norm and head when it ends at the last layer (a tied
// head is the token embedding, so both ends hold that matrix); the other
// tensors of the file are neither read nor mapped into memory by it.
//
//   load_model<E>(path, {.layers = {.first = 10, .count = 10}}); // layers 10-19
//
// The default range (count 0) is the whole model.
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"

namespace archetype {

struct layer_range {
    std::size_t first = 0;
    std::size_t count = 0; ///< 0 = every layer from `first` on

    /// The range made concrete for a model of n_layer layers (argument_error when it
    /// does not fit: the message names both numbers).
    layer_range resolved(std::size_t n_layer) const {
        if (first >= n_layer)
            throw argument_error("layer range starts at layer " + std::to_string(first) + " but the model has " +
                                 std::to_string(n_layer) + " layers (0.." + std::to_string(n_layer - 1) + ")");
        const std::size_t c = count == 0 ? n_layer - first : count;
        if (c > n_layer - first)
            throw argument_error("layer range " + std::to_string(first) + "-" + std::to_string(first + c - 1) +
                                 " runs past the model's last layer " + std::to_string(n_layer - 1));
        return {first, c};
    }
    std::size_t last() const noexcept { return first + count - 1; } ///< inclusive (resolved ranges)
    bool contains(std::size_t il) const noexcept { return il >= first && il < first + count; }
    bool starts_model() const noexcept { return first == 0; }
    bool ends_model(std::size_t n_layer) const noexcept { return first + count == n_layer; }
    /// "A-B", 0-based and inclusive, as the pipeline reports a rank's share.
    std::string to_string() const { return std::to_string(first) + "-" + std::to_string(last()); }
};

/// The layer of a llama.cpp tensor name "blk.N.…", or -1 for a tensor of no layer.
inline long layer_of_tensor(std::string_view name) noexcept {
    if (!name.starts_with("blk.")) return -1;
    name.remove_prefix(4);
    unsigned long il = 0;
    const auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), il);
    if (ec != std::errc{} || p == name.data() || p == name.data() + name.size() || *p != '.') return -1;
    return long(il);
}

} // namespace archetype
