#define BOOST_TEST_MODULE quant
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/quant/dequantize.hpp"
#include "archetype/kernels/quant/generic.hpp"
#include "archetype/kernels/quant/interleaved.hpp"
#include "archetype/kernels/quant/quantize.hpp"
#include "archetype/kernels/quant/reference.hpp"

using archetype::ggml_type;
namespace q = archetype::quant;
namespace k = archetype::kernels;

namespace {

const ggml_type all_types[] = {ggml_type::F32,  ggml_type::F16,  ggml_type::BF16, ggml_type::Q8_0,
                               ggml_type::Q4_0, ggml_type::Q4_1, ggml_type::Q5_0, ggml_type::Q5_1,
                               ggml_type::Q4_K, ggml_type::Q5_K, ggml_type::Q6_K, ggml_type::Q2_K,
                               ggml_type::Q3_K, ggml_type::IQ4_NL, ggml_type::IQ4_XS, ggml_type::MXFP4,
                               ggml_type::TQ1_0, ggml_type::TQ2_0, ggml_type::IQ2_XXS, ggml_type::IQ2_XS,
                               ggml_type::IQ2_S, ggml_type::IQ3_XXS, ggml_type::IQ3_S, ggml_type::IQ1_S,
                               ggml_type::IQ1_M, ggml_type::Q1_0, ggml_type::Q2_0};

std::string name(ggml_type t) { return std::string(archetype::type_name(t)); }

std::size_t row_bytes(ggml_type t, std::size_t cols) {
    const auto tr = archetype::traits_of(t);
    return cols / tr.block_size * tr.type_size;
}

// Random but valid storage: random quant bytes, F16 scale fields set to small
// finite values (random bytes there would give Inf/NaN rows).
std::vector<std::uint8_t> random_rows(ggml_type t, std::size_t rows, std::size_t cols, unsigned seed) {
    if (cols % archetype::traits_of(t).block_size != 0)
        throw std::logic_error("random_rows: " + std::to_string(cols) + " is not whole " + name(t) + " blocks");
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> g(0.f, 1.f);
    const std::size_t rb = row_bytes(t, cols);
    std::vector<std::uint8_t> v(rows * rb);
    for (auto& b : v) b = static_cast<std::uint8_t>(byte(rng));
    auto f16 = [&](std::uint8_t* p, float f) { q::store_f16(p, f); };
    auto pos = [&] { return 0.002f + 0.02f * std::abs(g(rng)); };
    const auto tr = archetype::traits_of(t);
    const std::size_t nblk = rows * cols / tr.block_size;
    for (std::size_t i = 0; i < nblk; ++i) {
        std::uint8_t* b = v.data() + i * tr.type_size;
        switch (t) {
        case ggml_type::F32: { const float f = g(rng); std::memcpy(b, &f, 4); break; }
        case ggml_type::F16: f16(b, g(rng)); break;
        case ggml_type::BF16: q::store_u16(b, archetype::fp32_to_bf16(g(rng))); break;
        case ggml_type::Q8_0: case ggml_type::Q4_0: case ggml_type::Q5_0: f16(b, pos() * (byte(rng) & 1 ? 1 : -1)); break;
        case ggml_type::Q4_1: case ggml_type::Q5_1: f16(b, pos()); f16(b + 2, -8.f * pos()); break;
        case ggml_type::Q4_K: case ggml_type::Q5_K: f16(b, pos()); f16(b + 2, pos()); break;
        case ggml_type::Q6_K: f16(b + 208, pos()); break;
        case ggml_type::Q2_K: f16(b + 80, pos()); f16(b + 82, pos()); break;
        case ggml_type::Q3_K: f16(b + 108, pos() * (byte(rng) & 1 ? 1 : -1)); break;
        case ggml_type::IQ4_NL: f16(b, 0.05f * pos() * (byte(rng) & 1 ? 1 : -1)); break;
        case ggml_type::IQ4_XS: f16(b, pos()); break; // the sub-block scales ls - 32 carry the sign
        case ggml_type::MXFP4: b[0] = static_cast<std::uint8_t>(120 + byte(rng) % 4); break; // scales 2^-8 .. 2^-5
        // ternary: random trits in the encodings ggml's quantiser writes (TQ1_0: the base-3
        // number t of 5 (qh: 4, shifted) trits as ceil(256 t / 243); TQ2_0: 2-bit codes 0..2)
        case ggml_type::TQ1_0: {
            std::uniform_int_distribution<int> t5(0, 242), t4(0, 80);
            for (std::size_t j = 0; j < 48; ++j) b[j] = static_cast<std::uint8_t>((t5(rng) * 256 + 242) / 243);
            for (std::size_t j = 48; j < 52; ++j) b[j] = static_cast<std::uint8_t>((t4(rng) * 3 * 256 + 242) / 243);
            f16(b + 52, pos() * (byte(rng) & 1 ? 1 : -1));
            break;
        }
        // the grid types: every index and sign pattern; d > 0 as ggml's quantisers write it
        case ggml_type::IQ2_XXS: case ggml_type::IQ2_XS: case ggml_type::IQ2_S: case ggml_type::IQ3_XXS:
        case ggml_type::IQ3_S: case ggml_type::IQ1_S: f16(b, pos()); break;
        case ggml_type::IQ1_M: { // the fp16 d is the top nibbles of the four u16 scale words
            const std::uint16_t d = archetype::fp32_to_fp16(pos());
            for (std::size_t i = 0; i < 4; ++i) b[49 + 2 * i] = std::uint8_t((b[49 + 2 * i] & 0x0F) | ((d >> (4 * i)) & 0xF) << 4);
            break;
        }
        case ggml_type::Q1_0: case ggml_type::Q2_0: f16(b, pos()); break; // d >= 0 as ggml writes it
        case ggml_type::TQ2_0: {
            std::uniform_int_distribution<int> trit(0, 2);
            for (std::size_t j = 0; j < 64; ++j)
                b[j] = static_cast<std::uint8_t>(trit(rng) | trit(rng) << 2 | trit(rng) << 4 | trit(rng) << 6);
            f16(b + 64, pos() * (byte(rng) & 1 ? 1 : -1));
            break;
        }
        default: break;
        }
    }
    return v;
}

std::vector<float> gaussian(std::size_t n, unsigned seed, float scale = 1.f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = g(rng);
    return v;
}

double nmse(const float* a, const float* ref, std::size_t n) {
    double e = 0, s = 0;
    for (std::size_t i = 0; i < n; ++i) {
        e += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
        s += double(ref[i]) * ref[i];
    }
    return s > 0 ? e / s : e;
}

// Scalar reference: dequantise each row with the element-wise reference, dot in double.
std::vector<float> reference_matmul(ggml_type t, const std::vector<std::uint8_t>& w, std::size_t rows,
                                    std::size_t cols, const std::vector<float>& x, std::size_t ldx,
                                    std::size_t n_tok, std::size_t ldy) {
    std::vector<float> y(n_tok * ldy, 0.f), row(cols);
    const std::size_t rb = row_bytes(t, cols);
    for (std::size_t r = 0; r < rows; ++r) {
        q::reference::dequantize_row(t, w.data() + r * rb, row.data(), cols);
        for (std::size_t tk = 0; tk < n_tok; ++tk) {
            double s = 0;
            for (std::size_t c = 0; c < cols; ++c) s += double(row[c]) * x[tk * ldx + c];
            y[tk * ldy + r] = float(s);
        }
    }
    return y;
}

// The quantised matmul's numerics, scalar: each token's activations quantised as
// ggml does for the weight type (reference::quantize_activations), each output
// dotted in double (reference::dot_row).
std::vector<float> ggml_numerics_matmul(ggml_type t, const std::vector<std::uint8_t>& w,
                                                         std::size_t rows, std::size_t cols,
                                                         const std::vector<float>& x, std::size_t ldx,
                                                         std::size_t n_tok, std::size_t ldy) {
    std::vector<float> y(n_tok * ldy, 0.f);
    const std::size_t rb = row_bytes(t, cols);
    std::vector<q::reference::quantized_activations> acts;
    for (std::size_t tk = 0; tk < n_tok; ++tk) acts.push_back(q::reference::quantize_activations(t, x.data() + tk * ldx, cols));
    std::vector<float> wr(cols);
    for (std::size_t r = 0; r < rows; ++r) {
        // dot_row's sum, with each row's elements computed once, not once per token (the
        // same floats in the same order: the same doubles; qemu runs this file); Q8_1's
        // min term needs dot_row itself
        q::reference::dequantize_row(t, w.data() + r * rb, wr.data(), cols);
        for (std::size_t tk = 0; tk < n_tok; ++tk) {
            const auto& a = acts[tk];
            if (a.type == q::reference::act_type::q8_1) {
                y[tk * ldy + r] = float(q::reference::dot_row(t, w.data() + r * rb, a, cols));
                continue;
            }
            double acc = 0.0;
            for (std::size_t i = 0; i < cols; ++i) acc += double(wr[i]) * a.q[i] * a.d[i / a.block];
            y[tk * ldy + r] = float(acc);
        }
    }
    return y;
}

std::vector<std::size_t> cols_for(ggml_type t) {
    if (archetype::traits_of(t).block_size == 256) return {256, 512, 1280};
    if (archetype::traits_of(t).block_size == 128) return {128, 384, 1280};
    if (archetype::traits_of(t).block_size == 64) return {64, 192, 640};
    if (archetype::traits_of(t).block_size == 32) return {32, 96, 256, 608};
    return {1, 17, 64, 300};
}

bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One token through matmul_batch (one dispatch for same-type products over one x)
// against a separate matmul per matrix: bitwise equal. fused[i] and sep[i] are the
// same matrix (sep[i] may be another layout of it).
void check_fused_single_token(const std::vector<const k::weight_view*>& fused,
                              const std::vector<const k::weight_view*>& sep, const std::vector<float>& x,
                              archetype::thread_pool* pool, const std::string& what) {
    const std::size_t cols = fused[0]->cols;
    std::vector<std::vector<float>> ys(fused.size()), yf(fused.size());
    std::vector<k::matmul_task> tasks;
    for (std::size_t i = 0; i < fused.size(); ++i) {
        const std::size_t rows = fused[i]->rows;
        ys[i].assign(rows, 0.f);
        yf[i].assign(rows, -1.f);
        k::matmul(*sep[i], x.data(), cols, 1, ys[i].data(), rows, pool);
        tasks.push_back({fused[i], x.data(), cols, yf[i].data(), rows});
    }
    k::matmul_batch(tasks, 1, pool);
    for (std::size_t i = 0; i < fused.size(); ++i) BOOST_TEST(bits_equal(ys[i], yf[i]), what << " matrix " << i);
}

} // namespace

BOOST_AUTO_TEST_CASE(dequantize_matches_reference_bit_exactly) {
    for (ggml_type t : all_types) {
        for (std::size_t cols : cols_for(t)) {
            const std::size_t rows = 3;
            const auto w = random_rows(t, rows, cols, 11 + unsigned(cols));
            std::vector<float> a(cols), b(cols);
            for (std::size_t r = 0; r < rows; ++r) {
                const auto* row = w.data() + r * row_bytes(t, cols);
                q::dequantize_row(t, row, a.data(), cols);
                q::reference::dequantize_row(t, row, b.data(), cols);
                BOOST_TEST(bits_equal(a, b), name(t) << " cols=" << cols << " row " << r);
            }
        }
    }
}

// Hand-derived blocks: each expected value below follows from the layout by hand.
BOOST_AUTO_TEST_CASE(dequantize_hand_checked_blocks) {
    std::uint8_t b[210] = {};
    float y[256];
    // Q8_0, d = 0.5 (F16 0x3800): element j = int8(qs[j]) * 0.5
    q::store_u16(b, 0x3800);
    b[2] = 4;
    b[3] = 0xFF; // -1
    b[33] = 0x80; // -128, element 31
    q::dequantize_row(ggml_type::Q8_0, b, y, 32);
    BOOST_TEST(y[0] == 2.f);
    BOOST_TEST(y[1] == -0.5f);
    BOOST_TEST(y[31] == -64.f);
    // Q4_0, d = 2: byte 0x1F -> element 0 = (15 - 8) * 2 = 14, element 16 = (1 - 8) * 2 = -14
    std::memset(b, 0, sizeof b);
    q::store_u16(b, 0x4000);
    b[2] = 0x1F;
    q::dequantize_row(ggml_type::Q4_0, b, y, 32);
    BOOST_TEST(y[0] == 14.f);
    BOOST_TEST(y[16] == -14.f);
    BOOST_TEST(y[1] == -16.f);
    // Q5_0, d = 1: qh bit 16 set -> element 16 = ((0 | 16) - 16) = 0; element 0 = 0 - 16
    std::memset(b, 0, sizeof b);
    q::store_u16(b, 0x3C00);
    b[2 + 2] = 0x01; // bit 16 of the little-endian u32 at offset 2
    q::dequantize_row(ggml_type::Q5_0, b, y, 32);
    BOOST_TEST(y[0] == -16.f);
    BOOST_TEST(y[16] == 0.f);
    // Q6_K, d = 1, scales[1] = 3: element 16 (l = 16 of the first quarter) = 3 * (q - 32),
    // q = ql[16] & 15 | (qh[16] & 3) << 4 = 5 | 2 << 4 = 37 -> 15
    std::memset(b, 0, sizeof b);
    q::store_u16(b + 208, 0x3C00);
    b[192 + 1] = 3;
    b[16] = 5;
    b[128 + 16] = 2;
    q::dequantize_row(ggml_type::Q6_K, b, y, 256);
    BOOST_TEST(y[16] == 15.f);
    BOOST_TEST(y[0] == 0.f); // scales[0] = 0
    // Q4_K, d = 1, dmin = 1; sub-block 5 (j >= 4): scale = scales[9] & 15 | (scales[1] >> 6) << 4,
    // min = scales[9] >> 4 | (scales[5] >> 6) << 4. Element 64*2 + 32 + 0 = 160 is sub-block 5,
    // the high nibble of qs[64].
    std::memset(b, 0, sizeof b);
    q::store_u16(b, 0x3C00);
    q::store_u16(b + 2, 0x3C00);
    b[4 + 9] = 0x21;  // scale low 1, min low 2
    b[4 + 1] = 0x40;  // scale high bits 01 -> scale = 1 + 16 = 17
    b[4 + 5] = 0x80;  // min high bits 10 -> min = 2 + 32 = 34
    b[16 + 64] = 0x30; // high nibble 3
    q::dequantize_row(ggml_type::Q4_K, b, y, 256);
    BOOST_TEST(y[160] == 17.f * 3.f - 34.f);
}

BOOST_AUTO_TEST_CASE(quantize_hand_checked) {
    std::uint8_t b[40];
    // Q8_0: amax 127 -> d = 1 exactly; roundf rounds halves away from zero.
    std::vector<float> x(32, 0.f);
    x[0] = 127.f;
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = -126.4f;
    q::quantize_row(ggml_type::Q8_0, x.data(), b, 32);
    BOOST_TEST(q::load_u16(b) == 0x3C00);
    BOOST_TEST(int(static_cast<std::int8_t>(b[2])) == 127);
    BOOST_TEST(int(static_cast<std::int8_t>(b[3])) == 3);
    BOOST_TEST(int(static_cast<std::int8_t>(b[4])) == -3);
    BOOST_TEST(int(static_cast<std::int8_t>(b[5])) == -126);
    BOOST_TEST(int(b[6]) == 0);
    // Q4_0: the signed absmax -8 gives d = 1, q = min(15, trunc(x + 8.5)).
    std::fill(x.begin(), x.end(), 0.f);
    x[0] = -8.f;  // q 0
    x[1] = 7.f;   // 15.5 -> 15
    x[2] = 7.9f;  // 16.4 -> 16 -> clamped 15
    x[3] = -0.6f; // 7.9 -> 7
    x[16] = 3.f;  // 11.5 -> 11, high nibble of byte 0
    q::quantize_row(ggml_type::Q4_0, x.data(), b, 32);
    BOOST_TEST(q::load_u16(b) == 0x3C00);
    BOOST_TEST(int(b[2]) == (0 | 11 << 4));
    BOOST_TEST(int(b[3]) == (15 | 8 << 4));
    BOOST_TEST(int(b[4]) == (15 | 8 << 4));
    BOOST_TEST(int(b[5]) == (7 | 8 << 4));
    // Q4_0 with a positive absmax: d = -1, q = trunc(8.5 - x)
    std::fill(x.begin(), x.end(), 0.f);
    x[0] = 8.f;  // 0.5 -> 0
    x[1] = -7.f; // 15.5 -> 15
    q::quantize_row(ggml_type::Q4_0, x.data(), b, 32);
    BOOST_TEST(q::load_u16(b) == 0xBC00);
    BOOST_TEST(int(b[2]) == (0 | 8 << 4));
    BOOST_TEST(int(b[3]) == (15 | 8 << 4));
    // All-zero block: d = 0 and every quant at its zero point.
    std::fill(x.begin(), x.end(), 0.f);
    q::quantize_row(ggml_type::Q4_0, x.data(), b, 32);
    BOOST_TEST(q::load_u16(b) == 0x8000); // 0 / -8 = -0: F16 negative zero
    BOOST_TEST(int(b[2]) == 0x88);
    // Q4_1: min -1, max 14 -> d = 1, m = -1, q = trunc(x + 1 + 0.5)
    for (std::size_t j = 0; j < 32; ++j) x[j] = float(j % 16) - 1.f;
    q::quantize_row(ggml_type::Q4_1, x.data(), b, 32);
    BOOST_TEST(q::load_u16(b) == 0x3C00);
    BOOST_TEST(q::load_u16(b + 2) == 0xBC00);
    for (std::size_t j = 0; j < 16; ++j) BOOST_TEST(int(b[4 + j]) == int(j | j << 4));
    // Q5_0: absmax -16 -> d = 1, q = min(31, trunc(x + 16.5)); bit 4 goes to qh
    std::fill(x.begin(), x.end(), 0.f);
    x[0] = -16.f; // 0
    x[1] = 15.f;  // 31
    x[17] = 1.f;  // 17 -> low 1, high bit at 17
    q::quantize_row(ggml_type::Q5_0, x.data(), b, 32);
    BOOST_TEST(q::load_u16(b) == 0x3C00);
    const std::uint32_t qh = q::load_u32(b + 2);
    // elements at 16 + 0 (x = 0 -> q 16) and the rest of 0 -> 16 all have bit 4 set; element 0 (q 0) does not.
    BOOST_TEST((qh & 1u) == 0u);
    BOOST_TEST(((qh >> 1) & 1u) == 1u);
    BOOST_TEST(((qh >> 17) & 1u) == 1u);
    BOOST_TEST(int(b[6]) == (0 | 0 << 4));  // element 0 low 0, element 16 low (16 & 15) = 0
    BOOST_TEST(int(b[7]) == (15 | 1 << 4)); // element 1 low 15, element 17 low 1
    // Q5_1: min 0, max 31 -> d = 1, q = trunc(x + 0.5)
    for (std::size_t j = 0; j < 32; ++j) x[j] = float(j);
    q::quantize_row(ggml_type::Q5_1, x.data(), b, 32);
    BOOST_TEST(q::load_u16(b) == 0x3C00);
    BOOST_TEST(q::load_u16(b + 2) == 0);
    BOOST_TEST(q::load_u32(b + 4) == 0xFFFF0000u);
    for (std::size_t j = 0; j < 16; ++j) BOOST_TEST(int(b[8 + j]) == int(j | j << 4));
}

BOOST_AUTO_TEST_CASE(quantize_dequantize_error_bounds) {
    struct bound { ggml_type t; double nmse; };
    // 4 bits: step = range / 15 over gaussian blocks -> NMSE ~ 1e-2; 5 bits ~ 2.5e-3; 8 bits ~ 1e-5.
    const bound bounds[] = {{ggml_type::Q8_0, 5e-5}, {ggml_type::Q4_0, 2e-2}, {ggml_type::Q4_1, 1.5e-2},
                            {ggml_type::Q5_0, 5e-3}, {ggml_type::Q5_1, 4e-3}, {ggml_type::F16, 1e-6},
                            {ggml_type::BF16, 2e-5}, {ggml_type::F32, 0.0}};
    const std::size_t n = 4096;
    const auto x = gaussian(n, 5, 3.f);
    std::vector<std::uint8_t> buf(n * 4);
    std::vector<float> y(n);
    for (const auto& b : bounds) {
        q::quantize_row(b.t, x.data(), buf.data(), n);
        q::dequantize_row(b.t, buf.data(), y.data(), n);
        const double e = nmse(y.data(), x.data(), n);
        BOOST_TEST(e <= b.nmse, name(b.t) << " nmse " << e);
        // Per element: never more than one quantisation step (plus F16 rounding of the scale).
        if (archetype::traits_of(b.t).block_size == 32) {
            for (std::size_t blk = 0; blk < n / 32; ++blk) {
                float lo = x[32 * blk], hi = lo;
                for (std::size_t j = 0; j < 32; ++j) {
                    lo = std::min(lo, x[32 * blk + j]);
                    hi = std::max(hi, x[32 * blk + j]);
                }
                const float amax = std::max(hi, -lo);
                float step = hi - lo; // one quantisation step of this block
                switch (b.t) {
                case ggml_type::Q8_0: step = amax / 127.f; break;
                case ggml_type::Q4_0: step = amax / 8.f; break;
                case ggml_type::Q5_0: step = amax / 16.f; break;
                case ggml_type::Q4_1: step = (hi - lo) / 15.f; break;
                case ggml_type::Q5_1: step = (hi - lo) / 31.f; break;
                default: break;
                }
                step *= 1.05f; // F16 rounding of the scale
                for (std::size_t j = 0; j < 32; ++j) {
                    const std::size_t i = 32 * blk + j;
                    if (!(std::abs(y[i] - x[i]) <= step)) {
                        BOOST_ERROR(name(b.t) << " element " << i << ": " << y[i] << " vs " << x[i]);
                        blk = n;
                        break;
                    }
                }
            }
        }
    }
    BOOST_CHECK_THROW(q::quantize_row(ggml_type::Q4_K, x.data(), buf.data(), n), archetype::argument_error);
    BOOST_CHECK_THROW(q::quantize_row(ggml_type::IQ2_XXS, x.data(), buf.data(), n), archetype::argument_error);
    BOOST_CHECK_THROW(q::quantize_row(ggml_type::Q8_0, x.data(), buf.data(), 33), archetype::argument_error);
}

// The fast matmul against scalar dequantise-then-dot, every type, odd shapes, strided x and y.
// Three rows, not one, for the smallest matrix (less than one 4-row group, as one was):
// the NMSE of a single output is ill-conditioned where the weights have zero mean (the
// ternary and grid types): one IQ2_XS output nearly cancelled, nmse 5.1 against exact x
// (ggml's own int8 numerics that far off) and 9.6e-12 against ggml's numerics.
BOOST_AUTO_TEST_CASE(matmul_matches_dequantise_then_dot) {
    archetype::thread_pool pool(2);
    for (ggml_type t : all_types) {
        for (std::size_t cols : cols_for(t)) {
            for (std::size_t rows : {3, 7, 65}) {
                const auto w = random_rows(t, rows, cols, unsigned(rows * 131 + cols));
                for (std::size_t n_tok : {1, 3, 17, 64}) {
                    const std::size_t ldx = cols + 3, ldy = rows + 2;
                    const auto x = gaussian(n_tok * ldx, unsigned(n_tok + cols));
                    const auto ref = reference_matmul(t, w, rows, cols, x, ldx, n_tok, ldy);
                    std::vector<float> y(n_tok * ldy, 0.f);
                    k::weight_view W{t, w.data(), rows, cols};
                    k::matmul(W, x.data(), ldx, n_tok, y.data(), ldy, &pool);
                    const double e = nmse(y.data(), ref.data(), y.size());
                    const bool block_type = archetype::traits_of(t).block_size > 1;
                    // batches of block types go through dequantised panels (float activations)
                    const bool int8_act = block_type && n_tok < q::panels::min_tokens;
                    if (!int8_act) {
                        BOOST_TEST(e < 1e-9, name(t) << " rows=" << rows << " cols=" << cols << " n_tok=" << n_tok
                                                     << " nmse " << e);
                    } else {
                        // The block types run on int8 activations: against exact x the error is the
                        // activation rounding (~1e-5, larger when a row's output nearly cancels) ...
                        BOOST_TEST(e < 5e-3, name(t) << " rows=" << rows << " cols=" << cols
                                                     << " n_tok=" << n_tok << " nmse " << e);
#if defined(ARCHETYPE_QUANT_VNNI) || defined(ARCHETYPE_QUANT_INT8)
                        // ... and against the same int8 activations and scales as llama.cpp's
                        // (scalar, in double) only the kernel's float rounding is left.
                        const auto refq = ggml_numerics_matmul(t, w, rows, cols, x, ldx, n_tok, ldy);
                        const double eq = nmse(y.data(), refq.data(), y.size());
                        BOOST_TEST(eq < 1e-12, name(t) << " rows=" << rows << " cols=" << cols
                                                       << " n_tok=" << n_tok << " nmse vs ggml numerics " << eq);
#endif
                    }
                    // the portable path: exact for float types, ggml's activation numerics for blocks
                    std::vector<float> yg(n_tok * ldy, 0.f);
                    q::generic::matmul(t, w.data(), rows, cols, x.data(), ldx, n_tok, yg.data(), ldy, &pool);
                    const double eg = nmse(yg.data(), block_type ? ggml_numerics_matmul(t, w, rows, cols, x, ldx, n_tok, ldy).data()
                                                                 : ref.data(), y.size());
                    BOOST_TEST(eg < (block_type ? 1e-12 : 1e-9), "generic " << name(t) << " rows=" << rows << " cols=" << cols << " n_tok=" << n_tok << " nmse " << eg);
                }
            }
        }
    }
}

#if defined(ARCHETYPE_QUANT_INT8)
namespace {
// One int8 row engine E called directly: ggml's numerics to float rounding for every
// block type, odd widths, strided x and y, 1 and 3 tokens; bitwise the same for 1, 2
// and 3 threads, a token alone or in a batch, and a matrix alone or fused with others
// in one call. Returns the 3-token outputs of every case, in order.
template <class E>
std::vector<float> check_int8_engine(const char* engine_name) {
    archetype::thread_pool p2(2), p3(3);
    std::vector<float> all;
    for (ggml_type t : all_types) {
        if (!q::int8::handles(t)) continue;
        for (std::size_t cols : cols_for(t))
        for (std::size_t rows : {1, 6, 65}) {
            BOOST_TEST_CONTEXT(engine_name << " " << name(t) << " " << rows << " x " << cols) {
            const auto w = random_rows(t, rows, cols, unsigned(rows * 7 + cols));
            const std::size_t n_tok = 3, ldx = cols + 5, ldy = rows + 3;
            const auto x = gaussian(n_tok * ldx, unsigned(cols + 1), 2.f);
            const auto refq = ggml_numerics_matmul(t, w, rows, cols, x, ldx, n_tok, ldy);
            std::vector<float> y(n_tok * ldy, 0.f), y2(n_tok * ldy, 0.f), y3(n_tok * ldy, 0.f), y1(ldy, 0.f);
            BOOST_TEST(q::int8::matmul<E>(t, w.data(), rows, cols, x.data(), ldx, n_tok, y.data(), ldy, nullptr));
            const double e = nmse(y.data(), refq.data(), y.size());
            BOOST_TEST(e < 1e-12, "nmse vs ggml numerics " << e);
            q::int8::matmul<E>(t, w.data(), rows, cols, x.data(), ldx, n_tok, y2.data(), ldy, &p2);
            q::int8::matmul<E>(t, w.data(), rows, cols, x.data(), ldx, n_tok, y3.data(), ldy, &p3);
            BOOST_TEST(bits_equal(y, y2), "1 vs 2 threads");
            BOOST_TEST(bits_equal(y, y3), "1 vs 3 threads");
            q::int8::matmul<E>(t, w.data(), rows, cols, x.data() + 2 * ldx, ldx, 1, y1.data(), ldy, &p2);
            BOOST_TEST(std::memcmp(y1.data(), y.data() + 2 * ldy, rows * sizeof(float)) == 0, "token alone vs in a batch");
            // the same matrix three times in one fused call, each part with its own rows offset
            std::vector<float> yf(3 * rows, -1.f);
            const q::int8::gemv_part parts[3] = {{w.data(), rows, yf.data(), rows},
                                                 {w.data(), rows, yf.data() + rows, rows},
                                                 {w.data(), rows, yf.data() + 2 * rows, rows}};
            q::int8::gemv_parts<E>(t, parts, 3, cols, x.data(), ldx, 1, &p3);
            for (std::size_t i = 0; i < 3; ++i)
                BOOST_TEST(std::memcmp(yf.data() + i * rows, y.data(), rows * sizeof(float)) == 0, "fused part " << i);
            all.insert(all.end(), y.begin(), y.end());
            }
        }
    }
    BOOST_TEST(!q::int8::handles(ggml_type::F16));
    BOOST_TEST(!q::int8::matmul<E>(ggml_type::BF16, nullptr, 1, 32, nullptr, 32, 1, nullptr, 1, nullptr));
    return all;
}
} // namespace

// The int8 row engine of this level (AVX2, AVX-VNNI or NEON; on an AVX-512 VNNI
// machine kernels::matmul takes the VNNI path, so this is where it is checked there).
BOOST_AUTO_TEST_CASE(int8_engine_matches_ggml_numerics) {
    const auto y = check_int8_engine<q::int8::level_engine>("level engine");
    BOOST_TEST(!y.empty());
#if defined(ARCHETYPE_QUANT_AVXVNNI)
    // vpdpbusd and vpmaddubsw + vpmaddwd sum the same exact integers: the AVX2 engine
    // built here gives bitwise the AVX-VNNI engine's outputs
    static_assert(std::is_same_v<q::int8::level_engine, q::avxvnni::engine>);
    BOOST_TEST(bits_equal(check_int8_engine<q::avx2::engine>("avx2 engine"), y));
#endif
}
#endif

#if defined(ARCHETYPE_QUANT_AVX2) || defined(ARCHETYPE_QUANT_NEON)
namespace {
// E's GEMM tile of type t called directly (acts null: nothing run); false where E has
// none for t.
template <class E>
bool tile_gemm(ggml_type t, const std::uint8_t* w, std::size_t rows, std::size_t cols, const q::int8::act_buffer* acts,
               std::size_t n_tok, float* y, std::size_t ldy, archetype::thread_pool* pool) {
    auto run = [&](auto tag) {
        constexpr ggml_type T = decltype(tag)::value;
        if constexpr (!q::int8::sums_blocks<E, T>) return false;
        else {
            if (acts) E::template gemm<T>(w, rows, cols, *acts, n_tok, y, ldy, pool);
            return true;
        }
    };
    using G = ggml_type;
    switch (t) {
    case G::Q8_0: return run(std::integral_constant<G, G::Q8_0>{});
    case G::Q4_0: return run(std::integral_constant<G, G::Q4_0>{});
    case G::Q4_1: return run(std::integral_constant<G, G::Q4_1>{});
    case G::Q5_0: return run(std::integral_constant<G, G::Q5_0>{});
    case G::Q5_1: return run(std::integral_constant<G, G::Q5_1>{});
    case G::IQ4_NL: return run(std::integral_constant<G, G::IQ4_NL>{});
    case G::MXFP4: return run(std::integral_constant<G, G::MXFP4>{});
    case G::Q4_K: return run(std::integral_constant<G, G::Q4_K>{});
    case G::Q5_K: return run(std::integral_constant<G, G::Q5_K>{});
    case G::Q6_K: return run(std::integral_constant<G, G::Q6_K>{});
    case G::Q2_K: return run(std::integral_constant<G, G::Q2_K>{});
    case G::Q3_K: return run(std::integral_constant<G, G::Q3_K>{});
    case G::IQ4_XS: return run(std::integral_constant<G, G::IQ4_XS>{});
    default: return false;
    }
}

// The GEMM tile of engine E (avx2/tile.hpp, neon/tile.hpp) for each format it tiles, called directly:
// rows that fill no tile (1, 7) and several tiles with a ragged end (8, 17, 65), odd
// widths, strided x and y, token counts that leave every remainder of the token tile;
// ggml's numerics to float rounding, and bitwise each token alone on the row engine (the
// single-token product kernels::matmul takes for a decode step), on 1, 2 and 3 threads;
// through int8::matmul a batch takes the tile. Returns every tile output, in order.
template <class E>
std::vector<float> check_int8_tile(const char* engine_name) {
    archetype::thread_pool p2(2), p3(3);
    std::vector<float> all;
    std::size_t tiled_types = 0;
    for (ggml_type t : all_types) {
        const bool tiled = tile_gemm<E>(t, nullptr, 0, 0, nullptr, 0, nullptr, 0, nullptr);
        if (!tiled) continue;
        ++tiled_types;
        for (std::size_t cols : cols_for(t))
        for (std::size_t rows : {1, 7, 8, 17, 65})
        for (std::size_t n_tok : {4, 7, 13}) {
            BOOST_TEST_CONTEXT(engine_name << " " << name(t) << " " << rows << " x " << cols << ", " << n_tok << " tokens") {
            const auto w = random_rows(t, rows, cols, unsigned(rows * 11 + cols));
            const std::size_t ldx = cols + 5, ldy = rows + 3;
            const auto x = gaussian(n_tok * ldx, unsigned(cols + n_tok), 2.f);
            q::int8::act_buffer acts(q::int8::act_format_for(t), cols, n_tok);
            for (std::size_t k = 0; k < n_tok; ++k) acts.quantize(k, x.data() + k * ldx);
            std::vector<float> y(n_tok * ldy, 0.f), y2(n_tok * ldy, 0.f), y3(n_tok * ldy, 0.f), ym(n_tok * ldy, 0.f),
                ysep(n_tok * ldy, 0.f);
            auto tile = [&](std::vector<float>& out, archetype::thread_pool* pool) {
                tile_gemm<E>(t, w.data(), rows, cols, &acts, n_tok, out.data(), ldy, pool);
            };
            tile(y, nullptr);
            tile(y2, &p2);
            tile(y3, &p3);
            const auto refq = ggml_numerics_matmul(t, w, rows, cols, x, ldx, n_tok, ldy);
            const double e = nmse(y.data(), refq.data(), y.size());
            BOOST_TEST(e < 1e-12, "nmse vs ggml numerics " << e);
            BOOST_TEST(bits_equal(y, y2), "1 vs 2 threads");
            BOOST_TEST(bits_equal(y, y3), "1 vs 3 threads");
            for (std::size_t k = 0; k < n_tok; ++k)
                BOOST_TEST(q::int8::matmul<E>(t, w.data(), rows, cols, x.data() + k * ldx, ldx, 1, ysep.data() + k * ldy, ldy, &p2));
            BOOST_TEST(bits_equal(y, ysep), "tile vs each token alone on the row engine");
            BOOST_TEST(q::int8::matmul<E>(t, w.data(), rows, cols, x.data(), ldx, n_tok, ym.data(), ldy, &p3));
            BOOST_TEST(bits_equal(y, ym), "tile vs int8::matmul of the batch");
            all.insert(all.end(), y.begin(), y.end());
            }
        }
    }
    BOOST_TEST(tiled_types == 13u, engine_name << ": Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 IQ4_NL MXFP4 Q4_K Q5_K Q6_K Q2_K Q3_K IQ4_XS tiled");
    return all;
}
} // namespace

BOOST_AUTO_TEST_CASE(int8_tile_matches_row_engine) {
#if defined(ARCHETYPE_QUANT_AVX2)
    const auto y = check_int8_tile<q::avx2::engine>("avx2 tile");
    BOOST_TEST(!y.empty());
#if defined(ARCHETYPE_QUANT_AVXVNNI)
    // vpdpbusd on v + 128 and vpmaddubsw on |v|, sign(x, v): the same integers
    BOOST_TEST(bits_equal(check_int8_tile<q::avxvnni::engine>("avxvnni tile"), y));
#endif
#elif defined(__ARM_FEATURE_DOTPROD)
    // the neon_dotprod level's tile (sdot by element) ...
    static_assert(std::is_same_v<q::int8::level_engine, q::neon::tiled_engine<q::neon::tile::sdot_products>>);
    const auto y = check_int8_tile<q::neon::engine>("neon_dotprod tile");
    BOOST_TEST(!y.empty());
    // ... and the neon level's (smull + sadalp), built here too: the same integers
    BOOST_TEST(bits_equal(check_int8_tile<q::neon::tiled_engine<q::neon::tile::smull_products>>("neon tile"), y));
#else
    static_assert(std::is_same_v<q::int8::level_engine, q::neon::tiled_engine<q::neon::tile::smull_products>>);
    BOOST_TEST(!check_int8_tile<q::neon::engine>("neon tile").empty());
#endif
}
#endif

// Activations that int8 quantisation represents exactly (integers, each 32-block
// with one +-127): the quantised path then has only float rounding left.
BOOST_AUTO_TEST_CASE(matmul_exact_activations) {
    for (ggml_type t : all_types) {
        if (archetype::traits_of(t).block_size == 1) continue;
        const std::size_t cols = 512, rows = 9, n_tok = 5;
        const auto w = random_rows(t, rows, cols, 77);
        std::mt19937 rng(3);
        std::uniform_int_distribution<int> v(-127, 127);
        std::vector<float> x(n_tok * cols);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = i % 32 == 5 ? (i % 64 == 5 ? 127.f : -127.f) : float(v(rng));
        const auto ref = reference_matmul(t, w, rows, cols, x, cols, n_tok, rows);
        std::vector<float> y(n_tok * rows);
        k::matmul(k::weight_view{t, w.data(), rows, cols}, x.data(), cols, n_tok, y.data(), rows, nullptr);
        const double e = nmse(y.data(), ref.data(), y.size());
        BOOST_TEST(e < 1e-10, name(t) << " nmse " << e);
    }
}

// Row lengths that take each single-token kernel's paths: a partial last 128-element
// group (352 = 11 blocks, 576 = 18 blocks: masked tail loads), whole groups (1536),
// and Q8_0 rows of >= 4 KiB (4192 = 131 blocks), which use gemv16 instead of rows16 on Intel
// (rows16 on AMD: an odd block count there).
BOOST_AUTO_TEST_CASE(matmul_independent_of_threads_and_batching) {
    for (ggml_type t : all_types)
    for (std::size_t legacy_cols : {352, 576, 1536, 4192}) {
        const bool k_type = archetype::traits_of(t).block_size == 256;
        if (k_type && legacy_cols != 352) continue;
        // Q1_0 (128), Q2_0 (64): the multiples (the K-sized types run 768 wide, once)
        if (!k_type && legacy_cols % archetype::traits_of(t).block_size != 0) continue;
        const std::size_t cols = k_type ? 768 : legacy_cols, rows = 37, n_tok = 11;
        const auto w = random_rows(t, rows, cols, 99);
        const auto x = gaussian(n_tok * cols, 4);
        k::weight_view W{t, w.data(), rows, cols};
        std::vector<float> y1(n_tok * rows), y2(n_tok * rows), y3(n_tok * rows), ysep(n_tok * rows);
        k::matmul(W, x.data(), cols, n_tok, y1.data(), rows, nullptr);
        archetype::thread_pool p2(2), p3(3);
        k::matmul(W, x.data(), cols, n_tok, y2.data(), rows, &p2);
        k::matmul(W, x.data(), cols, n_tok, y3.data(), rows, &p3);
        BOOST_TEST(bits_equal(y1, y2), name(t) << " cols " << cols << " 1 vs 2 threads");
        BOOST_TEST(bits_equal(y1, y3), name(t) << " cols " << cols << " 1 vs 3 threads");
        if (t == ggml_type::F32 || t == ggml_type::F16) continue; // blas.hpp's gemm vs gemv order differ
        // Below quant::panels::min_tokens a batch runs the int8 kernels token by token:
        // bitwise one token at a time. From min_tokens on (n_tok here) it runs on float
        // activations: the exact product to float rounding.
        const std::size_t n_small = q::panels::min_tokens - 1;
        std::vector<float> ysmall(n_small * rows);
        k::matmul(W, x.data(), cols, n_small, ysmall.data(), rows, &p2);
        for (std::size_t tk = 0; tk < n_tok; ++tk)
            k::matmul(W, x.data() + tk * cols, cols, 1, ysep.data() + tk * rows, rows, &p2);
        BOOST_TEST(bits_equal(ysmall, std::vector<float>(ysep.begin(), ysep.begin() + std::ptrdiff_t(n_small * rows))),
                   name(t) << " cols " << cols << " batch of " << n_small << " vs one token at a time");
        BOOST_TEST(nmse(y1.data(), reference_matmul(t, w, rows, cols, x, cols, n_tok, rows).data(), y1.size()) < 1e-9,
                   name(t) << " cols " << cols << " batch of " << n_tok << " vs dequantise-then-dot");
        // With the int8 batch mode (kernels/batch_activations.hpp) the same batch takes the
        // int8 kernels: bitwise one token at a time, on any thread count; the mode is the
        // calling thread's for the scope only. (BF16 has one path.)
        if (archetype::traits_of(t).block_size > 1) {
            std::vector<float> yi(n_tok * rows), yi3(n_tok * rows);
            {
                const k::batch_activations_scope int8(k::batch_activations::int8);
                BOOST_TEST((k::current_batch_activations() == k::batch_activations::int8));
                k::matmul(W, x.data(), cols, n_tok, yi.data(), rows, &p2);
                k::matmul(W, x.data(), cols, n_tok, yi3.data(), rows, &p3);
            }
            BOOST_TEST((k::current_batch_activations() == k::batch_activations::exact));
            BOOST_TEST(bits_equal(yi, ysep), name(t) << " cols " << cols << " int8 batch of " << n_tok << " vs one token at a time");
            BOOST_TEST(bits_equal(yi, yi3), name(t) << " cols " << cols << " int8 batch, 2 vs 3 threads");
            BOOST_TEST(!bits_equal(yi, y1), name(t) << " cols " << cols << " int8 batch vs exact batch: the same bits");
        }
#if defined(ARCHETYPE_QUANT_VNNI) || defined(ARCHETYPE_QUANT_INT8)
        if (archetype::traits_of(t).block_size > 1) {
            const auto refq = ggml_numerics_matmul(t, w, rows, cols, x, cols, n_tok, rows);
            BOOST_TEST(nmse(ysep.data(), refq.data(), ysep.size()) < 1e-12, name(t) << " cols " << cols << " one token vs ggml numerics");
        }
#endif
    }
}

// The int8x2 batch mode (kernels/batch_activations.hpp): the int8 kernels on the
// activations plus the int8 kernels on their rounding error. On heavy-tailed activations
// (one value in 64 fifty times the rest: the FFN down projection's input) its distance to
// the exact product must be under 1/1000 of the int8 mode's (the residual's own rounding
// is 1/254 of the first step's; Q8_1's fp16 sums s are not corrected: Q4_1 ~1/2600), bitwise
// independent of the thread count; mixed runs int8x2 only where a layer marks the input
// heavy-tailed.
BOOST_AUTO_TEST_CASE(int8x2_batches_recover_the_exact_products) {
    BOOST_TEST((k::for_heavy_tailed_input(k::batch_activations::mixed) == k::batch_activations::int8x2));
    BOOST_TEST((k::for_heavy_tailed_input(k::batch_activations::int8) == k::batch_activations::int8));
    BOOST_TEST((k::for_heavy_tailed_input(k::batch_activations::exact) == k::batch_activations::exact));
    archetype::thread_pool p2(2), p3(3);
    for (ggml_type t : all_types) {
        if (archetype::traits_of(t).block_size == 1) continue;
        const std::size_t cols = 768, rows = 37, n_tok = 11;
        const auto w = random_rows(t, rows, cols, 51);
        auto x = gaussian(n_tok * cols, 17);
        for (std::size_t i = 0; i < x.size(); i += 64) x[i + (i / 64) % 64] *= 50.f;
        const k::weight_view W{t, w.data(), rows, cols};
        const auto ref = reference_matmul(t, w, rows, cols, x, cols, n_tok, rows);
        std::vector<float> y8(n_tok * rows), y2(n_tok * rows), y3(n_tok * rows);
        {
            const k::batch_activations_scope int8(k::batch_activations::int8);
            k::matmul(W, x.data(), cols, n_tok, y8.data(), rows, &p2);
        }
        {
            const k::batch_activations_scope int8x2(k::batch_activations::int8x2);
            k::matmul(W, x.data(), cols, n_tok, y2.data(), rows, &p2);
            k::matmul(W, x.data(), cols, n_tok, y3.data(), rows, &p3);
        }
        BOOST_TEST((k::current_batch_activations() == k::batch_activations::exact));
        const double e8 = nmse(y8.data(), ref.data(), y8.size()), e2 = nmse(y2.data(), ref.data(), y2.size());
        BOOST_TEST_MESSAGE(name(t) << ": nmse int8 " << e8 << ", int8x2 " << e2);
        BOOST_TEST(e2 <= e8 / 1000., name(t) << " int8x2 nmse " << e2 << " against int8's " << e8);
        BOOST_TEST(bits_equal(y2, y3), name(t) << " int8x2, 2 vs 3 threads");
    }
}

// A decode step's q/k/v (or gate/up) through matmul_batch: one dispatch for all
// matrices of one quantised type, width and x; each output bitwise matmul's.
BOOST_AUTO_TEST_CASE(matmul_batch_quantised_single_token) {
    archetype::thread_pool p2(2), p3(3);
    for (ggml_type t : all_types)
    for (std::size_t legacy_cols : {576, 4192}) {
        if (archetype::traits_of(t).block_size == 1) continue;
        const std::size_t bs = archetype::traits_of(t).block_size;
        // K-sized types 768; Q1_0 (128) and Q2_0 (64) the width rounded up to their blocks
        const std::size_t cols = bs == 256 ? 768 : (legacy_cols + bs - 1) / bs * bs;
        const std::size_t rows[] = {37, 16, 5};
        std::vector<std::vector<std::uint8_t>> w;
        std::vector<k::weight_view> W;
        for (std::size_t i = 0; i < 3; ++i) w.push_back(random_rows(t, rows[i], cols, unsigned(7 + i)));
        for (std::size_t i = 0; i < 3; ++i) W.push_back({t, w[i].data(), rows[i], cols});
        const auto x = gaussian(cols, 11);
        for (archetype::thread_pool* pool : {static_cast<archetype::thread_pool*>(nullptr), &p2, &p3})
            check_fused_single_token({&W[0], &W[1], &W[2]}, {&W[0], &W[1], &W[2]}, x, pool,
                                     name(t) + " cols " + std::to_string(cols));
    }
}

// The x16 layouts of Q4_0 and Q8_0 (16-row interleaved groups, made at load time):
// the repack is a permutation of the bytes (Q8_0's also xors them with 0x80; unpack
// restores the file's rows), and every product on it is bitwise the row layout's:
// single tokens (rows16_x16), batches (the engine's panels packed from x16), fused
// single-token products, any thread count. Widths: one block, an odd block count
// (the zero block), a partial 128-element group, long rows; heights: one group, an
// odd number of groups (the engine's 32-row groups end with a 16-row panel), several.
BOOST_AUTO_TEST_CASE(x16_layouts_match_row_layout) {
    namespace x16 = archetype::quant::x16;
    using archetype::quant::weight_layout;
    for (ggml_type t : {ggml_type::Q4_0, ggml_type::Q8_0}) {
    const weight_layout L = k::x16_layout_for(t);
    const std::string tn = name(t);
    if constexpr (!k::has_x16) { // a build without the kernels says so (loaders never repack there)
        std::vector<std::uint8_t> w(16 * 34);
        std::vector<float> x(32), y(16);
        BOOST_CHECK_THROW(k::matmul({t, w.data(), 16, 32, L}, x.data(), 32, 1, y.data(), 16), archetype::argument_error);
        continue;
    }
    archetype::thread_pool p2(2), p3(3);
    for (std::size_t cols : {32, 96, 608, 2048})
    for (std::size_t rows : {16, 48, 64}) {
        const auto w = random_rows(t, rows, cols, unsigned(cols + rows));
        std::vector<std::uint8_t> packed(w.size()), back(w.size());
        x16::repack(L, w.data(), rows, cols, packed.data());
        x16::unpack(L, packed.data(), rows, cols, back.data());
        BOOST_TEST((back == w), tn << " unpack(repack(w)) != w, " << rows << " x " << cols);
        BOOST_TEST((packed != w), tn << " repack left " << rows << " x " << cols << " unchanged");
        const k::weight_view Wr{t, w.data(), rows, cols};
        const k::weight_view Wx{t, packed.data(), rows, cols, L};
        for (std::size_t n_tok : {1, 2, 7, 13}) {
            const std::size_t ldx = cols + 5, ldy = rows + 3;
            const auto x = gaussian(n_tok * ldx, unsigned(n_tok * 7 + cols));
            std::vector<float> yr(n_tok * ldy, 0.f); // padding stays 0 in both
            k::matmul(Wr, x.data(), ldx, n_tok, yr.data(), ldy, nullptr);
            for (archetype::thread_pool* pool : {static_cast<archetype::thread_pool*>(nullptr), &p2, &p3}) {
                std::vector<float> yx(n_tok * ldy, 0.f);
                k::matmul(Wx, x.data(), ldx, n_tok, yx.data(), ldy, pool);
                BOOST_TEST(bits_equal(yr, yx), tn << " " << rows << " x " << cols << " n_tok " << n_tok << " threads "
                                                  << (pool ? pool->size() : 1));
            }
#if defined(ARCHETYPE_QUANT_VNNI)
            // and both against llama.cpp's numerics, scalar (the row layout's own check);
            // a batch of quant::panels::min_tokens or more has float activations instead
            if (n_tok < q::panels::min_tokens) {
                const auto refq = ggml_numerics_matmul(t, w, rows, cols, x, ldx, n_tok, ldy);
                BOOST_TEST(nmse(yr.data(), refq.data(), yr.size()) < 1e-12, tn << " " << rows << " x " << cols << " n_tok " << n_tok);
            } else {
                const auto ref = reference_matmul(t, w, rows, cols, x, ldx, n_tok, ldy);
                BOOST_TEST(nmse(yr.data(), ref.data(), yr.size()) < 1e-9, tn << " " << rows << " x " << cols << " n_tok " << n_tok);
            }
#endif
        }
    }
    // fused single-token products: all x16, and x16 mixed with the row layout
    const std::size_t cols = 576, rows[] = {48, 16, 32};
    std::vector<std::vector<std::uint8_t>> w, packed;
    std::vector<k::weight_view> Wr, Wx;
    for (std::size_t i = 0; i < 3; ++i) {
        w.push_back(random_rows(t, rows[i], cols, unsigned(40 + i)));
        packed.emplace_back(w[i].size());
        x16::repack(L, w[i].data(), rows[i], cols, packed[i].data());
    }
    for (std::size_t i = 0; i < 3; ++i) {
        Wr.push_back({t, w[i].data(), rows[i], cols});
        Wx.push_back({t, packed[i].data(), rows[i], cols, L});
    }
    const auto x = gaussian(cols, 12);
    for (archetype::thread_pool* pool : {static_cast<archetype::thread_pool*>(nullptr), &p2, &p3}) {
        check_fused_single_token({&Wx[0], &Wx[1], &Wx[2]}, {&Wr[0], &Wr[1], &Wr[2]}, x, pool, tn + " x16");
        check_fused_single_token({&Wx[0], &Wr[1], &Wx[2]}, {&Wr[0], &Wr[1], &Wr[2]}, x, pool, tn + " mixed layouts");
    }
    }
}

BOOST_AUTO_TEST_CASE(x16_layout_errors_name_the_matrix) {
    using archetype::quant::weight_layout;
    std::vector<std::uint8_t> w(48 * 34 * 4);
    std::vector<float> x(128), y(48);
    auto message = [&](const k::weight_view& W) {
        try {
            k::matmul(W, x.data(), 128, 1, y.data(), 48, nullptr);
        } catch (const archetype::argument_error& e) {
            return std::string(e.what());
        }
        return std::string("no exception");
    };
    // 17 rows: not whole groups; a type other than the layout's
    for (weight_layout L : {weight_layout::q4_0_x16, weight_layout::q8_0_x16}) {
        const ggml_type own = L == weight_layout::q4_0_x16 ? ggml_type::Q4_0 : ggml_type::Q8_0;
        const std::string m17 = message({own, w.data(), 17, 128, L});
        BOOST_TEST(m17.find("17 x 128") != std::string::npos, m17);
        const std::string mt = message({ggml_type::Q4_1, w.data(), 16, 64, L});
        BOOST_TEST(mt.find("Q4_1") != std::string::npos, mt);
        BOOST_TEST(mt.find(L == weight_layout::q4_0_x16 ? "q4_0_x16" : "q8_0_x16") != std::string::npos, mt);
    }
    const std::string crossed = message({ggml_type::Q8_0, w.data(), 16, 64, weight_layout::q4_0_x16});
    BOOST_TEST(crossed.find("Q8_0") != std::string::npos, crossed);
    BOOST_TEST(!archetype::quant::x16::fits(17, 128));
    BOOST_TEST(!archetype::quant::x16::fits(16, 48));
    BOOST_TEST(archetype::quant::x16::fits(32, 64));
}

BOOST_AUTO_TEST_CASE(unsupported_types_are_named) {
    std::vector<std::uint8_t> w(1024);
    std::vector<float> x(256), y(4);
    try {
        k::matmul(k::weight_view{ggml_type::Q8_K, w.data(), 1, 256}, x.data(), 256, 1, y.data(), 1, nullptr);
        BOOST_ERROR("no exception");
    } catch (const archetype::argument_error& e) {
        BOOST_TEST(std::string(e.what()).find("Q8_K") != std::string::npos, e.what());
    }
    try {
        q::dequantize_row(ggml_type::Q8_1, w.data(), x.data(), 256);
        BOOST_ERROR("no exception");
    } catch (const archetype::argument_error& e) {
        BOOST_TEST(std::string(e.what()).find("Q8_1") != std::string::npos, e.what());
    }
    BOOST_CHECK_THROW(k::matmul(k::weight_view{ggml_type::Q4_0, w.data(), 1, 48}, x.data(), 48, 1, y.data(), 1),
                      archetype::argument_error);
}

// ---------------------------------------------------------------------------------
// Types checked against ggml itself: blocks and their dequantised values made by
// llama.cpp's ggml (tools/reference/make_quant_fixtures.py; tests/data/quant/), half
// of them ggml's own quantisation of gaussian rows, half random bytes.
namespace {

struct ggml_fixture {
    ggml_type type{};
    std::size_t rows = 0, cols = 0;
    std::vector<std::uint8_t> blocks;
    std::vector<float> plain, fused; // ggml's dequantize_row_* without / with FMA contraction
    // the values this build's dequantiser must give: g++ contracts a * b + c into an FMA
    // wherever the target has one, in ggml's C and in our code alike
    const std::vector<float>& expected() const {
#if defined(__FMA__) || defined(__aarch64__)
        return fused;
#else
        return plain;
#endif
    }
};

ggml_fixture read_fixture(ggml_type t) {
    const char* dir = std::getenv("ARCHETYPE_QUANT_DATA");
    if (!dir) throw std::runtime_error("ARCHETYPE_QUANT_DATA (tests/data/quant) is not set");
    std::string file = name(t);
    for (auto& c : file)
        if (c != 'K') c = char(std::tolower(static_cast<unsigned char>(c)));
    const std::string path = std::string(dir) + "/" + file + ".bin";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    char magic[4];
    std::uint32_t h[4];
    in.read(magic, 4);
    in.read(reinterpret_cast<char*>(h), sizeof h);
    if (!in || std::memcmp(magic, "AQFX", 4) != 0 || h[0] != 1 || h[1] != std::uint32_t(t))
        throw std::runtime_error(path + ": not a version 1 fixture of " + name(t));
    ggml_fixture f;
    f.type = t;
    f.rows = h[2];
    f.cols = h[3];
    f.blocks.resize(f.rows * row_bytes(t, f.cols));
    f.plain.resize(f.rows * f.cols);
    f.fused.resize(f.rows * f.cols);
    in.read(reinterpret_cast<char*>(f.blocks.data()), std::streamsize(f.blocks.size()));
    in.read(reinterpret_cast<char*>(f.plain.data()), std::streamsize(f.plain.size() * 4));
    in.read(reinterpret_cast<char*>(f.fused.data()), std::streamsize(f.fused.size() * 4));
    if (!in || in.peek() != std::char_traits<char>::eof()) throw std::runtime_error(path + ": wrong size");
    return f;
}

const ggml_type ggml_fixture_types[] = {ggml_type::Q2_K,  ggml_type::Q3_K,  ggml_type::IQ4_NL, ggml_type::IQ4_XS,
                                        ggml_type::MXFP4, ggml_type::TQ1_0, ggml_type::TQ2_0, ggml_type::IQ2_XXS,
                                        ggml_type::IQ2_XS, ggml_type::IQ2_S, ggml_type::IQ3_XXS, ggml_type::IQ3_S,
                                        ggml_type::IQ1_S, ggml_type::IQ1_M, ggml_type::Q1_0, ggml_type::Q2_0};

} // namespace

// dequantize_row and the scalar reference, bit for bit ggml's dequantize_row_*.
BOOST_AUTO_TEST_CASE(dequantize_matches_ggml_bit_exactly) {
    for (ggml_type t : ggml_fixture_types) {
        const auto f = read_fixture(t);
        const auto& want = f.expected();
        std::vector<float> a(f.cols), b(f.cols);
        const std::size_t rb = row_bytes(t, f.cols);
        std::size_t bad = 0, bad_ref = 0;
        for (std::size_t r = 0; r < f.rows; ++r) {
            q::dequantize_row(t, f.blocks.data() + r * rb, a.data(), f.cols);
            q::reference::dequantize_row(t, f.blocks.data() + r * rb, b.data(), f.cols);
            for (std::size_t c = 0; c < f.cols; ++c) {
                bad += std::memcmp(&a[c], &want[r * f.cols + c], 4) != 0;
                bad_ref += std::memcmp(&b[c], &want[r * f.cols + c], 4) != 0;
            }
        }
        BOOST_TEST(bad == 0u, name(t) << ": " << bad << " of " << f.rows * f.cols << " values differ from ggml's");
        BOOST_TEST(bad_ref == 0u, name(t) << " reference: " << bad_ref << " values differ from ggml's");
    }
}

// The matmul on ggml's blocks against ggml's dequantised weights times x in double:
// the bounds of matmul_matches_dequantise_then_dot (float activations 1e-9, int8
// activations 5e-3 against exact x and 1e-12 against ggml's activation numerics).
BOOST_AUTO_TEST_CASE(matmul_matches_ggml_dequantised_weights) {
    archetype::thread_pool pool(2);
    for (ggml_type t : ggml_fixture_types) {
        const auto f = read_fixture(t);
        const auto& wf = f.expected();
        for (std::size_t n_tok : {1, 3, 17}) {
            const std::size_t ldx = f.cols + 1, ldy = f.rows + 2;
            const auto x = gaussian(n_tok * ldx, unsigned(n_tok + 5));
            std::vector<float> ref(n_tok * ldy, 0.f);
            for (std::size_t tk = 0; tk < n_tok; ++tk)
                for (std::size_t r = 0; r < f.rows; ++r) {
                    double s = 0;
                    for (std::size_t c = 0; c < f.cols; ++c) s += double(wf[r * f.cols + c]) * x[tk * ldx + c];
                    ref[tk * ldy + r] = float(s);
                }
            std::vector<float> y(n_tok * ldy, 0.f), yg(n_tok * ldy, 0.f);
            k::matmul(k::weight_view{t, f.blocks.data(), f.rows, f.cols}, x.data(), ldx, n_tok, y.data(), ldy, &pool);
            q::generic::matmul(t, f.blocks.data(), f.rows, f.cols, x.data(), ldx, n_tok, yg.data(), ldy, &pool);
            const double e = nmse(y.data(), ref.data(), y.size());
            if (n_tok >= q::panels::min_tokens) {
                BOOST_TEST(e < 1e-9, name(t) << " n_tok " << n_tok << " nmse " << e);
            } else {
                BOOST_TEST(e < 5e-3, name(t) << " n_tok " << n_tok << " nmse " << e);
                const auto refq = ggml_numerics_matmul(t, f.blocks, f.rows, f.cols, x, ldx, n_tok, ldy);
                const double eq = nmse(y.data(), refq.data(), y.size());
                BOOST_TEST(eq < 1e-12, name(t) << " n_tok " << n_tok << " nmse vs ggml numerics " << eq);
            }
            const auto refq = ggml_numerics_matmul(t, f.blocks, f.rows, f.cols, x, ldx, n_tok, ldy);
            const double eg = nmse(yg.data(), refq.data(), yg.size());
            BOOST_TEST(eg < 1e-12, "generic " << name(t) << " n_tok " << n_tok << " nmse " << eg);
        }
    }
}

// quantize_row against ggml's quantize_<type> (libggml-base, no importance matrix) on
// the same floats, byte for byte (make_quant_fixtures.py's quantiser fixtures: gaussian
// rows, an all-zero block, tiny rows, exact rounding ties).
BOOST_AUTO_TEST_CASE(quantize_matches_ggml_bytes) {
    const char* dir = std::getenv("ARCHETYPE_QUANT_DATA");
    if (!dir) throw std::runtime_error("ARCHETYPE_QUANT_DATA (tests/data/quant) is not set");
    for (ggml_type t : {ggml_type::TQ1_0, ggml_type::TQ2_0, ggml_type::Q2_K, ggml_type::Q3_K, ggml_type::MXFP4,
                        ggml_type::IQ4_NL, ggml_type::IQ4_XS, ggml_type::Q1_0, ggml_type::Q2_0}) {
        std::string file = name(t);
        for (auto& c : file)
            if (c != 'K') c = char(std::tolower(static_cast<unsigned char>(c)));
        const std::string path = std::string(dir) + "/quantize_" + file + ".bin";
        std::ifstream in(path, std::ios::binary);
        if (!in) throw std::runtime_error("cannot open " + path);
        char magic[4];
        std::uint32_t h[4];
        in.read(magic, 4);
        in.read(reinterpret_cast<char*>(h), sizeof h);
        if (!in || std::memcmp(magic, "AQQX", 4) != 0 || h[0] != 1 || h[1] != std::uint32_t(t))
            throw std::runtime_error(path + ": not a version 1 quantiser fixture of " + name(t));
        const std::size_t rows = h[2], cols = h[3], rb = row_bytes(t, cols);
        std::vector<float> x(rows * cols);
        std::vector<std::uint8_t> want(rows * rb), got(rows * rb);
        in.read(reinterpret_cast<char*>(x.data()), std::streamsize(x.size() * 4));
        in.read(reinterpret_cast<char*>(want.data()), std::streamsize(want.size()));
        if (!in || in.peek() != std::char_traits<char>::eof()) throw std::runtime_error(path + ": wrong size");
        for (std::size_t r = 0; r < rows; ++r) q::quantize_row(t, x.data() + r * cols, got.data() + r * rb, cols);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < want.size(); ++i) bad += got[i] != want[i];
        BOOST_TEST(bad == 0u, name(t) << ": " << bad << " of " << want.size() << " bytes differ from ggml's");
    }
}
