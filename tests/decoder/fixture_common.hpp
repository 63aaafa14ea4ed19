#pragma once
// Shared by the decoder tests that compare with llama.cpp's golden files
// (../shared/fixtures/transformer or the copy in tests/data/transformer).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace fixture {

/// The folder holding llama-gqa/, llama-mqa/, mellum-swa/: the first test
/// argument (after --) when given, else $ARCHETYPE_FIXTURES/transformer.
inline std::string transformer_dir() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    if (mts.argc > 1) return mts.argv[1];
    if (const char* d = std::getenv("ARCHETYPE_FIXTURES")) return std::string(d) + "/transformer";
    return "../shared/fixtures/transformer";
}

template <class T>
std::vector<T> read_raw(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) throw std::runtime_error("cannot open " + path);
    const auto n = static_cast<std::size_t>(f.tellg());
    std::vector<T> v(n / sizeof(T));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n));
    return v;
}

/// max |a - b| / (1 + |b|): within 1e-4 means atol = rtol = 1e-4 (README §7.4).
inline double max_rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return 1e30;
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a[i]) - double(b[i])) / (1.0 + std::abs(double(b[i])));
        if (!(d <= m)) m = std::isnan(d) ? 1e30 : d;
    }
    return m;
}
inline double max_abs_err(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return 1e30;
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a[i]) - double(b[i]));
        if (!(d <= m)) m = std::isnan(d) ? 1e30 : d;
    }
    return m;
}

} // namespace fixture
