#pragma once
// archetype configuration: version and library-wide limits.

#define ARCHETYPE_VERSION_MAJOR 0
#define ARCHETYPE_VERSION_MINOR 1
#define ARCHETYPE_VERSION_PATCH 0

// xsimd's AVX-512 code trips GCC 12's -Wmaybe-uninitialized inside avx512fintrin.h
// (a GCC header issue, see docs/README.md). Library headers include xsimd through
// core/simd.hpp, which silences exactly that around the include.
