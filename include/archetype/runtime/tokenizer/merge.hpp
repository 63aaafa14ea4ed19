#pragma once
// The merge loop BPE and SentencePiece share: repeatedly join the adjacent pair with
// the best priority (BPE: lowest merge rank; SentencePiece: highest score of the
// joined piece), leftmost first on ties. A heap with lazy invalidation keeps it
// O(n log n) on long words, so a hostile input cannot make it quadratic.
#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace archetype::tokenizer::detail {

struct symbol {
    std::size_t start = 0, len = 0; // bytes of the word this symbol covers
    std::int32_t id = -1;           // token id (-1 while unknown to the vocabulary)
    std::int64_t prev = -1, next = -1;
};

template <class Priority> struct merge_candidate {
    Priority priority;
    std::int64_t left;
    std::size_t left_len, right_len;
    std::int32_t result;
};

/// pair(a, b, out_priority, out_id) -> bool says whether symbols a, b may merge.
/// Symbols are merged in place; the survivors are those reachable from index 0.
template <class Priority, class Pair>
void merge_symbols(std::vector<symbol>& syms, Pair&& pair) {
    if (syms.size() < 2) return;
    auto worse = [](const merge_candidate<Priority>& x, const merge_candidate<Priority>& y) {
        if (x.priority != y.priority) return x.priority < y.priority;
        return x.left > y.left;
    };
    std::priority_queue<merge_candidate<Priority>, std::vector<merge_candidate<Priority>>, decltype(worse)> heap(worse);
    auto push = [&](std::int64_t l) {
        if (l < 0) return;
        const auto& a = syms[static_cast<std::size_t>(l)];
        if (a.next < 0) return;
        const auto& b = syms[static_cast<std::size_t>(a.next)];
        Priority p{};
        std::int32_t id = -1;
        if (pair(a, b, p, id)) heap.push({p, l, a.len, b.len, id});
    };
    for (std::size_t i = 0; i + 1 < syms.size(); ++i) push(static_cast<std::int64_t>(i));
    while (!heap.empty()) {
        const auto c = heap.top();
        heap.pop();
        auto& a = syms[static_cast<std::size_t>(c.left)];
        // Stale entry: one side has merged since (symbols only grow, so equal lengths
        // mean the same symbols).
        if (a.len != c.left_len || a.next < 0) continue;
        auto& b = syms[static_cast<std::size_t>(a.next)];
        if (b.len != c.right_len) continue;
        a.len += b.len;
        a.id = c.result;
        a.next = b.next;
        if (b.next >= 0) syms[static_cast<std::size_t>(b.next)].prev = c.left;
        b.len = 0; // dead
        push(a.prev);
        push(c.left);
    }
}

} // namespace archetype::tokenizer::detail
