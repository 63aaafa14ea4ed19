#pragma once
// The integer side of the int8 row engine on AVX2 + AVX-VNNI (the `avxvnni` level,
// docs/isa.md): the AVX2 engine (avx2/engine.hpp) with the products of its 32-element
// formats taken by vpdpbusd, which multiplies unsigned by signed bytes and sums each
// four into an int32 lane in one instruction (AVX2 needs vpmaddubsw + vpmaddwd).
// Exact integer sums either way (no intermediate saturates in the AVX2 form, see
// there), so the two engines give bitwise the same outputs; tests/quant checks this
// one against ggml's numerics like every engine.
//
// AVX-VNNI is the VEX encoding (Alder Lake, Sapphire Rapids, Zen 5); an AVX-512 VNNI
// build without it (Zen 4, Ice Lake) takes the EVEX encoding of the same 256-bit
// instruction, so the engine is also built and tested there.
#include "archetype/kernels/quant/avx2/tile.hpp"

#if defined(ARCHETYPE_QUANT_AVX2) && (defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__)))
#define ARCHETYPE_QUANT_AVXVNNI 1

namespace archetype::quant::avxvnni {

/// Unsigned weights u times signed activations x, summed in fours: 8 int32 lanes.
struct dpbusd_products {
    static constexpr bool dpbusd = true;
    /// acc + the four-element sums of u . x (the GEMM tile's step, avx2/tile.hpp).
    static __m256i dpbusd_acc(__m256i acc, __m256i u, __m256i x) noexcept {
#if defined(__AVXVNNI__)
        return _mm256_dpbusd_avx_epi32(acc, u, x);
#else
        return _mm256_dpbusd_epi32(acc, u, x);
#endif
    }
    static __m256i udot(__m256i u, __m256i x) noexcept { return dpbusd_acc(_mm256_setzero_si256(), u, x); }
};

/// The row engine and the GEMM tile (avx2/tile.hpp) on these products.
using engine = avx2::tiled_engine<dpbusd_products>;

} // namespace archetype::quant::avxvnni

#endif
