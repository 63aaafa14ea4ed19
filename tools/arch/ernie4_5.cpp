// The archetype program's run_decoder for presets::ernie4_5_architecture (one entry per translation unit).
#include "archetype/models/presets/ernie4_5.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::ernie4_5_architecture);
}
