#pragma once
// Weight-storage axis. By default (`WeightsFromFile`) every tensor keeps the
// type it has in the model file and the matmul dispatches on it at run time.
// A static storage policy (e.g. `Q8_0`) requires the file's 2-D weights to be
// of that type (load fails otherwise) so a program can promise its weights.
#include <string>

#include "archetype/core/dtype.hpp"
#include "archetype/core/policy.hpp"

namespace archetype {

struct WeightsFromFile {
    using axis = archetype::axis::storage;
    static constexpr std::string_view name = "WeightsFromFile";
    static constexpr bool fixed = false;
    static std::string describe() { return "weights as stored in the file"; }
};

template <ggml_type T>
struct Weights {
    using axis = archetype::axis::storage;
    static constexpr std::string_view name = type_name(T);
    static constexpr bool fixed = true;
    static constexpr ggml_type type = T;
    static std::string describe() { return std::string(type_name(T)) + " weights"; }
};
using F32 = Weights<ggml_type::F32>;
using F16 = Weights<ggml_type::F16>;
using BF16 = Weights<ggml_type::BF16>;
using Q8_0 = Weights<ggml_type::Q8_0>;
using Q4_0 = Weights<ggml_type::Q4_0>;
using Q4_1 = Weights<ggml_type::Q4_1>;
using Q5_0 = Weights<ggml_type::Q5_0>;
using Q5_1 = Weights<ggml_type::Q5_1>;
using Q4_K = Weights<ggml_type::Q4_K>;
using Q5_K = Weights<ggml_type::Q5_K>;
using Q6_K = Weights<ggml_type::Q6_K>;

} // namespace archetype
