// Writes small valid GGUF files into the directory given as argv[1]: seeds for
// fuzz_gguf that parse completely (the fixture models are mostly tensor data).
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"

namespace gguf = archetype::gguf;
using archetype::ggml_type;

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    const std::string dir = argv[1];
    std::vector<std::byte> data(4096, std::byte{0x3c});
    int n = 0;
    for (std::uint32_t alignment : {32u, 64u, 1u}) {
        gguf::writer w(alignment);
        w.set("general.architecture", "llama");
        w.set("llama.block_count", std::uint32_t(2));
        w.set("i8", std::int8_t(-3));
        w.set("u16", std::uint16_t(7));
        w.set("i64", std::int64_t(-9));
        w.set("f32", 0.25f);
        w.set("f64", 0.5);
        w.set("b", true);
        w.set("toks", std::vector<std::string>{"a", "bc", ""});
        w.set("ids", std::vector<std::int32_t>{1, 2, 3});
        w.set("pattern", std::vector<bool>{true, false});
        w.set("nested", std::vector<std::vector<std::uint8_t>>{{1}, {2, 3}});
        w.add_tensor("token_embd.weight", ggml_type::F32, {8, 4}, data.data());
        w.add_tensor("blk.0.attn_norm.weight", ggml_type::F32, {8}, data.data());
        w.add_tensor("blk.0.attn_q.weight", ggml_type::Q8_0, {32, 2}, data.data());
        w.add_tensor("blk.0.ffn_up.weight", ggml_type::Q4_K, {256, 1}, data.data());
        w.add_tensor("blk.0.ffn_down.weight", ggml_type::F16, {4, 2, 1, 2}, data.data());
        w.write(dir + "/writer" + std::to_string(n++) + ".gguf");
    }
    gguf::writer empty;
    empty.write(dir + "/writer_empty.gguf");
    return 0;
}
