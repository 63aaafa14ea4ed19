#pragma once
// Learned absolute position embeddings (BERT, GPT-2): row p of the file's
// `position_embd.weight` ([n_embd, positions], any storage type) is added to the
// token embedding at position p. At most N positions (N may be dynamic: the
// table's rows); a session reaching past the table is a capacity_error.
#include <string>
#include <vector>

#include "archetype/core/dims.hpp"
#include "archetype/core/error.hpp"
#include "archetype/kernels/embedding_row.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

template <dim_t N = dynamic>
struct LearnedPositions {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "LearnedPositions";
    static constexpr bool rotary = false;
    static constexpr dim_t max_positions = N;
    static std::string describe() { return "LearnedPositions<" + (N == dynamic ? std::string("dynamic") : std::to_string(N)) + ">"; }
};

template <dim_t N>
struct position_impl<LearnedPositions<N>> {
    struct weights {
        kernels::weight_view table{}; // one row (n_embd) per position
        std::size_t n_pos = 0;
    };
    struct state {
        std::vector<float> row; // one row of the table as floats
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::size_t E = b.hparams().dims.n_embd;
        const auto& t = b.file().tensor("position_embd.weight"); // names the tensor when it is missing
        const std::size_t n = t.ne.size() >= 2 ? std::size_t(t.ne[1]) : 0;
        if (N != dynamic && N != n)
            throw shape_error(LearnedPositions<N>::describe() + " but the file's position_embd.weight has " +
                              std::to_string(n) + " positions");
        if (n == 0)
            throw shape_error("tensor 'position_embd.weight' has shape " + t.shape_string() + ", expected [" +
                              std::to_string(E) + ", positions]");
        w.table = b.lookup_matrix("position_embd.weight", E, n);
        w.n_pos = n;
    }
    static void init(const weights&, const position_context& c, state& s) { s.row.assign(c.n_embd, 0.f); }
    static void embed_add(const weights& w, state& s, std::int64_t pos, float* x, std::size_t E) {
        kernels::embedding_row(w.table, std::size_t(pos), s.row.data());
        for (std::size_t i = 0; i < E; ++i) x[i] += s.row[i];
    }
    /// Positions 0 .. max_positions - 1 exist; what a capacity_error says of the limit.
    static std::size_t max_positions(const weights& w) noexcept { return w.n_pos; }
    static std::string limit(const weights& w) {
        return "learned position table of " + std::to_string(w.n_pos) + " rows (position_embd.weight)";
    }
};

} // namespace archetype
