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
// sub-block (avx2/engine.hpp, also the avxvnni and avx512 levels' row engine;
// neon/engine.hpp: sdot16_block; quant::generic in scalar integers) and the float side
// multiplies by d * dx (int8/row_dot.hpp). Unpacking is scalar and per block: O(256)
// beside the dot's O(256) multiply-adds per token, read once per row and token group.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/core/dtype.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/iq_dequantize.hpp"
#include "archetype/kernels/quant/iq_grids.hpp"

namespace archetype::quant::unpack {

/// One super-block as integers (the header's formula).
struct block256 {
    alignas(64) std::int8_t v[256];
    std::int16_t scale[16];
    float d;
};

/// The types unpack_block takes.
constexpr bool unpacks(ggml_type t) noexcept {
    switch (t) {
    case ggml_type::TQ1_0: case ggml_type::TQ2_0: case ggml_type::IQ2_XXS: case ggml_type::IQ2_XS:
    case ggml_type::IQ2_S: case ggml_type::IQ3_XXS: case ggml_type::IQ3_S: case ggml_type::IQ1_S:
    case ggml_type::IQ1_M:
        return true;
    default:
        return false;
    }
}

namespace detail {
inline void unit_scales(block256& out) noexcept {
    for (auto& s : out.scale) s = 1;
}
/// 8 magnitudes (bytes of a grid entry) with a sign byte: bit k negates element k.
inline void signed8(const std::uint8_t* mag, std::uint8_t signs, std::int8_t* v) noexcept {
    for (std::size_t k = 0; k < 8; ++k) v[k] = static_cast<std::int8_t>(signs >> k & 1 ? -int(mag[k]) : int(mag[k]));
}
/// IQ1's 8 grid values g (-1, 0, 1) with the group's delta sign: v = 8 g + 1 or 8 g - 1
/// (the value g +- 1/8 times 8; the scale's d carries the 1/8).
inline void iq1_group(const std::uint8_t* grid, bool minus, std::int8_t* v) noexcept {
    for (std::size_t k = 0; k < 8; ++k)
        v[k] = static_cast<std::int8_t>(8 * int(static_cast<std::int8_t>(grid[k])) + (minus ? -1 : 1));
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
    } else if constexpr (T == ggml_type::IQ2_XXS || T == ggml_type::IQ3_XXS) {
        // scale 2 ls + 1 per 32: d (0.5 + ls) / 4 = d / 8 (2 ls + 1) (IQ3_XXS: / 2, d / 4)
        for (std::size_t ib = 0; ib < 8; ++ib) {
            const std::uint8_t* q = blk + 2 + 8 * ib;
            const std::uint32_t w = load_u32(T == ggml_type::IQ2_XXS ? q + 4 : blk + 66 + 4 * ib);
            out.scale[2 * ib] = out.scale[2 * ib + 1] = std::int16_t(2 * (w >> 28) + 1);
            for (unsigned l = 0; l < 4; ++l) {
                const std::uint8_t signs = iq_grids::ksigns_iq2xs[(w >> (7 * l)) & 127];
                std::uint8_t mag[8];
                if constexpr (T == ggml_type::IQ2_XXS) {
                    std::memcpy(mag, quant::detail::grid8(iq_grids::iq2xxs_grid, q[l]), 8);
                } else {
                    std::memcpy(mag, quant::detail::grid4(iq_grids::iq3xxs_grid, q[2 * l]), 4);
                    std::memcpy(mag + 4, quant::detail::grid4(iq_grids::iq3xxs_grid, q[2 * l + 1]), 4);
                }
                detail::signed8(mag, signs, out.v + 32 * ib + 8 * l);
            }
        }
        out.d = load_f16(blk) * (T == ggml_type::IQ2_XXS ? 0.125f : 0.25f);
    } else if constexpr (T == ggml_type::IQ2_XS || T == ggml_type::IQ2_S) {
        // scale 2 s + 1 per 16 (a nibble of scales[ib]), d / 8
        const std::uint8_t* sc = blk + (T == ggml_type::IQ2_XS ? 66 : 74);
        for (std::size_t ib = 0; ib < 8; ++ib) {
            out.scale[2 * ib] = std::int16_t(2 * (sc[ib] & 0xf) + 1);
            out.scale[2 * ib + 1] = std::int16_t(2 * (sc[ib] >> 4) + 1);
            for (unsigned l = 0; l < 4; ++l) {
                if constexpr (T == ggml_type::IQ2_XS) {
                    const std::uint16_t q = load_u16(blk + 2 + 2 * (4 * ib + l));
                    detail::signed8(quant::detail::grid8(iq_grids::iq2xs_grid, q & 511), iq_grids::ksigns_iq2xs[q >> 9],
                                    out.v + 32 * ib + 8 * l);
                } else {
                    const unsigned hi = (unsigned(blk[66 + ib]) >> (2 * l)) & 3;
                    detail::signed8(quant::detail::grid8(iq_grids::iq2s_grid, blk[2 + 4 * ib + l] | hi << 8),
                                    blk[34 + 4 * ib + l], out.v + 32 * ib + 8 * l);
                }
            }
        }
        out.d = load_f16(blk) * 0.125f;
    } else if constexpr (T == ggml_type::IQ3_S) {
        for (std::size_t ib = 0; ib < 8; ++ib) {
            out.scale[2 * ib] = out.scale[2 * ib + 1] = std::int16_t(1 + 2 * ((blk[106 + ib / 2] >> (4 * (ib % 2))) & 0xf));
            const std::uint8_t* qs = blk + 2 + 8 * ib;
            const unsigned qh = blk[66 + ib];
            for (unsigned l = 0; l < 4; ++l) {
                std::uint8_t mag[8];
                std::memcpy(mag, quant::detail::grid4(iq_grids::iq3s_grid, qs[2 * l] | ((qh << (8 - 2 * l)) & 256)), 4);
                std::memcpy(mag + 4, quant::detail::grid4(iq_grids::iq3s_grid, qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)), 4);
                detail::signed8(mag, blk[74 + 4 * ib + l], out.v + 32 * ib + 8 * l);
            }
        }
        out.d = load_f16(blk);
    } else if constexpr (T == ggml_type::IQ1_S) {
        for (std::size_t ib = 0; ib < 8; ++ib) {
            const unsigned qh = load_u16(blk + 34 + 2 * ib);
            out.scale[2 * ib] = out.scale[2 * ib + 1] = std::int16_t(2 * ((qh >> 12) & 7) + 1);
            for (unsigned l = 0; l < 4; ++l)
                detail::iq1_group(quant::detail::grid8(iq_grids::iq1s_grid, blk[2 + 4 * ib + l] | ((qh >> (3 * l)) & 7) << 8),
                                  qh & 0x8000, out.v + 32 * ib + 8 * l);
        }
        out.d = load_f16(blk) * 0.125f;
    } else if constexpr (T == ggml_type::IQ1_M) {
        for (std::size_t ib = 0; ib < 8; ++ib) {
            const unsigned sc = load_u16(blk + 48 + 2 * (ib / 2));
            out.scale[2 * ib] = std::int16_t(2 * ((sc >> (6 * (ib % 2))) & 7) + 1);
            out.scale[2 * ib + 1] = std::int16_t(2 * ((sc >> (6 * (ib % 2) + 3)) & 7) + 1);
            for (unsigned l = 0; l < 4; ++l) {
                const unsigned nib = unsigned(blk[32 + 2 * ib + l / 2]) >> (4 * (l % 2));
                detail::iq1_group(quant::detail::grid8(iq_grids::iq1s_grid, blk[4 * ib + l] | (nib & 7) << 8), nib & 8,
                                  out.v + 32 * ib + 8 * l);
            }
        }
        out.d = iq1_m_d(blk) * 0.125f;
    }
}

/// unpack_block<T> for a type known at run time (the kernels that share one loop for
/// all these types: int8/row_dot.hpp, quant::generic); null for other types.
using unpacker = void (*)(const std::uint8_t*, block256&) noexcept;
inline unpacker unpacker_of(ggml_type t) noexcept {
    switch (t) {
    case ggml_type::TQ1_0: return &unpack_block<ggml_type::TQ1_0>;
    case ggml_type::TQ2_0: return &unpack_block<ggml_type::TQ2_0>;
    case ggml_type::IQ2_XXS: return &unpack_block<ggml_type::IQ2_XXS>;
    case ggml_type::IQ2_XS: return &unpack_block<ggml_type::IQ2_XS>;
    case ggml_type::IQ2_S: return &unpack_block<ggml_type::IQ2_S>;
    case ggml_type::IQ3_XXS: return &unpack_block<ggml_type::IQ3_XXS>;
    case ggml_type::IQ3_S: return &unpack_block<ggml_type::IQ3_S>;
    case ggml_type::IQ1_S: return &unpack_block<ggml_type::IQ1_S>;
    case ggml_type::IQ1_M: return &unpack_block<ggml_type::IQ1_M>;
    default: return nullptr;
    }
}

} // namespace archetype::quant::unpack
