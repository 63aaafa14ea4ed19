#pragma once
// Static-or-dynamic extents. A dimension given as a number is a compile-time
// constant; `dynamic` means "read from the model file at load". One code path
// serves both: code asks `extent<N>::value(runtime)`, which folds to the constant
// when N is static.
#include <cstddef>
#include <limits>

namespace archetype {

using dim_t = std::size_t;
/// Marks a dimension read from the model file at load time.
inline constexpr dim_t dynamic = std::numeric_limits<dim_t>::max();

template <dim_t N>
inline constexpr bool is_static_dim = (N != dynamic);

/// The value of a possibly-dynamic extent: the static one when known, else `runtime`.
template <dim_t N>
constexpr dim_t resolve_dim(dim_t runtime) noexcept {
    if constexpr (N != dynamic)
        return N;
    else
        return runtime;
}

} // namespace archetype
