#pragma once
// Register shuffles shared by the AVX-512 quantised kernels (engine.hpp and the files it includes, gemv.hpp).
#if defined(__AVX512F__)
#include <immintrin.h>

namespace archetype::quant::lanes512 {

/// 4x4 transpose of 128-bit lanes: out[L] lane q = e[q] lane L.
inline void transpose_lanes4(const __m512i e[4], __m512i out[4]) noexcept {
    const __m512i v0 = _mm512_shuffle_i32x4(e[0], e[1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i v1 = _mm512_shuffle_i32x4(e[0], e[1], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i v2 = _mm512_shuffle_i32x4(e[2], e[3], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i v3 = _mm512_shuffle_i32x4(e[2], e[3], _MM_SHUFFLE(3, 2, 3, 2));
    out[0] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(2, 0, 2, 0));
    out[1] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(3, 1, 3, 1));
    out[2] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(2, 0, 2, 0));
    out[3] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(3, 1, 3, 1));
}

} // namespace archetype::quant::lanes512
#endif
