// `main` of the dispatched archetype program (-Dnative=false on x86-64): the
// whole program is compiled once per instruction-set level, each copy in its own
// translation units with that level's -march flags, and this file, compiled for
// the baseline, picks one at start (isa::choose: the best level this CPU runs, or
// ARCHETYPE_ISA's) and hands it the command line.
//
// Each level's copy has its own names: its TUs are compiled with
// -Darchetype=archetype_<level>, so every function of ours exists once per level
// and no level can call another's (tools/meson.build says why that matters).
// ARCHETYPE_ISA_BUILT_LEVELS is X(generic)X(avx2)... lowest first.
#include <cstdio>
#include <cstdlib>

#include "archetype/core/isa/choose.hpp"

#if !defined(ARCHETYPE_ISA_BUILT_LEVELS)
#error "main_dispatch.cpp needs -DARCHETYPE_ISA_BUILT_LEVELS=X(level)... (tools/meson.build)"
#endif

#define X(l)                                                                                                           \
    namespace archetype_##l::tools {                                                                                  \
    int cli_main(int argc, char** argv);                                                                               \
    }
ARCHETYPE_ISA_BUILT_LEVELS
#undef X

namespace {
struct level_program {
    archetype::isa::level level;
    int (*cli_main)(int argc, char** argv);
};
#define X(l) level_program{archetype::isa::level::l, &archetype_##l::tools::cli_main},
constexpr level_program programs[] = {ARCHETYPE_ISA_BUILT_LEVELS};
#undef X
} // namespace

int main(int argc, char** argv) {
    archetype::isa::level built[std::size(programs)];
    for (std::size_t i = 0; i < std::size(programs); ++i) built[i] = programs[i].level;
    try {
        const auto chosen = archetype::isa::choose(built, archetype::isa::detect_cpu(), std::getenv("ARCHETYPE_ISA"));
        for (const auto& p : programs)
            if (p.level == chosen) return p.cli_main(argc, argv);
    } catch (const archetype::error& e) {
        std::fprintf(stderr, "archetype: %s\n", e.what());
        return 2;
    }
    return 2; // unreachable: choose returns a built level
}
