#pragma once
// The instruction-set levels archetype's kernels are compiled for, and what a CPU
// must have to run each (docs/isa.md).
//
// A level is a set of compiler flags; its requirement list below is exactly what
// those flags let the compiler emit, so a level runs on a CPU that has every item:
//   generic   -march=x86-64          SSE2 (every x86-64 CPU)
//   avx2      -march=x86-64-v3       + SSE3/SSSE3/SSE4.1/4.2, POPCNT, CX16, LAHF (v2)
//                                    + AVX, AVX2, FMA, F16C, BMI1, BMI2, LZCNT, MOVBE (v3)
//                                    and the OS saving YMM state (XCR0)
//   avxvnni   -march=x86-64-v3 -mavxvnni
//                                    + AVX-VNNI (VEX vpdpbusd: Alder Lake, Sapphire
//                                    Rapids, Zen 5)
//   avx512    -march=x86-64-v4 -mavx512vnni -mavx512vbmi -mavx512bitalg -mgfni
//                                    + AVX-512 F/BW/VL/DQ/CD (v4), VNNI, VBMI, BITALG,
//                                    GFNI, and the OS saving ZMM/opmask state
//   neon      -march=armv8-a         Advanced SIMD (part of the base aarch64 architecture)
//   neon_dotprod
//             -march=armv8.2-a+dotprod
//                                    + LSE atomics (Armv8.1, which the compiler may
//                                    emit for std::atomic), the dot-product
//                                    instructions (sdot/udot; HWCAP asimddp:
//                                    Cortex-A55/A75 and later, Neoverse, Apple M1)
// The meson build (tools/meson.build, isa_level_flags) uses these same flags.
#include <array>
#include <optional>
#include <string_view>

namespace archetype::isa {

enum class level { generic, avx2, avxvnni, avx512, neon, neon_dotprod };

/// Every level, lowest first within each CPU family.
inline constexpr std::array<level, 6> all_levels{level::generic, level::avx2, level::avxvnni, level::avx512,
                                                 level::neon,    level::neon_dotprod};

constexpr std::string_view name(level l) noexcept {
    switch (l) {
    case level::generic: return "generic";
    case level::avx2: return "avx2";
    case level::avxvnni: return "avxvnni";
    case level::avx512: return "avx512";
    case level::neon: return "neon";
    case level::neon_dotprod: return "neon_dotprod";
    }
    return "?";
}

/// The level named `s` (as ARCHETYPE_ISA spells it), or nullopt.
constexpr std::optional<level> parse(std::string_view s) noexcept {
    for (level l : all_levels)
        if (name(l) == s) return l;
    return std::nullopt;
}

/// The level the including translation unit is compiled for, read from the
/// compiler's macros: what this TU's kernels use (they test the same macros).
constexpr level compiled_level() noexcept {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX512VBMI__) && defined(__AVX512BITALG__) && defined(__GFNI__) && defined(__F16C__)
    return level::avx512;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
    return level::avxvnni;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    return level::avx2;
#elif defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
    return level::neon_dotprod;
#elif defined(__aarch64__)
    return level::neon;
#else
    return level::generic;
#endif
}

} // namespace archetype::isa
