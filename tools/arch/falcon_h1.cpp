// The archetype program's run_decoder for presets::falcon_h1_architecture (one entry per translation unit).
#include "archetype/models/presets/falcon_h1.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::falcon_h1_architecture);
}
