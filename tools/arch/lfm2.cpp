// The archetype program's run_decoder for presets::lfm2_architecture (one entry per translation unit).
#include "archetype/models/presets/lfm2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::lfm2_architecture);
}
