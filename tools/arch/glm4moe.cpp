// The archetype program's run_decoder for presets::glm4moe_architecture (one entry per translation unit).
#include "archetype/models/presets/glm4moe.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::glm4moe_architecture);
}
