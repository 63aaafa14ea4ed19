// The archetype program's run_decoder for presets::gpt2_architecture (one entry per translation unit).
#include "archetype/models/presets/gpt2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::gpt2_architecture);
}
