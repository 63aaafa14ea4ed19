#pragma once
// Helpers of the RWKV fixture tests: reading the shared fixture files.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rwkv_test {

inline std::string fixtures_dir() {
    const char* d = std::getenv("ARCHETYPE_FIXTURES");
    if (!d) throw std::runtime_error("ARCHETYPE_FIXTURES is not set");
    return std::string(d) + "/rwkv";
}

inline std::vector<float> read_f32(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) throw std::runtime_error("cannot open " + path);
    const auto n = static_cast<std::size_t>(f.tellg());
    std::vector<float> v(n / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n));
    return v;
}

inline std::vector<std::int32_t> read_tokens(const std::string& prompt) {
    std::ifstream f(fixtures_dir() + "/prompts/" + prompt + ".tokens.txt");
    if (!f) throw std::runtime_error("cannot open prompt " + prompt);
    std::vector<std::int32_t> ids;
    for (std::int32_t v; f >> v;) ids.push_back(v);
    return ids;
}

/// max |a - b| / max(1, |b|) when relative, else max |a - b|.
inline double max_diff(const float* a, const float* b, std::size_t n, bool relative = false) {
    double m = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double d = std::fabs(double(a[i]) - double(b[i]));
        if (relative) d /= std::max(1.0, std::fabs(double(b[i])));
        if (!(d <= m)) m = d; // NaN propagates as a failure
    }
    return m;
}

} // namespace rwkv_test
