#pragma once
// Value tables of ggml's non-linear block types, from llama.cpp's ggml/src/ggml-common.h
// (commit d32676d), which carries this notice:
//
//   MIT License
//
//   Copyright (c) 2023-2026 The ggml authors
//
//   Permission is hereby granted, free of charge, to any person obtaining a copy
//   of this software and associated documentation files (the "Software"), to deal
//   in the Software without restriction, including without limitation the rights
//   to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
//   copies of the Software, and to permit persons to whom the Software is
//   furnished to do so, subject to the following conditions:
//
//   The above copyright notice and this permission notice shall be included in all
//   copies or substantial portions of the Software.
//
//   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
//   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
//   FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
//   AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
//   LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
//   OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
//   SOFTWARE.
#include <cstdint>

namespace archetype::quant::ggml_tables {

/// IQ4_NL and IQ4_XS: the value of each 4-bit code (ggml's kvalues_iq4nl).
alignas(16) inline constexpr std::int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                              1,    13,   25,  38,  53,  69,  89,  113};

/// MXFP4: the E2M1 value of each 4-bit code, doubled (ggml's kvalues_mxfp4 = kvalues_fp4);
/// the block's E8M0 scale is taken at half (e8m0_to_fp32_half) to compensate.
alignas(16) inline constexpr std::int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

} // namespace archetype::quant::ggml_tables
