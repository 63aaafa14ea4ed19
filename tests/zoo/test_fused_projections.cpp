// Fused projections split by rows when bound (SelfAttention's attn_qkv, the dense
// FFN's gate|up in one ffn_up) compute exactly what the separate tensors compute:
// the phi3 fixture (both fused) is rewritten with attn_q/attn_k/attn_v and
// ffn_gate/ffn_up as separate tensors holding the same rows, both files are
// quantised to Q8_0 and Q4_0 (where the build repacks Q8_0/Q4_0 matrices into the x16
// layouts, each row range is repacked on its own), and the logits must be equal bit
// for bit, in F32 and in each quantised type.
// Argument after `--`: tests/data/zoo.
#define BOOST_TEST_MODULE fused_projections
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_quantize.hpp"
#include "archetype/io/gguf_writer.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/phi3.hpp"
#include "archetype/runtime/decoder_session.hpp"

using namespace archetype;

namespace {
std::string zoo_dir() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/phi3/";
}
std::string tmp(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("archetype_fused_" + std::to_string(::getpid()) + "_" + name)).string();
}

/// The phi3 fixture with every fused tensor written as its separate parts.
void write_unfused(const std::string& in, const std::string& out) {
    const auto f = gguf::file::open(in);
    gguf::writer w;
    for (const auto& e : f.metadata()) w.set(e.key, e.value);
    const std::size_t E = f.get<std::uint32_t>("phi3.embedding_length");
    const std::size_t H = f.get<std::uint32_t>("phi3.attention.head_count");
    const std::size_t Hkv = f.get<std::uint32_t>("phi3.attention.head_count_kv");
    const std::size_t F = f.get<std::uint32_t>("phi3.feed_forward_length");
    const std::size_t hd = E / H, qw = H * hd, kw = Hkv * hd;
    auto rows = [&](const gguf::tensor_info& t, const std::string& name, std::size_t first, std::size_t n) {
        BOOST_REQUIRE(t.type == ggml_type::F32);
        w.add_tensor(name, t.type, {t.ne[0], n}, reinterpret_cast<const float*>(t.data) + first * t.ne[0]);
    };
    std::size_t fused = 0;
    for (const auto& t : f.tensors()) {
        const std::string& n = t.name;
        if (n.ends_with("attn_qkv.weight")) {
            const std::string blk = n.substr(0, n.size() - std::string("attn_qkv.weight").size());
            rows(t, blk + "attn_q.weight", 0, qw);
            rows(t, blk + "attn_k.weight", qw, kw);
            rows(t, blk + "attn_v.weight", qw + kw, kw);
            ++fused;
        } else if (n.ends_with("ffn_up.weight") && t.ne[1] == 2 * F) {
            const std::string blk = n.substr(0, n.size() - std::string("ffn_up.weight").size());
            rows(t, blk + "ffn_gate.weight", 0, F);
            rows(t, blk + "ffn_up.weight", F, F);
            ++fused;
        } else {
            w.add_tensor(n, t.type, t.ne, t.data);
        }
    }
    BOOST_REQUIRE_EQUAL(fused, 2 * f.get<std::uint32_t>("phi3.block_count")); // the fixture is fused throughout
    w.write(out);
}

std::vector<float> logits(const std::string& path) {
    const auto m = load_model<presets::phi3_architecture>(path);
    const std::vector<std::int32_t> tok{6, 9, 91, 104, 83, 82, 10, 38, 106, 12, 100, 44, 91, 10, 87, 88, 26};
    std::vector<float> out(tok.size() * m.n_vocab());
    auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = 64});
    s.prefill(0, tok, out.data());
    return out;
}
} // namespace

BOOST_AUTO_TEST_CASE(fused_and_separate_tensors_give_the_same_logits) {
    const std::string fused = zoo_dir() + "model.gguf", split = tmp("split.gguf");
    write_unfused(fused, split);
    BOOST_TEST(std::memcmp(logits(fused).data(), logits(split).data(), logits(fused).size() * sizeof(float)) == 0);
    for (ggml_type q : {ggml_type::Q8_0, ggml_type::Q4_0}) {
        BOOST_TEST_CONTEXT(type_name(q)) {
            const std::string fq = tmp("fused_q.gguf"), sq = tmp("split_q.gguf");
            gguf::quantize_file(fused, fq, q);
            gguf::quantize_file(split, sq, q);
            const auto a = logits(fq), b = logits(sq);
            BOOST_REQUIRE_EQUAL(a.size(), b.size());
            BOOST_TEST(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
            std::filesystem::remove(fq);
            std::filesystem::remove(sq);
        }
    }
    std::filesystem::remove(split);
}
