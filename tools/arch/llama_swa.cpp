// The archetype program's run_decoder for presets::llama_swa_architecture (one entry per translation unit).
#include "archetype/models/presets/llama.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::llama_swa_architecture);
}
