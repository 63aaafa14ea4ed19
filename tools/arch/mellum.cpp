// The archetype program's run_decoder for presets::mellum_architecture (one entry per translation unit).
#include "archetype/models/presets/mellum.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::mellum_architecture);
}
