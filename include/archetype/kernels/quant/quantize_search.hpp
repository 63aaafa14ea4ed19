#pragma once
// The quantisers of ggml-quants.c that search for their scales (Q2_K, Q3_K: the
// quantize_row_*_ref llama-quantize runs without an importance matrix; IQ4_NL, IQ4_XS:
// quantize_row_iq4_nl_impl as quantize_iq4_nl / _xs call it without one) and MXFP4's
// (quantize_row_mxfp4_ref), transcribed operation for operation so that the bytes are
// ggml's. Their iterative sums round at every step, so the contraction of a * b + c
// into an FMA must match too: llama.cpp's libggml-base is built for baseline x86-64
// (no FMA: every product rounds), so these functions are compiled with contraction off
// (ARCHETYPE_NO_FP_CONTRACT) whatever -march the including TU has. Checked byte for
// byte against libggml-base (tests/quant: quantize_matches_ggml_bytes).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/ggml_tables.hpp"

// g++: a function attribute; clang: a pragma at the top of the body (at namespace
// scope it would hold for the rest of the including TU).
#if defined(__clang__)
#define ARCHETYPE_NO_FP_CONTRACT
#define ARCHETYPE_FP_CONTRACT_OFF_HERE _Pragma("clang fp contract(off)")
#elif defined(__GNUC__)
#define ARCHETYPE_NO_FP_CONTRACT __attribute__((optimize("fp-contract=off")))
#define ARCHETYPE_FP_CONTRACT_OFF_HERE
#else
#define ARCHETYPE_NO_FP_CONTRACT
#define ARCHETYPE_FP_CONTRACT_OFF_HERE
#endif

namespace archetype::quant::detail {

/// ggml's nearest_int: round to nearest even through the float 1.5 * 2^23 (|v| < 2^22).
inline int nearest_int(float v) noexcept {
    const float f = v + 12582912.f;
    std::int32_t i;
    std::memcpy(&i, &f, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/// make_qkx2_quants: scale and min of n values x (weights w) on 0..nmax, L the levels.
ARCHETYPE_NO_FP_CONTRACT inline float make_qkx2_quants(int n, int nmax, const float* x, const float* weights,
                                                       std::uint8_t* L, float* the_min, std::uint8_t* Laux,
                                                       float rmin, float rdelta, int nstep, bool use_mad) noexcept {
    ARCHETYPE_FP_CONTRACT_OFF_HERE
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = float(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = std::uint8_t(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * float(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = std::uint8_t(l);
            const float w = weights[i];
            sum_l += w * float(l);
            sum_l2 += w * float(l) * float(l);
            sum_xl += w * float(l) * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * float(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/// make_q3_quants with do_rmse: signed levels -nmax..nmax-1 (+ nmax into L), the scale.
ARCHETYPE_NO_FP_CONTRACT inline float make_q3_quants(int n, int nmax, const float* x, std::int8_t* L) noexcept {
    ARCHETYPE_FP_CONTRACT_OFF_HERE
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < 1e-15f) { // ggml's GROUP_MAX_EPS: all zero
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    const float iscale = float(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        L[i] = std::int8_t(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * float(L[i]);
            if (slx > 0) {
                float sl2 = suml2 - w * float(L[i]) * float(L[i]);
                int new_l = nearest_int(x[i] * sl2 / slx);
                new_l = new_l < -nmax ? -nmax : new_l > nmax - 1 ? nmax - 1 : new_l;
                if (new_l != L[i]) {
                    slx += w * x[i] * float(new_l);
                    sl2 += w * float(new_l) * float(new_l);
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = std::int8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = std::int8_t(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/// The 2-bit levels L (0..3) of 256 elements into Q2_K / Q3_K's qs order.
inline void pack_2bit(const std::uint8_t* L, std::uint8_t* qs) noexcept {
    for (std::size_t j = 0; j < 256; j += 128)
        for (std::size_t l = 0; l < 32; ++l)
            qs[j / 4 + l] = std::uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/// quantize_row_q2_K_ref, one 256-element block into b (84 bytes).
ARCHETYPE_NO_FP_CONTRACT inline void q_q2_K(const float* x, std::uint8_t* b) noexcept {
    ARCHETYPE_FP_CONTRACT_OFF_HERE
    std::uint8_t L[256], Laux[16];
    float weights[16], mins[16], scales[16];
    const float q4scale = 15.f;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
        scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    std::uint8_t* sc = b;
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < 16; ++j) sc[j] = std::uint8_t(nearest_int(iscale * scales[j]));
        store_f16(b + 80, max_scale / q4scale);
    } else {
        for (int j = 0; j < 16; ++j) sc[j] = 0;
        store_f16(b + 80, 0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < 16; ++j) sc[j] = std::uint8_t(sc[j] | (nearest_int(iscale * mins[j]) << 4));
        store_f16(b + 82, max_min / q4scale);
    } else {
        store_f16(b + 82, 0.f);
    }
    for (int j = 0; j < 16; ++j) {
        const float d = load_f16(b + 80) * float(sc[j] & 0xF);
        if (!d) continue;
        const float dm = load_f16(b + 82) * float(sc[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            const int l = nearest_int((x[16 * j + ii] + dm) / d);
            L[16 * j + ii] = std::uint8_t(l < 0 ? 0 : l > 3 ? 3 : l);
        }
    }
    pack_2bit(L, b + 16);
}

/// quantize_row_q3_K_ref, one 256-element block into b (110 bytes).
ARCHETYPE_NO_FP_CONTRACT inline void q_q3_K(const float* x, std::uint8_t* b) noexcept {
    ARCHETYPE_FP_CONTRACT_OFF_HERE
    std::int8_t L[256];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
        const float scale = std::fabs(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    std::uint8_t* sc = b + 96;
    std::memset(sc, 0, 12);
    if (max_scale != 0.f) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < 16; ++j) {
            auto l = static_cast<std::int8_t>(nearest_int(iscale * scales[j]));
            l = std::int8_t((l < -32 ? -32 : l > 31 ? 31 : l) + 32);
            if (j < 8) sc[j] = std::uint8_t(l & 0xF);
            else sc[j - 8] = std::uint8_t(sc[j - 8] | ((l & 0xF) << 4));
            l = std::int8_t(l >> 4);
            sc[j % 4 + 8] = std::uint8_t(sc[j % 4 + 8] | (l << (2 * (j / 4))));
        }
        store_f16(b + 108, 1 / iscale);
    } else {
        store_f16(b + 108, 0.f);
    }
    std::uint8_t s6[16];
    q3_K_scales(sc, s6);
    for (int j = 0; j < 16; ++j) {
        const float d = load_f16(b + 108) * float(int(s6[j]) - 32);
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = l < -4 ? -4 : l > 3 ? 3 : l;
            L[16 * j + ii] = std::int8_t(l + 4);
        }
    }
    // the third bit of the first 32 levels into bit 0 of hmask, the next 32 bit 1, ...
    std::uint8_t* hmask = b;
    std::memset(hmask, 0, 32);
    std::uint8_t Lu[256];
    for (int j = 0; j < 256; ++j) {
        int l = L[j];
        if (l > 3) {
            hmask[j % 32] = std::uint8_t(hmask[j % 32] | (1u << (j / 32)));
            l -= 4;
        }
        Lu[j] = std::uint8_t(l);
    }
    pack_2bit(Lu, b + 32);
}

/// quantize_row_mxfp4_ref, one 32-element block into b (17 bytes): the E8M0 exponent
/// of amax / 4 (floor of log2), each element the table value nearest x / scale (first
/// on ties).
ARCHETYPE_NO_FP_CONTRACT inline void q_mxfp4(const float* x, std::uint8_t* b) noexcept {
    ARCHETYPE_FP_CONTRACT_OFF_HERE
    float amax = 0.f;
    for (int j = 0; j < 32; ++j)
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    const auto e = amax > 0.0f ? static_cast<std::uint8_t>(int(std::floor(std::log2(amax)) - 2 + 127)) : std::uint8_t(0);
    const float d = e8m0_to_fp32_half(e);
    b[0] = e;
    auto best = [&](float v) {
        int bi = 0;
        float best_err = std::fabs(float(ggml_tables::kvalues_mxfp4[0]) * d - v);
        for (int i = 1; i < 16; ++i) {
            const float err = std::fabs(float(ggml_tables::kvalues_mxfp4[i]) * d - v);
            if (err < best_err) {
                bi = i;
                best_err = err;
            }
        }
        return bi;
    };
    for (int j = 0; j < 16; ++j) b[1 + j] = std::uint8_t(best(x[j]) | best(x[16 + j]) << 4);
}

/// ggml's best_index_int8: the index of the value of val (n, ascending) nearest x
/// (the upper one on ties).
inline int best_index_int8(int n, const std::int8_t* val, float x) noexcept {
    if (x <= float(val[0])) return 0;
    if (x >= float(val[n - 1])) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < float(val[mav])) mu = mav;
        else ml = mav;
    }
    return x - float(val[mu - 1]) < float(val[mu]) - x ? mu - 1 : mu;
}

/// quantize_row_iq4_nl_impl with no importance matrix and ntry = 7 (quantize_iq4_nl /
/// quantize_iq4_xs): per 32 a scale searched over 15 starting points (weights x^2);
/// IQ4_XS then rounds the 8 scales to 6 bits of d = -max_scale / 32 and re-picks the
/// codes. xs: IQ4_XS (256 elements, 136 bytes), else IQ4_NL (32, 18).
ARCHETYPE_NO_FP_CONTRACT inline void q_iq4(const float* x, std::uint8_t* b, bool xs) noexcept {
    ARCHETYPE_FP_CONTRACT_OFF_HERE
    const int sbs = xs ? 256 : 32, nb = sbs / 32, ntry = 7;
    const std::int8_t* values = ggml_tables::kvalues_iq4nl;
    std::uint8_t L[256];
    float scales[8], weight[32];
    std::uint8_t* q4 = b + (xs ? 8 : 2);
    std::memset(q4, 0, std::size_t(sbs / 2));
    store_u16(b, 0);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < nb; ++ib) {
        const float* xb = x + 32 * ib;
        std::uint8_t* Lb = L + 32 * ib;
        for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j) {
            const float ax = std::fabs(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < 1e-15f) {
            scales[ib] = 0;
            continue;
        }
        float d = -max / float(values[0]);
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const int l = best_index_int8(16, values, id * xb[j]);
            Lb[j] = std::uint8_t(l);
            const float q = values[l], w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; ++itry) {
            id = float(itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < 32; ++j) {
                const int l = best_index_int8(16, values, id * xb[j]);
                const float q = values[l], w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        const float abs_d = std::fabs(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }
    if (xs) {
        std::uint16_t scales_h = 0;
        std::uint8_t* scales_l = b + 4;
        const float d = -max_scale / 32;
        store_f16(b, d);
        const float id = d != 0.f ? 1 / d : 0.f;
        for (int ib = 0; ib < nb; ++ib) {
            int l = nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * float(l);
            const float idl = dl != 0.f ? 1 / dl : 0.f;
            for (int j = 0; j < 32; ++j) L[32 * ib + j] = std::uint8_t(best_index_int8(16, values, idl * x[32 * ib + j]));
            l += 32;
            const auto l_l = std::uint8_t(l & 0xf), l_h = std::uint8_t(l >> 4);
            if (ib % 2 == 0) scales_l[ib / 2] = l_l;
            else scales_l[ib / 2] = std::uint8_t(scales_l[ib / 2] | (l_l << 4));
            scales_h = std::uint16_t(scales_h | (l_h << (2 * (ib % 8))));
        }
        store_u16(b + 2, scales_h);
    } else {
        store_f16(b, scales[0]);
        const float id = scales[0] != 0.f ? 1 / scales[0] : 0;
        for (int j = 0; j < 32; ++j) L[j] = std::uint8_t(best_index_int8(16, values, id * x[j]));
    }
    for (int i = 0; i < sbs / 32; ++i)
        for (int j = 0; j < 16; ++j) q4[16 * i + j] = std::uint8_t(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

} // namespace archetype::quant::detail
