// GGUF writer -> reader round trips: every metadata type (with arrays and nested
// arrays), tensors of several ggml types and alignments, bit-exact data, and a
// file copied through reader + writer equal byte for byte to the original.
#define BOOST_TEST_MODULE gguf_roundtrip
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>
#include <unistd.h>

#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"

namespace gguf = archetype::gguf;
using archetype::ggml_type;

namespace {

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> v(n);
    for (auto& b : v) b = static_cast<std::byte>(rng() & 0xFF);
    return v;
}

bool same_bytes(const void* a, const void* b, std::size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

struct temp_path {
    std::string path = "/tmp/archetype_gguf_rt_" + std::to_string(::getpid()) + ".gguf";
    ~temp_path() { std::remove(path.c_str()); }
};

} // namespace

BOOST_AUTO_TEST_CASE(all_metadata_types) {
    gguf::writer w;
    w.set("general.architecture", "llama");
    w.set("u8", std::uint8_t(250));
    w.set("i8", std::int8_t(-100));
    w.set("u16", std::uint16_t(65000));
    w.set("i16", std::int16_t(-32000));
    w.set("u32", std::uint32_t(4000000000u));
    w.set("i32", std::int32_t(-2000000000));
    w.set("u64", std::numeric_limits<std::uint64_t>::max());
    w.set("i64", std::numeric_limits<std::int64_t>::min());
    w.set("f32", 1.0f / 3.0f);
    w.set("f64", 1.0 / 3.0);
    w.set("nan", std::numeric_limits<float>::quiet_NaN());
    w.set("bool", true);
    w.set("str", std::string("h\xc3\xa9llo\n\0x", 9));
    w.set("empty_str", std::string());
    w.set("arr_u8", std::vector<std::uint8_t>{0, 1, 255});
    w.set("arr_i32", std::vector<std::int32_t>{-1, 0, 7});
    w.set("arr_f32", std::vector<float>{0.5f, -2.25f});
    w.set("arr_bool", std::vector<bool>{true, false, true});
    w.set("arr_str", std::vector<std::string>{"a", "", "ccc"});
    w.set("arr_empty", std::vector<std::uint64_t>{});
    w.set("nested", std::vector<std::vector<std::int16_t>>{{1, 2}, {}, {-3}});
    w.set("u32", std::uint32_t(42)); // replacing keeps the place

    const auto bytes = w.write_to_memory();
    const auto f = gguf::file::from_memory(bytes);
    BOOST_TEST(f.version() == 3u);
    BOOST_TEST(f.metadata().size() == 22u);
    BOOST_TEST(f.metadata()[5].key == "u32");
    BOOST_TEST(f.architecture() == "llama");
    BOOST_TEST(f.get<std::uint8_t>("u8") == 250u);
    BOOST_TEST(f.get<std::int8_t>("i8") == -100);
    BOOST_TEST(f.get<std::uint16_t>("u16") == 65000u);
    BOOST_TEST(f.get<std::int16_t>("i16") == -32000);
    BOOST_TEST(f.get<std::uint32_t>("u32") == 42u);
    BOOST_TEST(f.get<std::int32_t>("i32") == -2000000000);
    BOOST_TEST(f.get<std::uint64_t>("u64") == std::numeric_limits<std::uint64_t>::max());
    BOOST_TEST(f.get<std::int64_t>("i64") == std::numeric_limits<std::int64_t>::min());
    BOOST_TEST(f.get<float>("f32") == 1.0f / 3.0f);
    BOOST_TEST(f.get<double>("f64") == 1.0 / 3.0);
    BOOST_TEST(std::isnan(f.get<float>("nan")));
    BOOST_TEST(f.get<bool>("bool"));
    BOOST_TEST(f.get<std::string>("str") == std::string("h\xc3\xa9llo\n\0x", 9));
    BOOST_TEST(f.get<std::string>("empty_str").empty());
    BOOST_TEST((f.get<std::vector<std::uint8_t>>("arr_u8") == std::vector<std::uint8_t>{0, 1, 255}));
    BOOST_TEST((f.get<std::vector<std::int32_t>>("arr_i32") == std::vector<std::int32_t>{-1, 0, 7}));
    BOOST_TEST((f.get<std::vector<float>>("arr_f32") == std::vector<float>{0.5f, -2.25f}));
    BOOST_TEST((f.get<std::vector<bool>>("arr_bool") == std::vector<bool>{true, false, true}));
    BOOST_TEST((f.get<std::vector<std::string>>("arr_str") == std::vector<std::string>{"a", "", "ccc"}));
    BOOST_TEST(f.get<std::vector<std::uint64_t>>("arr_empty").empty());
    BOOST_TEST((f.get<std::vector<std::vector<std::int16_t>>>("nested") ==
                std::vector<std::vector<std::int16_t>>{{1, 2}, {}, {-3}}));
    // each value is stored with its own type
    const gguf::value_type expected[] = {
        gguf::value_type::STRING, gguf::value_type::UINT8, gguf::value_type::INT8, gguf::value_type::UINT16,
        gguf::value_type::INT16, gguf::value_type::UINT32, gguf::value_type::INT32, gguf::value_type::UINT64,
        gguf::value_type::INT64, gguf::value_type::FLOAT32, gguf::value_type::FLOAT64, gguf::value_type::FLOAT32,
        gguf::value_type::BOOL, gguf::value_type::STRING, gguf::value_type::STRING};
    for (std::size_t i = 0; i < std::size(expected); ++i)
        BOOST_TEST((f.metadata()[i].value.type == expected[i]), "entry " << i);
    BOOST_TEST(f.metadata()[21].value.type_string() == "ARRAY[ARRAY[INT16]]");
    BOOST_TEST(f.metadata()[21].value.to_string() == "[[1, 2], [], [-3]]");
    BOOST_TEST(f.metadata()[13].value.to_string() == "\"h\xc3\xa9llo\\n\\x00x\"");
}

BOOST_AUTO_TEST_CASE(tensors_bit_exact) {
    for (std::uint32_t alignment : {32u, 64u, 1u, 4096u}) {
        BOOST_TEST_CONTEXT("alignment " << alignment) {
            gguf::writer w(alignment);
            w.set("general.architecture", "test");
            struct spec {
                const char* name;
                ggml_type type;
                std::vector<std::uint64_t> ne;
            };
            const std::vector<spec> specs = {
                {"f32", ggml_type::F32, {7, 3}},        {"f16", ggml_type::F16, {5}},
                {"bf16", ggml_type::BF16, {4, 2, 3}},   {"q8", ggml_type::Q8_0, {64, 3}},
                {"q4k", ggml_type::Q4_K, {256, 2, 1, 2}}, {"q6k", ggml_type::Q6_K, {512}},
                {"i8", ggml_type::I8, {3}},             {"empty", ggml_type::F32, {0, 4}},
                {"empty_fill", ggml_type::F16, {4, 0}}, // produced by a callback
                {"scalar", ggml_type::F32, {}},
            };
            std::vector<std::vector<std::byte>> data;
            for (std::size_t i = 0; i < specs.size(); ++i) {
                const auto tr = archetype::traits_of(specs[i].type);
                std::uint64_t n = 1;
                for (auto d : specs[i].ne) n *= d;
                data.push_back(random_bytes(n / tr.block_size * tr.type_size, unsigned(i + 7)));
            }
            for (std::size_t i = 0; i < specs.size(); ++i) {
                if (i % 3 == 0)
                    w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, data[i]); // referenced lvalue
                else if (i % 3 == 1)
                    w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, std::vector<std::byte>(data[i])); // moved
                else
                    w.add_tensor(specs[i].name, specs[i].type, specs[i].ne,
                                 [&, i](std::byte* dst, std::size_t n) {
                                     BOOST_REQUIRE(n == data[i].size());
                                     std::memcpy(dst, data[i].data(), n);
                                 });
            }
            const auto bytes = w.write_to_memory();
            BOOST_TEST(bytes.size() % alignment == 0u);
            const auto f = gguf::file::from_memory(bytes);
            BOOST_TEST(f.alignment() == alignment);
            BOOST_TEST(f.has("general.alignment") == (alignment != 32));
            BOOST_REQUIRE(f.tensors().size() == specs.size());
            for (std::size_t i = 0; i < specs.size(); ++i) {
                const auto& t = f.tensors()[i];
                BOOST_TEST(t.name == specs[i].name);
                BOOST_TEST((t.type == specs[i].type));
                BOOST_TEST(t.ne == specs[i].ne, boost::test_tools::per_element());
                BOOST_TEST(t.n_bytes == data[i].size());
                BOOST_TEST(t.offset % alignment == 0u);
                BOOST_TEST(same_bytes(t.data, data[i].data(), data[i].size()), t.name);
            }

            // Through a file on disk (mmap) it is the same bytes.
            temp_path tmp;
            w.write(tmp.path);
            const auto g = gguf::file::open(tmp.path);
            BOOST_REQUIRE(g.size() == bytes.size());
            BOOST_TEST(same_bytes(g.bytes().data(), bytes.data(), bytes.size()));

            // Copy: every key (any type) and tensor re-written from the reader gives the same file.
            gguf::writer c(alignment);
            for (const auto& e : f.metadata()) c.set(e.key, e.value);
            for (const auto& t : f.tensors()) c.add_tensor(t.name, t.type, t.ne, t.data);
            const auto copy = c.write_to_memory();
            BOOST_TEST(copy.size() == bytes.size());
            BOOST_TEST(same_bytes(copy.data(), bytes.data(), bytes.size()));
        }
    }
}

BOOST_AUTO_TEST_CASE(writer_refuses_bad_input) {
    using archetype::argument_error;
    gguf::writer w;
    std::vector<float> v(64);
    w.add_tensor("a", ggml_type::F32, {64}, v);
    BOOST_CHECK_THROW(w.add_tensor("a", ggml_type::F32, {64}, v), argument_error);
    BOOST_CHECK_THROW(w.add_tensor("b", ggml_type::Q4_0, {33}, v.data()), argument_error);
    BOOST_CHECK_THROW(w.add_tensor("c", ggml_type::F32, {1, 1, 1, 1, 1}, v.data()), argument_error);
    BOOST_CHECK_THROW(w.add_tensor("d", ggml_type::F32, {63}, v), argument_error); // size mismatch
    BOOST_CHECK_THROW(w.add_tensor("e", static_cast<ggml_type>(4), {32}, v.data()), argument_error);
    BOOST_CHECK_THROW(gguf::writer(48), argument_error);
    BOOST_CHECK_THROW(gguf::writer(0), argument_error);
    gguf::writer bad_align(64);
    bad_align.set("general.alignment", std::uint32_t(32));
    BOOST_CHECK_THROW(bad_align.write_to_memory(), argument_error);
    BOOST_CHECK_THROW(w.write("/nonexistent/dir/x.gguf"), archetype::io_error);
}

BOOST_AUTO_TEST_CASE(big_shapes_are_streamed) {
    // A model at a real shape written through callbacks: the writer holds one
    // tensor buffer at a time. 4 x 8 MiB here, read back via mmap.
    temp_path tmp;
    gguf::writer w;
    w.set("general.architecture", "llama");
    for (int i = 0; i < 4; ++i)
        w.add_tensor("blk." + std::to_string(i) + ".w", ggml_type::F32, {1024, 2048},
                     [i](std::byte* dst, std::size_t n) {
                         auto* f = reinterpret_cast<float*>(dst);
                         for (std::size_t k = 0; k < n / 4; ++k) f[k] = float(i) + float(k % 1000) * 1e-3f;
                     });
    w.write(tmp.path);
    const auto f = gguf::file::open(tmp.path);
    BOOST_REQUIRE(f.tensors().size() == 4u);
    for (int i = 0; i < 4; ++i) {
        const auto& t = f.tensors()[std::size_t(i)];
        const auto* x = reinterpret_cast<const float*>(t.data);
        BOOST_TEST(x[0] == float(i));
        BOOST_TEST(x[1024 * 2048 - 1] == float(i) + float((1024 * 2048 - 1) % 1000) * 1e-3f);
    }
}
