#pragma once
// The int8 row engine of this translation unit's level, when it has one:
// ARCHETYPE_QUANT_INT8 and quant::int8::level_engine (avxvnni::engine with AVX-VNNI or
// AVX-512 VNNI, avx2::engine on AVX2 + FMA + F16C, neon::engine on aarch64; each with its GEMM
// tile for batches).
// kernels::matmul takes it for a few tokens when the AVX-512 VNNI kernels are not
// built; tests/quant checks it on every level.
#include "archetype/kernels/quant/avx2/tile.hpp"
#include "archetype/kernels/quant/avxvnni/engine.hpp"
#include "archetype/kernels/quant/int8/row_gemv.hpp"
#include "archetype/kernels/quant/neon/tile.hpp"

#if defined(ARCHETYPE_QUANT_AVX2) || defined(ARCHETYPE_QUANT_NEON)
#define ARCHETYPE_QUANT_INT8 1

namespace archetype::quant::int8 {
#if defined(ARCHETYPE_QUANT_AVXVNNI)
using level_engine = avxvnni::engine;
#elif defined(ARCHETYPE_QUANT_AVX2)
using level_engine = avx2::engine;
#else
using level_engine = neon::engine;
#endif
} // namespace archetype::quant::int8

#endif
