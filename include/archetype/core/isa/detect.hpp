#pragma once
// What this CPU and its operating system can run, read at run time: CPUID and
// XGETBV on x86-64 (an instruction set counts only when the OS also saves its
// registers on a context switch), getauxval(AT_HWCAP) on aarch64 Linux.
// Compiled at any level: it uses no instruction beyond the baseline's.
#include <cstdint>
#include <string>

#include "archetype/core/isa/level.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace archetype::isa {

/// The features the levels need (level.hpp), as this CPU reports them.
struct cpu_features {
    // x86-64-v2
    bool sse3 = false, ssse3 = false, sse41 = false, sse42 = false, popcnt = false, cx16 = false, lahf = false;
    // x86-64-v3
    bool avx = false, avx2 = false, fma = false, f16c = false, bmi1 = false, bmi2 = false, lzcnt = false,
         movbe = false;
    bool os_ymm = false; // XCR0 has SSE and AVX state
    // x86-64-v4 and our AVX-512 kernels
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512cd = false,
         avx512vnni = false, avx512vbmi = false, avx512bitalg = false, gfni = false;
    bool os_zmm = false; // XCR0 has opmask, ZMM_Hi256 and Hi16_ZMM state
    bool avxvnni = false;
    // aarch64
    bool asimd = false, atomics = false, asimd_dotprod = false, asimd_fp16 = false;
};

#if defined(__x86_64__) || defined(__i386__)
namespace detail {
inline std::uint64_t xgetbv0() noexcept {
    std::uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0)); // only called when OSXSAVE is set
    return (std::uint64_t(hi) << 32) | lo;
}
} // namespace detail
#endif

/// This CPU's features (all false on a CPU family the build does not know).
inline cpu_features detect_cpu() noexcept {
    cpu_features f;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    const unsigned max_leaf = a;
    __get_cpuid(1, &a, &b, &c, &d);
    auto bit = [](unsigned r, int i) { return ((r >> i) & 1u) != 0; };
    f.sse3 = bit(c, 0);
    f.ssse3 = bit(c, 9);
    f.fma = bit(c, 12);
    f.cx16 = bit(c, 13);
    f.sse41 = bit(c, 19);
    f.sse42 = bit(c, 20);
    f.movbe = bit(c, 22);
    f.popcnt = bit(c, 23);
    const bool osxsave = bit(c, 27);
    f.avx = bit(c, 28);
    f.f16c = bit(c, 29);
    if (osxsave) {
        const std::uint64_t xcr0 = detail::xgetbv0();
        f.os_ymm = (xcr0 & 0x6) == 0x6;    // SSE, AVX
        f.os_zmm = (xcr0 & 0xe6) == 0xe6; // + opmask, ZMM_Hi256, Hi16_ZMM
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.bmi1 = bit(b, 3);
        f.avx2 = bit(b, 5);
        f.bmi2 = bit(b, 8);
        f.avx512f = bit(b, 16);
        f.avx512dq = bit(b, 17);
        f.avx512cd = bit(b, 28);
        f.avx512bw = bit(b, 30);
        f.avx512vl = bit(b, 31);
        f.avx512vbmi = bit(c, 1);
        f.gfni = bit(c, 8);
        f.avx512vnni = bit(c, 11);
        f.avx512bitalg = bit(c, 12);
        const unsigned max_sub = a;
        if (max_sub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f.avxvnni = bit(a, 4);
        }
    }
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) {
        f.lahf = bit(c, 0);
        f.lzcnt = bit(c, 5);
    }
#elif defined(__aarch64__) && defined(__linux__)
    const unsigned long hw = getauxval(AT_HWCAP);
    f.asimd = (hw & (1ul << 1)) != 0;          // HWCAP_ASIMD
    f.atomics = (hw & (1ul << 8)) != 0;        // HWCAP_ATOMICS (LSE, Armv8.1)
    f.asimd_fp16 = (hw & (1ul << 10)) != 0;    // HWCAP_ASIMDHP
    f.asimd_dotprod = (hw & (1ul << 20)) != 0; // HWCAP_ASIMDDP
#endif
    return f;
}

/// What `f` lacks to run level `l`, as a space-separated list ("" when it runs it).
inline std::string missing_for(level l, const cpu_features& f) {
    std::string out;
    auto need = [&](bool have, const char* what) {
        if (have) return;
        if (!out.empty()) out += ' ';
        out += what;
    };
    auto v3 = [&] {
        need(f.sse3, "sse3"); need(f.ssse3, "ssse3"); need(f.sse41, "sse4.1"); need(f.sse42, "sse4.2");
        need(f.popcnt, "popcnt"); need(f.cx16, "cx16"); need(f.lahf, "lahf");
        need(f.avx, "avx"); need(f.avx2, "avx2"); need(f.fma, "fma"); need(f.f16c, "f16c");
        need(f.bmi1, "bmi1"); need(f.bmi2, "bmi2"); need(f.lzcnt, "lzcnt"); need(f.movbe, "movbe");
        need(f.os_ymm, "os-ymm-state");
    };
    switch (l) {
    case level::generic:
#if !(defined(__x86_64__) || defined(__i386__))
        need(false, "x86-64");
#endif
        break;
    case level::avx2: v3(); break;
    case level::avxvnni:
        v3();
        need(f.avxvnni, "avx-vnni");
        break;
    case level::avx512:
        v3();
        need(f.avx512f, "avx512f"); need(f.avx512bw, "avx512bw"); need(f.avx512vl, "avx512vl");
        need(f.avx512dq, "avx512dq"); need(f.avx512cd, "avx512cd"); need(f.avx512vnni, "avx512vnni");
        need(f.avx512vbmi, "avx512vbmi"); need(f.avx512bitalg, "avx512bitalg"); need(f.gfni, "gfni");
        need(f.os_zmm, "os-zmm-state");
        break;
    case level::neon: need(f.asimd, "asimd"); break;
    case level::neon_dotprod: // armv8.2-a: the compiler may use LSE atomics
        need(f.asimd, "asimd");
        need(f.atomics, "atomics");
        need(f.asimd_dotprod, "asimddp");
        break;
    }
    return out;
}

inline bool runs(level l, const cpu_features& f) { return missing_for(l, f).empty(); }

} // namespace archetype::isa
