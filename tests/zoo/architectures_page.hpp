#pragma once
// docs/architectures.md as the zoo tests read it: the row of a family in the table of
// families checked against transformers, and the preset header's line count the row states.
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace zoo_page {

/// The test's argument i after `--` (`what` names it in the message when it is missing).
inline std::string argument(int i, const char* what) {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(mts.argc > i, "pass " << what << " as argument " << i << " after --");
    return mts.argv[i];
}

/// The cells of the row of the page whose first cell is `family`.
inline std::vector<std::string> table_row(const std::string& path, const std::string& family) {
    std::ifstream f(path);
    BOOST_REQUIRE_MESSAGE(f, "cannot open " << path);
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("| " + family + " |", 0) != 0) continue;
        std::vector<std::string> cells;
        std::stringstream ss(line.substr(1));
        for (std::string c; std::getline(ss, c, '|');) {
            const auto a = c.find_first_not_of(' '), b = c.find_last_not_of(' ');
            cells.push_back(a == std::string::npos ? "" : c.substr(a, b - a + 1));
        }
        return cells;
    }
    BOOST_FAIL("docs/architectures.md has no row for " << family);
    return {};
}

/// A preset header's lines: non-blank, not a comment, not #pragma / #include.
inline std::size_t preset_lines(const std::string& header) {
    std::ifstream h(header);
    BOOST_REQUIRE_MESSAGE(h, "cannot open " << header);
    std::size_t lines = 0;
    for (std::string line; std::getline(h, line);) {
        const auto a = line.find_first_not_of(" \t");
        if (a == std::string::npos || line.compare(a, 2, "//") == 0 || line[a] == '#') continue;
        ++lines;
    }
    return lines;
}

} // namespace zoo_page
