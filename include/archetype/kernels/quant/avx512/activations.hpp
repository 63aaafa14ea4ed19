#pragma once
// How the activations meet a weight type on AVX-512 VNNI: each type's sub-block
// length, zero point and activation format (sub_traits), and the quantisation of one
// token to int8 the way ggml's CPU backend does it for that format.
#include "archetype/kernels/quant/avx512/level.hpp"
#if defined(ARCHETYPE_QUANT_VNNI)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/avx512/decoders.hpp"

namespace archetype::quant::vnni::detail {

/// Sub-block length (elements sharing one weight scale) and zero point z
/// (w = s * (u - z); 0 = the type has a stored min instead: w = s * u - m).
/// act: how the activations are quantised, ggml's vec_dot_type for the weight type
/// (ggml-cpu.c's type_traits_cpu; on x86 the repacked Q4_K path quantises to Q8_K too).
enum class act_format { q8_0, q8_1, q8_K };
template <class D> struct sub_traits;
template <> struct sub_traits<dec_q8_0> { static constexpr int sub = 32, zero = 128; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_q4_0> { static constexpr int sub = 32, zero = 8; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_q5_0> { static constexpr int sub = 32, zero = 16; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_q4_1> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_1; };
template <> struct sub_traits<dec_q5_1> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_1; };
template <> struct sub_traits<dec_q4_K> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_K; };
template <> struct sub_traits<dec_q5_K> { static constexpr int sub = 32, zero = 0; static constexpr act_format act = act_format::q8_K; };
template <> struct sub_traits<dec_q6_K> { static constexpr int sub = 16, zero = 32; static constexpr act_format act = act_format::q8_K; };
template <> struct sub_traits<dec_q2_K> { static constexpr int sub = 16, zero = 0; static constexpr act_format act = act_format::q8_K; };
template <> struct sub_traits<dec_q3_K> { static constexpr int sub = 16, zero = 4; static constexpr act_format act = act_format::q8_K; };
template <> struct sub_traits<dec_iq4_nl> { static constexpr int sub = 32, zero = 128; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_mxfp4> { static constexpr int sub = 32, zero = 128; static constexpr act_format act = act_format::q8_0; };
template <> struct sub_traits<dec_iq4_xs> { static constexpr int sub = 32, zero = 128; static constexpr act_format act = act_format::q8_K; };

/// Activations of one token: int8 quants, per-32 scale dx, per sub-block an
/// auxiliary word: -z * sum(xq) (int32, zero-point types) or the float that
/// multiplies the stored min (min types: dx * sum(xq); Q8_1: its fp16 s).
struct act_layout {
    std::size_t n_slices, nsb, stride; // stride: bytes per token, multiple of 64
    std::size_t dx_off() const noexcept { return n_slices * 64; }
    std::size_t aux_off() const noexcept { return n_slices * 64 + n_slices * 2 * 4; }
};
inline act_layout make_act_layout(std::size_t n_slices, int sub) noexcept {
    const std::size_t nsb = 64 / std::size_t(sub);
    const std::size_t bytes = n_slices * (64 + 8 + 4 * nsb);
    return {n_slices, nsb, (bytes + 63) / 64 * 64};
}

inline float fp16_round(float f) noexcept { return _cvtsh_ss(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }

/// Quantises one token (cols valid, the rest of the n_slices * 64 zero) the way
/// ggml's CPU backend quantises src1 for the weight type's vec_dot_type, so the
/// integer dots see the same int8 values and the same scales as llama.cpp:
///   q8_0: per 32-block amax, q = rne(x * (127 / amax)), dx = fp16(amax / 127);
///   q8_1: the same, and the min types' aux = fp16(amax / 127 * sum(q)) (ggml's s,
///         from the unrounded d);
///   q8_K: one scale per 256 elements: q = rne(x * (127 / amax)), dx = 1 / (127 / amax)
///         in float (ggml picks the sign from the extreme element; sign-symmetric
///         rounding makes dx * q identical).
inline void quantize_token(const float* x, std::size_t cols, const act_layout& L, act_format f, int sub, int zero,
                           std::uint8_t* out) noexcept {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    auto* q = reinterpret_cast<std::int8_t*>(out);
    auto* dx = reinterpret_cast<float*>(out + L.dx_off());
    auto* aux = out + L.aux_off();
    const std::size_t n_blocks = L.n_slices * 2;
    const std::size_t group = f == act_format::q8_K ? 8 : 1; // 32-blocks sharing one scale
    alignas(64) float tmp[32] = {};
    auto block = [&](std::size_t b) { // the zero block after a row of 32 * odd elements
        return 32 * b + 32 > cols ? static_cast<const float*>(tmp) : x + 32 * b;
    };
    for (std::size_t g = 0; g < n_blocks; g += group) {
        const std::size_t ge = std::min(n_blocks, g + group);
        __m512 vmax = _mm512_setzero_ps();
        for (std::size_t b = g; b < ge; ++b) {
            const float* v = block(b);
            vmax = _mm512_max_ps(vmax, _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(v), absmask),
                                                     _mm512_and_ps(_mm512_loadu_ps(v + 16), absmask)));
        }
        const float amax = _mm512_reduce_max_ps(vmax);
        const float mul = amax != 0.f ? 127.f / amax : 0.f;
        const float d = f == act_format::q8_K ? (amax != 0.f ? 1.f / mul : 0.f) : amax / 127.f;
        const float ds = f == act_format::q8_K ? d : fp16_round(d);
        const __m512 idv = _mm512_set1_ps(mul);
        for (std::size_t b = g; b < ge; ++b) {
            const float* v = block(b);
            // vcvtps2dq rounds to nearest even, as ggml's _mm256_round_ps / nearest_int
            const __m128i a = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v), idv)));
            const __m128i c = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v + 16), idv)));
            const __m256i q8 = _mm256_inserti128_si256(_mm256_castsi128_si256(a), c, 1);
            _mm256_store_si256(reinterpret_cast<__m256i*>(q + 32 * b), q8);
            dx[b] = ds;
            // sums of 4 quants (8 lanes), then per sub-block
            alignas(32) std::int32_t s4[8];
            _mm256_store_si256(reinterpret_cast<__m256i*>(s4),
                               _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q8));
            const int per = sub / 4, nsub = 32 / sub;
            for (int h = 0; h < nsub; ++h) {
                std::int32_t s = 0;
                for (int i = 0; i < per; ++i) s += s4[h * per + i];
                const std::size_t idx = b * std::size_t(nsub) + std::size_t(h);
                if (zero != 0) {
                    const std::int32_t z = -zero * s;
                    std::memcpy(aux + 4 * idx, &z, 4);
                } else {
                    const float m = f == act_format::q8_1 ? fp16_round(d * float(s)) : ds * float(s);
                    std::memcpy(aux + 4 * idx, &m, 4);
                }
            }
        }
    }
}

} // namespace archetype::quant::vnni::detail

#endif
