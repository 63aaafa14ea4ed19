// archetype mask --kind causal|window|symmetric|bidirectional [--window W] --n N
// Prints the attention mask of one sequence of N tokens (llama.cpp's debug layout).
#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"
#include "archetype/runtime/encoder_mask.hpp"
#include "commands.hpp"

namespace archetype::tools {

namespace {
long long parse_count(std::string_view flag, std::string_view s) {
    long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
        throw argument_error("bad value '" + std::string(s) + "' for " + std::string(flag));
    return v;
}
} // namespace

int cmd_mask(int argc, char** argv) {
    std::string kind_name;
    long long n = -1, window = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            std::printf("usage: archetype mask --kind causal|window|symmetric|bidirectional [--window W] --n N\n");
            return 0;
        }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(a) + "' needs a value");
        const std::string_view v = argv[++i];
        if (a == "--kind") kind_name = v;
        else if (a == "--window") window = parse_count(a, v);
        else if (a == "--n") n = parse_count(a, v);
        else throw argument_error("unknown option '" + std::string(a) + "'");
    }
    const auto kind = mask_kind_from_name(kind_name);
    if (!kind)
        throw argument_error("--kind '" + kind_name + "' is not causal, window, symmetric or bidirectional");
    if (n < 1 || static_cast<unsigned long long>(n) > max_printed_mask)
        throw argument_error("--n " + std::to_string(n) + " is not in 1.." + std::to_string(max_printed_mask));
    if ((*kind == mask_kind::window || *kind == mask_kind::symmetric) && window < 1)
        throw argument_error("--kind " + kind_name + " needs --window W >= 1 (got " + std::to_string(window) + ")");
    const std::string text = format_mask(*kind, static_cast<std::size_t>(n), window);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
}

} // namespace archetype::tools
