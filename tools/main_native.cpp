// `main` of an archetype program compiled for one instruction-set level: the
// -march=native build (and -Dnative=false -Disa_levels=<one level>). Before
// anything runs, checks that this CPU runs the level the program was compiled for
// (a binary built on another machine fails with the missing features named, not
// with SIGILL in the middle of a kernel) and that ARCHETYPE_ISA, when set, names it.
#include <cstdio>
#include <cstdlib>

#include "archetype/core/isa/choose.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
    const archetype::isa::level built[] = {archetype::isa::compiled_level()};
    try {
        (void)archetype::isa::choose(built, archetype::isa::detect_cpu(), std::getenv("ARCHETYPE_ISA"));
    } catch (const archetype::error& e) {
        std::fprintf(stderr, "archetype: %s\n", e.what());
        return 2;
    }
    return archetype::tools::cli_main(argc, argv);
}
