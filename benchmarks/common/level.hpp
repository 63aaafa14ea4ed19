#pragma once
// The instruction-set level a benchmark runs at. A benchmark is compiled at one level
// (its build's: -march=native, or one level of a -Dnative=false -Disa_levels=L build,
// docs/isa.md "Benchmarks at a level"), so it prints that level beside its numbers,
// and an ARCHETYPE_ISA naming another level is an error: a number taken at avx512 must
// not pass for one taken at avx2.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "archetype/core/isa/level.hpp"

namespace archetype::bench_util {

/// Prints "isa: <level>"; exits with status 2 when ARCHETYPE_ISA names another level.
inline void announce_level() {
    const std::string built(isa::name(isa::compiled_level()));
    const char* forced = std::getenv("ARCHETYPE_ISA");
    if (forced && *forced && built != forced) {
        std::fprintf(stderr,
                     "ARCHETYPE_ISA=%s, but this benchmark is compiled for %s: configure a build at that level "
                     "(meson setup DIR -Dnative=false -Disa_levels=%s) and run its benchmarks\n",
                     forced, built.c_str(), forced);
        std::exit(2);
    }
    std::printf("isa: %s\n", built.c_str());
    std::fflush(stdout);
}

} // namespace archetype::bench_util
