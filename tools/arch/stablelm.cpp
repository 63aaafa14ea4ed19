// The archetype program's run_decoder for presets::stablelm_architecture (one entry per translation unit).
#include "archetype/models/presets/stablelm.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::stablelm_architecture);
}
