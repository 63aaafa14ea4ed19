#define BOOST_TEST_MODULE policies
#include <boost/test/unit_test.hpp>

#include <string>
#include <type_traits>

#include "archetype/models/decoder.hpp"

using namespace archetype;

// The mission's spelling compiles exactly as written.
using Mistral = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>;

BOOST_AUTO_TEST_CASE(mission_spelling_resolves_each_axis) {
    static_assert(std::is_same_v<Mistral::heads, GQA<32, 8>>);
    static_assert(std::is_same_v<Mistral::position, RoPE>);
    static_assert(std::is_same_v<Mistral::mask, SlidingWindow<4096>>);
    static_assert(std::is_same_v<Mistral::cache, RollingCache>);
    // defaults of the axes not given
    static_assert(std::is_same_v<Mistral::ffn, SwiGLU>);
    static_assert(std::is_same_v<Mistral::norm, RMSNorm>);
    static_assert(std::is_same_v<Mistral::mixer, SelfAttention>);
    static_assert(std::is_same_v<Mistral::storage, WeightsFromFile>);
    static_assert(Mistral::n_head == 32 && Mistral::n_head_kv == 8 && Mistral::head_dim == dynamic);
    BOOST_TEST(true);
}

BOOST_AUTO_TEST_CASE(order_of_policies_does_not_matter) {
    using A = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>;
    using B = Decoder<RollingCache, SlidingWindow<4096>, GQA<32, 8>, RoPE>;
    static_assert(std::is_same_v<A::heads, B::heads> && std::is_same_v<A::mask, B::mask> &&
                  std::is_same_v<A::cache, B::cache> && std::is_same_v<A::position, B::position>);
    BOOST_TEST(describe<A>() == describe<B>());
}

BOOST_AUTO_TEST_CASE(empty_decoder_takes_every_default) {
    using D = Decoder<>;
    static_assert(std::is_same_v<D::heads, GQA<dynamic, dynamic>>);
    static_assert(std::is_same_v<D::mask, Causal> && std::is_same_v<D::cache, FullCache>);
    static_assert(!D::static_heads);
    BOOST_TEST(describe<D>().find("from the file") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(mha_mqa_are_gqa_special_cases) {
    static_assert(MHA<12>::n_head == 12 && MHA<12>::n_head_kv == 12);
    static_assert(MQA<8>::n_head == 8 && MQA<8>::n_head_kv == 1);
    static_assert(std::is_same_v<Decoder<MQA<8, 64>>::heads, MQA<8, 64>>);
    BOOST_TEST(MQA<8>::describe() == "MQA<8>");
    BOOST_TEST((GQA<32, 8, 128>::describe() == "GQA<32, 8, 128>"));
}

BOOST_AUTO_TEST_CASE(describe_names_every_axis) {
    const std::string d = describe<Mistral>();
    for (const char* part : {"GQA<32, 8>", "RoPE", "SlidingWindow<4096>", "RollingCache", "ring of 4096 cells",
                             "SwiGLU", "RMSNorm"}) {
        BOOST_TEST_INFO("describe() lacks " << part << ":\n" << d);
        BOOST_TEST(d.find(part) != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(static_heads_give_constexpr_figures) {
    using M = Decoder<GQA<32, 8, 128>, RoPE, SlidingWindow<4096>, RollingCache>;
    // K and V, 8 kv heads x 128 dims x 4 bytes each
    static_assert(M::kv_bytes_per_token_per_layer(M::n_head_kv, M::head_dim) == 2 * 8 * 128 * 4);
    static_assert(M::attention_flops_per_key_per_layer(M::n_head, M::head_dim) == 4 * 32 * 128);
    // Mistral 7B v0.1 shape: 7,241,732,096 parameters (the published count)
    constexpr transformer_dims d{.n_layer = 32, .n_embd = 4096, .n_vocab = 32000, .n_ff = 14336,
                                 .n_head = 32, .n_head_kv = 8, .head_dim = 128, .window = 4096};
    constexpr auto f = M::figures(d, 8192);
    static_assert(f.parameters == 7241732096ull);
    // rolling cache: 4096 cells per layer whatever the context beyond the window
    static_assert(f.cache_bytes == 32ull * 4096 * 8192);
    static_assert(M::figures(d, 100000).cache_bytes == f.cache_bytes);
    // full cache grows with the context
    using Full = Decoder<GQA<32, 8, 128>, RoPE, SlidingWindow<4096>, FullCache>;
    static_assert(Full::figures(d, 8192).cache_bytes == 32ull * 8192 * 8192);
    BOOST_TEST(describe<M>().find("8192 bytes per token per layer") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(mask_rules_follow_llama_cpp) {
    // SlidingWindow<W>: masked iff p_q - p_k >= W; the token sees itself and W-1 before it
    using SW = SlidingWindow<4>;
    BOOST_TEST(SW::visible(10, 10, 4));
    BOOST_TEST(SW::visible(10, 7, 4));
    BOOST_TEST(!SW::visible(10, 6, 4));
    BOOST_TEST(!SW::visible(10, 11, 4)); // causal
    BOOST_TEST(Causal::visible(5, 0));
    BOOST_TEST(!Causal::visible(5, 6));
    // SymmetricWindow: |i - j| <= W/2, so W = 2 and W = 3 both give one neighbour each side
    for (int w : {2, 3}) {
        BOOST_TEST(SymmetricWindow<>::visible(3, 2, w));
        BOOST_TEST(SymmetricWindow<>::visible(3, 4, w));
        BOOST_TEST(!SymmetricWindow<>::visible(3, 5, w));
        BOOST_TEST(!SymmetricWindow<>::visible(3, 1, w));
    }
    BOOST_TEST(Bidirectional::visible(0, 100));
}

BOOST_AUTO_TEST_CASE(interleave_pattern_matches_llama_cpp_swa_pattern) {
    // llama.cpp: layer il is SWA iff il % n_pattern < n_pattern - 1 (Gemma 3: 5 local, 1 global)
    using G = Interleave<6, SlidingWindow<512>, Causal>;
    for (std::size_t il = 0; il < 18; ++il) BOOST_TEST(G::is_local(il) == (il % 6 != 5));
    using D = Decoder<GQA<4, 1, 256>, RoPE, G, RollingCache>;
    constexpr transformer_dims d{.n_layer = 18, .n_embd = 640, .n_vocab = 262144, .n_ff = 2048,
                                 .n_head = 4, .n_head_kv = 1, .head_dim = 256, .window = 512};
    // at 4096 tokens: 15 local layers hold 512 cells, 3 global layers hold 4096
    static_assert(D::figures(d, 4096).cache_bytes == (15ull * 512 + 3ull * 4096) * 2 * 256 * 4);
    BOOST_TEST(D::layer_is_windowed(0));
    BOOST_TEST(!D::layer_is_windowed(5));
}

BOOST_AUTO_TEST_CASE(rope_parameterised_spelling) {
    using R = RoPE::with<500000, rope_pairing_policy::neox>;
    static_assert(R::base == 500000 && R::pairing == rope_pairing_policy::neox);
    static_assert(std::is_same_v<axis_of_t<R>, axis::position>);
    BOOST_TEST(RoPE::describe() == "RoPE");
    BOOST_TEST(R::describe() == "RoPE(base 500000, neox pairs)");
}

BOOST_AUTO_TEST_CASE(moe_and_storage_policies) {
    using D = Decoder<MHA<4>, MoE<8, 2, SwiGLU>, Q8_0>;
    static_assert(D::ffn::experts == 8 && D::ffn::top_k == 2);
    static_assert(D::storage::fixed && D::storage::type == ggml_type::Q8_0);
    constexpr transformer_dims d{.n_layer = 1, .n_embd = 8, .n_vocab = 10, .n_ff = 16, .n_head = 4,
                                 .n_head_kv = 4, .head_dim = 2, .n_expert = 8, .n_expert_used = 2};
    // 8 experts of 3 x 8 x 16 plus an 8 x 8 router; 2 active experts in the FLOPs
    constexpr auto f = D::figures(d);
    static_assert(f.parameters == 10 * 8 * 2 + (4 * 8 * 8 + 8 * 3 * 8 * 16 + 8 * 8 + 2 * 8) + 8);
    static_assert(f.matmul_flops_per_token == 2 * ((4 * 8 * 8 + 2 * 3 * 8 * 16) + 10 * 8));
    BOOST_TEST(describe<D>().find("MoE<8, 2, SwiGLU>") != std::string::npos);
}

#include "archetype/models/dims_fields.hpp"

BOOST_AUTO_TEST_CASE(dims_print_and_compare_field_by_field) {
    transformer_dims a{.n_layer = 30, .n_embd = 576, .n_vocab = 49152, .n_ff = 1536,
                       .n_head = 9, .n_head_kv = 3, .head_dim = 64};
    const std::string s = format_fields(a);
    BOOST_TEST(s.find("  n_layer = 30\n") != std::string::npos);
    BOOST_TEST(s.find("  n_head_kv = 3\n") != std::string::npos);
    BOOST_TEST(differing_fields(a, a).empty());
    transformer_dims b = a;
    b.n_head_kv = 1;
    b.window = 512;
    BOOST_TEST(differing_fields(a, b) == "n_head_kv, window");
}
