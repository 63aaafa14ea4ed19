// The archetype program's run_decoder for presets::deepseek2_architecture (one entry per translation unit).
#include "archetype/models/presets/deepseek2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::deepseek2_architecture);
}
