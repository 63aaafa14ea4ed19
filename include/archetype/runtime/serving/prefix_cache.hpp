#pragma once
// Saved prompt prefixes, so that requests sharing a beginning (a common system prompt, a
// conversation's earlier turns) do not compute it again. An entry is a sequence snapshot
// (runtime/sequence_snapshot.hpp: KV cells and recurrent state, so it serves every kind
// of memory, rolling and recurrent ones included, which cannot be truncated back) taken
// when a prompt's prefill reached a chunk boundary, keyed by the tokens before it.
//
// Boundaries only: the scheduler cuts every prompt into chunks of the same length from
// position 0, so a snapshot at k x chunk is bitwise what prefilling those tokens gives,
// and a request restored from it continues with the chunks it would have run anyway
// (its numerics do not depend on whether the cache hit).
//
// Bounded by bytes (the snapshots' memory): inserting past the bound evicts the least
// recently used entries first; an entry larger than the bound is not kept. 0 disables it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "archetype/runtime/sequence_snapshot.hpp"

namespace archetype::serving {

class prefix_cache {
public:
    explicit prefix_cache(std::size_t max_bytes = 0) : max_bytes_(max_bytes) {}

    std::size_t max_bytes() const noexcept { return max_bytes_; }
    std::size_t bytes() const noexcept { return bytes_; }
    std::size_t size() const noexcept { return lru_.size(); }
    std::size_t hits() const noexcept { return hits_; }

    /// The snapshot saved for exactly these tokens (null when none); a hit becomes the
    /// most recently used entry.
    const sequence_snapshot* find(std::span<const std::int32_t> prefix) {
        const auto it = index_.find(hash(prefix));
        if (it == index_.end()) return nullptr;
        for (const auto e : it->second)
            if (std::equal(e->tokens.begin(), e->tokens.end(), prefix.begin(), prefix.end())) {
                lru_.splice(lru_.begin(), lru_, e);
                ++hits_;
                return &e->snap;
            }
        return nullptr;
    }
    /// Whether an entry for these tokens exists (no change to the order).
    bool contains(std::span<const std::int32_t> prefix) const {
        const auto it = index_.find(hash(prefix));
        if (it == index_.end()) return false;
        for (const auto e : it->second)
            if (std::equal(e->tokens.begin(), e->tokens.end(), prefix.begin(), prefix.end())) return true;
        return false;
    }
    /// Keeps `snap` as the state after `prefix`, evicting the least recently used
    /// entries to stay within max_bytes.
    void insert(std::span<const std::int32_t> prefix, sequence_snapshot snap) {
        const std::size_t b = snap.bytes() + prefix.size() * sizeof(std::int32_t);
        if (b > max_bytes_ || contains(prefix)) return;
        while (bytes_ + b > max_bytes_) evict_oldest();
        lru_.push_front(entry{{prefix.begin(), prefix.end()}, std::move(snap), b});
        index_[hash(prefix)].push_back(lru_.begin());
        bytes_ += b;
    }
    void clear() {
        lru_.clear();
        index_.clear();
        bytes_ = 0;
    }

private:
    struct entry {
        std::vector<std::int32_t> tokens;
        sequence_snapshot snap;
        std::size_t bytes;
    };
    using iter = std::list<entry>::iterator;

    static std::uint64_t hash(std::span<const std::int32_t> t) noexcept {
        std::uint64_t h = 1469598103934665603ull; // FNV-1a over the ids
        for (const auto v : t) {
            h ^= std::uint32_t(v);
            h *= 1099511628211ull;
        }
        return h;
    }
    void evict_oldest() {
        const iter last = std::prev(lru_.end());
        auto& bucket = index_[hash(last->tokens)];
        std::erase(bucket, last);
        if (bucket.empty()) index_.erase(hash(last->tokens));
        bytes_ -= last->bytes;
        lru_.erase(last);
    }

    std::size_t max_bytes_, bytes_ = 0, hits_ = 0;
    std::list<entry> lru_; // most recently used first
    std::unordered_map<std::uint64_t, std::vector<iter>> index_;
};

} // namespace archetype::serving
