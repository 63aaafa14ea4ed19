// The archetype program's run_decoder for presets::qwen2moe_architecture (one entry per translation unit).
#include "archetype/models/presets/qwen2moe.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::qwen2moe_architecture);
}
