#pragma once
// Scalar IEEE half and bfloat16 <-> float conversion, bit-exact with ggml's
// (round to nearest even; BF16 keeps NaN quiet). Vector versions live in
// kernels/convert.hpp; these are the reference twins and the slow path.
#include <bit>
#include <cstdint>
#include <cstring>

namespace archetype {

struct f16_t { std::uint16_t bits; };
struct bf16_t { std::uint16_t bits; };

constexpr float fp16_to_fp32(std::uint16_t h) noexcept {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1Fu;
    std::uint32_t man = h & 0x3FFu;
    std::uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { // subnormal half -> normal float
            exp = 127 - 15 + 1;
            while ((man & 0x400u) == 0) { man <<= 1; --exp; }
            man &= 0x3FFu;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (man << 13);
    } else {
        bits = sign | ((exp + (127 - 15)) << 23) | (man << 13);
    }
    return std::bit_cast<float>(bits);
}

constexpr std::uint16_t fp32_to_fp16(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000u);
    const std::uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) // inf or nan
        return std::uint16_t(sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u : 0u));
    if (ax >= 0x477FF000u) // rounds to >= 65520: overflow to inf
        return std::uint16_t(sign | 0x7C00u);
    if (ax < 0x38800000u) { // below the smallest normal half: subnormal or zero
        if (ax < 0x33000000u) return sign; // < 2^-25 rounds to zero
        const std::uint32_t e = ax >> 23;
        const std::uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
        const std::uint32_t shift = 126 - e; // 14 - (e - 127) + 13 - ... : aligns to 2^-24 units
        std::uint32_t r = m >> shift;
        const std::uint32_t rem = m & ((1u << shift) - 1u);
        const std::uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return std::uint16_t(sign | r);
    }
    std::uint32_t r = ((ax >> 13) - ((127 - 15) << 10));
    const std::uint32_t rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return std::uint16_t(sign | r);
}

constexpr float bf16_to_fp32(std::uint16_t h) noexcept {
    return std::bit_cast<float>(std::uint32_t(h) << 16);
}

constexpr std::uint16_t fp32_to_bf16(float f) noexcept {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t((x >> 16) | 64u); // quiet nan
    return std::uint16_t((x + (0x7FFFu + ((x >> 16) & 1u))) >> 16);
}

} // namespace archetype
