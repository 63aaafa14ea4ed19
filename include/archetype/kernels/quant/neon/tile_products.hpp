#pragma once
// The integer step of the aarch64 int8 GEMM tiles (neon/tile.hpp, tile_k.hpp): the
// products of a k-group panel (16 bytes: bytes 4kg..4kg+3 of each of 4 rows, signed) with
// one 4-byte group of a token's activations, summed per row into four int32 lanes: one
// lane per row, so a tile's outputs need no horizontal sums. Two forms, the same exact
// integers (every product and partial sum fits, see each):
//   sdot_products (`neon_dotprod`, ARMv8.2 dotprod): sdot by element, vdotq_laneq_s32,
//       takes the group as lane j of the activation register as loaded: one instruction
//       per panel and token.
//   smull_products (`neon`, base Advanced SIMD): the group broadcast (dup by element),
//       smull / smull2 of the panel's rows 0-1 and 2-3 with it (|u x| <= 128 * 128 fits
//       int16), sadalp into pair sums per row, and addp folds the pairs to one lane per
//       row where a dot ends (rows()).
#include "archetype/kernels/quant/neon/engine.hpp"
#if defined(ARCHETYPE_QUANT_NEON)

#include <cstddef>
#include <cstdint>

namespace archetype::quant::neon::tile {

#if defined(__ARM_FEATURE_DOTPROD)
struct sdot_products {
    using sums = int32x4_t;
    static sums zero() noexcept { return vdupq_n_s32(0); }
    /// s + panel w times group J (0..3) of the 16 activation bytes x.
    template <int J>
    static sums step(sums s, int8x16_t w, int8x16_t x) noexcept {
        return vdotq_laneq_s32(s, w, x, J);
    }
    static int32x4_t rows(sums s) noexcept { return s; }
};
#endif

struct smull_products {
    /// Pair sums: r01 = (row 0: bytes 0-1, 2-3; row 1: the same), r23 for rows 2 and 3.
    struct sums {
        int32x4_t r01, r23;
    };
    static sums zero() noexcept { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
    template <int J>
    static sums step(sums s, int8x16_t w, int8x16_t x) noexcept {
        const int8x16_t g = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), J));
        s.r01 = vpadalq_s16(s.r01, vmull_s8(vget_low_s8(w), vget_low_s8(g)));
        s.r23 = vpadalq_s16(s.r23, vmull_high_s8(w, g));
        return s;
    }
    static int32x4_t rows(sums s) noexcept { return vpaddq_s32(s.r01, s.r23); }
};

/// s + the products of the 4X k-group panels w[0, 4X) with the 16X activation bytes at x.
template <class P, std::size_t X>
inline typename P::sums dot_panels(typename P::sums s, const int8x16_t* w, const std::int8_t* x) noexcept {
    for (std::size_t i = 0; i < X; ++i) {
        const int8x16_t xi = vld1q_s8(x + 16 * i);
        s = P::template step<0>(s, w[4 * i], xi);
        s = P::template step<1>(s, w[4 * i + 1], xi);
        s = P::template step<2>(s, w[4 * i + 2], xi);
        s = P::template step<3>(s, w[4 * i + 3], xi);
    }
    return s;
}

/// Stores the first n lanes of v at out (all four when n >= 4, none when n is 0).
inline void store_rows(float* out, float32x4_t v, std::size_t n) noexcept {
    if (n >= 4) {
        vst1q_f32(out, v);
    } else if (n > 0) {
        float tmp[4];
        vst1q_f32(tmp, v);
        for (std::size_t i = 0; i < n; ++i) out[i] = tmp[i];
    }
}

/// The k-group panel of quad q (rows 4q..4q+3) at byte pb + 32 kg: the octet layout of
/// avx2/tile.hpp (row r's 4 bytes at 4r), read as two 4-row registers.
inline int8x16_t panel(const std::uint8_t* pb, std::size_t kg, std::size_t q) noexcept {
    return vld1q_s8(reinterpret_cast<const std::int8_t*>(pb + 32 * kg + 16 * q));
}

} // namespace archetype::quant::neon::tile

#endif
