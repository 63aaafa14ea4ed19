#pragma once
// RWKV-5.2 "Eagle" from rwkv.cpp's .bin files (the magic without RWKV-6's
// time_maa_x or RWKV-7's x_rwkvag tensor; the loader checks the rest). Every dimension from the file.
#include <string>

#include "archetype/io/mapped_file.hpp"
#include "archetype/io/rwkv_bin.hpp"
#include "archetype/models/rwkv.hpp"

namespace archetype::presets {

using Eagle = Rwkv5<dynamic, dynamic>;

struct rwkv5_bin_architecture {
    static constexpr std::string_view gguf_name = "rwkv.cpp v5 (.bin)";
    using model = Eagle;
    static bool accepts_path(const std::string& path) {
        if (!rwkv_bin::has_magic(io::mapped_file(path).bytes())) return false;
        const auto f = rwkv_bin::file::open(path);
        return !f.find_tensor("blocks.0.att.time_maa_x") && !f.find_tensor("blocks.0.att.x_rwkvag");
    }
};

} // namespace archetype::presets
