// libFuzzer target for Hugging Face tokenizer.json files (runtime/tokenizer/
// tokenizer_json.hpp, and through it split_regex.hpp's pattern parser and matcher, the
// BPE and SentencePiece-style BPE tokenizers and NFC). The input is
//   u16 little-endian L, L bytes of text to encode, the rest: tokenizer.json
// (fuzz/run.sh tok seeds it with tests/data/tokenizer/hf/*/tokenizer.json and a few
// texts). A tokenizer that loads encodes the text and decodes the ids back. Any crash,
// sanitizer report, escaped non-archetype exception (nlohmann's included) or hang is a bug.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

#include "archetype/runtime/tokenizer/tokenizer_json.hpp"

namespace fs = std::filesystem;

namespace {
volatile std::size_t sink;

const fs::path& work_file() {
    static const fs::path p = [] {
        auto d = fs::temp_directory_path() / ("archetype-fuzz-tok-" + std::to_string(::getpid()));
        fs::create_directories(d);
        return d / "tokenizer.json";
    }();
    return p;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t L = std::size_t(data[0]) | std::size_t(data[1]) << 8;
    if (L > size - 2) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 2), L);
    std::ofstream(work_file(), std::ios::binary)
        .write(reinterpret_cast<const char*>(data + 2 + L), std::streamsize(size - 2 - L));
    try {
        const auto t = archetype::tokenizer::load_tokenizer_json(work_file().string());
        const auto ids = t->encode(text, true);
        sink = t->decode(ids).size() + ids.size();
    } catch (const archetype::error&) {
    }
    return 0;
}
