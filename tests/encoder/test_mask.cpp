// Mask printout (llama.cpp's layout, the text byte for byte), through
// the library and through `archetype mask` (path of the program in argv[1]),
// and the block-diagonal rule of packed batches.
#define BOOST_TEST_MODULE encoder_mask
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/runtime/encoder_mask.hpp"

using namespace archetype;

namespace {
const std::string seed_symmetric_2_7 =
    "=== Attention mask ===\n"
    "'0' = can attend, '\xE2\x88\x9E' = masked\n"
    "Rows = query tokens, Columns = key/value tokens\n"
    "\n"
    "     0 1 2 3 4 5 6\n"
    " 0:  0 0 \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E\n"
    " 1:  0 0 0 \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E\n"
    " 2:  \xE2\x88\x9E 0 0 0 \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E\n"
    " 3:  \xE2\x88\x9E \xE2\x88\x9E 0 0 0 \xE2\x88\x9E \xE2\x88\x9E\n"
    " 4:  \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E 0 0 0 \xE2\x88\x9E\n"
    " 5:  \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E 0 0 0\n"
    " 6:  \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E \xE2\x88\x9E 0 0\n";

std::string run(const std::string& cmd, int& status) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
    BOOST_REQUIRE(p);
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p.get())) > 0) out.append(buf.data(), n);
    status = pclose(p.release());
    return out;
}
std::string program() {
    auto& m = boost::unit_test::framework::master_test_suite();
    return m.argc > 1 ? m.argv[1] : "";
}
} // namespace

BOOST_AUTO_TEST_CASE(seed_text_from_library) {
    BOOST_TEST(format_mask(mask_kind::symmetric, 7, 2) == seed_symmetric_2_7);
    // W = 3 gives one neighbour each side too (|i - j| <= W/2, integer division)
    BOOST_TEST(format_mask(mask_kind::symmetric, 7, 3) == seed_symmetric_2_7);
}

BOOST_AUTO_TEST_CASE(seed_text_from_program) {
    if (program().empty()) return;
    int status = -1;
    const auto out = run(program() + " mask --kind symmetric --window 2 --n 7", status);
    BOOST_TEST(status == 0);
    BOOST_TEST(out == seed_symmetric_2_7);
    run(program() + " mask --kind symmetric --window 0 --n 7 2>/dev/null", status);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) != 0);
    BOOST_TEST(WEXITSTATUS(status) < 64);
    run(program() + " mask --kind diagonal --n 7 2>/dev/null", status);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) < 64));
}

BOOST_AUTO_TEST_CASE(rules) {
    for (pos_t q = 0; q < 12; ++q)
        for (pos_t k = 0; k < 12; ++k) {
            BOOST_TEST(mask_visible(mask_kind::causal, q, k, 0) == (k <= q));
            BOOST_TEST(mask_visible(mask_kind::window, q, k, 3) == (k <= q && q - k < 3));
            BOOST_TEST(mask_visible(mask_kind::symmetric, q, k, 4) == (std::abs(q - k) <= 2));
            BOOST_TEST(mask_visible(mask_kind::bidirectional, q, k, 0));
        }
    BOOST_CHECK_THROW(format_mask(mask_kind::window, 5, 0), argument_error);
    BOOST_CHECK_THROW(format_mask(mask_kind::causal, 0, 0), argument_error);
}

BOOST_AUTO_TEST_CASE(block_diagonal) {
    packed_layout lay;
    lay.add(3);
    lay.add(1);
    lay.add(4);
    BOOST_TEST(lay.n_tokens() == 8u);
    BOOST_TEST(lay.n_sequences() == 3u);
    const std::size_t seq_of[] = {0, 0, 0, 1, 2, 2, 2, 2};
    for (std::size_t q = 0; q < 8; ++q) {
        BOOST_TEST(lay.sequence_of(q) == seq_of[q]);
        for (std::size_t k = 0; k < 8; ++k) {
            BOOST_TEST(lay.visible(mask_kind::bidirectional, q, k, 0) == (seq_of[q] == seq_of[k]));
            const bool sym = seq_of[q] == seq_of[k] && (q > k ? q - k : k - q) <= 1;
            BOOST_TEST(lay.visible(mask_kind::symmetric, q, k, 2) == sym);
        }
    }
}
