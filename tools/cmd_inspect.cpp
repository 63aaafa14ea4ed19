// archetype inspect FILE [--full]
// Prints a model file's metadata (key, type, value; long arrays and strings cut,
// with their length, unless --full) and its tensor table (name, type, shape in
// GGUF's own order ne[0] first as gguf-py prints it, data offset, size).
// GGUF is handled here; safetensors files (an 8-byte header length then '{') go
// to inspect_safetensors() in cmd_inspect_safetensors.cpp, the hook the
// safetensors reader fills in.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "commands.hpp"

namespace archetype::tools {

namespace {

bool looks_like_safetensors(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    char head[9] = {};
    if (!f.read(head, 9)) return false;
    return std::memcmp(head, "GGUF", 4) != 0 && head[8] == '{';
}

void print_gguf(const std::string& path, bool full) {
    const auto f = gguf::file::open(path);
    std::printf("%s: GGUF v%u, %llu bytes, alignment %llu, data at offset %llu\n", path.c_str(), f.version(),
                static_cast<unsigned long long>(f.size()), static_cast<unsigned long long>(f.alignment()),
                static_cast<unsigned long long>(f.data_offset()));
    const auto arch = f.architecture();
    std::printf("architecture: %.*s\n\n", int(arch.size()), arch.empty() ? "(none)" : arch.data());

    std::size_t key_w = 3, type_w = 4;
    for (const auto& e : f.metadata()) {
        key_w = std::max(key_w, e.key.size());
        type_w = std::max(type_w, e.value.type_string().size());
    }
    std::printf("metadata: %zu keys\n", f.metadata().size());
    const std::size_t items = full ? SIZE_MAX : 8, chars = full ? SIZE_MAX : 120;
    for (const auto& e : f.metadata()) {
        const auto type = e.value.type_string();
        const auto value = e.value.to_string(items, chars);
        std::printf("  %-*.*s  %-*s  %s\n", int(key_w), int(e.key.size()), e.key.data(), int(type_w), type.c_str(),
                    value.c_str());
    }

    std::size_t name_w = 4;
    unsigned long long total = 0;
    for (const auto& t : f.tensors()) {
        name_w = std::max(name_w, t.name.size());
        total += t.n_bytes;
    }
    std::printf("\ntensors: %zu, %llu bytes of data\n", f.tensors().size(), total);
    std::printf("  %5s  %-*s  %-7s  %-22s  %12s  %12s\n", "#", int(name_w), "name", "type", "shape (ne)", "offset",
                "bytes");
    std::size_t i = 0;
    for (const auto& t : f.tensors()) {
        std::printf("  %5zu  %-*s  %-7s  %-22s  %12llu  %12llu\n", i++, int(name_w), t.name.c_str(),
                    std::string(type_name(t.type)).c_str(), t.shape_string().c_str(),
                    static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.n_bytes));
    }
}

} // namespace

int cmd_inspect(int argc, char** argv) {
    std::string path;
    bool full = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            std::printf("usage: archetype inspect FILE [--full]\n"
                        "  prints metadata and tensor table of a GGUF or safetensors file\n"
                        "  --full  print whole arrays and strings\n");
            return 0;
        }
        if (a == "--full") full = true;
        else if (!a.empty() && a[0] == '-') throw argument_error("unknown option '" + std::string(a) + "'");
        else if (path.empty()) path = a;
        else throw argument_error("one file expected, got '" + path + "' and '" + std::string(a) + "'");
    }
    if (path.empty()) throw argument_error("no file given (usage: archetype inspect FILE [--full])");
    if (looks_like_safetensors(path)) return inspect_safetensors(path, full);
    print_gguf(path, full);
    return 0;
}

} // namespace archetype::tools
