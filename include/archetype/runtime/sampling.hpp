#pragma once
// Choosing the next token from a row of logits: greedy, temperature, top-k,
// top-p (nucleus), min-p and a repetition penalty, seeded and reproducible.
//
//   archetype::sampler s({.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 42});
//   std::int32_t t = s.sample(logits);   // also remembered for the repetition penalty
//
// The steps, in this order (Hugging Face's order; llama.cpp applies the
// temperature after top-p instead):
//   1. repetition penalty (CTRL, as llama.cpp): each distinct token among the
//      last `repeat_last_n` chosen ones has its logit l replaced by l / r if
//      l > 0, else l * r;
//   2. temperature 0 -> greedy: the largest logit, the lowest id on ties;
//   3. logits / T, then the k largest (ties: lower id first; k = 0 keeps all);
//   4. softmax over those; top-p keeps the shortest prefix (by falling
//      probability) whose sum reaches p (always at least one token); min-p
//      keeps the tokens whose probability is at least min_p times the largest
//      (a ratio, so it does not depend on the renormalisation; both filters
//      keep a prefix, so their order does not matter);
//   5. renormalise and draw with u = (mt19937_64() >> 11) * 2^-53 in [0, 1):
//      the first token whose cumulative probability exceeds u.
// The random draw is spelled out (no std::uniform_real_distribution) so a seed
// gives the same tokens with every standard library.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"

namespace archetype {

struct sampling_params {
    float temperature = 0.f;        ///< 0 = greedy
    std::size_t top_k = 0;          ///< 0 = no limit
    float top_p = 1.f;              ///< 1 = no limit; in (0, 1]
    float min_p = 0.f;              ///< 0 = no limit; in [0, 1]
    float repeat_penalty = 1.f;     ///< 1 = none; > 0
    std::size_t repeat_last_n = 64; ///< how many recent tokens the penalty looks at
    std::uint64_t seed = 0;
};

/// A token and its probability after the filters.
struct token_prob {
    std::int32_t id;
    float p;
};

namespace detail {
inline void check_sampling(const sampling_params& p) {
    if (!(p.temperature >= 0.f) || !std::isfinite(p.temperature))
        throw argument_error("temperature " + std::to_string(p.temperature) + " must be a finite number >= 0");
    if (!(p.top_p > 0.f && p.top_p <= 1.f))
        throw argument_error("top-p " + std::to_string(p.top_p) + " must be in (0, 1]");
    if (!(p.min_p >= 0.f && p.min_p <= 1.f))
        throw argument_error("min-p " + std::to_string(p.min_p) + " must be in [0, 1]");
    if (!(p.repeat_penalty > 0.f) || !std::isfinite(p.repeat_penalty))
        throw argument_error("repetition penalty " + std::to_string(p.repeat_penalty) + " must be a finite number > 0");
}
} // namespace detail

/// Step 1 on `logits` in place: each distinct id of `recent` once.
inline void apply_repetition_penalty(std::span<float> logits, std::span<const std::int32_t> recent, float penalty) {
    if (penalty == 1.f) return;
    std::vector<std::int32_t> ids(recent.begin(), recent.end());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (const std::int32_t id : ids) {
        if (id < 0 || std::size_t(id) >= logits.size())
            throw argument_error("token id " + std::to_string(id) + " in the history is outside the " +
                                 std::to_string(logits.size()) + " logits");
        float& l = logits[std::size_t(id)];
        l = l > 0.f ? l / penalty : l * penalty;
    }
}

/// The largest logit's id, the lowest id on ties (NaN never wins).
inline std::int32_t argmax(std::span<const float> logits) {
    if (logits.empty()) throw argument_error("argmax of an empty row of logits");
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best] || std::isnan(logits[best])) best = i;
    return std::int32_t(best);
}

/// Steps 3-4 (no penalty, temperature > 0): the tokens that can be drawn with
/// their renormalised probabilities, by falling probability (ties: lower id first).
inline std::vector<token_prob> filtered_distribution(std::span<const float> logits, const sampling_params& p) {
    detail::check_sampling(p);
    if (p.temperature == 0.f) throw argument_error("filtered_distribution needs a temperature > 0 (0 is greedy)");
    if (logits.empty()) throw argument_error("sampling from an empty row of logits");
    std::vector<std::size_t> order(logits.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (std::isnan(logits[i])) throw argument_error("logit of token " + std::to_string(i) + " is NaN");
        order[i] = i;
    }
    auto before = [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    const std::size_t k = p.top_k == 0 ? order.size() : std::min(p.top_k, order.size());
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(), before);
    order.resize(k);
    const double inv_t = 1.0 / double(p.temperature), mx = double(logits[order[0]]) * inv_t;
    if (!std::isfinite(mx)) throw argument_error("the largest logit is not finite");
    std::vector<double> e(k);
    double sum = 0.0;
    for (std::size_t i = 0; i < k; ++i) sum += e[i] = std::exp(double(logits[order[i]]) * inv_t - mx);
    std::size_t keep = k;
    if (p.top_p < 1.f) {
        double cum = 0.0;
        for (std::size_t i = 0; i < k; ++i) {
            cum += e[i] / sum;
            if (cum >= double(p.top_p)) {
                keep = i + 1;
                break;
            }
        }
    }
    if (p.min_p > 0.f) // e[0] is the largest term (exp(0) = 1)
        for (std::size_t i = 1; i < keep; ++i)
            if (e[i] < double(p.min_p) * e[0]) {
                keep = i;
                break;
            }
    double kept = 0.0;
    for (std::size_t i = 0; i < keep; ++i) kept += e[i];
    std::vector<token_prob> out(keep);
    for (std::size_t i = 0; i < keep; ++i) out[i] = {std::int32_t(order[i]), float(e[i] / kept)};
    return out;
}

/// Step 5: the token of `dist` that u in [0, 1) falls on.
inline std::int32_t draw(std::span<const token_prob> dist, double u) {
    double cum = 0.0;
    for (const auto& t : dist) {
        cum += double(t.p);
        if (u < cum) return t.id;
    }
    return dist.back().id; // u beyond the rounded sum
}

/// Stateful sampler: its random engine and the recent tokens for the penalty.
class sampler {
public:
    explicit sampler(const sampling_params& p = {}) : p_(p), rng_(p.seed) { detail::check_sampling(p); }

    const sampling_params& params() const noexcept { return p_; }

    /// Chooses the next token from `logits` (not modified) and remembers it.
    std::int32_t sample(std::span<const float> logits) {
        work_.assign(logits.begin(), logits.end());
        const std::vector<std::int32_t> recent(recent_.begin(), recent_.end());
        apply_repetition_penalty(work_, recent, p_.repeat_penalty);
        std::int32_t t;
        if (p_.temperature == 0.f) {
            t = argmax(work_);
        } else {
            const auto dist = filtered_distribution(work_, p_);
            t = draw(dist, double(rng_() >> 11) * 0x1.0p-53);
        }
        accept(t);
        return t;
    }
    /// Remembers a token chosen elsewhere (the prompt, for the penalty).
    void accept(std::int32_t t) {
        if (p_.repeat_last_n == 0) return;
        recent_.push_back(t);
        while (recent_.size() > p_.repeat_last_n) recent_.pop_front();
    }
    void reset() {
        recent_.clear();
        rng_.seed(p_.seed);
    }

private:
    sampling_params p_;
    std::mt19937_64 rng_;
    std::deque<std::int32_t> recent_;
    std::vector<float> work_;
};

} // namespace archetype
