#pragma once
// RWKV-7 "Goose": llama.cpp's `rwkv7` GGUF, and rwkv.cpp's .bin files of version 7
// (recognised by their magic and the x_rwkvag tensor of layer 0). Every dimension
// from the file; tensor names and hyperparameters: models/rwkv_load.hpp (rwkv7_bind),
// io/arch/rwkv7.hpp; the time mix: layers/rwkv7_time_mix.hpp.
#include <string>

#include "archetype/io/mapped_file.hpp"
#include "archetype/io/rwkv_bin.hpp"
#include "archetype/models/rwkv.hpp"

namespace archetype::presets {

using Goose = Rwkv7<dynamic, dynamic>;

struct rwkv7_architecture {
    static constexpr std::string_view gguf_name = "rwkv7";
    using model = Goose;
};
/// rwkv.cpp .bin, version 7: no GGUF name; recognised by the file's bytes.
struct rwkv7_bin_architecture {
    static constexpr std::string_view gguf_name = "rwkv.cpp v7 (.bin)";
    using model = Goose;
    static bool accepts_path(const std::string& path) {
        if (!rwkv_bin::has_magic(io::mapped_file(path).bytes())) return false;
        return rwkv_bin::file::open(path).find_tensor("blocks.0.att.x_rwkvag") != nullptr;
    }
};

} // namespace archetype::presets
