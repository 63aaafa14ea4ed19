#pragma once
// The decoder architectures the library knows, one preset header each under
// models/presets/ (models/architectures.hpp adds the RWKV and encoder ones). A
// Decoder<...> loaded without an entry takes the conventions of its file's
// architecture from this list.
#include "archetype/models/presets/apertus.hpp"
#include "archetype/models/presets/arcee.hpp"
#include "archetype/models/presets/bloom.hpp"
#include "archetype/models/presets/cohere2.hpp"
#include "archetype/models/presets/command_r.hpp"
#include "archetype/models/presets/deepseek2.hpp"
#include "archetype/models/presets/ernie4_5.hpp"
#include "archetype/models/presets/exaone4.hpp"
#include "archetype/models/presets/falcon.hpp"
#include "archetype/models/presets/falcon_h1.hpp"
#include "archetype/models/presets/gemma.hpp"
#include "archetype/models/presets/gemma2.hpp"
#include "archetype/models/presets/gemma3.hpp"
#include "archetype/models/presets/glm4.hpp"
#include "archetype/models/presets/glm4moe.hpp"
#include "archetype/models/presets/gpt2.hpp"
#include "archetype/models/presets/gptneox.hpp"
#include "archetype/models/presets/gpt_oss.hpp"
#include "archetype/models/presets/granite.hpp"
#include "archetype/models/presets/granitehybrid.hpp"
#include "archetype/models/presets/granitemoe.hpp"
#include "archetype/models/presets/hunyuan_dense.hpp"
#include "archetype/models/presets/lfm2.hpp"
#include "archetype/models/presets/jamba.hpp"
#include "archetype/models/presets/llama.hpp"
#include "archetype/models/presets/mamba.hpp"
#include "archetype/models/presets/mamba2.hpp"
#include "archetype/models/presets/mellum.hpp"
#include "archetype/models/presets/mistral3.hpp"
#include "archetype/models/presets/nemotron_h.hpp"
#include "archetype/models/presets/mixtral.hpp"
#include "archetype/models/presets/olmo2.hpp"
#include "archetype/models/presets/olmo3.hpp"
#include "archetype/models/presets/olmoe.hpp"
#include "archetype/models/presets/phi2.hpp"
#include "archetype/models/presets/phi3.hpp"
#include "archetype/models/presets/qwen2.hpp"
#include "archetype/models/presets/qwen2moe.hpp"
#include "archetype/models/presets/qwen3.hpp"
#include "archetype/models/presets/qwen35.hpp"
#include "archetype/models/presets/qwen3moe.hpp"
#include "archetype/models/presets/qwen3next.hpp"
#include "archetype/models/presets/seed_oss.hpp"
#include "archetype/models/presets/smollm3.hpp"
#include "archetype/models/presets/stablelm.hpp"
#include "archetype/models/presets/starcoder2.hpp"
#include "archetype/models/registry.hpp"

namespace archetype {

/// Entries with the same name are tried in order: the first whose accepts() holds wins.
using decoder_architectures =
    architecture_list<presets::mixtral_architecture, presets::llama_architecture, presets::llama_swa_architecture, presets::mellum_swa_architecture,
                      presets::mellum_architecture, presets::gemma3_architecture, presets::qwen2_architecture,
                      presets::qwen3_architecture, presets::qwen3moe_architecture, presets::stablelm_architecture,
                      presets::starcoder2_architecture, presets::starcoder2_swa_architecture,
                      presets::gpt2_architecture, presets::phi3_architecture, presets::phi3_swa_architecture,
                      presets::smollm3_architecture, presets::bloom_architecture, presets::gemma2_architecture,
                      presets::olmo3_architecture, presets::olmo2_architecture, presets::granite_architecture,
                      presets::gptneox_architecture, presets::phi2_architecture,
                      presets::command_r_qknorm_architecture, presets::command_r_architecture,
                      presets::lfm2_architecture, presets::gemma_architecture, presets::ernie4_5_architecture,
                      presets::seed_oss_architecture, presets::arcee_architecture, presets::glm4_architecture,
                      presets::hunyuan_dense_architecture, presets::exaone4_architecture,
                      presets::cohere2_architecture, presets::falcon_40b_architecture, presets::falcon_architecture,
                      presets::apertus_architecture, presets::mistral3_architecture,
                      presets::qwen2moe_architecture, presets::olmoe_architecture, presets::granitemoe_architecture,
                      presets::glm4moe_architecture, presets::gpt_oss_architecture,
                      presets::deepseek2_architecture, presets::mamba_architecture, presets::mamba2_architecture,
                      presets::granitehybrid_architecture, presets::granitehybrid_moe_architecture,
                      presets::granitehybrid_rope_architecture,
                      presets::nemotron_h_architecture, presets::falcon_h1_architecture,
                      presets::qwen3next_architecture, presets::qwen35_architecture, presets::jamba_architecture>;

} // namespace archetype
