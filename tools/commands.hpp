#pragma once
// Declarations of the archetype program's commands (one cmd_<name>.cpp each)
// and small argument helpers they share.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace archetype::tools {

/// The program behind `main` (tools/archetype.cpp): main_native.cpp calls it, or,
/// in a dispatched build, main_dispatch.cpp calls the chosen level's copy.
int cli_main(int argc, char** argv);

int cmd_version(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_mask(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int inspect_safetensors(const std::string& path, bool full); // hook: cmd_inspect_safetensors.cpp
int cmd_logits(int argc, char** argv);
int cmd_describe(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_serve(int argc, char** argv); // built when cpp-httplib is found (ARCHETYPE_HAVE_SERVE)
// further commands are declared here, one line each

/// Parses one number in [lo, hi]; throws archetype::argument_error naming the flag and value.
template <class T>
T parse_number(std::string_view flag, std::string_view s, T lo, T hi);

/// Parses "1,2,3" into ids; throws archetype::argument_error naming the bad item.
std::vector<std::int32_t> parse_ids(std::string_view s);
/// Reads a whole file of raw little-endian int32 ids.
std::vector<std::int32_t> read_i32_file(const std::string& path);
/// Writes n floats to path (raw little-endian float32).
void write_f32_file(const std::string& path, const float* data, std::size_t n);

} // namespace archetype::tools

#include "archetype/core/error.hpp"

template <class T>
T archetype::tools::parse_number(std::string_view flag, std::string_view s, T lo, T hi) {
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || !(v >= lo && v <= hi))
        throw argument_error("bad value '" + std::string(s) + "' for " + std::string(flag) + " (" + std::to_string(lo) +
                             " .. " + std::to_string(hi) + ")");
    return v;
}
