#pragma once
// transformer_dims as a Hana Struct, for format_fields / differing_fields
// (printing what a file resolved to; comparing a preset's dims with a file's).
#include <boost/hana/adapt_struct.hpp>

#include "archetype/core/fields.hpp"
#include "archetype/models/decoder.hpp"

BOOST_HANA_ADAPT_STRUCT(archetype::transformer_dims, n_layer, n_embd, n_vocab, n_ff, n_head, n_head_kv,
                        head_dim, window, n_expert, n_expert_used, tied_output);
