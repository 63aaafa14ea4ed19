// The archetype program's run_decoder for presets::qwen35_architecture (one entry per translation unit).
#include "archetype/models/presets/qwen35.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::qwen35_architecture);
}
