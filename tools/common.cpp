// Helpers shared by the commands, and the trivial ones.
#include <charconv>
#include <cstdio>
#include <fstream>
#include <limits>

#include "archetype/config.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/isa/level.hpp"
#include "commands.hpp"
#include "model_file.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "archetype/runtime/tokenizer/tokenizer_json.hpp"
#include <filesystem>

namespace archetype::tools {

int cmd_version(int, char**) {
    std::printf("archetype %d.%d.%d\n", ARCHETYPE_VERSION_MAJOR, ARCHETYPE_VERSION_MINOR,
                ARCHETYPE_VERSION_PATCH);
    // The level this copy of the program was compiled for is the one running: in a
    // dispatched build each level's copy prints its own.
    std::printf("isa: %s\n", std::string(isa::name(isa::compiled_level())).c_str());
#if defined(ARCHETYPE_ISA_BUILT_LEVELS)
#define X(l) " " #l
    std::printf("isa-levels:%s (chosen at start; ARCHETYPE_ISA forces one)\n", ARCHETYPE_ISA_BUILT_LEVELS);
#undef X
#else
    std::printf("isa-levels: %s (this build's compiler flags)\n", std::string(isa::name(isa::compiled_level())).c_str());
#endif
    return 0;
}

std::vector<std::int32_t> parse_ids(std::string_view s) {
    std::vector<std::int32_t> ids;
    std::size_t pos = 0;
    while (pos <= s.size()) {
        const std::size_t end = std::min(s.find(',', pos), s.size());
        const std::string_view item = s.substr(pos, end - pos);
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc{} || p != item.data() + item.size() || v < 0 ||
            v > std::numeric_limits<std::int32_t>::max())
            throw argument_error("bad token id '" + std::string(item) + "' in --ids");
        ids.push_back(static_cast<std::int32_t>(v));
        pos = end + 1;
    }
    return ids;
}

std::vector<std::int32_t> read_i32_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) throw io_error("cannot open '" + path + "'");
    const auto size = static_cast<std::size_t>(f.tellg());
    if (size % 4 != 0)
        throw argument_error("'" + path + "' has " + std::to_string(size) +
                             " bytes, not a multiple of 4 (raw int32 ids expected)");
    std::vector<std::int32_t> ids(size / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(ids.data()), static_cast<std::streamsize>(size));
    if (!f) throw io_error("cannot read '" + path + "'");
    return ids;
}

void write_f32_file(const std::string& path, const float* data, std::size_t n) {
    std::ofstream f(path, std::ios::binary);
    if (!f) throw io_error("cannot create '" + path + "'");
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(float)));
    if (!f) throw io_error("cannot write '" + path + "'");
}

} // namespace archetype::tools

namespace archetype::tools {
gguf::file open_model_file(const std::string& path) {
    return hf::is_checkpoint(path) ? hf::open_as_gguf(path) : gguf::file::open(path);
}

std::unique_ptr<tokenizer::tokenizer> open_model_tokenizer(const std::string& path, const gguf::file& file) {
    if (!std::filesystem::is_directory(path)) return tokenizer::load_tokenizer(file);
    const auto json = std::filesystem::path(path) / "tokenizer.json";
    if (!std::filesystem::exists(json)) throw format_error("'" + path + "' has no tokenizer.json");
    return tokenizer::load_tokenizer_json(json.string());
}

chat::chat_template chat_template_for(const gguf::file& f, const std::string& name, std::string& note) {
    if (!name.empty()) return chat::named(name);
    const std::string tmpl = f.get_or<std::string>("tokenizer.chat_template", "");
    if (!tmpl.empty()) return chat::recognise(tmpl);
    const std::string_view arch = f.architecture();
    const auto tp = chat::named(arch.substr(0, 5) == "gemma" ? "gemma" : "chatml");
    note = "the file has no tokenizer.chat_template: using " + std::string(tp.name()) + " (--chat-template NAME to choose)";
    return tp;
}
} // namespace archetype::tools
