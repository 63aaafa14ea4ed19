// The archetype program's run_decoder for presets::gpt_oss_architecture (one entry per translation unit).
#include "archetype/models/presets/gpt_oss.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::gpt_oss_architecture);
}
