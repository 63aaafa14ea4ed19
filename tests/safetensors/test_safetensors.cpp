#define BOOST_TEST_MODULE safetensors
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/io/safetensors.hpp"
#include "archetype/kernels/matmul.hpp"

namespace st = archetype::safetensors;
namespace fs = std::filesystem;

namespace {

const std::string data_dir = ARCHETYPE_ST_DATA;

nlohmann::json expected() {
    std::ifstream in(data_dir + "/small.expected.json");
    return nlohmann::json::parse(in);
}

template <class T>
std::vector<T> read_values(const st::tensor_info& t) {
    std::vector<T> v(t.n_bytes() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), t.data, t.n_bytes()); // empty tensors: no null memcpy (UB)
    return v;
}

// A crafted file: 8-byte length (default: the header's), header text, data bytes.
struct temp_file {
    std::string path;
    temp_file(const std::string& header, std::size_t data_bytes, std::int64_t length = -1) {
        static int counter = 0;
        path = (fs::temp_directory_path() / ("archetype_st_" + std::to_string(::getpid()) + "_" +
                                             std::to_string(counter++) + ".safetensors"))
                   .string();
        std::ofstream out(path, std::ios::binary);
        const std::uint64_t n = length < 0 ? header.size() : std::uint64_t(length);
        out.write(reinterpret_cast<const char*>(&n), 8);
        out << header;
        out << std::string(data_bytes, '\0');
    }
    ~temp_file() { fs::remove(path); }
};

void expect_format_error(const std::string& header, std::size_t data_bytes, const std::string& fragment,
                         std::int64_t length = -1) {
    temp_file f(header, data_bytes, length);
    try {
        st::file sf(f.path);
        BOOST_ERROR("no error for header " << header.substr(0, 80));
    } catch (const archetype::format_error& e) {
        const std::string msg = e.what();
        BOOST_TEST(msg.find(fragment) != std::string::npos, "'" << fragment << "' not in: " << msg);
        BOOST_TEST(msg.find(f.path) != std::string::npos, "path not in: " << msg);
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(reads_file_written_by_pypi_safetensors) {
    const st::file f(data_dir + "/small.safetensors");
    const auto ex = expected();
    BOOST_TEST(f.tensors().size() == 7u);
    BOOST_TEST(f.metadata().at("format") == "pt");
    BOOST_TEST(f.metadata().at("source") == "make_safetensors.py");
    BOOST_TEST(f.data_offset() % 8 == 0u);
    for (auto it = ex.begin(); it != ex.end(); ++it) {
        if (it.key() == "__metadata__") continue;
        const auto& t = f.at(it.key());
        BOOST_TEST(std::string(st::dtype_name(t.type)) == it.value()["dtype"].get<std::string>(), t.name);
        BOOST_TEST(t.shape == it.value()["shape"].get<std::vector<std::uint64_t>>(), t.name);
        const auto& vals = it.value()["values"];
        BOOST_TEST(t.n_elements() == vals.size(), t.name);
        switch (t.type) {
        case st::dtype::F32: BOOST_TEST(read_values<float>(t) == vals.get<std::vector<float>>(), t.name); break;
        case st::dtype::F16: {
            const auto h = read_values<std::uint16_t>(t);
            for (std::size_t i = 0; i < h.size(); ++i) BOOST_TEST(archetype::fp16_to_fp32(h[i]) == vals[i].get<float>());
            break;
        }
        case st::dtype::BF16: {
            const auto h = read_values<std::uint16_t>(t);
            for (std::size_t i = 0; i < h.size(); ++i) BOOST_TEST(archetype::bf16_to_fp32(h[i]) == vals[i].get<float>());
            break;
        }
        case st::dtype::I32: BOOST_TEST(read_values<std::int32_t>(t) == vals.get<std::vector<std::int32_t>>()); break;
        case st::dtype::I64: BOOST_TEST(read_values<std::int64_t>(t) == vals.get<std::vector<std::int64_t>>()); break;
        case st::dtype::U8: BOOST_TEST(read_values<std::uint8_t>(t) == vals.get<std::vector<std::uint8_t>>()); break;
        default: BOOST_ERROR("unexpected dtype in " << t.name);
        }
    }
    BOOST_CHECK_THROW(f.at("missing"), archetype::argument_error);
}

BOOST_AUTO_TEST_CASE(weights_view_and_matmul) {
    const st::file f(data_dir + "/small.safetensors");
    const auto ex = expected();
    // w: [3, 5] outermost first -> 3 rows of 5 columns (GGUF ne = [5, 3]).
    for (const char* name : {"w", "h", "b"}) {
        const auto W = st::as_weight(f.at(name));
        const auto shape = ex[name]["shape"].get<std::vector<std::size_t>>();
        const auto vals = ex[name]["values"].get<std::vector<double>>();
        BOOST_TEST(W.rows == shape[0]);
        BOOST_TEST(W.cols == shape[1]);
        std::vector<float> x(2 * W.cols), y(2 * W.rows);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) * 0.5f - 1.f;
        archetype::kernels::matmul(W, x.data(), W.cols, 2, y.data(), W.rows);
        for (std::size_t t = 0; t < 2; ++t)
            for (std::size_t r = 0; r < W.rows; ++r) {
                double s = 0;
                for (std::size_t c = 0; c < W.cols; ++c) s += vals[r * W.cols + c] * x[t * W.cols + c];
                BOOST_TEST(std::abs(y[t * W.rows + r] - s) <= 1e-4 * (1 + std::abs(s)), name << " " << t << "," << r);
            }
    }
    BOOST_CHECK_THROW(st::as_weight(f.at("u")), archetype::shape_error); // U8 is no weight type
    BOOST_CHECK_THROW(st::as_weight(f.at("l")), archetype::shape_error);
}

BOOST_AUTO_TEST_CASE(summary_for_inspect) {
    std::ostringstream os;
    st::print_safetensors_summary(os, data_dir + "/small.safetensors");
    const std::string s = os.str();
    BOOST_TEST(s.find("w  F32  [3, 5]  (ne [5, 3])") != std::string::npos, s);
    BOOST_TEST(s.find("b  BF16  [2, 32]  (ne [32, 2])") != std::string::npos, s);
    BOOST_TEST(s.find("format = pt") != std::string::npos, s);
    BOOST_TEST(s.find("tensors (7)") != std::string::npos, s);
}

BOOST_AUTO_TEST_CASE(config_json) {
    const st::config c(data_dir + "/config.json");
    BOOST_TEST(c.get<int>("hidden_size") == 64);
    BOOST_TEST(c.get<std::uint32_t>("num_key_value_heads") == 2u);
    BOOST_TEST(c.get<double>("rms_norm_eps") == 1e-5);
    BOOST_TEST(c.get<float>("rope_theta") == 10000.f);
    BOOST_TEST(c.get<std::string>("model_type") == "llama");
    BOOST_TEST(c.get<bool>("tie_word_embeddings") == false);
    BOOST_TEST(!c.has("bos_token_id")); // null counts as absent
    BOOST_TEST(c.get_or<int>("sliding_window", 7) == 7);
    try {
        (void)c.get<int>("model_type");
        BOOST_ERROR("no error");
    } catch (const archetype::type_error& e) {
        const std::string m = e.what();
        BOOST_TEST(m.find("model_type") != std::string::npos, m);
        BOOST_TEST(m.find("string") != std::string::npos, m);
    }
    BOOST_TEST(c.get<std::uint8_t>("intermediate_size") == 176);
    BOOST_CHECK_THROW((void)c.get<std::int8_t>("intermediate_size"), archetype::type_error); // 176 > 127
    BOOST_CHECK_THROW((void)c.get<int>("absent_key"), archetype::argument_error);
    BOOST_CHECK_THROW(st::config(nlohmann::json::array()), archetype::format_error);
    temp_file bad("{\"a\": ", 0);
    BOOST_CHECK_THROW(st::config{bad.path}, archetype::format_error);
}

// Crafted files, each refused with a format_error naming the problem.
BOOST_AUTO_TEST_CASE(crafted_bad_files) {
    const std::string ok = R"("t":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]})";
    expect_format_error("", 0, "header length 0", 0);
    {
        // fewer than 8 bytes
        const std::string p = (fs::temp_directory_path() / "archetype_st_short.safetensors").string();
        std::ofstream(p, std::ios::binary) << "abc";
        try {
            st::file f(p);
            BOOST_ERROR("no error");
        } catch (const archetype::format_error& e) {
            BOOST_TEST(std::string(e.what()).find("truncated") != std::string::npos, e.what());
        }
        fs::remove(p);
    }
    expect_format_error("{" + ok + "}", 16, "runs past the end of the file", 1000);
    expect_format_error("{" + ok, 16, "not valid JSON");
    expect_format_error("[1,2]", 0, "does not start with '{'");
    expect_format_error(R"({"t":{"dtype":"F7","shape":[2,2],"data_offsets":[0,16]}})", 16, "unknown dtype 'F7'");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", 16,
                        "[2, 3] x F32 is 24 bytes but data_offsets span 16");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]}})", 16,
                        "lie outside the data section of 16 bytes");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[2,2],"data_offsets":[16,0]}})", 16, "end before they begin");
    expect_format_error(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                        16, "overlap");
    expect_format_error(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                        R"("z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                        16, "overlap");
    expect_format_error("{" + ok + "," + ok + "}", 16, "duplicate key 't'");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[-2,2],"data_offsets":[0,16]}})", 16,
                        "shape entry -2, not a non-negative integer");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[2.5],"data_offsets":[0,16]}})", 16, "not a non-negative integer");
    expect_format_error(R"({"t":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,16]}})", 16,
                        "overflows 64 bits");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4,
                        "9 dimensions");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, "data_offsets");
    expect_format_error(R"({"t":{"dtype":"F32","shape":[1]}})", 4, "data_offsets");
    expect_format_error(R"({"t":[1]})", 4, "tensor 't' is not an object");
    expect_format_error(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", 4, "no dtype");
    expect_format_error(R"({"__metadata__":{"k":1}})", 0, "__metadata__ value of 'k' is not a string");
    expect_format_error(R"({"__metadata__":{"k":{"x":[[[1]]]}}})", 0, "nests deeper");
    expect_format_error(std::string(5000, '[') + std::string(5000, ']'), 0, "does not start");
    expect_format_error(R"({"a":)" + std::string(5000, '[') + std::string(5000, ']') + "}", 0, "nests deeper");
    {
        // A header length above the cap, in a (sparse) file long enough to hold it.
        temp_file f("{}", 0, std::int64_t(st::max_header_bytes + 1));
        fs::resize_file(f.path, st::max_header_bytes + 64);
        try {
            st::file sf(f.path);
            BOOST_ERROR("no error");
        } catch (const archetype::format_error& e) {
            BOOST_TEST(std::string(e.what()).find("exceeds the limit") != std::string::npos, e.what());
        }
    }
    // Well-formed edge cases are accepted: empty header object, zero-size tensor, padding spaces.
    temp_file empty("{}      ", 0);
    BOOST_TEST(st::file(empty.path).tensors().empty());
    temp_file edge(R"({"z":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}, "t":{"dtype":"I64","shape":[],"data_offsets":[0,8]}})", 8);
    const st::file e(edge.path);
    BOOST_TEST(e.at("t").n_elements() == 1u);
    BOOST_TEST(e.at("z").n_bytes() == 0u);
}

