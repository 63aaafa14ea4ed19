#pragma once
// The model a command's --model names, as a GGUF: the file itself, or a Hugging Face
// checkpoint directory converted as llama.cpp's converter would (io/hf_checkpoint.hpp).
#include <string>

#include "archetype/io/gguf.hpp"
#include "archetype/io/hf_checkpoint.hpp"

namespace archetype::tools {

/// gguf::file::open(path), or hf::open_as_gguf(path) for a checkpoint directory.
gguf::file open_model_file(const std::string& path);

} // namespace archetype::tools
