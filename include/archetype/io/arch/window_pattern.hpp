#pragma once
// Which layers a GGUF's {arch}.attention.sliding_window windows: the key
// {arch}.attention.sliding_window_pattern as one bool per layer, or as a period N
// (0 = every layer) with the global layer last in each group of N (llama.cpp's
// set_swa_pattern: layer il windowed iff il % N < N - 1) or first
// (gguf_conventions::window_global_first: iff il % N != 0); without the key, the
// architecture's default period (gguf_conventions::window_period_default). Shared by the
// decoder (io/arch/llama.hpp) and encoder (io/arch/bert.hpp) readers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::arch {

inline std::vector<bool> window_layers(const gguf::file& f, const std::string& key, std::size_t n_layer,
                                       const gguf_conventions& conv) {
    if (f.has(key) && f.type_of(key) == gguf::value_type::ARRAY) {
        auto layers = f.get<std::vector<bool>>(key);
        if (layers.size() != n_layer)
            throw format_error("'" + key + "' has " + std::to_string(layers.size()) + " entries but block_count = " +
                               std::to_string(n_layer));
        return layers;
    }
    const std::uint64_t n = f.has(key) ? f.get<std::uint64_t>(key) : conv.window_period_default;
    if (n > (std::uint64_t(1) << 20))
        throw format_error("'" + key + "' = " + std::to_string(n) + " is out of range (0..2^20)");
    std::vector<bool> layers(n_layer);
    for (std::size_t il = 0; il < n_layer; ++il)
        layers[il] = n == 0 || (conv.window_global_first ? il % n != 0 : il % n < n - 1);
    return layers;
}

} // namespace archetype::arch
