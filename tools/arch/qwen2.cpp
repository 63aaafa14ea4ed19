// The archetype program's run_decoder for presets::qwen2_architecture (one entry per translation unit).
#include "archetype/models/presets/qwen2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::qwen2_architecture);
}
