#pragma once
// Bulk F16 / BF16 <-> F32 conversion, bit-exact with core/half.hpp.
// F16 uses the hardware converters (AVX-512F / F16C when the compiler targets
// them, fcvtl / fcvtn on aarch64); they differ from half.hpp only on NaNs
// (hardware quietens signalling NaNs and keeps payload bits), so a block holding
// a NaN takes the scalar path.
// BF16 is integer arithmetic written so the compiler vectorises it.
// Scalar twins: kernels/reference/convert.hpp.
#include <bit>
#include <cstddef>
#include <cstdint>

#include "archetype/core/half.hpp"
#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

inline void f16_to_f32(const std::uint16_t* x, float* y, std::size_t n) noexcept {
    std::size_t i = 0;
#if defined(__AVX512F__)
    // i < nv rather than i + 16 <= n: avoids a g++ 12 false -Waggressive-loop-optimizations
    for (const std::size_t nv = n - n % 16; i < nv; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
        // NaN halves: (h & 0x7fff) > 0x7c00
        const __m512i a = _mm512_and_si512(_mm512_cvtepu16_epi32(h), _mm512_set1_epi32(0x7fff));
        if (_mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7c00)) != 0) {
            for (std::size_t k = i; k < i + 16; ++k) y[k] = fp16_to_fp32(x[k]);
            continue;
        }
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(h));
    }
#elif defined(__F16C__)
    // i < nv rather than i + 8 <= n: avoids a g++ 12 false -Waggressive-loop-optimizations
    for (const std::size_t nv = n - n % 8; i < nv; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        const __m128i a = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
        // signed 16-bit compare is fine: a <= 0x7fff
        if (_mm_movemask_epi8(_mm_cmpgt_epi16(a, _mm_set1_epi16(0x7c00))) != 0) {
            for (std::size_t k = i; k < i + 8; ++k) y[k] = fp16_to_fp32(x[k]);
            continue;
        }
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
#elif XSIMD_WITH_NEON64
    // fcvtl / fcvtl2 (base AArch64 Advanced SIMD)
    for (const std::size_t nv = n - n % 8; i < nv; i += 8) {
        const uint16x8_t h = vld1q_u16(x + i);
        if (vmaxvq_u16(vandq_u16(h, vdupq_n_u16(0x7fff))) > 0x7c00) { // a NaN half
            for (std::size_t k = i; k < i + 8; ++k) y[k] = fp16_to_fp32(x[k]);
            continue;
        }
        const float16x8_t f = vreinterpretq_f16_u16(h);
        vst1q_f32(y + i, vcvt_f32_f16(vget_low_f16(f)));
        vst1q_f32(y + i + 4, vcvt_high_f32_f16(f));
    }
#endif
    for (; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

inline void f32_to_f16(const float* x, std::uint16_t* y, std::size_t n) noexcept {
    std::size_t i = 0;
#if defined(__AVX512F__)
    // i < nv rather than i + 16 <= n: avoids a g++ 12 false -Waggressive-loop-optimizations
    for (const std::size_t nv = n - n % 16; i < nv; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {
            for (std::size_t k = i; k < i + 16; ++k) y[k] = fp32_to_fp16(x[k]);
            continue;
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#elif defined(__F16C__)
    // i < nv rather than i + 8 <= n: avoids a g++ 12 false -Waggressive-loop-optimizations
    for (const std::size_t nv = n - n % 8; i < nv; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
            for (std::size_t k = i; k < i + 8; ++k) y[k] = fp32_to_fp16(x[k]);
            continue;
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#elif XSIMD_WITH_NEON64
    // fcvtn / fcvtn2, rounded by FPCR's mode: to nearest even, as Linux starts every
    // thread (and without flushing half subnormals, FZ16 clear)
    for (const std::size_t nv = n - n % 8; i < nv; i += 8) {
        const float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + 4);
        if (vminvq_u32(vandq_u32(vceqq_f32(a, a), vceqq_f32(b, b))) == 0) { // a NaN
            for (std::size_t k = i; k < i + 8; ++k) y[k] = fp32_to_fp16(x[k]);
            continue;
        }
        vst1q_u16(y + i, vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(a), b)));
    }
#endif
    for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

inline void bf16_to_f32(const std::uint16_t* x, float* y, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(std::uint32_t(x[i]) << 16);
}

inline void f32_to_bf16(const float* x, std::uint16_t* y, std::size_t n) noexcept {
    // Branch-free form of fp32_to_bf16 so the loop vectorises.
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(x[i]);
        const std::uint32_t rounded = (u + (0x7FFFu + ((u >> 16) & 1u))) >> 16;
        const std::uint32_t quiet = (u >> 16) | 64u;
        y[i] = std::uint16_t((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded);
    }
}

} // namespace archetype::kernels
