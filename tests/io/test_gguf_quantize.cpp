// gguf::quantize_file (the engine of `archetype quantize`): which tensors are
// converted (llama-quantize's rules; for the RWKV fixture, README §3.4's type
// rules), kept tensors bit-identical, converted ones within each format's
// rounding bound of the original, metadata carried over with general.file_type.
#define BOOST_TEST_MODULE gguf_quantize
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <unistd.h>

#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_quantize.hpp"
#include "archetype/io/gguf_writer.hpp"
#include "archetype/kernels/quant/dequantize.hpp"

namespace gguf = archetype::gguf;
using archetype::ggml_type;

namespace {

struct temp_file {
    std::string path;
    explicit temp_file(const std::string& tag)
        : path("/tmp/archetype_q_" + std::to_string(::getpid()) + "_" + tag + ".gguf") {}
    ~temp_file() { std::remove(path.c_str()); }
};

std::vector<float> normal(std::size_t n, unsigned seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

struct model {
    std::vector<std::pair<std::string, std::vector<std::uint64_t>>> shapes = {
        {"token_embd.weight", {64, 100}},   {"blk.0.attn_norm.weight", {64}},
        {"blk.0.attn_q.weight", {64, 64}},  {"blk.0.attn_q.bias", {64}},
        {"blk.0.ffn_gate_inp.weight", {64, 4}}, {"blk.0.ffn_up_exps.weight", {64, 96, 4}},
        {"position_embd.weight", {64, 16}}, {"blk.0.odd.weight", {48, 8}},
        {"output.weight", {64, 100}}};
    std::vector<std::vector<float>> data;
};

model write_model(const std::string& path) {
    model m;
    gguf::writer w;
    w.set("general.architecture", "llama");
    w.set("general.file_type", std::uint32_t(0));
    w.set("llama.block_count", std::uint32_t(1));
    w.set("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b"});
    unsigned seed = 1;
    for (const auto& [name, ne] : m.shapes) {
        std::size_t n = 1;
        for (auto d : ne) n *= d;
        m.data.push_back(normal(n, seed++, 0.5f));
    }
    for (std::size_t i = 0; i < m.shapes.size(); ++i)
        w.add_tensor(m.shapes[i].first, ggml_type::F32, m.shapes[i].second, m.data[i]);
    w.write(path);
    return m;
}

// Largest error allowed for one element of a block whose absolute max is amax.
double bound(ggml_type t, double amax, double x) {
    switch (t) {
    case ggml_type::Q8_0: return 0.5 * amax / 127 * 1.2 + 1e-7;  // half a step (+ F16 scale rounding)
    case ggml_type::Q4_0: return amax / 8 * 1.1 + 1e-7;          // one step: +8 clamps to 7
    case ggml_type::F16: return std::fabs(x) * std::ldexp(1.0, -11) + 6e-8;
    case ggml_type::BF16: return std::fabs(x) * std::ldexp(1.0, -8);
    default: return 0;
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(rules_and_bounds) {
    temp_file in("in");
    const auto m = write_model(in.path);
    for (ggml_type type : {ggml_type::Q8_0, ggml_type::Q4_0, ggml_type::F16, ggml_type::BF16}) {
        BOOST_TEST_CONTEXT(archetype::type_name(type)) {
            temp_file out("out");
            std::vector<std::string> lines;
            const auto r = gguf::quantize_file(in.path, out.path, type, [&](const std::string& l) { lines.push_back(l); });
            BOOST_TEST(lines.size() == m.shapes.size());
            const auto f = gguf::file::open(out.path);
            BOOST_TEST(f.get<std::string>("general.architecture") == "llama");
            BOOST_TEST(f.get<std::uint32_t>("llama.block_count") == 1u);
            BOOST_TEST(f.get<std::vector<std::string>>("tokenizer.ggml.tokens").size() == 2u);
            // llama.h's llama_ftype values
            const std::uint32_t ftype = type == ggml_type::Q8_0 ? 7 : type == ggml_type::Q4_0 ? 2
                                      : type == ggml_type::F16 ? 1 : 32;
            BOOST_TEST(f.get<std::uint32_t>("general.file_type") == ftype);
            BOOST_TEST(f.get<std::uint32_t>("general.quantization_version") == 2u);
            // converted: token_embd, attn_q, ffn_up_exps (3-D expert stack), output;
            // kept: 1-D, router, position embeddings, and odd (48 is not whole 32-blocks)
            const bool block32 = type == ggml_type::Q8_0 || type == ggml_type::Q4_0;
            const std::vector<bool> converted = {true, false, true, false, false, true, false, !block32, true};
            BOOST_TEST(r.converted == std::size_t(std::count(converted.begin(), converted.end(), true)));
            for (std::size_t i = 0; i < m.shapes.size(); ++i) {
                const auto& t = f.tensors()[i];
                BOOST_TEST_CONTEXT(t.name) {
                    BOOST_TEST(t.name == m.shapes[i].first);
                    BOOST_TEST(t.ne == m.shapes[i].second, boost::test_tools::per_element());
                    const auto& x = m.data[i];
                    if (!converted[i]) {
                        BOOST_TEST((t.type == ggml_type::F32));
                        BOOST_TEST(std::memcmp(t.data, x.data(), x.size() * 4) == 0);
                        continue;
                    }
                    BOOST_TEST((t.type == type));
                    std::vector<float> y(x.size());
                    archetype::quant::dequantize_row(type, t.data, y.data(), y.size());
                    std::size_t bad = 0;
                    for (std::size_t b = 0; b < x.size(); b += 32) {
                        double amax = 0;
                        for (std::size_t j = b; j < b + 32; ++j) amax = std::max(amax, double(std::fabs(x[j])));
                        for (std::size_t j = b; j < b + 32; ++j)
                            if (std::fabs(double(y[j]) - double(x[j])) > bound(type, amax, x[j])) ++bad;
                    }
                    BOOST_TEST(bad == 0u);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(refuses_bad_requests) {
    temp_file in("in2");
    write_model(in.path);
    temp_file out("out2");
    BOOST_CHECK_THROW(gguf::quantize_file(in.path, out.path, ggml_type::IQ2_XS), archetype::argument_error);
    BOOST_CHECK_THROW(gguf::quantize_file("/nonexistent.gguf", out.path, ggml_type::Q8_0), archetype::io_error);
}

// The ternary targets (256-element blocks): a matrix of whole blocks converted to the
// rows quantize_row writes (bit-exact with ggml's quantize_tq*_0: tests/quant), one of
// 64-wide rows kept, general.file_type llama.h's MOSTLY_TQ1_0 / TQ2_0.
BOOST_AUTO_TEST_CASE(ternary_targets) {
    temp_file in("tq_in");
    gguf::writer w;
    w.set("general.architecture", "llama");
    w.set("general.file_type", std::uint32_t(0));
    const auto q = normal(256 * 4, 3, 0.5f), odd = normal(64 * 4, 4, 0.5f);
    w.add_tensor("blk.0.attn_q.weight", ggml_type::F32, {256, 4}, q);
    w.add_tensor("blk.0.odd.weight", ggml_type::F32, {64, 4}, odd);
    w.write(in.path);
    for (auto [type, ftype] : {std::pair{ggml_type::TQ1_0, 36u}, std::pair{ggml_type::TQ2_0, 37u}}) {
        BOOST_TEST_CONTEXT(archetype::type_name(type)) {
            temp_file out("tq_out");
            const auto r = gguf::quantize_file(in.path, out.path, type);
            BOOST_TEST(r.converted == 1u);
            const auto f = gguf::file::open(out.path);
            BOOST_TEST(f.get<std::uint32_t>("general.file_type") == ftype);
            const auto& t = f.tensors()[0];
            BOOST_TEST((t.type == type));
            const std::size_t rb = archetype::traits_of(type).type_size;
            std::vector<std::uint8_t> want(4 * rb);
            for (std::size_t r0 = 0; r0 < 4; ++r0) archetype::quant::quantize_row(type, q.data() + 256 * r0, want.data() + r0 * rb, 256);
            BOOST_TEST(std::memcmp(t.data, want.data(), want.size()) == 0);
            BOOST_TEST((f.tensors()[1].type == ggml_type::F32));
            BOOST_TEST(std::memcmp(f.tensors()[1].data, odd.data(), odd.size() * 4) == 0);
        }
    }
}
