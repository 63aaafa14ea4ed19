#pragma once
// RWKV-6 "Finch": llama.cpp's `rwkv6` GGUF, and rwkv.cpp's .bin files of version 6
// (recognised by their magic and the time_maa_x tensor of layer 0). Every
// dimension from the file; tensor names and hyperparameters: models/rwkv_load.hpp.
#include <string>

#include "archetype/io/mapped_file.hpp"
#include "archetype/io/rwkv_bin.hpp"
#include "archetype/models/rwkv.hpp"

namespace archetype::presets {

using Finch = Rwkv6<dynamic, dynamic>;

struct rwkv6_architecture {
    static constexpr std::string_view gguf_name = "rwkv6";
    using model = Finch;
};
/// rwkv.cpp .bin, version 6: no GGUF name; recognised by the file's bytes.
struct rwkv6_bin_architecture {
    static constexpr std::string_view gguf_name = "rwkv.cpp v6 (.bin)";
    using model = Finch;
    static bool accepts_path(const std::string& path) {
        if (!rwkv_bin::has_magic(io::mapped_file(path).bytes())) return false;
        return rwkv_bin::file::open(path).find_tensor("blocks.0.att.time_maa_x") != nullptr;
    }
};

} // namespace archetype::presets
