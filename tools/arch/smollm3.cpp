// The archetype program's run_decoder for presets::smollm3_architecture (one entry per translation unit).
#include "archetype/models/presets/smollm3.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::smollm3_architecture);
}
