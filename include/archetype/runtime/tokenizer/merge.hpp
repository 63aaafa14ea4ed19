#pragma once
// The merge loop BPE and SentencePiece share: repeatedly join the adjacent pair with
// the best priority (BPE: lowest merge rank; SentencePiece: highest score of the
// joined piece), leftmost first on ties. A heap with lazy invalidation keeps it
// O(n log n) on long words, so a hostile input cannot make it quadratic.
#include <cstddef>
#include <cstdint>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"

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

/// Appends a symbol after the last one of `syms`.
inline void push_symbol(std::vector<symbol>& syms, std::size_t start, std::size_t len, std::int32_t id) {
    symbol s;
    s.start = start;
    s.len = len;
    s.id = id;
    s.prev = static_cast<std::int64_t>(syms.size()) - 1;
    if (!syms.empty()) syms.back().next = static_cast<std::int64_t>(syms.size());
    syms.push_back(s);
}

/// BPE's merge list as a table: the pair of token ids -> (rank, id of the joined token).
class rank_merges {
public:
    /// `merges` as "left right", best first; id_of(text) -> token id or -1. A merge whose
    /// parts or result are not tokens can never apply (HF refuses such files; llama.cpp
    /// skips the merge): it is skipped.
    template <class IdOf>
    rank_merges(const std::vector<std::string>& merges, IdOf&& id_of) {
        table_.reserve(merges.size());
        for (std::size_t r = 0; r < merges.size(); ++r) {
            const std::string& m = merges[r];
            const auto sp = m.find(' ');
            if (sp == std::string::npos || sp == 0 || sp + 1 >= m.size() || m.find(' ', sp + 1) != std::string::npos)
                throw format_error("merge " + std::to_string(r) + " '" + m.substr(0, 80) + "' is not 'left right'");
            const std::int32_t l = id_of(m.substr(0, sp)), rt = id_of(m.substr(sp + 1)),
                               res = id_of(m.substr(0, sp) + m.substr(sp + 1));
            if (l < 0 || rt < 0 || res < 0) continue;
            table_.try_emplace(key(l, rt), static_cast<std::int64_t>(r), res);
        }
    }

    /// Merges `syms` by rank and appends the surviving symbols' ids to `ids`.
    void merge_into(std::vector<symbol>& syms, std::vector<std::int32_t>& ids) const {
        merge_symbols<std::int64_t>(syms, [&](const symbol& a, const symbol& b, std::int64_t& p, std::int32_t& id) {
            const auto it = table_.find(key(a.id, b.id));
            if (it == table_.end()) return false;
            p = -it->second.first;
            id = it->second.second;
            return true;
        });
        for (std::int64_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<std::size_t>(i)].next)
            ids.push_back(syms[static_cast<std::size_t>(i)].id);
    }

private:
    static std::uint64_t key(std::int32_t a, std::int32_t b) noexcept {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    }
    std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::int32_t>> table_;
};

} // namespace archetype::tokenizer::detail
