// The archetype program's run_decoder for presets::mamba2_architecture (one entry per translation unit).
#include "archetype/models/presets/mamba2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::mamba2_architecture);
}
