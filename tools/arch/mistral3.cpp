// The archetype program's run_decoder for presets::mistral3_architecture (one entry per translation unit).
#include "archetype/models/presets/mistral3.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::mistral3_architecture);
}
