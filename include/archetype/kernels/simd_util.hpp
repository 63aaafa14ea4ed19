#pragma once
// Small helpers shared by the vectorised kernels: the float batch of the
// compile-time architecture, horizontal max, and F16 / BF16 loads converted in
// registers (F16C / AVX-512 when the compiler targets them, fcvtl on aarch64, scalar
// otherwise).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "archetype/core/half.hpp"
#include "archetype/core/simd.hpp"
#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace archetype::kernels::simd {

using fbatch = xsimd::batch<float>;
inline constexpr std::size_t W = fbatch::size;

/// Number of vector registers of the target: sizes register tiles (AVX-512: zmm0-31;
/// aarch64: v0-v31, so the GEMM tile is 14 x 8 there as 14 x 32 on AVX-512).
#if XSIMD_WITH_AVX512F || defined(__aarch64__)
inline constexpr std::size_t n_registers = 32;
#else
inline constexpr std::size_t n_registers = 16;
#endif

/// Whether xsimd::fma / fms is one fused operation, rounded once: x86 with FMA3 (the
/// avx2 and avx512 levels, docs/isa.md) and aarch64. At the SSE2 baseline (the
/// generic level) it is a rounded product and then a rounded sum, and the kernels
/// whose accuracy rests on a single rounding change their arithmetic (blas.hpp's
/// gemm_sum::blocks, wkv.hpp's product error).
#if defined(__FMA__) || defined(__AVX512F__) || defined(__ARM_FEATURE_FMA) || defined(__aarch64__)
inline constexpr bool fused_multiply_add = true;
#else
inline constexpr bool fused_multiply_add = false;
#endif

/// Largest lane (xsimd 8.1 has no horizontal max).
inline float hmax(const fbatch& b) noexcept {
    alignas(64) float t[W];
    b.store_aligned(t);
    float m = t[0];
    for (std::size_t i = 1; i < W; ++i) m = std::max(m, t[i]);
    return m;
}

/// W floats from W IEEE halves at p (unaligned), converted in registers.
inline fbatch load_f16(const std::uint16_t* p) noexcept {
    // default_arch is the widest enabled arch, so the branches follow XSIMD_WITH_*.
#if XSIMD_WITH_AVX512F
    return fbatch(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif XSIMD_WITH_AVX && defined(__F16C__)
    return fbatch(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif XSIMD_WITH_SSE2 && !XSIMD_WITH_AVX && defined(__F16C__)
    return fbatch(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#elif XSIMD_WITH_NEON64
    // fcvtl: half to single is base AArch64 Advanced SIMD (no +fp16 needed)
    return fbatch(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))));
#else
    alignas(64) float t[W];
    for (std::size_t i = 0; i < W; ++i) t[i] = fp16_to_fp32(p[i]);
    return fbatch::load_aligned(t);
#endif
}

/// W floats from W BF16 values at p (unaligned): the bits shifted into the high half.
inline fbatch load_bf16(const std::uint16_t* p) noexcept {
#if XSIMD_WITH_AVX512F && defined(__AVX512BW__)
    return fbatch(_mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16)));
#elif XSIMD_WITH_NEON64
    return fbatch(vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16))); // widened, shifted into the high half
#else
    alignas(64) float t[W];
    for (std::size_t i = 0; i < W; ++i) t[i] = bf16_to_fp32(p[i]);
    return fbatch::load_aligned(t);
#endif
}

/// True when load_f16 is a hardware conversion (so F16 weights decode at bandwidth).
inline constexpr bool hardware_f16 =
#if defined(__F16C__) || defined(__AVX512F__) || XSIMD_WITH_NEON64
    true;
#else
    false;
#endif

} // namespace archetype::kernels::simd
