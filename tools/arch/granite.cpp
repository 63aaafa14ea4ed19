// The archetype program's run_decoder for presets::granite_architecture (one entry per translation unit).
#include "archetype/models/presets/granite.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::granite_architecture);
}
