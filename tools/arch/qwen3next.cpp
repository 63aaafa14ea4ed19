// The archetype program's run_decoder for presets::qwen3next_architecture (one entry per translation unit).
#include "archetype/models/presets/qwen3next.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::qwen3next_architecture);
}
