#pragma once
// Everything for RWKV-5/6: model types, loading (GGUF rwkv6, rwkv.cpp .bin), sessions.
#include "archetype/models/rwkv.hpp"
#include "archetype/models/rwkv_model.hpp"
#include "archetype/models/rwkv_load.hpp"
#include "archetype/runtime/rwkv_session.hpp"
