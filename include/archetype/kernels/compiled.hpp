#pragma once
// Header-only or compiled kernels (docs/compiled.md).
//
// The kernel entry points the models call (matmul, matmul_batch, the float GEMM and
// GEMV, attention's score and P.V blocks, the encoder's prepacked GEMM) are where
// nearly all of a user translation unit's machine code comes from: each one
// instantiates the engines of every weight type, tile shape and thread-pool job of the
// level. Three ways to include them:
//
//   default (header-only)          inline definitions, compiled in every TU that calls
//                                  them (as every other function of the library);
//   ARCHETYPE_COMPILED_KERNELS     declarations only: the TU calls the definitions of
//                                  the kernel library (src/kernels.cpp, Meson's
//                                  archetype_compiled_dep), built once;
//   ARCHETYPE_KERNELS_SOURCE       that library's TU: the one, non-inline definition.
//
// A TU of the compiled mode must be compiled with the library's instruction-set flags
// (Meson's dependency carries them): the entries' arguments do not depend on the level,
// but which kernels exist does (an x16 weight layout made by a loader compiled for
// AVX-512 has no kernel in a library compiled for AVX2, and matmul says so).
//
// ARCHETYPE_KERNEL_ENTRY goes before each entry's declaration and definition;
// ARCHETYPE_KERNEL_BODIES says whether this TU sees the definitions.
#if defined(ARCHETYPE_KERNELS_SOURCE)
#define ARCHETYPE_KERNEL_ENTRY
#define ARCHETYPE_KERNEL_BODIES 1
#elif defined(ARCHETYPE_COMPILED_KERNELS)
#define ARCHETYPE_KERNEL_ENTRY
#define ARCHETYPE_KERNEL_BODIES 0
#else
#define ARCHETYPE_KERNEL_ENTRY inline
#define ARCHETYPE_KERNEL_BODIES 1
#endif
