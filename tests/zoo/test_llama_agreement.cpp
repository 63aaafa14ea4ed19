// docs/architectures.md's "llama.cpp on the same GGUFs" table against the measurements it
// reports (tests/data/zoo/llama_cpp_agreement.json: llama.cpp's logits on each zoo GGUF
// against transformers', made outside the repository, tools/reference/README.md): every
// zoo family has a row, every cell is the measurement printed with %.1e, and no row names
// a family without one. Arguments after `--`: the zoo folder, the docs page.
#define BOOST_TEST_MODULE zoo_llama_agreement
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {
std::string arg(int i, const char* fallback) {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return mts.argc > i ? mts.argv[i] : fallback;
}
std::string e1(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1e", v);
    return b;
}
std::string trim(const std::string& s) {
    const auto a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line.substr(1));
    for (std::string c; std::getline(ss, c, '|');) out.push_back(trim(c));
    return out;
}
} // namespace

BOOST_AUTO_TEST_CASE(the_docs_table_is_the_measurement) {
    const fs::path zoo = arg(1, "tests/data/zoo");
    std::ifstream jin(zoo / "llama_cpp_agreement.json");
    BOOST_REQUIRE(jin);
    const auto fams = nlohmann::json::parse(jin).at("families");
    // every zoo family has a measurement
    for (const auto& d : fs::directory_iterator(zoo))
        if (fs::exists(d.path() / "model.gguf"))
            BOOST_TEST(fams.contains(d.path().filename().string()), d.path().filename() << " has no llama.cpp measurement");

    std::ifstream din(arg(2, "docs/architectures.md"));
    BOOST_REQUIRE(din);
    bool in_section = false, in_table = false;
    std::set<std::string> rows;
    for (std::string line; std::getline(din, line);) {
        if (line.rfind("### ", 0) == 0 || line.rfind("## ", 0) == 0) in_section = line == "### llama.cpp on the same GGUFs";
        if (!in_section) continue;
        if (line.rfind("| family |", 0) == 0) { in_table = true; continue; }
        if (!in_table || line.rfind("|---", 0) == 0) continue;
        if (line.empty() || line[0] != '|') { in_table = false; continue; }
        const auto c = cells(line);
        BOOST_REQUIRE_MESSAGE(c.size() >= 4, "row '" << line << "'");
        std::string fam = c[0], suffix;
        if (const auto p = fam.find(", long factors"); p != std::string::npos) { fam = fam.substr(0, p); suffix = "_long"; }
        BOOST_REQUIRE_MESSAGE(fams.contains(fam), "docs row '" << c[0] << "' has no measurement");
        rows.insert(fam + suffix);
        const auto& m = fams[fam];
        if (m.contains("refused")) { // llama.cpp does not load the file: the row says so and quotes why
            BOOST_TEST(c[1] == "refused");
            BOOST_TEST(c[2] == "refused");
            const std::string why = m["refused"].get<std::string>();
            const std::string key = why.substr(why.rfind(' ') + 1);
            BOOST_TEST(c[3].find(key) != std::string::npos, c[0] << ": the row does not quote llama.cpp's error (" << key << ")");
            continue;
        }
        auto pair = [&](const std::string& key) {
            BOOST_REQUIRE_MESSAGE(m.contains(key) && m[key].is_object(), fam << " has no measurement '" << key << "'");
            return e1(m[key].at("batch").get<double>()) + " / " + e1(m[key].at("serial").get<double>());
        };
        if (suffix.empty()) BOOST_TEST(c[1] == pair("7"), c[0] << ", 7 tokens");
        else BOOST_TEST(c[1] == "—");
        BOOST_TEST(c[2] == pair("40" + suffix), c[0] << ", 40 tokens");
    }
    for (const auto& [fam, m] : fams.items()) {
        BOOST_TEST(rows.count(fam), "no docs row for " << fam);
        if (m.contains("40_long")) BOOST_TEST(rows.count(fam + "_long"), "no docs row for " << fam << ", long factors");
    }
    BOOST_TEST(rows.size() >= 14u);
}
