#pragma once
// The model a command's --model names, as a GGUF: the file itself, or a Hugging Face
// checkpoint directory converted as llama.cpp's converter would (io/hf_checkpoint.hpp).
#include <memory>
#include <string>

#include "archetype/io/gguf.hpp"
#include "archetype/io/hf_checkpoint.hpp"
#include "archetype/runtime/chat_template.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"

namespace archetype::tools {

/// gguf::file::open(path), or hf::open_as_gguf(path) for a checkpoint directory.
gguf::file open_model_file(const std::string& path);

/// The tokenizer of the model at `path`: a checkpoint directory's tokenizer.json
/// (runtime/tokenizer/tokenizer_json.hpp; a directory without one is a format_error), or
/// the GGUF's tokenizer.ggml.* (`file`, from open_model_file(path)).
std::unique_ptr<tokenizer::tokenizer> open_model_tokenizer(const std::string& path, const gguf::file& file);

/// The chat template of the file (or the family `name`, when not empty), and in `note`
/// a line for stderr when the file has none: ChatML then, as llama.cpp does, except
/// gemma* files, which get Gemma's.
chat::chat_template chat_template_for(const gguf::file& f, const std::string& name, std::string& note);

} // namespace archetype::tools
