#pragma once
// How a pipeline splits a model's layers over its stages (one stage per MPI
// rank): contiguous ranges, chosen so that the heaviest stage is as light as
// it can be. A stage's weight is its layers' parameter bytes, plus the output
// head's on the last stage (the head is read whole for every token, like a
// layer; the first stage's embedding is only gathered a row per token, so it
// weighs nothing). Decode reads every weight once per token, so bytes are its
// time; prefill's compute follows the same counts.
//
// No MPI here: the split is a pure function of the file, and every rank
// computes it alike (distributed/pipeline.hpp checks that they agree).
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/models/layer_range.hpp"

namespace archetype::distributed {

/// The bytes each stage's weights take: per layer (the tensors "blk.N.*") and the
/// head (output.weight, or token_embd.weight when the head is tied to it).
struct model_weight_bytes {
    std::vector<std::uint64_t> layer;
    std::uint64_t head = 0;
};

/// Read off a GGUF's tensor table (no tensor data is touched). A layer count above the
/// number of tensors (every layer has some) is a format_error: the split's work and memory
/// grow with it, and the header is hostile input.
inline model_weight_bytes weight_bytes(const gguf::file& f, std::size_t n_layer) {
    if (n_layer > f.tensors().size())
        throw format_error("the file says " + std::to_string(n_layer) + " layers but has " +
                           std::to_string(f.tensors().size()) + " tensors");
    model_weight_bytes b;
    b.layer.assign(n_layer, 0);
    const gguf::tensor_info* out = f.find_tensor("output.weight");
    if (!out) out = f.find_tensor("token_embd.weight");
    if (out) b.head = out->n_bytes;
    for (const auto& t : f.tensors()) {
        const long il = layer_of_tensor(t.name);
        if (il >= 0 && std::size_t(il) < n_layer) b.layer[std::size_t(il)] += t.n_bytes;
    }
    return b;
}

/// Contiguous ranges, one per stage, that minimise the heaviest stage's bytes
/// (the last stage also carries the head). More stages than layers is an
/// argument_error naming both numbers.
inline std::vector<layer_range> balanced_split(const model_weight_bytes& w, std::size_t n_stages) {
    const std::size_t L = w.layer.size();
    if (n_stages == 0) throw argument_error("a pipeline needs at least one stage");
    if (n_stages > L)
        throw argument_error(std::to_string(n_stages) + " pipeline stages but the model has " + std::to_string(L) +
                             " layers: each stage needs at least one layer");
    std::vector<std::uint64_t> prefix(L + 1, 0);
    for (std::size_t i = 0; i < L; ++i) prefix[i + 1] = prefix[i] + w.layer[i];
    // best[s][i]: the least heaviest-stage bytes when stages 0..s-1 take layers 0..i-1;
    // cut[s][i]: where stage s-1 starts in that split. O(S L^2): L is at most a few hundred.
    constexpr std::uint64_t inf = std::numeric_limits<std::uint64_t>::max();
    std::vector<std::vector<std::uint64_t>> best(n_stages + 1, std::vector<std::uint64_t>(L + 1, inf));
    std::vector<std::vector<std::size_t>> cut(n_stages + 1, std::vector<std::size_t>(L + 1, 0));
    best[0][0] = 0;
    for (std::size_t s = 1; s <= n_stages; ++s)
        for (std::size_t i = s; i <= L; ++i)
            for (std::size_t j = s - 1; j < i; ++j) {
                if (best[s - 1][j] == inf) continue;
                const std::uint64_t stage = prefix[i] - prefix[j] + (s == n_stages && i == L ? w.head : 0);
                const std::uint64_t worst = std::max(best[s - 1][j], stage);
                // ties: the earlier cut, so that light layers go to later stages alike on every rank
                if (worst < best[s][i]) {
                    best[s][i] = worst;
                    cut[s][i] = j;
                }
            }
    std::vector<layer_range> r(n_stages);
    std::size_t end = L;
    for (std::size_t s = n_stages; s >= 1; --s) {
        const std::size_t start = cut[s][end];
        r[s - 1] = {start, end - start};
        end = start;
    }
    return r;
}

/// An explicit split: the layer count of each stage, "10,12,8" (they must add up to
/// n_layer, each at least 1); argument_error naming the value otherwise.
inline std::vector<layer_range> explicit_split(std::string_view counts, std::size_t n_layer, std::size_t n_stages) {
    std::vector<layer_range> r;
    std::size_t first = 0;
    std::string_view rest = counts;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        unsigned long long c = 0;
        const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), c);
        if (item.empty() || ec != std::errc{} || p != item.data() + item.size() || c == 0 || c > n_layer)
            throw argument_error("layer split '" + std::string(counts) + "': '" + std::string(item) +
                                 "' is not a layer count 1.." + std::to_string(n_layer));
        r.push_back({first, std::size_t(c)});
        first += std::size_t(c);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (comma != std::string_view::npos && rest.empty())
            throw argument_error("layer split '" + std::string(counts) + "' ends with a comma");
    }
    if (r.size() != n_stages)
        throw argument_error("layer split '" + std::string(counts) + "' has " + std::to_string(r.size()) +
                             " stages but the pipeline has " + std::to_string(n_stages) + " ranks");
    if (first != n_layer)
        throw argument_error("layer split '" + std::string(counts) + "' covers " + std::to_string(first) +
                             " layers but the model has " + std::to_string(n_layer));
    return r;
}

} // namespace archetype::distributed
