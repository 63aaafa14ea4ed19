#pragma once
// The one place the library includes xsimd. GCC 12 reports false
// -Wmaybe-uninitialized warnings inside its own avx512fintrin.h when xsimd's
// AVX-512 code is inlined; silence them around the include only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
