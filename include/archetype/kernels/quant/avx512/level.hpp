#pragma once
// The AVX-512 VNNI level of the quantised kernels (this folder, namespace quant::vnni):
// compiled only where the target has AVX-512 F/BW/VL with VNNI and F16C; elsewhere
// every header here is empty and kernels::matmul takes the int8 row engine
// (quant/int8/) or the generic path.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)
#define ARCHETYPE_QUANT_VNNI 1
#endif
