#pragma once
// The 256-element types whose quants are not a few bits at fixed places (ternary
// base-3 bytes, the IQ types' grid indices and sign bits) unpacked to integers, once
// per super-block, for the int8 kernels of every level:
//
//     weight j = d * scale[j / 16] * v[j]      v: int8, scale: int16, d: float
//
// d is the block's fp16 scale times a power of two the type's formula carries (exact),
// scale the integer sub-block scale (16-element sub-blocks; a 32-element type repeats
// it). The level's kernels then take the signed dot of v with the int8 activations per
// sub-block (avx2/engine.hpp, neon/engine.hpp: sdot16_block; the AVX-512 decoder
// offsets v by 128 like Q8_0's u) and the float side multiplies by d * dx
// (int8/row_dot.hpp). Unpacking is scalar and per block: O(256) beside the dot's
// O(256) multiply-adds per token, read once per row and token group.
#include <cstddef>
#include <cstdint>

#include "archetype/core/dtype.hpp"
#include "archetype/kernels/quant/blocks.hpp"

namespace archetype::quant::unpack {

/// One super-block as integers (the header's formula).
struct block256 {
    alignas(64) std::int8_t v[256];
    std::int16_t scale[16];
    float d;
};

/// The types unpack_block takes.
constexpr bool unpacks(ggml_type t) noexcept { return t == ggml_type::TQ1_0 || t == ggml_type::TQ2_0; }

/// Elements per distinct scale of type T: 32 where scale[2i] == scale[2i + 1] always
/// (kernels that sum whole 32-element sub-blocks in integers round less), else 16.
template <ggml_type T>
inline constexpr int sub_elements = 32;

namespace detail {
inline void unit_scales(block256& out) noexcept {
    for (auto& s : out.scale) s = 1;
}
} // namespace detail

/// The super-block at blk of type T (unpacks(T)) into out.
template <ggml_type T>
inline void unpack_block(const std::uint8_t* blk, block256& out) noexcept {
    static_assert(unpacks(T), "unpack_block: not a type of quant/unpack.hpp");
    if constexpr (T == ggml_type::TQ2_0) {
        for (std::size_t h = 0; h < 2; ++h)
            for (unsigned l = 0; l < 4; ++l)
                for (std::size_t m = 0; m < 32; ++m)
                    out.v[128 * h + 32 * l + m] = static_cast<std::int8_t>(int((blk[32 * h + m] >> (2 * l)) & 3) - 1);
        detail::unit_scales(out);
        out.d = load_f16(blk + 64);
    } else if constexpr (T == ggml_type::TQ1_0) {
        std::int8_t* v = out.v;
        for (unsigned n = 0; n < 5; ++n, v += 32)
            for (std::size_t m = 0; m < 32; ++m) v[m] = static_cast<std::int8_t>(int(tq1_trit(blk[m], n)) - 1);
        for (unsigned n = 0; n < 5; ++n, v += 16)
            for (std::size_t m = 0; m < 16; ++m) v[m] = static_cast<std::int8_t>(int(tq1_trit(blk[32 + m], n)) - 1);
        for (unsigned n = 0; n < 4; ++n, v += 4)
            for (std::size_t m = 0; m < 4; ++m) v[m] = static_cast<std::int8_t>(int(tq1_trit(blk[48 + m], n)) - 1);
        detail::unit_scales(out);
        out.d = load_f16(blk + 52);
    }
}

} // namespace archetype::quant::unpack
