// `archetype inspect` on safetensors files (called by cmd_inspect.cpp when a
// file starts with an 8-byte header length and '{'): the tensor table with
// shapes outermost first and GGUF's ne order beside them, and __metadata__.
#include <iostream>
#include <string>

#include "archetype/io/safetensors.hpp"
#include "commands.hpp"

namespace archetype::tools {

int inspect_safetensors(const std::string& path, bool /*full*/) {
    archetype::safetensors::print_safetensors_summary(std::cout, path);
    return 0;
}

} // namespace archetype::tools
