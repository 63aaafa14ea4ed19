// The archetype program's run_decoder for presets::qwen3moe_architecture (one entry per translation unit).
#include "archetype/models/presets/qwen3moe.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::qwen3moe_architecture);
}
