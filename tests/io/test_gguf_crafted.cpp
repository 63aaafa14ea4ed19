// The GGUF reader against hostile files: each case builds the bytes in memory and
// expects one exception type and a message fragment naming the bad value. The
// cases follow the attack classes of the published llama.cpp / huggingface.js
// GGUF advisories (oversized lengths and counts, bad type ids, overflowing
// products, out-of-file offsets, bad alignment, duplicates).
#define BOOST_TEST_MODULE gguf_crafted
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "archetype/io/gguf.hpp"
#include "gguf_bytes.hpp"

using archetype::format_error;
using archetype::type_error;
using archetype::test::gguf_bytes;
namespace gguf = archetype::gguf;

namespace {

template <class E>
void expect_error(const gguf_bytes& g, const std::string& fragment) {
    try {
        auto f = gguf::file::from_memory(g.span());
        BOOST_ERROR("no exception; expected one containing '" << fragment << "'");
    } catch (const E& e) {
        BOOST_TEST_INFO("message: " << e.what());
        BOOST_CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    }
}
void expect_format(const gguf_bytes& g, const std::string& fragment) { expect_error<format_error>(g, fragment); }

// A valid file: two keys, one F32 tensor [8, 2] at offset 0.
gguf_bytes valid() {
    gguf_bytes g;
    g.header(1, 2).kv_str("general.architecture", "llama").kv_u32("llama.block_count", 3);
    g.tensor("w", {8, 2}, 0, 0).pad().fill(64);
    return g;
}
// Header + one tensor info (no metadata), data padded and filled.
gguf_bytes one_tensor(std::initializer_list<std::uint64_t> ne, std::uint32_t type, std::uint64_t offset,
                      std::size_t data_bytes) {
    gguf_bytes g;
    g.header(1, 0).tensor("t", ne, type, offset).pad().fill(data_bytes);
    return g;
}

} // namespace

BOOST_AUTO_TEST_CASE(builder_makes_a_valid_file) {
    const auto g = valid();
    const auto f = gguf::file::from_memory(g.span());
    BOOST_TEST(f.version() == 3u);
    BOOST_TEST(f.architecture() == "llama");
    BOOST_TEST(f.get<std::uint32_t>("llama.block_count") == 3u);
    BOOST_TEST(f.tensors().size() == 1u);
    BOOST_TEST(f.tensor("w").n_bytes == 64u);
    BOOST_TEST(f.tensor("w").data == g.b.data() + f.data_offset());
    // version 2 has the same layout
    auto g2 = g;
    g2.b[4] = std::byte{2};
    BOOST_TEST(gguf::file::from_memory(g2.span()).version() == 2u);
}

BOOST_AUTO_TEST_CASE(truncated_everywhere) {
    // Every proper prefix of a valid file is refused with a format_error.
    const auto g = valid();
    const std::size_t data_start = g.b.size() - 64;
    for (std::size_t n = 0; n < g.b.size(); ++n) {
        gguf_bytes p;
        p.b.assign(g.b.begin(), g.b.begin() + static_cast<std::ptrdiff_t>(n));
        BOOST_TEST_CONTEXT("prefix of " << n << " bytes") {
            if (n < 4) expect_format(p, "truncated file: magic");
            else if (n >= data_start) expect_format(p, "beyond the end of the data section");
            else expect_format(p, n < 24 ? "truncated file" : "");
        }
    }
    // the classes by name
    gguf_bytes h;
    h.raw("GGUF").u32(3).u64(0);
    expect_format(h, "truncated file: metadata count");
    gguf_bytes m;
    m.header(0, 1).str("general.name").u32(8).u64(100).raw("short");
    expect_format(m, "metadata key 'general.name'");
    gguf_bytes t;
    t.header(2, 0).tensor("a", {32}, 0, 0).str("b").u32(1).u64(32).u32(0);
    expect_format(t, "truncated file: tensor 'b' offset");
    expect_format(one_tensor({32}, 0, 0, 127), "beyond the end of the data section");
}

BOOST_AUTO_TEST_CASE(bad_magic_and_versions) {
    gguf_bytes g;
    g.raw("GGML").u32(3).u64(0).u64(0);
    expect_format(g, "not a GGUF file: magic is 'GGML'");
    gguf_bytes v1;
    v1.header(0, 0, 1);
    expect_format(v1, "version 1 is not supported");
    gguf_bytes v4;
    v4.header(0, 0, 4);
    expect_format(v4, "unsupported GGUF version 4");
    gguf_bytes be;
    be.header(0, 0, 0x03000000u);
    expect_format(be, "big-endian GGUF (version 3)");
}

BOOST_AUTO_TEST_CASE(lengths_and_counts_beyond_the_file) {
    gguf_bytes key_len;
    key_len.header(0, 1).u64(std::numeric_limits<std::uint64_t>::max()).raw("abc").fill(16);
    expect_format(key_len, "has length 18446744073709551615");

    gguf_bytes str_len;
    str_len.header(0, 1).key("k", 8).u64(1000).raw("abc");
    expect_format(str_len, "has length 1000, only 3 bytes left");

    gguf_bytes arr;
    arr.header(0, 1).key("k", 9).u32(4).u64(std::uint64_t(1) << 62).u32(1);
    expect_format(arr, "array count 4611686018427387904 of UINT32 exceeds");

    gguf_bytes arr_str; // strings need at least 8 bytes each
    arr_str.header(0, 1).key("k", 9).u32(8).u64(3).str("a").str("b");
    expect_format(arr_str, "array count 3 of STRING exceeds");

    gguf_bytes n_kv;
    n_kv.header(0, std::uint64_t(1) << 40);
    expect_format(n_kv, "metadata count 1099511627776 exceeds");

    gguf_bytes n_t;
    n_t.header(std::numeric_limits<std::uint64_t>::max(), 0);
    expect_format(n_t, "tensor count 18446744073709551615 exceeds");
}

BOOST_AUTO_TEST_CASE(unknown_value_types_and_nesting) {
    gguf_bytes top;
    top.header(0, 1).key("k", 13).u32(0);
    expect_format(top, "metadata key 'k': unknown value type id 13");

    gguf_bytes elem;
    elem.header(0, 1).key("k", 9).u32(0xFFFFFFFFu).u64(1).u8(0);
    expect_format(elem, "array element: unknown value type id 4294967295");

    // depth 4 is accepted, depth 5 refused
    auto nested = [](int depth) {
        gguf_bytes g;
        g.header(0, 1).key("k", 9);
        for (int d = 1; d < depth; ++d) g.u32(9).u64(1);
        g.u32(4).u64(1).u32(7);
        return g;
    };
    const auto ok = nested(4);
    const auto f = gguf::file::from_memory(ok.span());
    BOOST_TEST(f.metadata()[0].value.type_string() == "ARRAY[ARRAY[ARRAY[ARRAY[UINT32]]]]");
    using v4 = std::vector<std::vector<std::vector<std::vector<std::uint32_t>>>>;
    BOOST_TEST(f.get<v4>("k")[0][0][0][0] == 7u);
    expect_format(nested(5), "arrays nested deeper than 4");

    // A very deep nest must not recurse without bound either.
    gguf_bytes deep;
    deep.header(0, 1).key("k", 9);
    for (int d = 0; d < 100000; ++d) deep.u32(9).u64(1);
    expect_format(deep, "arrays nested deeper than 4");
}

BOOST_AUTO_TEST_CASE(tensor_dims_and_overflow) {
    expect_format(one_tensor({1, 1, 1, 1, 1}, 0, 0, 32), "tensor 't' has n_dims 5, at most 4 allowed");
    expect_format(one_tensor({std::uint64_t(1) << 32, std::uint64_t(1) << 32}, 0, 0, 32),
                  "element count overflows 64 bits at ne[1] = 4294967296");
    expect_format(one_tensor({std::uint64_t(1) << 63}, 0, 0, 32), "ne[0] = 9223372036854775808 is out of range");
    // elements fit, bytes do not: 2^62 F32 values are 2^64 bytes
    expect_format(one_tensor({std::uint64_t(1) << 62}, 0, 0, 32), "byte size overflows 64 bits");
    expect_format(one_tensor({std::uint64_t(1) << 61}, 27 /* I64 */, 0, 32), "byte size overflows 64 bits");
    // a product that merely exceeds the file is an out-of-file error
    expect_format(one_tensor({1u << 20, 1u << 20}, 0, 0, 32), "beyond the end of the data section");
}

BOOST_AUTO_TEST_CASE(tensor_types_and_block_sizes) {
    expect_format(one_tensor({32}, 31, 0, 128), "tensor 't' has unknown type id 31");
    expect_format(one_tensor({32}, 4, 0, 128), "unknown type id 4"); // removed Q4_2
    expect_format(one_tensor({32}, 1000, 0, 128), "unknown type id 1000");
    expect_format(one_tensor({33, 2}, 2 /* Q4_0 */, 0, 128), "ne[0] = 33 is not a multiple of Q4_0's block size 32");
    expect_format(one_tensor({128}, 12 /* Q4_K */, 0, 512), "ne[0] = 128 is not a multiple of Q4_K's block size 256");
    // sizes follow the block layout: 64 Q8_0 values are 2 blocks of 34 bytes
    const auto g = one_tensor({64}, 8, 0, 68);
    BOOST_TEST(gguf::file::from_memory(g.span()).tensor("t").n_bytes == 68u);
    expect_format(one_tensor({64}, 8, 0, 67), "data [0, +68) lies beyond the end of the data section (67 bytes");
}

BOOST_AUTO_TEST_CASE(tensor_offsets) {
    expect_format(one_tensor({8}, 0, 1u << 30, 64), "tensor 't' data [1073741824, +32) lies beyond");
    expect_format(one_tensor({8}, 0, 64, 64), "data [64, +32) lies beyond");
    expect_format(one_tensor({8}, 0, std::numeric_limits<std::uint64_t>::max() - 31, 64), "offset");
    expect_format(one_tensor({8}, 0, 8, 64), "tensor 't' offset 8 is not a multiple of the alignment 32");

    gguf_bytes overlap;
    overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 64).pad().fill(128);
    BOOST_CHECK_NO_THROW(gguf::file::from_memory(overlap.span()));
    gguf_bytes ov;
    ov.header(3, 0).tensor("a", {24}, 0, 0).tensor("b", {16}, 0, 64).tensor("c", {16}, 0, 32);
    ov.pad().fill(128);
    expect_format(ov, "tensor 'a' data [0, 96) overlaps tensor 'c' at 32");
}

BOOST_AUTO_TEST_CASE(alignment_values) {
    auto with_alignment = [](auto write_value, std::uint64_t tensor_offset = 0) {
        gguf_bytes g;
        g.header(1, 1);
        write_value(g);
        g.tensor("t", {8}, 0, tensor_offset).pad(64).fill(256);
        return g;
    };
    auto u32 = [](std::uint32_t a) { return [a](gguf_bytes& g) { g.kv_u32("general.alignment", a); }; };
    expect_format(with_alignment(u32(0)), "general.alignment 0 must be a power of two");
    expect_format(with_alignment(u32(48)), "general.alignment 48 must be a power of two");
    expect_format(with_alignment(u32(1u << 21)), "general.alignment 2097152 must be a power of two between 1 and 1048576");
    expect_format(with_alignment([](gguf_bytes& g) { g.kv_str("general.alignment", "32"); }),
                  "general.alignment has type STRING, expected UINT32");
    expect_format(with_alignment([](gguf_bytes& g) { g.key("general.alignment", 5).i32(-64); }),
                  "general.alignment -64 is not positive");
    // 64 is fine, and offsets are checked against it
    const auto ok = with_alignment(u32(64), 64);
    const auto f = gguf::file::from_memory(ok.span());
    BOOST_TEST(f.alignment() == 64u);
    BOOST_TEST(f.data_offset() % 64 == 0u);
    expect_format(with_alignment(u32(64), 32), "offset 32 is not a multiple of the alignment 64");
}

BOOST_AUTO_TEST_CASE(duplicates) {
    gguf_bytes k;
    k.header(0, 3).kv_u32("a", 1).kv_u32("b", 2).kv_str("a", "x");
    expect_format(k, "duplicate metadata key 'a'");
    gguf_bytes t;
    t.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad().fill(64);
    expect_format(t, "duplicate tensor name 'w'");
}

BOOST_AUTO_TEST_CASE(names_in_messages_are_escaped) {
    gguf_bytes g;
    g.header(0, 1).key(std::string_view("a\nb\0c", 5), 13);
    expect_format(g, "metadata key 'a\\x0ab\\x00c': unknown value type id 13");
}

BOOST_AUTO_TEST_CASE(typed_access) {
    gguf_bytes g;
    g.header(0, 9)
        .kv_u32("u32", 300)
        .key("i32", 5).i32(-1)
        .kv_str("s", "hello")
        .key("f", 6).f32(0.5f)
        .key("b", 7).u8(1)
        .key("arr", 9).u32(5).u64(3).i32(1).i32(-2).i32(3)
        .key("strs", 9).u32(8).u64(2).str("x").str("yz")
        .key("u64", 10).u64(std::uint64_t(1) << 40)
        .key("empty", 9).u32(4).u64(0);
    const auto f = gguf::file::from_memory(g.span());
    BOOST_TEST(f.get<std::uint32_t>("u32") == 300u);
    BOOST_TEST(f.get<std::int64_t>("u32") == 300);
    BOOST_TEST(f.get<std::uint16_t>("u32") == 300u);
    BOOST_TEST(f.get<int>("i32") == -1);
    BOOST_TEST(f.get<std::string>("s") == "hello");
    BOOST_TEST(f.get<float>("f") == 0.5f);
    BOOST_TEST(f.get<double>("f") == 0.5);
    BOOST_TEST(f.get<bool>("b"));
    BOOST_TEST((f.get<std::vector<int>>("arr") == std::vector<int>{1, -2, 3}));
    BOOST_TEST((f.get<std::vector<std::string>>("strs") == std::vector<std::string>{"x", "yz"}));
    BOOST_TEST(f.get<std::uint64_t>("u64") == std::uint64_t(1) << 40);
    BOOST_TEST(f.get<std::vector<std::uint32_t>>("empty").empty());
    BOOST_TEST((f.type_of("arr") == gguf::value_type::ARRAY));
    BOOST_TEST(f.metadata()[5].value.type_string() == "ARRAY[INT32]");
    BOOST_TEST(f.metadata()[5].value.to_string() == "[1, -2, 3]");
    BOOST_TEST(f.metadata()[6].value.to_string(1) == "[\"x\", ...] (2 items)");
    BOOST_TEST(f.get_or<std::uint32_t>("absent", 7) == 7u);
    BOOST_TEST(f.get_or<std::string>("s", "d") == "hello");
    BOOST_TEST(!f.has("absent"));

    auto te = [&](auto fn, const std::string& frag) {
        try {
            fn();
            BOOST_ERROR("no type_error for " << frag);
        } catch (const type_error& e) {
            BOOST_TEST_INFO("message: " << e.what());
            BOOST_CHECK(std::string(e.what()).find(frag) != std::string::npos);
        }
    };
    te([&] { (void)f.get<std::uint32_t>("s"); }, "metadata key 's' has type STRING, expected uint32");
    te([&] { (void)f.get<std::string>("u32"); }, "metadata key 'u32' has type UINT32, expected string");
    te([&] { (void)f.get<std::uint8_t>("u32"); }, "metadata key 'u32' value 300 (UINT32) does not fit in uint8");
    te([&] { (void)f.get<std::uint32_t>("i32"); }, "value -1 (INT32) does not fit in uint32");
    te([&] { (void)f.get<std::int32_t>("u64"); }, "value 1099511627776 (UINT64) does not fit in int32");
    te([&] { (void)f.get<float>("u32"); }, "has type UINT32, expected float32");
    te([&] { (void)f.get<bool>("u32"); }, "has type UINT32, expected bool");
    te([&] { (void)f.get<std::uint32_t>("arr"); }, "has type ARRAY[INT32], expected uint32");
    te([&] { (void)f.get<std::vector<std::string>>("arr"); }, "has type ARRAY[INT32], expected array of string");
    te([&] { (void)f.get<std::vector<std::uint32_t>>("arr"); }, "'arr' element 1 value -2 (INT32) does not fit in uint32");
    te([&] { (void)f.get<std::vector<std::string>>("s"); }, "has type STRING, expected array of string");
    te([&] { (void)f.get<std::vector<std::string>>("empty"); }, "has type ARRAY[UINT32], expected array of string");
    te([&] { (void)f.get_or<std::uint32_t>("s", 1); }, "metadata key 's' has type STRING");
    try {
        (void)f.get<std::uint32_t>("llama.block_count");
        BOOST_ERROR("no format_error");
    } catch (const format_error& e) {
        BOOST_TEST(std::string(e.what()) == "missing key 'llama.block_count'");
    }
    BOOST_CHECK_THROW((void)f.type_of("nope"), format_error);
    BOOST_CHECK_THROW((void)f.tensor("nope"), format_error);
    BOOST_TEST(f.find_tensor("nope") == nullptr);
    BOOST_TEST(f.architecture() == "");
}

BOOST_AUTO_TEST_CASE(as_weight_shapes) {
    gguf_bytes g;
    g.header(4, 0)
        .tensor("m", {8, 2}, 0, 0)
        .tensor("v", {8}, 0, 64)
        .tensor("e", {8, 2, 1}, 0, 96)
        .tensor("c", {8, 2, 2}, 0, 160)
        .pad()
        .fill(288);
    const auto f = gguf::file::from_memory(g.span());
    const auto m = gguf::as_weight(f.tensor("m"));
    BOOST_TEST(m.rows == 2u);
    BOOST_TEST(m.cols == 8u);
    BOOST_TEST(m.data == static_cast<const void*>(f.tensor("m").data));
    BOOST_TEST(gguf::as_weight(f.tensor("v")).rows == 1u);
    BOOST_TEST(gguf::as_weight(f.tensor("e")).rows == 2u);
    BOOST_CHECK_THROW(gguf::as_weight(f.tensor("c")), archetype::shape_error);
}

// Every ggml type with kernels gives a weight view; one without is refused by name
// (the tensor and its type), not at the first matmul.
BOOST_AUTO_TEST_CASE(as_weight_types) {
    gguf_bytes g;
    g.header(3, 0)
        .tensor("q2", {256, 1}, 10, 0)      // Q2_K: 84 bytes
        .tensor("q3", {256, 1}, 11, 96)     // Q3_K: 110 bytes
        .tensor("q81", {32, 1}, 9, 224)     // Q8_1: 36 bytes, ggml's activation format, no kernels
        .pad()
        .fill(320);
    const auto f = gguf::file::from_memory(g.span());
    const auto q2 = gguf::as_weight(f.tensor("q2"));
    BOOST_TEST((q2.type == archetype::ggml_type::Q2_K));
    BOOST_TEST(q2.row_bytes() == 84u);
    BOOST_TEST((gguf::as_weight(f.tensor("q3")).type == archetype::ggml_type::Q3_K));
    try {
        (void)gguf::as_weight(f.tensor("q81"));
        BOOST_ERROR("no shape_error");
    } catch (const archetype::shape_error& e) {
        const std::string m = e.what();
        BOOST_TEST(m.find("tensor 'q81' is Q8_1") != std::string::npos, m);
        BOOST_TEST(m.find("Q3_K") != std::string::npos, m);
    }
}

BOOST_AUTO_TEST_CASE(open_errors) {
    BOOST_CHECK_THROW(gguf::file::open("/nonexistent/file.gguf"), archetype::io_error);
    BOOST_CHECK_THROW(gguf::file::open("/"), archetype::io_error);
    BOOST_CHECK_THROW(gguf::file::open("/dev/null"), archetype::io_error); // not a regular file
}
