#pragma once
// Row-interleaved storage of Q4_0 and Q8_0 weights ("x16"): the layouts a decode
// step reads fastest, made once at load time from the file's row-major blocks.
//
// The file stores a matrix row by row, each row cols / 32 blocks: an F16 scale d,
// then the quants (Q4_0: 16 bytes, low nibble of qs[j] = element j, high nibble =
// element j + 16; Q8_0: 32 signed bytes, element j = qs[j]). A single-token GEMV
// over that order must gather and transpose to put one output per SIMD lane. In the
// x16 layouts 16 consecutive rows form a group, and a group stores, block after
// block (b = 0 .. cols / 32 - 1), 16 x the block size (Q4_0 288, Q8_0 544 bytes):
//
//     bytes   0 ..  31   the 16 rows' F16 scales d of block b (row r at 2r)
//     bytes  32 + 64t .. 32 + 64t + 63   (t = 0 .. V - 1; V = 4 for Q4_0, 8 for
//                        Q8_0) quant bytes 4t .. 4t + 3 of block b of row r at
//                        bytes 4r .. 4r + 3
//
// so a 32-bit lane r of the t-th 64-byte vector holds row r's quant bytes 4t..4t+3.
// Q4_0: its low nibbles are elements 4t..4t+3, its high nibbles 16+4t..16+4t+3.
// Q8_0: the bytes are stored as u = q ^ 0x80 = q + 128 (unsigned, what vpdpbusd
// multiplies; the kernels add the zero point -128 * sum(x) per block), elements
// 4t..4t+3. One vpdpbusd with four broadcast activation bytes then advances all 16
// rows at once, with no shuffle (kernels/quant/avx512/gemv.hpp, rows16_x16), and the
// batch engine's k-group panels are one and/shift (Q4_0) or a copy (Q8_0) away
// (avx512/packing.hpp, pack_group_x16). A group takes exactly the bytes of its 16 rows: the
// layout changes no size. Requires rows % 16 == 0 (every model dimension we know;
// other matrices keep the row layout). The values and scales are untouched (Q8_0's
// xor is undone exactly by the zero point), so every output is bitwise what the
// row layout gives.
//
// Same structure as llama.cpp's CPU "repack" buffers (block_q4_0x8 / q8_0x4),
// chosen for the same reason; the byte order here is ours.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace archetype::quant {

/// How a weight matrix's blocks are ordered in memory.
enum class weight_layout : std::uint8_t {
    rows,     ///< the file's order: row after row (every type)
    q4_0_x16, ///< Q4_0 only: 16-row groups, block-interleaved (this header)
    q8_0_x16, ///< Q8_0 only: the same, quants stored as q ^ 0x80 (this header)
};

namespace x16 {

inline constexpr std::size_t group_rows = 16;
inline constexpr std::size_t scales_bytes = 32;

/// Geometry of one x16 layout: the file's block size, the 64-byte quant vectors per
/// group block (4 quant bytes per row each), the xor mask applied to every stored
/// quant byte, and the names errors use.
struct geometry {
    std::size_t block_bytes, vectors;
    std::uint8_t flip;
    const char *name, *type_name;
    constexpr std::size_t group_block_bytes() const noexcept { return group_rows * block_bytes; }
    /// Bytes of one 16-row group of a matrix with n_blocks blocks per row.
    constexpr std::size_t group_bytes(std::size_t n_blocks) const noexcept { return n_blocks * group_block_bytes(); }
};
inline constexpr geometry q4_0{18, 4, 0x00, "q4_0_x16", "Q4_0"};
inline constexpr geometry q8_0{34, 8, 0x80, "q8_0_x16", "Q8_0"};
/// The largest block of an x16 layout (Q8_0's): a buffer for block_of.
inline constexpr std::size_t max_block_bytes = q8_0.block_bytes;
/// The geometry of an interleaved layout (L != rows).
inline constexpr const geometry& of(weight_layout L) noexcept { return L == weight_layout::q8_0_x16 ? q8_0 : q4_0; }

/// Copies one 4-byte quant word, xor-ing each byte with `flip` (an involution: the
/// same call stores a word into the layout and takes it back out).
inline void move_word(std::uint8_t* dst, const std::uint8_t* src, std::uint8_t flip) noexcept {
    std::uint32_t v;
    std::memcpy(&v, src, 4);
    v ^= 0x01010101u * flip;
    std::memcpy(dst, &v, 4);
}

/// Whether a rows x cols matrix of a 32-block type can take an x16 layout.
inline constexpr bool fits(std::size_t rows, std::size_t cols) noexcept {
    return rows > 0 && rows % group_rows == 0 && cols > 0 && cols % 32 == 0;
}

/// Row-major blocks (rows x cols, fits(rows, cols)) of geometry G -> its x16 layout
/// at dst (same size, no overlap). G is a template argument so that its vector count
/// (4 or 8) is a constant of the loops: with it read from memory the compiler could not
/// bound the words written into a caller's block buffer (-Wstringop-overflow).
template <const geometry& G>
inline void repack(const std::uint8_t* src, std::size_t rows, std::size_t cols, std::uint8_t* dst) noexcept {
    const std::size_t n_blocks = cols / 32, row_bytes = n_blocks * G.block_bytes;
    for (std::size_t g = 0; g < rows / group_rows; ++g) {
        const std::uint8_t* s = src + g * group_rows * row_bytes;
        std::uint8_t* d = dst + g * G.group_bytes(n_blocks);
        for (std::size_t b = 0; b < n_blocks; ++b, d += G.group_block_bytes())
            for (std::size_t r = 0; r < group_rows; ++r) {
                const std::uint8_t* blk = s + r * row_bytes + b * G.block_bytes;
                std::memcpy(d + 2 * r, blk, 2);
                for (std::size_t t = 0; t < G.vectors; ++t) move_word(d + scales_bytes + 64 * t + 4 * r, blk + 2 + 4 * t, G.flip);
            }
    }
}

/// Row-major blocks (rows x cols, fits(rows, cols)) -> the x16 layout L at dst
/// (same size, no overlap).
inline void repack(weight_layout L, const std::uint8_t* src, std::size_t rows, std::size_t cols,
                   std::uint8_t* dst) noexcept {
    if (L == weight_layout::q8_0_x16)
        repack<q8_0>(src, rows, cols, dst);
    else
        repack<q4_0>(src, rows, cols, dst);
}

/// Row r's block b of geometry G, back in the file's form (out: G.block_bytes bytes).
template <const geometry& G>
inline void block_of(const std::uint8_t* x16_data, std::size_t cols, std::size_t r, std::size_t b,
                     std::uint8_t* out) noexcept {
    const std::size_t n_blocks = cols / 32, rr = r % group_rows;
    const std::uint8_t* p = x16_data + (r / group_rows) * G.group_bytes(n_blocks) + b * G.group_block_bytes();
    std::memcpy(out, p + 2 * rr, 2);
    for (std::size_t t = 0; t < G.vectors; ++t) move_word(out + 2 + 4 * t, p + scales_bytes + 64 * t + 4 * rr, G.flip);
}

/// Row r's block b, back in the file's form (out: of(L).block_bytes bytes, at most
/// max_block_bytes).
inline void block_of(weight_layout L, const std::uint8_t* x16_data, std::size_t cols, std::size_t r, std::size_t b,
                     std::uint8_t* out) noexcept {
    if (L == weight_layout::q8_0_x16)
        block_of<q8_0>(x16_data, cols, r, b, out);
    else
        block_of<q4_0>(x16_data, cols, r, b, out);
}

/// x16 -> row-major blocks (the inverse of repack; tools and tests).
inline void unpack(weight_layout L, const std::uint8_t* src, std::size_t rows, std::size_t cols,
                   std::uint8_t* dst) noexcept {
    const std::size_t n_blocks = cols / 32, bb = of(L).block_bytes;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t b = 0; b < n_blocks; ++b) block_of(L, src, cols, r, b, dst + (r * n_blocks + b) * bb);
}

} // namespace x16
} // namespace archetype::quant
