#define BOOST_TEST_MODULE weight_buffer
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "archetype/core/weight_buffer.hpp"

using namespace archetype;

// Small buffers come from the heap (64-byte aligned), large ones from a 2 MiB-aligned
// anonymous mapping; both hold every byte written to them, and the mapping is the one
// the process reports as asked for huge pages (smaps' "THPeligible" of the range).
BOOST_AUTO_TEST_CASE(buffers_are_aligned_and_hold_their_bytes) {
    for (std::size_t n : {std::size_t(1), std::size_t(4096), huge_page_bytes - 1, huge_page_bytes,
                          3 * huge_page_bytes + 12345}) {
        auto b = allocate_weight_buffer(n);
        const auto addr = reinterpret_cast<std::uintptr_t>(b.get());
        BOOST_TEST(addr % 64 == 0u, n);
        if (n >= huge_page_bytes) BOOST_TEST(addr % huge_page_bytes == 0u, n);
        for (std::size_t i = 0; i < n; i += 4093) b.get()[i] = std::uint8_t(i * 7 + 1);
        b.get()[n - 1] = 0xA5;
        bool ok = b.get()[n - 1] == 0xA5;
        for (std::size_t i = 0; i + 1 < n; i += 4093) ok = ok && b.get()[i] == std::uint8_t(i * 7 + 1);
        BOOST_TEST(ok, n);
    }
}

BOOST_AUTO_TEST_CASE(large_buffers_are_marked_for_huge_pages) {
    auto b = allocate_weight_buffer(4 * huge_page_bytes);
    const auto addr = reinterpret_cast<std::uintptr_t>(b.get());
    std::ifstream smaps("/proc/self/smaps");
    if (!smaps || !std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
        BOOST_TEST_MESSAGE("no smaps or no THP in this kernel: the hint cannot be seen here");
        return;
    }
    std::string line;
    bool in_range = false, found = false;
    while (std::getline(smaps, line)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
            in_range = addr >= lo && addr < hi;
            continue;
        }
        // VmFlags "hg" = MADV_HUGEPAGE was applied to this mapping
        if (in_range && line.rfind("VmFlags:", 0) == 0) {
            found = true;
            BOOST_TEST(line.find(" hg") != std::string::npos, line);
        }
    }
    BOOST_TEST(found, "no smaps entry for the buffer at " << std::hex << addr);
}
