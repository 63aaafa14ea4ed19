#pragma once
// Dense attention of one head over one sequence block, for encoders: every
// query row sees every key row (a bidirectional mask; a packed batch's
// block-diagonal mask is one such block per sequence), no bias.
//
// Why a kernel of its own: kernels::attention (attention.hpp) serves decoders
// and masks of any shape, so it computes scores 16 query rows at a time
// through the general GEMM's row-dot engine, then walks P.V one key at a time
// with axpy. At encoder shapes (128 x 128 blocks, head_dim 32) that spent
// five times the FLOP share of the projections. Here, per head:
//   - K is transposed once into a zero-padded [head_dim x n_kv] panel;
//   - for each tile of R query rows (pre-scaled by 1/sqrt(d) while copied
//     into a small contiguous tile), the R x n_kv scores are a register-tiled
//     small GEMM (R rows x 2 vectors of keys, accumulated over head_dim);
//   - softmax on the tile: row max, exp, row sum; the 1/sum is applied to the
//     output instead of to every probability;
//   - P.V accumulates R rows x head_dim in registers over the keys.
// Each output element is computed by one call with one instruction sequence,
// so results do not depend on how heads and sequences are spread over threads.
// Scalar twin: kernels/reference/attention.hpp (tests/encoder/test_encoder_attention.cpp).
#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

namespace detail {
inline constexpr std::size_t dense_attn_rows = 12; // query rows per tile (24 accumulators at 2 vectors)

struct dense_attn_scratch {
    std::vector<float> kt, qs, s;
};
inline dense_attn_scratch& dense_attention_scratch() {
    thread_local dense_attn_scratch buf;
    return buf;
}

/// Kt[d * ld + j] = K[j * ldk + d] for j < n (rows n..np zero), d < hd.
inline void transpose_keys(const float* k, std::size_t ldk, std::size_t n, std::size_t np, std::size_t hd,
                           float* kt, std::size_t ld) noexcept {
#if defined(ARCHETYPE_BLAS_PACK_AVX512)
    if constexpr (W == 16) {
        for (std::size_t j0 = 0; j0 < np; j0 += 16) {
            const float* src[16];
            const std::size_t rows = j0 < n ? std::min<std::size_t>(16, n - j0) : 0;
            for (std::size_t i = 0; i < rows; ++i) src[i] = k + (j0 + i) * ldk;
            pack_rows16<float>(src, rows, hd, kt + j0, ld, __mmask16(0xFFFF));
        }
        return;
    }
#endif
    for (std::size_t d = 0; d < hd; ++d) {
        float* dst = kt + d * ld;
        for (std::size_t j = 0; j < n; ++j) dst[j] = k[j * ldk + d];
        for (std::size_t j = n; j < np; ++j) dst[j] = 0.f;
    }
}

template <std::size_t DV>
inline void dense_attention_head_impl(const attention_params& p, std::size_t h) {
    using simd::fbatch;
    constexpr std::size_t R = dense_attn_rows;
    constexpr std::size_t hd = DV * W;
    // P.V rows per register tile: R x DV accumulators within 24 registers.
    constexpr std::size_t RP = DV <= 2 ? R : R / 2;
    static_assert(R % RP == 0);
    const std::size_t g = h / (p.n_head / p.n_head_kv);
    const float* kh = p.k + g * p.kv_head_stride;
    const float* vh = p.v + g * p.kv_head_stride;
    const std::size_t n = p.n_kv, np = (n + 2 * W - 1) / (2 * W) * (2 * W);
    auto& buf = dense_attention_scratch();
    if (buf.kt.size() < hd * np) buf.kt.resize(hd * np);
    if (buf.qs.size() < R * hd) buf.qs.resize(R * hd);
    if (buf.s.size() < R * np) buf.s.resize(R * np);
    float* kt = buf.kt.data();
    float* qs = buf.qs.data();
    float* s = buf.s.data();
    transpose_keys(kh, p.ldkv, n, np, hd, kt, np);
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    const fbatch scale(p.scale);

    for (std::size_t i0 = 0; i0 < p.n_q; i0 += R) {
        const std::size_t m = std::min(R, p.n_q - i0);
        // Query tile, scaled; rows past the end repeat the last row (results dropped).
        for (std::size_t r = 0; r < R; ++r) {
            const float* q = p.q + (i0 + std::min(r, m - 1)) * p.ldq + h * hd;
            for (std::size_t v = 0; v < DV; ++v)
                (fbatch::load_unaligned(q + v * W) * scale).store_unaligned(qs + r * hd + v * W);
        }
        // Scores: R rows x 2 vectors of keys per register tile.
        for (std::size_t j0 = 0; j0 < np; j0 += 2 * W) {
            fbatch c0[R], c1[R];
            for (std::size_t r = 0; r < R; ++r) c0[r] = c1[r] = fbatch(0.f);
            const float* kp = kt + j0;
            for (std::size_t d = 0; d < hd; ++d) {
                const fbatch b0 = fbatch::load_unaligned(kp + d * np), b1 = fbatch::load_unaligned(kp + d * np + W);
#pragma GCC unroll 16
                for (std::size_t r = 0; r < R; ++r) {
                    const fbatch a(qs[r * hd + d]);
                    c0[r] = xsimd::fma(a, b0, c0[r]);
                    c1[r] = xsimd::fma(a, b1, c1[r]);
                }
            }
            for (std::size_t r = 0; r < R; ++r) {
                c0[r].store_unaligned(s + r * np + j0);
                c1[r].store_unaligned(s + r * np + j0 + W);
            }
        }
        // Softmax numerators; padded keys -> exp(-inf) = 0.
        float inv[R];
        for (std::size_t r = 0; r < R; ++r) {
            float* row = s + r * np;
            for (std::size_t j = n; j < np; ++j) row[j] = ninf;
            fbatch mv(ninf);
            for (std::size_t j = 0; j < np; j += W) mv = xsimd::max(mv, fbatch::load_unaligned(row + j));
            const fbatch negm(-simd::hmax(mv));
            fbatch sum(0.f);
            for (std::size_t j = 0; j < np; j += W) {
                const fbatch e = xsimd::exp(fbatch::load_unaligned(row + j) + negm);
                e.store_unaligned(row + j);
                sum += e;
            }
            inv[r] = 1.f / xsimd::hadd(sum); // >= 1: the row max gives exp(0)
        }
        // O = P.V / sum, RP rows x head_dim per register tile.
        for (std::size_t r0 = 0; r0 < R && r0 < m; r0 += RP) {
            fbatch acc[RP][DV];
            for (std::size_t r = 0; r < RP; ++r)
                for (std::size_t v = 0; v < DV; ++v) acc[r][v] = fbatch(0.f);
            const float* sp = s + r0 * np;
            for (std::size_t j = 0; j < n; ++j) {
                fbatch vv[DV];
                for (std::size_t v = 0; v < DV; ++v) vv[v] = fbatch::load_unaligned(vh + j * p.ldkv + v * W);
#pragma GCC unroll 16
                for (std::size_t r = 0; r < RP; ++r) {
                    const fbatch a(sp[r * np + j]);
                    for (std::size_t v = 0; v < DV; ++v) acc[r][v] = xsimd::fma(a, vv[v], acc[r][v]);
                }
            }
            for (std::size_t r = 0; r < RP && r0 + r < m; ++r) {
                float* o = p.out + (i0 + r0 + r) * p.ldo + h * hd;
                const fbatch iv(inv[r0 + r]);
                for (std::size_t v = 0; v < DV; ++v) (acc[r][v] * iv).store_unaligned(o + v * W);
            }
        }
    }
}
} // namespace detail

/// Whether dense_attention_head handles this head size (a multiple of the
/// vector width, at most four vectors).
constexpr bool dense_attention_supported(std::size_t head_dim) noexcept {
    return head_dim % simd::W == 0 && head_dim / simd::W >= 1 && head_dim / simd::W <= 4;
}

/// Head h of p with every key visible: out rows [0, p.n_q) of head h (p.bias
/// is ignored). Returns false, doing nothing, when the head size is not one
/// dense_attention_supported accepts (the caller then uses kernels::attention).
inline bool dense_attention_head(const attention_params& p, std::size_t h) {
    if (p.n_q == 0 || p.n_kv == 0) return true;
    switch (p.head_dim % simd::W == 0 ? p.head_dim / simd::W : 0) {
    case 1: detail::dense_attention_head_impl<1>(p, h); return true;
    case 2: detail::dense_attention_head_impl<2>(p, h); return true;
    case 3: detail::dense_attention_head_impl<3>(p, h); return true;
    case 4: detail::dense_attention_head_impl<4>(p, h); return true;
    default: return false;
    }
}

} // namespace archetype::kernels
