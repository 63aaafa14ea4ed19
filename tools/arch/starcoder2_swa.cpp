// The archetype program's run_decoder for presets::starcoder2_swa_architecture (one entry per translation unit).
#include "archetype/models/presets/starcoder2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::starcoder2_swa_architecture);
}
