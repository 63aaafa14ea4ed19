#pragma once
// Which of a build's levels a process runs: the best one this CPU runs, or the one
// ARCHETYPE_ISA names. Every refusal is an argument_error naming the value and
// what would be accepted.
#include <span>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"
#include "archetype/core/isa/detect.hpp"
#include "archetype/core/isa/level.hpp"

namespace archetype::isa {

namespace detail {
inline std::string names_of(std::span<const level> ls) {
    std::string s;
    for (level l : ls) {
        if (!s.empty()) s += ", ";
        s += name(l);
    }
    return s;
}
} // namespace detail

/// The level to run among `built` (lowest first), on a CPU with `cpu`.
/// `forced` is ARCHETYPE_ISA's value (null or empty: choose automatically).
/// Automatic: the highest built level the CPU runs. Forced: that level, which must
/// be a level's name, be built, and run on this CPU.
inline level choose(std::span<const level> built, const cpu_features& cpu, const char* forced) {
    const std::string_view want = forced ? std::string_view(forced) : std::string_view();
    if (!want.empty()) {
        const auto l = parse(want);
        if (!l)
            throw argument_error("ARCHETYPE_ISA='" + std::string(want) + "' is not an instruction-set level (" +
                                 detail::names_of(all_levels) + ")");
        bool in_build = false;
        for (level b : built) in_build = in_build || b == *l;
        if (!in_build)
            throw argument_error("ARCHETYPE_ISA=" + std::string(want) + ": this build has no " + std::string(want) +
                                 " kernels (it has: " + detail::names_of(built) +
                                 (built.size() == 1 ? "; a -Dnative=false build compiles every level of its CPU family)"
                                                    : ")"));
        const std::string lacks = missing_for(*l, cpu);
        if (!lacks.empty())
            throw argument_error("ARCHETYPE_ISA=" + std::string(want) + ": this CPU cannot run it (it lacks " + lacks +
                                 ")");
        return *l;
    }
    for (auto it = built.rbegin(); it != built.rend(); ++it)
        if (runs(*it, cpu)) return *it;
    std::string why;
    for (level b : built) why += (why.empty() ? "" : "; ") + std::string(name(b)) + " needs " + missing_for(b, cpu);
    throw argument_error("this CPU runs none of this build's instruction-set levels (" + why +
                         "): rebuild with -Dnative=false, or with -march=native on this machine");
}

} // namespace archetype::isa
