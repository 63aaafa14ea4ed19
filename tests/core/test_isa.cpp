// Instruction-set levels (core/isa): detection against GCC's own CPU probe
// (__builtin_cpu_supports, an independent reading of CPUID), and the choice of a
// level with and without ARCHETYPE_ISA on made-up CPUs.
#define BOOST_TEST_MODULE isa
#include <boost/test/unit_test.hpp>

#include <string>

#include "archetype/core/isa/choose.hpp"

using namespace archetype;
using isa::level;

namespace {
isa::cpu_features v3_cpu() {
    isa::cpu_features f;
    f.sse3 = f.ssse3 = f.sse41 = f.sse42 = f.popcnt = f.cx16 = f.lahf = true;
    f.avx = f.avx2 = f.fma = f.f16c = f.bmi1 = f.bmi2 = f.lzcnt = f.movbe = f.os_ymm = true;
    return f;
}
isa::cpu_features v4_cpu() {
    auto f = v3_cpu();
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512cd = true;
    f.avx512vnni = f.avx512vbmi = f.avx512bitalg = f.gfni = f.os_zmm = true;
    return f;
}
std::string refusal(std::span<const level> built, const isa::cpu_features& f, const char* forced) {
    try {
        (void)isa::choose(built, f, forced);
    } catch (const argument_error& e) {
        return e.what();
    }
    return "";
}
constexpr level x86_built[] = {level::generic, level::avx2, level::avx512};
} // namespace

BOOST_AUTO_TEST_CASE(names_round_trip) {
    for (level l : isa::all_levels) BOOST_TEST((isa::parse(isa::name(l)) == l));
    BOOST_TEST(!isa::parse("AVX2").has_value());
    BOOST_TEST(!isa::parse("").has_value());
    BOOST_TEST(!isa::parse("avx").has_value());
}

#if defined(__x86_64__)
BOOST_AUTO_TEST_CASE(detection_agrees_with_gccs_cpu_probe) {
    __builtin_cpu_init();
    const auto f = isa::detect_cpu();
    BOOST_TEST(f.sse42 == bool(__builtin_cpu_supports("sse4.2")));
    BOOST_TEST(f.popcnt == bool(__builtin_cpu_supports("popcnt")));
    BOOST_TEST(f.fma == bool(__builtin_cpu_supports("fma")));
    BOOST_TEST(f.bmi2 == bool(__builtin_cpu_supports("bmi2")));
    // GCC reports avx/avx2/avx512* only when the OS saves their registers too
    BOOST_TEST((f.avx && f.os_ymm) == bool(__builtin_cpu_supports("avx")));
    BOOST_TEST((f.avx2 && f.os_ymm) == bool(__builtin_cpu_supports("avx2")));
    BOOST_TEST((f.avx512f && f.os_zmm) == bool(__builtin_cpu_supports("avx512f")));
    BOOST_TEST((f.avx512bw && f.os_zmm) == bool(__builtin_cpu_supports("avx512bw")));
    BOOST_TEST((f.avx512vnni && f.os_zmm) == bool(__builtin_cpu_supports("avx512vnni")));
    BOOST_TEST((f.avx512vbmi && f.os_zmm) == bool(__builtin_cpu_supports("avx512vbmi")));
    BOOST_TEST(f.gfni == bool(__builtin_cpu_supports("gfni")));
    BOOST_TEST((f.avxvnni && f.os_ymm) == bool(__builtin_cpu_supports("avxvnni")));
    // the x86-64 micro-architecture levels as GCC defines them
    BOOST_TEST(isa::runs(level::avx2, f) == bool(__builtin_cpu_supports("x86-64-v3")));
    if (isa::runs(level::avx512, f)) BOOST_TEST(bool(__builtin_cpu_supports("x86-64-v4")));
}
#endif

BOOST_AUTO_TEST_CASE(this_cpu_runs_the_level_this_test_was_compiled_for) {
    // the test is running code of that level, so detection must say so
    const auto f = isa::detect_cpu();
    BOOST_TEST_INFO("compiled for " << isa::name(isa::compiled_level()) << ", missing: "
                                    << isa::missing_for(isa::compiled_level(), f));
    BOOST_TEST(isa::runs(isa::compiled_level(), f));
}

BOOST_AUTO_TEST_CASE(automatic_choice_is_the_best_level_the_cpu_runs) {
    BOOST_TEST((isa::choose(x86_built, v4_cpu(), nullptr) == level::avx512));
    BOOST_TEST((isa::choose(x86_built, v4_cpu(), "") == level::avx512));
    BOOST_TEST((isa::choose(x86_built, v3_cpu(), nullptr) == level::avx2));
    BOOST_TEST((isa::choose(x86_built, isa::cpu_features{}, nullptr) == level::generic));
    // AVX-512 without VNNI (Skylake-X) runs the avx2 level: our AVX-512 kernels need VNNI
    auto skx = v4_cpu();
    skx.avx512vnni = false;
    BOOST_TEST((isa::choose(x86_built, skx, nullptr) == level::avx2));
    // the instructions without the OS saving their registers do not count
    auto no_os = v4_cpu();
    no_os.os_zmm = false;
    BOOST_TEST((isa::choose(x86_built, no_os, nullptr) == level::avx2));
    no_os.os_ymm = false;
    BOOST_TEST((isa::choose(x86_built, no_os, nullptr) == level::generic));
    // one bit of x86-64-v3 missing (no MOVBE) is enough to fall back
    auto no_movbe = v3_cpu();
    no_movbe.movbe = false;
    BOOST_TEST((isa::choose(x86_built, no_movbe, nullptr) == level::generic));
    BOOST_TEST(isa::missing_for(level::avx2, no_movbe) == "movbe");
}

BOOST_AUTO_TEST_CASE(archetype_isa_forces_a_built_level_the_cpu_runs) {
    BOOST_TEST((isa::choose(x86_built, v4_cpu(), "avx2") == level::avx2));
    BOOST_TEST((isa::choose(x86_built, v4_cpu(), "generic") == level::generic));
    BOOST_TEST((isa::choose(x86_built, v4_cpu(), "avx512") == level::avx512));
}

BOOST_AUTO_TEST_CASE(a_bad_value_is_refused_by_name) {
    const std::string unknown = refusal(x86_built, v4_cpu(), "avx3");
    BOOST_TEST(unknown.find("ARCHETYPE_ISA='avx3' is not an instruction-set level") != std::string::npos, unknown);
    BOOST_TEST(unknown.find("generic, avx2, avxvnni, avx512, neon, neon_dotprod)") != std::string::npos, unknown);

    const std::string not_built = refusal(x86_built, v4_cpu(), "avxvnni");
    BOOST_TEST(not_built.find("ARCHETYPE_ISA=avxvnni: this build has no avxvnni kernels (it has: generic, avx2, "
                              "avx512") != std::string::npos,
               not_built);

    const std::string too_high = refusal(x86_built, v3_cpu(), "avx512");
    BOOST_TEST(too_high.find("ARCHETYPE_ISA=avx512: this CPU cannot run it (it lacks avx512f avx512bw") !=
                   std::string::npos,
               too_high);

    const level native_only[] = {level::avx2};
    const std::string one_level = refusal(native_only, v4_cpu(), "generic");
    BOOST_TEST(one_level.find("this build has no generic kernels (it has: avx2") != std::string::npos, one_level);
}

BOOST_AUTO_TEST_CASE(a_build_the_cpu_cannot_run_is_refused_with_what_it_lacks) {
    const level native_only[] = {level::avx512};
    const std::string why = refusal(native_only, v3_cpu(), nullptr);
    BOOST_TEST(why.find("this CPU runs none of this build's instruction-set levels (avx512 needs avx512f") !=
                   std::string::npos,
               why);
}

// The avxvnni level sits between avx2 and avx512: taken by a CPU with AVX-VNNI but
// without the avx512 level (Alder Lake), never over avx512, refused by name without it.
BOOST_AUTO_TEST_CASE(avxvnni_is_chosen_between_avx2_and_avx512) {
    constexpr level all_x86[] = {level::generic, level::avx2, level::avxvnni, level::avx512};
    auto alder_lake = v3_cpu();
    alder_lake.avxvnni = true;
    BOOST_TEST((isa::choose(all_x86, alder_lake, nullptr) == level::avxvnni));
    BOOST_TEST((isa::choose(all_x86, v3_cpu(), nullptr) == level::avx2));
    auto sapphire_rapids = v4_cpu();
    sapphire_rapids.avxvnni = true;
    BOOST_TEST((isa::choose(all_x86, sapphire_rapids, nullptr) == level::avx512));
    BOOST_TEST((isa::choose(all_x86, sapphire_rapids, "avxvnni") == level::avxvnni));
    BOOST_TEST(isa::missing_for(level::avxvnni, v4_cpu()) == "avx-vnni");
    const std::string lacking = refusal(all_x86, v3_cpu(), "avxvnni");
    BOOST_TEST(lacking.find("ARCHETYPE_ISA=avxvnni: this CPU cannot run it (it lacks avx-vnni)") != std::string::npos,
               lacking);
}

// aarch64: neon_dotprod is taken when HWCAP has asimddp (Cortex-A55 and later), neon
// otherwise (Cortex-A53, A72), and forcing it without asimddp is refused by name.
BOOST_AUTO_TEST_CASE(neon_dotprod_is_chosen_by_hwcap) {
    constexpr level arm[] = {level::neon, level::neon_dotprod};
    isa::cpu_features a53;
    a53.asimd = true;
    auto a55 = a53;
    a55.atomics = a55.asimd_dotprod = true;
    BOOST_TEST((isa::choose(arm, a53, nullptr) == level::neon));
    BOOST_TEST((isa::choose(arm, a55, nullptr) == level::neon_dotprod));
    BOOST_TEST((isa::choose(arm, a55, "neon") == level::neon));
    BOOST_TEST(isa::missing_for(level::neon_dotprod, a53) == "atomics asimddp");
    const std::string lacking = refusal(arm, a53, "neon_dotprod");
    BOOST_TEST(lacking.find("ARCHETYPE_ISA=neon_dotprod: this CPU cannot run it (it lacks atomics asimddp)") !=
                   std::string::npos,
               lacking);
}
