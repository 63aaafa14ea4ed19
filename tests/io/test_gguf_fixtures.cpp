// Every GGUF under the shared fixtures (written by llama.cpp's gguf-py) reads,
// with the metadata of README §4.1 / §3.4 and the tensor tables of §4.2 and
// rwkv/tiny-rwkv-6v0-1m-F32.tensors.txt (compared entry by entry).
#define BOOST_TEST_MODULE gguf_fixtures
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_quantize.hpp"

namespace gguf = archetype::gguf;
using archetype::ggml_type;

namespace {

std::string fixtures() {
    const char* d = std::getenv("ARCHETYPE_FIXTURES");
    BOOST_REQUIRE_MESSAGE(d, "ARCHETYPE_FIXTURES is not set");
    return d;
}
using shape = std::vector<std::uint64_t>;

void check_shape(const gguf::file& f, const std::string& name, const shape& ne) {
    BOOST_TEST_CONTEXT(name) {
        const auto* t = f.find_tensor(name);
        BOOST_REQUIRE_MESSAGE(t, "tensor " << name << " missing");
        BOOST_TEST(t->ne == ne, boost::test_tools::per_element());
        BOOST_TEST((t->type == ggml_type::F32));
        BOOST_TEST(t->n_bytes == t->n_elements() * 4);
        BOOST_TEST(reinterpret_cast<std::uintptr_t>(t->data) % 32 == 0u);
    }
}

// Norm weights were drawn as 1 + 0.05 N(0,1) and biases as 0.05 N(0,1) (README §4):
// reading them from the right offsets gives values in those ranges.
void check_norm(const gguf::file& f, const std::string& name, float centre) {
    const auto& t = f.tensor(name);
    const auto* v = reinterpret_cast<const float*>(t.data);
    double mean = 0;
    for (std::uint64_t i = 0; i < t.n_elements(); ++i) {
        BOOST_TEST(std::fabs(v[i] - centre) < 0.3f, name << "[" << i << "] = " << v[i]);
        mean += v[i];
    }
    mean /= double(t.n_elements());
    BOOST_TEST(std::fabs(mean - centre) < 0.05, name << " mean " << mean);
}

void check_common(const gguf::file& f, const std::string& arch, const std::string& name, std::uint32_t ctx,
                  std::uint32_t ff) {
    BOOST_TEST(f.version() == 3u);
    BOOST_TEST(f.alignment() == 32u);
    BOOST_TEST(f.architecture() == arch);
    BOOST_TEST(f.get<std::string>("general.name") == name);
    BOOST_TEST(f.get<std::uint32_t>("general.file_type") == 0u);
    BOOST_TEST((f.type_of("general.file_type") == gguf::value_type::UINT32));
    BOOST_TEST(f.get<std::uint32_t>(arch + ".vocab_size") == 128u);
    BOOST_TEST(f.get<std::uint32_t>(arch + ".context_length") == ctx);
    BOOST_TEST(f.get<std::uint32_t>(arch + ".embedding_length") == 64u);
    BOOST_TEST(f.get<std::uint32_t>(arch + ".block_count") == 2u);
    BOOST_TEST(f.get<std::uint32_t>(arch + ".feed_forward_length") == ff);
    BOOST_TEST(f.get<std::uint32_t>(arch + ".attention.head_count") == 4u);
    BOOST_TEST(f.get<std::string>("tokenizer.ggml.model") == "no_vocab");
}

void check_llama(const std::string& model, std::uint32_t n_head_kv) {
    const auto f = gguf::file::open(fixtures() + "/transformer/" + model + "/model.gguf");
    check_common(f, "llama", model, 256, 96);
    BOOST_TEST(f.get<std::uint32_t>("llama.attention.head_count_kv") == n_head_kv);
    BOOST_TEST(f.get<std::uint32_t>("llama.rope.dimension_count") == 16u);
    BOOST_TEST(f.get<float>("llama.rope.freq_base") == 10000.0f);
    BOOST_TEST(f.get<float>("llama.attention.layer_norm_rms_epsilon") == 1e-5f);
    BOOST_TEST(f.metadata().size() == 14u);
    BOOST_TEST(f.tensors().size() == 21u);
    const std::uint64_t kv = 16 * n_head_kv;
    check_shape(f, "token_embd.weight", {64, 128});
    for (int i = 0; i < 2; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        check_shape(f, b + "attn_norm.weight", {64});
        check_shape(f, b + "attn_q.weight", {64, 64});
        check_shape(f, b + "attn_k.weight", {64, kv});
        check_shape(f, b + "attn_v.weight", {64, kv});
        check_shape(f, b + "attn_output.weight", {64, 64});
        check_shape(f, b + "ffn_norm.weight", {64});
        check_shape(f, b + "ffn_gate.weight", {64, 96});
        check_shape(f, b + "ffn_up.weight", {64, 96});
        check_shape(f, b + "ffn_down.weight", {96, 64});
        check_norm(f, b + "attn_norm.weight", 1.0f);
        check_norm(f, b + "ffn_norm.weight", 1.0f);
    }
    check_shape(f, "output_norm.weight", {64});
    check_shape(f, "output.weight", {64, 128});
    check_norm(f, "output_norm.weight", 1.0f);
    const auto w = gguf::as_weight(f.tensor("blk.0.attn_k.weight"));
    BOOST_TEST(w.rows == kv);
    BOOST_TEST(w.cols == 64u);
}

} // namespace

BOOST_AUTO_TEST_CASE(llama_gqa) { check_llama("llama-gqa", 2); }
BOOST_AUTO_TEST_CASE(llama_mqa) { check_llama("llama-mqa", 1); }

BOOST_AUTO_TEST_CASE(mellum_swa) {
    const auto f = gguf::file::open(fixtures() + "/transformer/mellum-swa/model.gguf");
    check_common(f, "mellum", "mellum-swa", 256, 96);
    BOOST_TEST(f.get<std::uint32_t>("mellum.attention.head_count_kv") == 2u);
    BOOST_TEST(f.get<std::uint32_t>("mellum.expert_feed_forward_length") == 96u);
    BOOST_TEST(f.get<std::uint32_t>("mellum.expert_count") == 1u);
    BOOST_TEST(f.get<std::uint32_t>("mellum.expert_used_count") == 1u);
    BOOST_TEST(f.get<std::uint32_t>("mellum.attention.sliding_window") == 8u);
    BOOST_TEST(f.metadata()[17].value.type_string() == "ARRAY[BOOL]");
    BOOST_TEST((f.get<std::vector<bool>>("mellum.attention.sliding_window_pattern") == std::vector<bool>{true, true}));
    BOOST_TEST(f.tensors().size() == 27u);
    check_shape(f, "token_embd.weight", {64, 128});
    for (int i = 0; i < 2; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        check_shape(f, b + "attn_norm.weight", {64});
        check_shape(f, b + "attn_q.weight", {64, 64});
        check_shape(f, b + "attn_k.weight", {64, 32});
        check_shape(f, b + "attn_v.weight", {64, 32});
        check_shape(f, b + "attn_q_norm.weight", {16});
        check_shape(f, b + "attn_k_norm.weight", {16});
        check_shape(f, b + "attn_output.weight", {64, 64});
        check_shape(f, b + "ffn_norm.weight", {64});
        check_shape(f, b + "ffn_gate_inp.weight", {64, 1});
        check_shape(f, b + "ffn_gate_exps.weight", {64, 96, 1});
        check_shape(f, b + "ffn_up_exps.weight", {64, 96, 1});
        check_shape(f, b + "ffn_down_exps.weight", {96, 64, 1});
        check_norm(f, b + "attn_q_norm.weight", 1.0f);
    }
    check_shape(f, "output_norm.weight", {64});
    check_shape(f, "output.weight", {64, 128});
}

BOOST_AUTO_TEST_CASE(bert_tiny) {
    const auto f = gguf::file::open(fixtures() + "/transformer/bert-tiny/model.gguf");
    check_common(f, "bert", "bert-tiny", 64, 128);
    BOOST_TEST(!f.has("bert.attention.head_count_kv"));
    BOOST_TEST(f.get<float>("bert.attention.layer_norm_epsilon") == 1e-12f);
    BOOST_TEST(f.get<bool>("bert.attention.causal") == false);
    BOOST_TEST(f.get<std::uint32_t>("bert.pooling_type") == 1u);
    BOOST_TEST(f.get<std::uint32_t>("tokenizer.ggml.token_type_count") == 2u);
    BOOST_TEST(f.tensors().size() == 37u);
    check_shape(f, "token_embd.weight", {64, 128});
    check_shape(f, "token_types.weight", {64, 2});
    check_shape(f, "position_embd.weight", {64, 64});
    check_shape(f, "token_embd_norm.weight", {64});
    check_shape(f, "token_embd_norm.bias", {64});
    check_norm(f, "token_embd_norm.weight", 1.0f);
    check_norm(f, "token_embd_norm.bias", 0.0f);
    for (int i = 0; i < 2; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        for (const char* p : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
            check_shape(f, b + p + ".weight", {64, 64});
            check_shape(f, b + p + ".bias", {64});
        }
        check_shape(f, b + "attn_output_norm.weight", {64});
        check_shape(f, b + "attn_output_norm.bias", {64});
    }
}

BOOST_AUTO_TEST_CASE(rwkv6_tensor_table) {
    const std::string dir = fixtures() + "/rwkv/";
    const auto f = gguf::file::open(dir + "tiny-rwkv-6v0-1m-F32.gguf");
    BOOST_TEST(f.version() == 3u);
    BOOST_TEST(f.architecture() == "rwkv6");
    BOOST_TEST(f.get<std::string>("general.type") == "model");
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.context_length") == 1048576u);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.embedding_length") == 64u);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.block_count") == 12u);
    BOOST_TEST(f.get<float>("rwkv6.attention.layer_norm_epsilon") == 1e-5f);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.rescale_every_n_layers") == 0u);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.wkv.head_size") == 8u);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.time_mix_extra_dim") == 32u);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.time_decay_extra_dim") == 64u);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.feed_forward_length") == 224u);
    BOOST_TEST(f.get<std::uint32_t>("rwkv6.attention.head_count") == 0u);
    BOOST_TEST(f.get<std::uint32_t>("general.quantization_version") == 2u);
    BOOST_TEST(f.get<std::string>("tokenizer.ggml.model") == "rwkv");
    BOOST_TEST(!f.has("tokenizer.ggml.bos_token_id"));
    // tokens are repr(bytes([i]))[2:-1]
    const auto tokens = f.get<std::vector<std::string>>("tokenizer.ggml.tokens");
    BOOST_REQUIRE(tokens.size() == 256u);
    BOOST_TEST(tokens[0] == "\\x00");
    BOOST_TEST(tokens[10] == "\\n");
    BOOST_TEST(tokens[32] == " ");
    BOOST_TEST(tokens[65] == "A");
    BOOST_TEST(tokens[92] == "\\\\");
    BOOST_TEST(tokens[255] == "\\xff");
    const auto types = f.get<std::vector<std::int32_t>>("tokenizer.ggml.token_type");
    BOOST_TEST(types == std::vector<std::int32_t>(256, 1), boost::test_tools::per_element());

    // The whole tensor table, in file order: "name  ne=[a, b]  TYPE" per line.
    std::ifstream in(dir + "tiny-rwkv-6v0-1m-F32.tensors.txt");
    BOOST_REQUIRE(in);
    std::string line;
    std::size_t i = 0;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::istringstream ls(line);
        std::string name, ne_text, type;
        ls >> name;
        const auto a = line.find("ne=[");
        const auto b = line.find(']', a);
        BOOST_REQUIRE(a != std::string::npos && b != std::string::npos);
        std::istringstream nes(line.substr(a + 4, b - a - 4));
        shape ne;
        for (std::string d; std::getline(nes, d, ',');) ne.push_back(std::stoull(d));
        std::istringstream rest(line.substr(b + 1));
        rest >> type;
        BOOST_REQUIRE(i < f.tensors().size());
        const auto& t = f.tensors()[i];
        BOOST_TEST_CONTEXT("tensor " << i << " " << name) {
            BOOST_TEST(t.name == name);
            BOOST_TEST(t.ne == ne, boost::test_tools::per_element());
            BOOST_TEST(std::string(archetype::type_name(t.type)) == type);
        }
        ++i;
    }
    BOOST_TEST(i == 294u);
    BOOST_TEST(f.tensors().size() == 294u);

    // README §3.4: the GGUF data equals rwkv.cpp's tensors byte for byte, so each
    // tensor's bytes, read at our offsets, occur in the rwkv.cpp file.
    std::ifstream bin(dir + "tiny-rwkv-6v0-1m-FP32.bin", std::ios::binary);
    BOOST_REQUIRE(bin);
    const std::vector<char> other((std::istreambuf_iterator<char>(bin)), std::istreambuf_iterator<char>());
    for (const char* name : {"token_embd.weight", "blk.0.time_mix_w1.weight", "blk.5.time_mix_decay_w2.weight",
                             "blk.11.channel_mix_key.weight", "blk.11.time_mix_first.weight", "output.weight"}) {
        const auto& t = f.tensor(name);
        const auto* p = reinterpret_cast<const char*>(t.data);
        BOOST_TEST((std::search(other.begin(), other.end(), p, p + t.n_bytes) != other.end()), name);
    }
}

BOOST_AUTO_TEST_CASE(rwkv_quantize_type_rules) {
    // README §3.4: 1-D tensors are F32; TIME_MIX_FIRST, W1, W2, DECAY_W1, DECAY_W2 and
    // LERP_FUSED are forced to F32; other .weight tensors take the outtype.
    const std::string src = fixtures() + "/rwkv/tiny-rwkv-6v0-1m-F32.gguf";
    const std::string out_path = "/tmp/archetype_fx_" + std::to_string(::getpid()) + ".gguf";
    struct rm { std::string p; ~rm() { std::remove(p.c_str()); } } cleanup{out_path};
    gguf::quantize_file(src, out_path, ggml_type::F16);
    const auto in = gguf::file::open(src);
    const auto f = gguf::file::open(out_path);
    BOOST_REQUIRE(f.tensors().size() == 294u);
    std::size_t n_f16 = 0;
    for (std::size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        const std::string& n = t.name;
        const bool forced = n.find("time_mix_first") != std::string::npos || n.find("time_mix_w1") != std::string::npos ||
                            n.find("time_mix_w2") != std::string::npos || n.find("decay_w1") != std::string::npos ||
                            n.find("decay_w2") != std::string::npos || n.find("lerp_fused") != std::string::npos;
        const bool one_d = t.ne.size() == 1;
        const auto expected = (one_d || forced) ? ggml_type::F32 : ggml_type::F16;
        BOOST_TEST((t.type == expected), n);
        n_f16 += t.type == ggml_type::F16;
        BOOST_TEST(t.ne == in.tensors()[i].ne, boost::test_tools::per_element());
    }
    BOOST_TEST(n_f16 == 2u + 12u * 8u); // token_embd, output, and 8 matrices per block
    BOOST_TEST(f.get<std::uint32_t>("general.file_type") == 1u);
    BOOST_TEST(f.metadata().size() == in.metadata().size());
}
