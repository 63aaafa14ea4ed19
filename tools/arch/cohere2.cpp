// The archetype program's run_decoder for presets::cohere2_architecture (one entry per translation unit).
#include "archetype/models/presets/cohere2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::cohere2_architecture);
}
