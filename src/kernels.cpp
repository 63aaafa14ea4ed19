// The kernel library of the compiled mode (include/archetype/kernels/compiled.hpp,
// docs/compiled.md): the one definition of each kernel entry point, compiled here
// once with the build's instruction-set flags. A TU compiled with
// ARCHETYPE_COMPILED_KERNELS sees their declarations only and links this.
#define ARCHETYPE_KERNELS_SOURCE 1
#include "archetype/kernels/attention.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/encoder_gemm.hpp"
#include "archetype/kernels/matmul.hpp"
