#pragma once
// Row `row` of an embedding matrix of any storage type, as floats: a token's
// embedding, a learned position's vector. A matrix in an x16 layout (a tied
// embedding that is also the output head) has the row's blocks gathered back
// into the file's bytes first, then dequantised like any row.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/quant/dequantize.hpp"

namespace archetype::kernels {

inline void embedding_row(const weight_view& w, std::size_t row, float* out) {
    const std::size_t n = w.cols;
    if (w.layout != quant::weight_layout::rows) {
        const std::size_t bb = quant::x16::of(w.layout).block_bytes, n_blocks = n / 32;
        static thread_local std::vector<std::uint8_t> blocks; // per thread: sessions on two threads never share it
        blocks.resize(n_blocks * bb);
        for (std::size_t b = 0; b < n_blocks; ++b)
            quant::x16::block_of(w.layout, static_cast<const std::uint8_t*>(w.data), n, row, b, blocks.data() + b * bb);
        quant::dequantize_row(w.type, blocks.data(), out, n);
        return;
    }
    switch (w.type) {
    case ggml_type::F32: std::memcpy(out, w.row(row), n * sizeof(float)); return;
    case ggml_type::F16: f16_to_f32(reinterpret_cast<const std::uint16_t*>(w.row(row)), out, n); return;
    case ggml_type::BF16: bf16_to_f32(reinterpret_cast<const std::uint16_t*>(w.row(row)), out, n); return;
    default: quant::dequantize_row(w.type, w.row(row), out, n); return;
    }
}

} // namespace archetype::kernels
