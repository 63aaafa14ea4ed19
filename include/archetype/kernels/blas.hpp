#pragma once
// Dense linear algebra on raw pointers: dot, axpy, GEMV, GEMM, and their
// F16-weight forms. Matrices are row-major with a leading dimension (elements
// between rows). Weights are stored as GGUF stores them: one output row
// contiguous over the input dimension, so the workhorse is C = A * B^T ("NT").
//
// Two GEMM engines:
//  - packed (BLIS-style) for M >= a micro-tile: B is packed into KC x NR panels
//    (F16/BF16 converted while packing), A into MR-row panels, both by 16 x 16
//    in-register transposes, and an MR x NR register-tiled micro-kernel runs from
//    the packed panels. M <= MC walks each B panel along all of K (B rows read
//    as contiguous streams); larger M packs KC x NC blocks of B shared by threads;
//  - row-dot for small M (and GEMV = M 1): groups of MA rows of A times NB rows of
//    B accumulate MA*NB vectors along K, reduced with one haddp. No packing, so B
//    streams at memory bandwidth; F16 B rows are converted in registers.
//
// Summation order (gemm_sum): the row-dot engine sums each output over W lanes,
// then adds the lanes. The packed engine sums it in one FMA chain per KC slab
// (gemm_sum::chain, the default: the fastest), or in blocks of KSUM steps added in
// order (gemm_sum::blocks: the row-dot engine's error, so a batch of rows matches
// the same rows fed one at a time as closely; some % slower).
//
// Thread-count independence: both engines split work in whole tiles (NB rows,
// NR columns, MR rows) along fixed grids, and every output element sees the
// same instruction sequence wherever its tile lands, so results are bitwise
// identical for any thread count.
// Scalar twins: kernels/reference/blas.hpp.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/compiled.hpp"
#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

/// How the packed GEMM engine sums each output along K (the row-dot engine, which
/// GEMV and small M take, always sums over the W lanes of a vector).
enum class gemm_sum : unsigned char {
    chain,  ///< one FMA chain per KC slab of K (256 steps): the fastest
    blocks, ///< blocks of detail::KSUM steps, added in order: the error of GEMV
};

namespace detail {

using simd::fbatch;
inline constexpr std::size_t W = simd::W;

/// Loads of the B operand: f32 directly, F16/BF16 converted in registers.
template <class T> struct b_elem;
template <> struct b_elem<float> {
    static fbatch load(const float* p) noexcept { return fbatch::load_unaligned(p); }
    static float scalar(float v) noexcept { return v; }
};
template <> struct b_elem<std::uint16_t> {
    static fbatch load(const std::uint16_t* p) noexcept { return simd::load_f16(p); }
    static float scalar(std::uint16_t v) noexcept { return fp16_to_fp32(v); }
};
template <> struct b_elem<bf16_t> {
    static fbatch load(const bf16_t* p) noexcept { return simd::load_bf16(reinterpret_cast<const std::uint16_t*>(p)); }
    static float scalar(bf16_t v) noexcept { return bf16_to_fp32(v.bits); }
};

/// A grow-only, 64-byte aligned scratch buffer (one per thread for packing).
struct scratch {
    struct free_deleter { void operator()(float* p) const noexcept { std::free(p); } };
    std::unique_ptr<float, free_deleter> p;
    std::size_t cap = 0;
    float* get(std::size_t n) {
        if (n > cap) {
            const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
            p.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
            if (!p) throw std::bad_alloc();
            cap = n;
        }
        return p.get();
    }
};

// ---------------------------------------------------------------- row-dot engine
/// Lane of xsimd::haddp's result that holds row r's sum. xsimd 8.1's AVX-512
/// haddp returns the sums in a permuted lane order (0 1 4 5 2 3 6 7 ...), so
/// the order is measured once rather than assumed.
inline const std::array<std::uint8_t, W>& haddp_lane_of_row() noexcept {
    static const std::array<std::uint8_t, W> lanes = [] {
        fbatch rows[W];
        for (std::size_t r = 0; r < W; ++r) rows[r] = fbatch(float(r));
        alignas(64) float s[W];
        xsimd::haddp(rows).store_aligned(s);
        std::array<std::uint8_t, W> l{};
        for (std::size_t lane = 0; lane < W; ++lane) l[std::size_t(s[lane] / float(W) + 0.5f)] = std::uint8_t(lane);
        return l;
    }();
    return lanes;
}

// C[i, j] = sum_k A[i, k] * B[j, k] for an MA x NB group. Missing rows of a
// partial group point at a valid row and their results are dropped, so every
// element is computed by the same code.
inline constexpr std::size_t rd_nb = W >= 16 ? 4 : (W >= 8 ? 4 : 2);
inline constexpr std::size_t rd_ma = W / rd_nb; // MA * NB == W lanes: one haddp per group

#ifndef ARCHETYPE_GEMV_PREFETCH
#define ARCHETYPE_GEMV_PREFETCH 32768
#endif
#ifndef ARCHETYPE_GEMV_PF_HINT
#define ARCHETYPE_GEMV_PF_HINT 2
#endif
/// Software prefetch of one task's B rows, walked in memory order (row by row,
/// 64 B at a time) a fixed distance ahead of what the row-dot groups consume.
/// Why not per row: decode matrices have short rows (768 F16 = 1.5 KB), so a
/// per-row lookahead of 512 B left every group's first lines unprefetched and
/// 8 short streams defeated the hardware streamer (0.75 of read bandwidth on
/// RWKV's 768-wide matrices). One cursor 32 KB ahead into L2 (prefetcht1; 16 KB
/// and L1 hints were slower, 64 KB the same) keeps enough misses in flight
/// whatever the row length: 0.89 of the 2-thread read bandwidth on the same
/// matrices. The cursor never leaves the task's rows (the other thread's are
/// not ours to fetch).
template <class TB>
struct row_prefetcher {
    const char* base = nullptr; // first byte of row `row`
    std::size_t row = 0, end_row = 0, off = 0, row_bytes = 0, stride = 0;
    row_prefetcher(const TB* B, std::size_t ldb, std::size_t K, std::size_t jb, std::size_t je) noexcept
        : base(reinterpret_cast<const char*>(B + jb * ldb)), row(jb), end_row(je), row_bytes(K * sizeof(TB)),
          stride(ldb * sizeof(TB)) {
        // start the cursor ARCHETYPE_GEMV_PREFETCH bytes ahead of the first group (those
        // first bytes are left to the demand loads and the hardware prefetcher)
        for (std::size_t skip = ARCHETYPE_GEMV_PREFETCH; skip > 0 && row < end_row;) {
            const std::size_t step = std::min(skip, row_bytes - off);
            off += step;
            skip -= step;
            if (off >= row_bytes) next_row();
        }
    }
    void next_row() noexcept {
        off = 0;
        ++row;
        base += stride;
    }
    /// Prefetches the next `lines` cache lines of the stream.
    void advance(std::size_t lines) noexcept {
        for (std::size_t i = 0; i < lines && row < end_row; ++i) {
            __builtin_prefetch(base + off, 0, ARCHETYPE_GEMV_PF_HINT);
            off += 64;
            if (off >= row_bytes) next_row();
        }
    }
};

// C[i, j] = sum_k A[i, k] * B[j, k] for an MA x NB group. Missing rows of a
// partial group point at a valid row and their results are dropped, so every
// element is computed by the same code. pf (may be null) is advanced by one
// line per B row per 64 B of K, the rate at which the group consumes B.
template <class TB, std::size_t MA, std::size_t NB>
inline void rowdot_group(const float* const* a, const TB* const* b, std::size_t K, float* out,
                         row_prefetcher<TB>* pf) noexcept {
    static_assert(MA * NB <= W);
    fbatch acc[W];
    for (std::size_t r = 0; r < W; ++r) acc[r] = fbatch(0.f);
    const std::size_t kv = K - K % W;
    // Two copies of the loop: with the prefetch cursor's bookkeeping inside it GCC runs
    // out of general registers and parks the B row pointers in vector registers (one
    // vmovq per FMA); callers without a cursor get the clean loop. Each A vector of a
    // multi-row group is pinned to a register: folded into every FMA as a memory
    // operand it cost NB loads per step instead of one, and Zen 4 issues one 512-bit
    // load per cycle (gemm_nt M = 5..13 from DRAM, 2 threads: 7-13 -> 11-19 GB/s).
    // Not for GEMV (MA = 1): pinned there, F16 decode measured 10% slower. Same arithmetic.
    auto step = [&](std::size_t k) {
        fbatch bv[NB];
        for (std::size_t j = 0; j < NB; ++j) bv[j] = b_elem<TB>::load(b[j] + k);
        for (std::size_t i = 0; i < MA; ++i) {
            fbatch av = fbatch::load_unaligned(a[i] + k);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
            if constexpr (MA > 1) asm("" : "+v"(av.data)); // one load, not a folded load per FMA
#endif
            for (std::size_t j = 0; j < NB; ++j) acc[i * NB + j] = xsimd::fma(av, bv[j], acc[i * NB + j]);
        }
    };
    if (pf) {
        for (std::size_t k = 0; k < kv; k += W) {
            if ((k * sizeof(TB)) % 64 == 0) pf->advance(NB);
            step(k);
        }
    } else {
        for (std::size_t k = 0; k < kv; k += W) step(k);
    }
    alignas(64) float s[W];
    xsimd::haddp(acc).store_aligned(s);
    const auto& lane = haddp_lane_of_row();
    for (std::size_t i = 0; i < MA; ++i)
        for (std::size_t j = 0; j < NB; ++j) {
            float t = s[lane[i * NB + j]];
            for (std::size_t k = kv; k < K; ++k) t += a[i][k] * b_elem<TB>::scalar(b[j][k]);
            out[i * NB + j] = t;
        }
}

/// Row-dot GEMM over columns [jb, je) of C (all M rows); jb is a multiple of NB.
template <class TB, std::size_t MA, std::size_t NB>
inline void rowdot_cols(const float* A, std::size_t lda, const TB* B, std::size_t ldb, float* C,
                        std::size_t ldc, std::size_t M, std::size_t N, std::size_t K, std::size_t jb,
                        std::size_t je, bool accumulate) noexcept {
    float out[MA * NB];
    // The cursor pays on long streams (weights); on a few hundred KB (a small-M
    // product such as an attention chunk's keys, measured when decode scores still came
    // here; row_scores takes them now) its bookkeeping costs more than it hides (decode
    // at depth 2048 then: +6-8% without it), and the loop without it compiles to cleaner
    // code. Without a stream the cursor gets an empty range, so it does not walk ahead.
    //
    // F32 GEMV (MA == 1) goes without it on Zen 4: its eight rows side by side are
    // already sequential enough for the hardware prefetchers, and the cursor's extra
    // requests cost bus slots (2 threads, 800 MB of matrices from DRAM, 21
    // alternating passes, medians: 1536 x 576 34.6 -> 39.9 GB/s, 576 x 576 31.6 ->
    // 37.4, 576 x 1536 39.0 -> 42.5). F16 rows (half the bytes per step) still
    // gain from it (1536 x 576: 42.8 with, 34.3 without), so they keep it.
    const bool stream = MA == 1 ? !std::is_same_v<TB, float>
                                : (std::min(je, N) - jb) * K * sizeof(TB) >= (std::size_t(1) << 18);
    row_prefetcher<TB> pf(B, ldb, K, jb, stream ? std::min(je, N) : jb);
    for (std::size_t j0 = jb; j0 < je; j0 += NB) {
        const TB* bp[NB];
        for (std::size_t j = 0; j < NB; ++j) bp[j] = B + std::min(j0 + j, N - 1) * ldb;
        for (std::size_t i0 = 0; i0 < M; i0 += MA) {
            const float* ap[MA];
            for (std::size_t i = 0; i < MA; ++i) ap[i] = A + std::min(i0 + i, M - 1) * lda;
            // only the first pass over a B group streams it from memory; later passes hit the cache
            rowdot_group<TB, MA, NB>(ap, bp, K, out, i0 == 0 && stream ? &pf : nullptr);
            for (std::size_t i = 0; i < MA && i0 + i < M; ++i)
                for (std::size_t j = 0; j < NB && j0 + j < std::min(je, N); ++j) {
                    float& c = C[(i0 + i) * ldc + j0 + j];
                    c = accumulate ? c + out[i * NB + j] : out[i * NB + j];
                }
        }
    }
}

template <class TB, std::size_t MA, std::size_t NB>
inline void rowdot(const float* A, std::size_t lda, const TB* B, std::size_t ldb, float* C,
                   std::size_t ldc, std::size_t M, std::size_t N, std::size_t K, bool accumulate,
                   thread_pool* pool) {
    const std::size_t groups = (N + NB - 1) / NB;
    auto run = [&](std::size_t gb, std::size_t ge) {
        rowdot_cols<TB, MA, NB>(A, lda, B, ldb, C, ldc, M, N, K, gb * NB, std::min(ge * NB, N), accumulate);
    };
    if (pool) pool->parallel_for(groups, run); else run(0, groups);
}

/// One GEMV of a batch: y[N] = B[N x K] (rows ldb apart) * x[K].
template <class TB>
struct gemv_job {
    const TB* B;
    std::size_t ldb, N, K;
    const float* x;
    float* y;
};

/// Several independent GEMVs in one dispatch: their NB-row groups are laid end
/// to end and the threads split the whole list, so a decode step's small
/// matrices (768 rows each) cost one fork-join and one ramp-up instead of one
/// per matrix. Every group runs exactly as in gemv(), so the results are
/// bitwise those of separate calls. The split counts rows, so the jobs should
/// have similar K.
template <class TB>
inline void gemv_many(const gemv_job<TB>* jobs, std::size_t n_jobs, thread_pool* pool) {
    constexpr std::size_t NB = 2 * rd_nb;
    std::size_t total = 0;
    for (std::size_t i = 0; i < n_jobs; ++i) total += (jobs[i].N + NB - 1) / NB;
    auto run = [&](std::size_t gb, std::size_t ge) {
        std::size_t base = 0;
        for (std::size_t i = 0; i < n_jobs; ++i) {
            const auto& j = jobs[i];
            const std::size_t g = (j.N + NB - 1) / NB, b = std::max(gb, base), e = std::min(ge, base + g);
            if (b < e)
                rowdot_cols<TB, 1, NB>(j.x, 0, j.B, j.ldb, j.y, 1, 1, j.N, j.K, (b - base) * NB,
                                       std::min((e - base) * NB, j.N), false);
            base += g;
        }
    };
    if (pool) pool->parallel_for(total, run); else run(0, total);
}

// ---------------------------------------------------------------- packed engine
inline constexpr std::size_t nr_vec = 2;                 // NR = 2 vectors
inline constexpr std::size_t NR = nr_vec * W;
inline constexpr std::size_t MR = (simd::n_registers - 4) / nr_vec; // 14 on AVX-512, 6 on AVX2/SSE
#ifndef ARCHETYPE_GEMM_KC
#define ARCHETYPE_GEMM_KC 256
#endif
#ifndef ARCHETYPE_GEMM_MCP
#define ARCHETYPE_GEMM_MCP 12
#endif
inline constexpr std::size_t KC = ARCHETYPE_GEMM_KC;     // B micro-panel KC x NR stays in L1
inline constexpr std::size_t MC = MR * ARCHETYPE_GEMM_MCP; // A block MC x KC stays in L2
inline constexpr std::size_t NC = NR * 128;              // packed B (KC x NC) shared, in L2/L3

#ifndef ARCHETYPE_GEMM_KSUM
#define ARCHETYPE_GEMM_KSUM 8
#endif
/// gemm_sum::blocks: steps of K summed in registers before they are added to the
/// tile's running sum (in L1). One chain along a KC slab rounds each output's
/// running sum up to 256 times in a row; the row-dot engine's W lane sums are
/// K / W long. Measured on the RWKV fixtures' model (K = 64; 88-token batches vs
/// the same tokens one at a time through GEMV, AVX2, 400 random prompts against a
/// float64 twin; prompts with a logit off by more than 1e-5): one chain 126/400,
/// KSUM 8 55/400 (GEMV 55/400), KSUM 16 65/400, KSUM 32 86/400.
inline constexpr std::size_t KSUM = ARCHETYPE_GEMM_KSUM;
static_assert(KSUM >= 2);

/// C[MR x NR] (+)= Ap (kc x MR, k-major) * Bp (kc x NR, k-major). Edge tiles go
/// through a local tile so the arithmetic is identical. Sum: see gemm_sum.
///
/// gemm_sum::blocks: each block starts with a product (an FMA onto zeroed registers
/// would cost one more instruction per accumulator and block) and runs unrolled;
/// the blocks are then added in order, c = ((block 0 + block 1) + block 2) + ...
/// Zen 3 (AVX2), 1 thread, CPU time: micro-kernel -2.5%, gemm_nt -3..-10%.
template <gemm_sum Sum = gemm_sum::chain>
inline void micro_kernel(std::size_t kc, const float* __restrict Ap, const float* __restrict Bp,
                         float* C, std::size_t ldc, std::size_t mr, std::size_t nr, bool add) noexcept {
    fbatch c[MR][nr_vec];
    if constexpr (Sum == gemm_sum::chain) {
        for (std::size_t r = 0; r < MR; ++r)
            for (std::size_t v = 0; v < nr_vec; ++v) c[r][v] = fbatch(0.f);
        for (std::size_t k = 0; k < kc; ++k) {
            fbatch b[nr_vec];
            for (std::size_t v = 0; v < nr_vec; ++v) b[v] = fbatch::load_aligned(Bp + k * NR + v * W);
#pragma GCC unroll 16
            for (std::size_t r = 0; r < MR; ++r) {
                const fbatch a(Ap[k * MR + r]);
                for (std::size_t v = 0; v < nr_vec; ++v) c[r][v] = xsimd::fma(a, b[v], c[r][v]);
            }
        }
    } else {
        // c = A[k] B[k] (first of a block) or c += A[k] B[k]
        auto step = [&](std::size_t k, auto first) {
            fbatch b[nr_vec];
            for (std::size_t v = 0; v < nr_vec; ++v) b[v] = fbatch::load_aligned(Bp + k * NR + v * W);
#pragma GCC unroll 16
            for (std::size_t r = 0; r < MR; ++r) {
                const fbatch a(Ap[k * MR + r]);
                for (std::size_t v = 0; v < nr_vec; ++v) {
                    if constexpr (decltype(first)::value) c[r][v] = a * b[v];
                    else c[r][v] = xsimd::fma(a, b[v], c[r][v]);
                }
            }
        };
        constexpr std::true_type first;
        constexpr std::false_type next;
        alignas(64) float part_buf[MR * NR]; // the sum of the blocks before the current one
        float* part = part_buf;
#if defined(__GNUC__)
        asm("" : "+r"(part)); // a plain L1 tile: GCC otherwise splits it into vector temporaries it copies around
#endif
        const std::size_t blocks = (kc + KSUM - 1) / KSUM;
        for (std::size_t blk = 0; blk + 1 < blocks; ++blk) {
            const std::size_t k0 = blk * KSUM;
            step(k0, first);
#pragma GCC unroll 16
            for (std::size_t k = 1; k < KSUM; ++k) step(k0 + k, next);
            for (std::size_t r = 0; r < MR; ++r)
                for (std::size_t v = 0; v < nr_vec; ++v) {
                    float* p = part + r * NR + v * W;
                    (blk > 0 ? fbatch::load_aligned(p) + c[r][v] : c[r][v]).store_aligned(p);
                }
        }
        if (kc == 0) {
            for (std::size_t r = 0; r < MR; ++r)
                for (std::size_t v = 0; v < nr_vec; ++v) c[r][v] = fbatch(0.f);
        } else {
            const std::size_t k0 = (blocks - 1) * KSUM;
            step(k0, first);
            if (kc - k0 == KSUM) {
#pragma GCC unroll 16
                for (std::size_t k = 1; k < KSUM; ++k) step(k0 + k, next);
            } else {
                for (std::size_t k = k0 + 1; k < kc; ++k) step(k, next);
            }
            if (blocks > 1)
                for (std::size_t r = 0; r < MR; ++r)
                    for (std::size_t v = 0; v < nr_vec; ++v)
                        c[r][v] = fbatch::load_aligned(part + r * NR + v * W) + c[r][v];
        }
    }
    if (mr == MR && nr == NR) {
        for (std::size_t r = 0; r < MR; ++r)
            for (std::size_t v = 0; v < nr_vec; ++v) {
                float* p = C + r * ldc + v * W;
                (add ? fbatch::load_unaligned(p) + c[r][v] : c[r][v]).store_unaligned(p);
            }
        return;
    }
    alignas(64) float t[MR * NR];
    for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t v = 0; v < nr_vec; ++v) c[r][v].store_aligned(t + r * NR + v * W);
    for (std::size_t r = 0; r < mr; ++r)
        for (std::size_t j = 0; j < nr; ++j) C[r * ldc + j] = add ? C[r * ldc + j] + t[r * NR + j] : t[r * NR + j];
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define ARCHETYPE_BLAS_PACK_AVX512 1
/// 16 values of a row starting at p, the first n of them (rest zero), as floats.
template <class TB> inline __m512 load_row16(const TB* p, __mmask16 m) noexcept;
template <> inline __m512 load_row16<float>(const float* p, __mmask16 m) noexcept {
    return _mm512_maskz_loadu_ps(m, p);
}
template <> inline __m512 load_row16<std::uint16_t>(const std::uint16_t* p, __mmask16 m) noexcept {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
template <> inline __m512 load_row16<bf16_t>(const bf16_t* p, __mmask16 m) noexcept {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const std::uint16_t*>(p))), 16));
}

/// In-register 16 x 16 transpose: r[i] lane l  ->  r[l] lane i.
inline void transpose16(__m512 r[16]) noexcept {
    __m512 a[16], b[16];
    for (int i = 0; i < 8; ++i) {
        a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        const __m512d a0 = _mm512_castps_pd(a[4 * i]), a1 = _mm512_castps_pd(a[4 * i + 1]);
        const __m512d a2 = _mm512_castps_pd(a[4 * i + 2]), a3 = _mm512_castps_pd(a[4 * i + 3]);
        b[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        b[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        b[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        b[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    // b[4i + m] lane j holds rows 4i..4i+3 of column 4j + m: transpose the 128-bit lanes.
    for (int m = 0; m < 4; ++m) {
        const __m512 c0 = _mm512_shuffle_f32x4(b[m], b[4 + m], 0x88), c1 = _mm512_shuffle_f32x4(b[m], b[4 + m], 0xdd);
        const __m512 c2 = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0x88);
        const __m512 c3 = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0xdd);
        r[m] = _mm512_shuffle_f32x4(c0, c2, 0x88);
        r[8 + m] = _mm512_shuffle_f32x4(c0, c2, 0xdd);
        r[4 + m] = _mm512_shuffle_f32x4(c1, c3, 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(c1, c3, 0xdd);
    }
}

/// Copies rows src[0..nrows) (missing rows zero) x kc columns, transposed, to
/// dst[k * ld + i] for i < 16, storing the lanes in `keep` (k-major panels).
template <class TB>
inline void pack_rows16(const TB* const* src, std::size_t nrows, std::size_t kc, float* dst, std::size_t ld,
                        __mmask16 keep) noexcept {
    for (std::size_t k = 0; k < kc; k += 16) {
        const std::size_t n = std::min<std::size_t>(16, kc - k);
        const __mmask16 m = n == 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
        __m512 r[16];
        for (std::size_t i = 0; i < 16; ++i) r[i] = i < nrows ? load_row16<TB>(src[i] + k, m) : _mm512_setzero_ps();
        transpose16(r);
        for (std::size_t l = 0; l < n; ++l) _mm512_mask_storeu_ps(dst + (k + l) * ld, keep, r[l]);
    }
}
#endif

/// Pack rows [i0, i0 + mc) x cols [p0, p0 + kc) of A into MR-row panels (k-major), zero padded.
inline void pack_a(const float* A, std::size_t lda, std::size_t i0, std::size_t mc, std::size_t p0,
                   std::size_t kc, float* Ap) noexcept {
    for (std::size_t ir = 0; ir < mc; ir += MR) {
        float* dst = Ap + ir * kc;
        const std::size_t mr = std::min(MR, mc - ir);
#if defined(ARCHETYPE_BLAS_PACK_AVX512)
        if constexpr (MR <= 16) {
            const float* src[16];
            for (std::size_t r = 0; r < mr; ++r) src[r] = A + (i0 + ir + r) * lda + p0;
            pack_rows16<float>(src, mr, kc, dst, MR, __mmask16((1u << MR) - 1u));
            continue;
        }
#endif
        for (std::size_t r = 0; r < MR; ++r) {
            if (r < mr) {
                const float* src = A + (i0 + ir + r) * lda + p0;
                for (std::size_t k = 0; k < kc; ++k) dst[k * MR + r] = src[k];
            } else {
                for (std::size_t k = 0; k < kc; ++k) dst[k * MR + r] = 0.f;
            }
        }
    }
}

/// Pack one NR-column panel: B rows [j0, j0 + nr) x cols [p0, p0 + kc) into dst
/// (kc x NR, k-major), zero padded to NR columns.
template <class TB>
inline void pack_b_panel(const TB* B, std::size_t ldb, std::size_t j0, std::size_t nr, std::size_t p0,
                         std::size_t kc, float* dst) noexcept {
#if defined(ARCHETYPE_BLAS_PACK_AVX512)
    if constexpr (NR % 16 == 0) {
        for (std::size_t c0 = 0; c0 < NR; c0 += 16) {
            const TB* src[16];
            const std::size_t rows = c0 < nr ? std::min<std::size_t>(16, nr - c0) : 0;
            for (std::size_t c = 0; c < rows; ++c) src[c] = B + (j0 + c0 + c) * ldb + p0;
            pack_rows16<TB>(src, rows, kc, dst + c0, NR, __mmask16(0xFFFF));
        }
        return;
    }
#endif
    const std::size_t kv = kc - kc % W;
    for (std::size_t c = 0; c < NR; ++c) {
        if (c >= nr) {
            for (std::size_t k = 0; k < kc; ++k) dst[k * NR + c] = 0.f;
            continue;
        }
        const TB* src = B + (j0 + c) * ldb + p0;
        alignas(64) float t[W];
        for (std::size_t k = 0; k < kv; k += W) {
            b_elem<TB>::load(src + k).store_aligned(t);
            for (std::size_t l = 0; l < W; ++l) dst[(k + l) * NR + c] = t[l];
        }
        for (std::size_t k = kv; k < kc; ++k) dst[k * NR + c] = b_elem<TB>::scalar(src[k]);
    }
}

/// Pack NR-column panels [pb, pe) of B rows [j0, j0 + nc) x cols [p0, p0 + kc) (k-major), zero padded.
template <class TB>
inline void pack_b(const TB* B, std::size_t ldb, std::size_t j0, std::size_t nc, std::size_t p0,
                   std::size_t kc, std::size_t pb, std::size_t pe, float* Bp) noexcept {
    for (std::size_t p = pb; p < pe; ++p)
        pack_b_panel(B, ldb, j0 + p * NR, std::min(NR, nc - p * NR), p0, kc, Bp + p * NR * kc);
}

/// At most MC rows of A: pack all of A once, then walk each NR panel of B along
/// the whole of K, so every B row is read as one contiguous stream (the
/// KC-slab order of packed_gemm strides a whole row between 1 KB pieces and
/// packed at half the rate). Measured faster for every M <= MC tried, even with
/// packed A (up to 7 MB) beyond L2. Same micro-kernel calls in the same K order
/// as packed_gemm, so the results are bitwise identical to it; threads split
/// whole N panels.
template <class TB, gemm_sum Sum>
inline void packed_gemm_small_m(const float* A, std::size_t lda, const TB* B, std::size_t ldb, float* C,
                                std::size_t ldc, std::size_t M, std::size_t N, std::size_t K, bool accumulate,
                                thread_pool* pool) {
    const std::size_t m_panels = (M + MR - 1) / MR, mpad = m_panels * MR;
    const std::size_t n_panels = (N + NR - 1) / NR;
    auto work = [&](std::size_t pb, std::size_t pe) {
        static thread_local scratch a_buf, b_buf;
        float* Ap = a_buf.get(mpad * K);
        float* Bp = b_buf.get(KC * NR);
        for (std::size_t pc = 0; pc < K; pc += KC) pack_a(A, lda, 0, M, pc, std::min(KC, K - pc), Ap + mpad * pc);
        for (std::size_t p = pb; p < pe; ++p) {
            const std::size_t jr = p * NR, nr = std::min(NR, N - jr);
            for (std::size_t pc = 0; pc < K; pc += KC) {
                const std::size_t kc = std::min(KC, K - pc);
                pack_b_panel(B, ldb, jr, nr, pc, kc, Bp);
                for (std::size_t ir = 0; ir < M; ir += MR)
                    micro_kernel<Sum>(kc, Ap + mpad * pc + ir * kc, Bp, C + ir * ldc + jr, ldc, std::min(MR, M - ir),
                                      nr, accumulate || pc > 0);
            }
        }
    };
    if (pool) pool->parallel_for(n_panels, work); else work(0, n_panels);
}

template <class TB, gemm_sum Sum>
inline void packed_gemm(const float* A, std::size_t lda, const TB* B, std::size_t ldb, float* C,
                        std::size_t ldc, std::size_t M, std::size_t N, std::size_t K, bool accumulate,
                        thread_pool* pool) {
    static thread_local scratch b_buf;
    const std::size_t threads = pool ? pool->size() : 1;
    const std::size_t m_panels = (M + MR - 1) / MR;
    float* Bp = b_buf.get(KC * NC);
    for (std::size_t jc = 0; jc < N; jc += NC) {
        const std::size_t nc = std::min(NC, N - jc);
        const std::size_t n_panels = (nc + NR - 1) / NR;
        for (std::size_t pc = 0; pc < K; pc += KC) {
            const std::size_t kc = std::min(KC, K - pc);
            const bool add = accumulate || pc > 0;
            // When each N panel is used by one thread only (1 thread, or the column
            // split below) it is packed just before its first use, while still hot,
            // and the loads of B overlap the micro-kernels of the previous panel;
            // otherwise all threads pack the shared block first.
            const bool lazy = threads == 1 || m_panels < 4 * threads;
            auto pack = [&](std::size_t pb, std::size_t pe) { pack_b(B, ldb, jc, nc, pc, kc, pb, pe, Bp); };
            if (!lazy) pool->parallel_for(n_panels, pack);
            // One task = M panels [mb, me) x N panels [nb, ne) of this block.
            auto compute = [&](std::size_t mb, std::size_t me, std::size_t nb, std::size_t ne) {
                static thread_local scratch a_buf;
                float* Ap = a_buf.get(MC * KC);
                for (std::size_t ic = mb * MR; ic < std::min(me * MR, M); ic += MC) {
                    const std::size_t mc = std::min({MC, M - ic, me * MR - ic});
                    pack_a(A, lda, ic, mc, pc, kc, Ap);
                    for (std::size_t p = nb; p < ne; ++p) {
                        if (lazy && ic == mb * MR) pack(p, p + 1);
                        const std::size_t jr = p * NR, nr = std::min(NR, nc - jr);
                        for (std::size_t ir = 0; ir < mc; ir += MR)
                            micro_kernel<Sum>(kc, Ap + ir * kc, Bp + p * NR * kc, C + (ic + ir) * ldc + jc + jr,
                                              ldc, std::min(MR, mc - ir), nr, add);
                    }
                }
            };
            // Enough M panels: split rows (each thread packs only its A); else split columns.
            if (threads == 1)
                compute(0, m_panels, 0, n_panels);
            else if (m_panels >= 4 * threads)
                pool->parallel_for(m_panels, [&](std::size_t b, std::size_t e) { compute(b, e, 0, n_panels); });
            else
                pool->parallel_for(n_panels, [&](std::size_t b, std::size_t e) { compute(0, m_panels, b, e); });
        }
    }
}

/// The packed engine wins once M fills MR-row panels with at most 1/4 of
/// padding rows (M = 14, 21..28, 29.. on AVX-512); below, the row-dot engine
/// (no packing of B) is faster. Measured by CPU time, see docs/kernels.md.
/// Narrower targets (unmeasured) keep the earlier rule M >= 2 MR.
constexpr bool use_packed(std::size_t M) noexcept {
    const std::size_t mpad = (M + MR - 1) / MR * MR;
    return W >= 16 ? M >= MR && (mpad - M) * 4 <= mpad : M >= 2 * MR;
}

/// gemm_sum::blocks runs the row-dot engine (GEMV's arithmetic) when multiply-add is
/// not fused (see gemm_nt_any); the tests read this to know which engine ran.
inline constexpr bool blocks_take_rowdot = !simd::fused_multiply_add;

template <class TB>
inline void gemm_nt_any(const float* A, std::size_t lda, const TB* B, std::size_t ldb, float* C,
                        std::size_t ldc, std::size_t M, std::size_t N, std::size_t K, thread_pool* pool,
                        bool accumulate, gemm_sum sum = gemm_sum::chain) {
    if (M == 0 || N == 0) return;
    constexpr gemm_sum chain = gemm_sum::chain, blocks = gemm_sum::blocks;
    // No fused multiply-add (the SSE2 baseline): each step of a packed block would
    // round twice, and the blocks would lose the GEMV-like error they promise; the
    // row-dot engine is GEMV's own arithmetic, so a batch asking for blocks gets it.
    const bool rowdot_only = sum == blocks && blocks_take_rowdot;
    if (M == 1)
        rowdot<TB, 1, 2 * rd_nb>(A, lda, B, ldb, C, ldc, M, N, K, accumulate, pool);
    else if (rowdot_only || !use_packed(M) || K < W)
        rowdot<TB, rd_ma, rd_nb>(A, lda, B, ldb, C, ldc, M, N, K, accumulate, pool);
    else if (M <= MC && sum == blocks)
        packed_gemm_small_m<TB, blocks>(A, lda, B, ldb, C, ldc, M, N, K, accumulate, pool);
    else if (M <= MC)
        packed_gemm_small_m<TB, chain>(A, lda, B, ldb, C, ldc, M, N, K, accumulate, pool);
    else if (sum == blocks)
        packed_gemm<TB, blocks>(A, lda, B, ldb, C, ldc, M, N, K, accumulate, pool);
    else
        packed_gemm<TB, chain>(A, lda, B, ldb, C, ldc, M, N, K, accumulate, pool);
}

} // namespace detail

inline float dot(const float* a, const float* b, std::size_t n) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    fbatch s0(0.f), s1(0.f), s2(0.f), s3(0.f);
    std::size_t i = 0;
    for (; i + 4 * W <= nv; i += 4 * W) {
        s0 = xsimd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), s0);
        s1 = xsimd::fma(fbatch::load_unaligned(a + i + W), fbatch::load_unaligned(b + i + W), s1);
        s2 = xsimd::fma(fbatch::load_unaligned(a + i + 2 * W), fbatch::load_unaligned(b + i + 2 * W), s2);
        s3 = xsimd::fma(fbatch::load_unaligned(a + i + 3 * W), fbatch::load_unaligned(b + i + 3 * W), s3);
    }
    for (; i < nv; i += W) s0 = xsimd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), s0);
    float s = xsimd::hadd((s0 + s1) + (s2 + s3));
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

/// dot of f32 a with F16 (IEEE half bits) b, converted in registers.
inline float dot_f16(const float* a, const std::uint16_t* b, std::size_t n) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    fbatch s0(0.f), s1(0.f);
    std::size_t i = 0;
    for (; i + 2 * W <= nv; i += 2 * W) {
        s0 = xsimd::fma(fbatch::load_unaligned(a + i), simd::load_f16(b + i), s0);
        s1 = xsimd::fma(fbatch::load_unaligned(a + i + W), simd::load_f16(b + i + W), s1);
    }
    for (; i < nv; i += W) s0 = xsimd::fma(fbatch::load_unaligned(a + i), simd::load_f16(b + i), s0);
    float s = xsimd::hadd(s0 + s1);
    for (; i < n; ++i) s += a[i] * fp16_to_fp32(b[i]);
    return s;
}

/// y += a * x
inline void axpy(std::size_t n, float a, const float* x, float* y) noexcept {
    using simd::fbatch;
    constexpr std::size_t W = simd::W;
    const std::size_t nv = n - n % W;
    const fbatch av(a);
    for (std::size_t i = 0; i < nv; i += W)
        xsimd::fma(av, fbatch::load_unaligned(x + i), fbatch::load_unaligned(y + i)).store_unaligned(y + i);
    for (std::size_t i = nv; i < n; ++i) y[i] += a * x[i];
}

// The entry points (compiled.hpp: inline here, or defined once in the kernel library).

/// y[M] = A[M x K] * x[K]   (rows split over the pool)
ARCHETYPE_KERNEL_ENTRY void gemv(const float* A, std::size_t lda, const float* x, float* y, std::size_t M,
                                 std::size_t K, thread_pool* pool = nullptr);

/// y[M] = A[M x K] (F16 rows) * x[K], converted in registers.
ARCHETYPE_KERNEL_ENTRY void gemv_f16(const std::uint16_t* A, std::size_t lda, const float* x, float* y,
                                     std::size_t M, std::size_t K, thread_pool* pool = nullptr);

/// C[M x N] = A[M x K] * B[N x K]^T, or C += ... when accumulate. sum: the packed
/// engine's summation order (see gemm_sum).
ARCHETYPE_KERNEL_ENTRY void gemm_nt(const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                                    std::size_t ldc, std::size_t M, std::size_t N, std::size_t K,
                                    thread_pool* pool = nullptr, bool accumulate = false,
                                    gemm_sum sum = gemm_sum::chain);

/// C[M x N] (+)= A[M x K] * B[N x K]^T with B (weights) in F16; no converted copy
/// of B is made beyond the packed KC x NC block.
ARCHETYPE_KERNEL_ENTRY void gemm_nt_f16(const float* A, std::size_t lda, const std::uint16_t* B, std::size_t ldb,
                                        float* C, std::size_t ldc, std::size_t M, std::size_t N, std::size_t K,
                                        thread_pool* pool = nullptr, bool accumulate = false,
                                        gemm_sum sum = gemm_sum::chain);

#if ARCHETYPE_KERNEL_BODIES
ARCHETYPE_KERNEL_ENTRY void gemv(const float* A, std::size_t lda, const float* x, float* y, std::size_t M,
                                 std::size_t K, thread_pool* pool) {
    if (M == 0) return;
    detail::rowdot<float, 1, 2 * detail::rd_nb>(x, 0, A, lda, y, 1, 1, M, K, false, pool);
}

ARCHETYPE_KERNEL_ENTRY void gemv_f16(const std::uint16_t* A, std::size_t lda, const float* x, float* y,
                                     std::size_t M, std::size_t K, thread_pool* pool) {
    if (M == 0) return;
    detail::rowdot<std::uint16_t, 1, 2 * detail::rd_nb>(x, 0, A, lda, y, 1, 1, M, K, false, pool);
}

ARCHETYPE_KERNEL_ENTRY void gemm_nt(const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                                    std::size_t ldc, std::size_t M, std::size_t N, std::size_t K,
                                    thread_pool* pool, bool accumulate, gemm_sum sum) {
    detail::gemm_nt_any<float>(A, lda, B, ldb, C, ldc, M, N, K, pool, accumulate, sum);
}

ARCHETYPE_KERNEL_ENTRY void gemm_nt_f16(const float* A, std::size_t lda, const std::uint16_t* B, std::size_t ldb,
                                        float* C, std::size_t ldc, std::size_t M, std::size_t N, std::size_t K,
                                        thread_pool* pool, bool accumulate, gemm_sum sum) {
    detail::gemm_nt_any<std::uint16_t>(A, lda, B, ldb, C, ldc, M, N, K, pool, accumulate, sum);
}
#endif

} // namespace archetype::kernels
