// libFuzzer target for Hugging Face checkpoint directories (io/hf_checkpoint.hpp):
// config.json and a safetensors file from arbitrary bytes. The input is
//   u16 little-endian L, L bytes of config.json, the rest: model.safetensors
// (fuzz/run.sh hf seeds it with the zoo's checkpoints in this form). Both files are
// written into a directory of this process, converted to GGUF, and the GGUF, when
// one comes out, is opened and its tensors touched. Any crash, sanitizer report,
// escaped non-archetype exception (nlohmann's included) or hang is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "archetype/io/gguf.hpp"
#include "archetype/io/hf_checkpoint.hpp"

namespace fs = std::filesystem;

namespace {
volatile std::uint64_t sink;

const fs::path& work_dir() {
    static const fs::path d = [] {
        auto p = fs::temp_directory_path() / ("archetype-fuzz-hf-" + std::to_string(::getpid()));
        fs::create_directories(p);
        return p;
    }();
    return d;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t L = std::size_t(data[0]) | std::size_t(data[1]) << 8;
    if (L > size - 2) return 0;
    const fs::path dir = work_dir();
    std::ofstream(dir / "config.json", std::ios::binary).write(reinterpret_cast<const char*>(data + 2), std::streamsize(L));
    std::ofstream(dir / "model.safetensors", std::ios::binary)
        .write(reinterpret_cast<const char*>(data + 2 + L), std::streamsize(size - 2 - L));
    try {
        const auto f = archetype::hf::open_as_gguf(dir.string());
        std::uint64_t acc = f.tensors().size();
        for (const auto& t : f.tensors())
            if (t.n_bytes) acc += std::to_integer<unsigned>(t.data[0]) + std::to_integer<unsigned>(t.data[t.n_bytes - 1]);
        sink = acc;
    } catch (const archetype::error&) {
    }
    return 0;
}
