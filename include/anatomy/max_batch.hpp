// The largest batch that fits a budget, for sizing a run before launch.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/shape.hpp>

#include <cstdint>
#include <type_traits>

namespace anatomy {

// Batches above this are not searched: a larger answer is reported as the limit.
inline constexpr std::uint64_t max_batch_search_limit = 1ULL << 16;

namespace detail {
constexpr bool batch_fits(const model_spec& m, const recipe& r, shape s, std::uint64_t batch, bytes budget) {
    s.batch = batch;
    if (std::is_constant_evaluated()) return estimate(m, r, s).reserved <= budget;
    try {
        return estimate(m, r, s).reserved <= budget;
    } catch (const overflow_error&) {
        return false;  // a batch whose bytes overflow 64 bits fits no device
    }
}
}  // namespace detail

// The largest batch whose predicted reserved memory fits `budget` (the caching
// allocator's cap), 0 if even batch 1 does not fit. `per_batch.batch` is
// ignored. Assumes memory grows with the batch, as every op's does.
constexpr std::uint64_t max_batch(const model_spec& m, const recipe& r, const shape& per_batch, bytes budget,
                                  std::uint64_t limit = max_batch_search_limit) {
    detail::require(limit > 0, "anatomy::max_batch: limit must be > 0");
    shape s = per_batch;
    s.batch = 1;
    validate(s, m);
    if (!detail::batch_fits(m, r, s, 1, budget)) return 0;
    std::uint64_t fits = 1;  // invariant: `fits` fits, `fails` does not (or is past the limit)
    std::uint64_t fails = 2;
    while (fails <= limit && detail::batch_fits(m, r, s, fails, budget)) {
        fits = fails;
        fails = fails * 2;
    }
    if (fails > limit) {
        if (detail::batch_fits(m, r, s, limit, budget)) return limit;
        fails = limit;
    }
    while (fails - fits > 1) {
        const std::uint64_t mid = fits + (fails - fits) / 2;
        if (detail::batch_fits(m, r, s, mid, budget)) fits = mid;
        else fails = mid;
    }
    return fits;
}

}  // namespace anatomy
