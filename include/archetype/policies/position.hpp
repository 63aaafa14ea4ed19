#pragma once
// Position axis: one header per policy under policies/position/, each holding the
// policy and its behaviour (position_impl<P>, policies/impl.hpp).
#include "archetype/policies/position/alibi.hpp"
#include "archetype/policies/position/learned.hpp"
#include "archetype/policies/position/nope.hpp"
#include "archetype/policies/position/nope_layers.hpp"
#include "archetype/policies/position/pairing.hpp"
#include "archetype/policies/position/relative_bias.hpp"
#include "archetype/policies/position/rope.hpp"
#include "archetype/policies/position/sinusoidal.hpp"
#include "archetype/policies/position/windowed_rope_base.hpp"
