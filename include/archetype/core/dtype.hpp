#pragma once
// Element and block types of weight storage, with llama.cpp's ggml type ids
// (the ids GGUF files store). Block size = elements per block; type size =
// bytes per block. Types we can size but not compute with are listed too, so a
// reader can bounds-check any file and refuse only when a kernel is needed.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace archetype {

enum class ggml_type : std::uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
    // archetype's own block types, at ids far from ggml's (0..42 in 2026): formats that
    // are repacked at load, never written to a file a user keeps. AWQ4: AutoAWQ's int4
    // groups (io/hf_awq.hpp), per 32 elements an F16 scale, a 4-bit zero point and 32
    // nibbles (kernels/quant/blocks.hpp, docs/weights.md).
    AWQ4 = 200,
};

struct type_traits {
    std::string_view name;
    std::size_t block_size; // elements per block; 0 = id unknown
    std::size_t type_size;  // bytes per block
};

namespace detail {
inline constexpr std::size_t ggml_type_count = 43;
constexpr std::array<type_traits, ggml_type_count> make_type_table() {
    std::array<type_traits, ggml_type_count> t{};
    auto set = [&](ggml_type id, std::string_view n, std::size_t bs, std::size_t ts) {
        t[static_cast<std::size_t>(id)] = type_traits{n, bs, ts};
    };
    set(ggml_type::F32, "F32", 1, 4);
    set(ggml_type::F16, "F16", 1, 2);
    set(ggml_type::Q4_0, "Q4_0", 32, 18);
    set(ggml_type::Q4_1, "Q4_1", 32, 20);
    set(ggml_type::Q5_0, "Q5_0", 32, 22);
    set(ggml_type::Q5_1, "Q5_1", 32, 24);
    set(ggml_type::Q8_0, "Q8_0", 32, 34);
    set(ggml_type::Q8_1, "Q8_1", 32, 36);
    set(ggml_type::Q2_K, "Q2_K", 256, 84);
    set(ggml_type::Q3_K, "Q3_K", 256, 110);
    set(ggml_type::Q4_K, "Q4_K", 256, 144);
    set(ggml_type::Q5_K, "Q5_K", 256, 176);
    set(ggml_type::Q6_K, "Q6_K", 256, 210);
    set(ggml_type::Q8_K, "Q8_K", 256, 292);
    set(ggml_type::IQ2_XXS, "IQ2_XXS", 256, 66);
    set(ggml_type::IQ2_XS, "IQ2_XS", 256, 74);
    set(ggml_type::IQ3_XXS, "IQ3_XXS", 256, 98);
    set(ggml_type::IQ1_S, "IQ1_S", 256, 50);
    set(ggml_type::IQ4_NL, "IQ4_NL", 32, 18);
    set(ggml_type::IQ3_S, "IQ3_S", 256, 110);
    set(ggml_type::IQ2_S, "IQ2_S", 256, 82);
    set(ggml_type::IQ4_XS, "IQ4_XS", 256, 136);
    set(ggml_type::I8, "I8", 1, 1);
    set(ggml_type::I16, "I16", 1, 2);
    set(ggml_type::I32, "I32", 1, 4);
    set(ggml_type::I64, "I64", 1, 8);
    set(ggml_type::F64, "F64", 1, 8);
    set(ggml_type::IQ1_M, "IQ1_M", 256, 56);
    set(ggml_type::BF16, "BF16", 1, 2);
    set(ggml_type::TQ1_0, "TQ1_0", 256, 54);
    set(ggml_type::TQ2_0, "TQ2_0", 256, 66);
    set(ggml_type::MXFP4, "MXFP4", 32, 17);
    set(ggml_type::NVFP4, "NVFP4", 64, 36); // sized and named; no kernels
    set(ggml_type::Q1_0, "Q1_0", 128, 18);
    set(ggml_type::Q2_0, "Q2_0", 64, 18);
    return t;
}
inline constexpr auto type_table = make_type_table();
/// The one internal type (id ggml_type::AWQ4, outside the table of ggml's ids).
inline constexpr type_traits awq4_traits{"AWQ4", 32, 19};
} // namespace detail

/// Traits of a raw type id as read from a file; nullopt when the id is unknown.
constexpr std::optional<type_traits> traits_of(std::uint32_t id) noexcept {
    if (id == static_cast<std::uint32_t>(ggml_type::AWQ4)) return detail::awq4_traits;
    if (id >= detail::ggml_type_count || detail::type_table[id].block_size == 0)
        return std::nullopt;
    return detail::type_table[id];
}
constexpr type_traits traits_of(ggml_type t) noexcept {
    if (t == ggml_type::AWQ4) return detail::awq4_traits;
    return detail::type_table[static_cast<std::size_t>(t)];
}
constexpr std::string_view type_name(ggml_type t) noexcept { return traits_of(t).name; }

/// Type from its name ("Q8_0", "f16" ...), case-insensitive; nullopt when unknown.
constexpr std::optional<ggml_type> type_from_name(std::string_view s) noexcept {
    auto up = [](char c) { return (c >= 'a' && c <= 'z') ? char(c - 'a' + 'A') : c; };
    if (s.size() == 4 && up(s[0]) == 'A' && up(s[1]) == 'W' && up(s[2]) == 'Q' && s[3] == '4') return ggml_type::AWQ4;
    for (std::size_t i = 0; i < detail::ggml_type_count; ++i) {
        auto n = detail::type_table[i].name;
        if (n.empty() || n.size() != s.size()) continue;
        bool eq = true;
        for (std::size_t k = 0; k < n.size() && eq; ++k) eq = up(s[k]) == n[k];
        if (eq) return static_cast<ggml_type>(i);
    }
    return std::nullopt;
}

} // namespace archetype
