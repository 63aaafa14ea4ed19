#pragma once
// Row-interleaved storage of Q4_0 weights ("x16"): the layout a decode step reads
// fastest, made once at load time from the file's row-major blocks.
//
// The file stores a Q4_0 matrix row by row, each row cols / 32 blocks of 18 bytes
// (F16 scale d, then 16 bytes qs: low nibble of qs[j] = element j, high nibble =
// element j + 16). A single-token GEMV over that order must gather and transpose
// to put one output per SIMD lane. In the x16 layout 16 consecutive rows form a
// group, and a group stores, block after block (b = 0 .. cols / 32 - 1), 288 bytes:
//
//     bytes   0 ..  31   the 16 rows' F16 scales d of block b (row r at 2r)
//     bytes  32 + 64t .. 32 + 64t + 63   (t = 0 .. 3) quant bytes 4t .. 4t + 3 of
//                        block b of row r at bytes 4r .. 4r + 3
//
// so a 32-bit lane r of the t-th 64-byte vector holds row r's quant bytes 4t..4t+3:
// its low nibbles are elements 4t..4t+3, its high nibbles elements 16+4t..16+4t+3.
// One vpdpbusd with four broadcast activation bytes then advances all 16 rows at
// once, with no shuffle (kernels/quant/gemv_vnni.hpp, rows16_x16), and the batch
// engine's k-group panels are one and/shift away (vnni.hpp, pack_group_x16).
// A group takes exactly the bytes of its 16 rows (16 x 18 = 288 per block): the
// layout changes no size. Requires rows % 16 == 0 (every model dimension we know;
// other matrices keep the row layout). The blocks themselves (values, scales) are
// untouched, so every output is bitwise what the row layout gives.
//
// Same structure as llama.cpp's CPU "repack" buffers (block_q4_0x8 / x16), chosen
// for the same reason; the byte order here is ours.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace archetype::quant {

/// How a weight matrix's blocks are ordered in memory.
enum class weight_layout : std::uint8_t {
    rows,     ///< the file's order: row after row (every type)
    q4_0_x16, ///< Q4_0 only: 16-row groups, block-interleaved (this header)
};

namespace x16 {

inline constexpr std::size_t group_rows = 16;
inline constexpr std::size_t block_bytes = 18;                   // one Q4_0 block
inline constexpr std::size_t group_block_bytes = 16 * block_bytes; // 288: one block of 16 rows
inline constexpr std::size_t scales_bytes = 32;

/// Bytes of one 16-row group of a matrix with n_blocks blocks per row.
inline constexpr std::size_t group_bytes(std::size_t n_blocks) noexcept { return n_blocks * group_block_bytes; }

/// Whether a rows x cols Q4_0 matrix can take the layout.
inline constexpr bool fits(std::size_t rows, std::size_t cols) noexcept {
    return rows > 0 && rows % group_rows == 0 && cols > 0 && cols % 32 == 0;
}

/// Row-major Q4_0 (rows x cols, fits(rows, cols)) -> x16 at dst (same size, no overlap).
inline void repack_q4_0(const std::uint8_t* src, std::size_t rows, std::size_t cols, std::uint8_t* dst) noexcept {
    const std::size_t n_blocks = cols / 32, row_bytes = n_blocks * block_bytes;
    for (std::size_t g = 0; g < rows / group_rows; ++g) {
        const std::uint8_t* s = src + g * group_rows * row_bytes;
        std::uint8_t* d = dst + g * group_bytes(n_blocks);
        for (std::size_t b = 0; b < n_blocks; ++b, d += group_block_bytes)
            for (std::size_t r = 0; r < group_rows; ++r) {
                const std::uint8_t* blk = s + r * row_bytes + b * block_bytes;
                std::memcpy(d + 2 * r, blk, 2);
                for (std::size_t t = 0; t < 4; ++t) std::memcpy(d + scales_bytes + 64 * t + 4 * r, blk + 2 + 4 * t, 4);
            }
    }
}

/// Row r's block b, back in the file's 18-byte form (out: 18 bytes).
inline void block_of(const std::uint8_t* x16_data, std::size_t cols, std::size_t r, std::size_t b,
                     std::uint8_t* out) noexcept {
    const std::size_t n_blocks = cols / 32, rr = r % group_rows;
    const std::uint8_t* p = x16_data + (r / group_rows) * group_bytes(n_blocks) + b * group_block_bytes;
    std::memcpy(out, p + 2 * rr, 2);
    for (std::size_t t = 0; t < 4; ++t) std::memcpy(out + 2 + 4 * t, p + scales_bytes + 64 * t + 4 * rr, 4);
}

/// x16 -> row-major Q4_0 (the inverse of repack_q4_0; tools and tests).
inline void unpack_q4_0(const std::uint8_t* src, std::size_t rows, std::size_t cols, std::uint8_t* dst) noexcept {
    const std::size_t n_blocks = cols / 32;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t b = 0; b < n_blocks; ++b) block_of(src, cols, r, b, dst + (r * n_blocks + b) * block_bytes);
}

} // namespace x16
} // namespace archetype::quant
