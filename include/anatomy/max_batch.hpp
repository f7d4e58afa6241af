// The largest batch that fits a budget, for sizing a run before launch.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/gpu.hpp>
#include <anatomy/reserved.hpp>
#include <anatomy/shape.hpp>

#include <cstdint>
#include <type_traits>

namespace anatomy {

// Batches above this are not searched: a larger answer is reported as the limit.
inline constexpr std::uint64_t max_batch_search_limit = 1ULL << 16;

constexpr bytes cublas_workspace(const recipe& r) {
    return r.inference ? cublas_workspace_inference : cublas_workspace_training;
}

namespace detail {

// Whether `batch` runs under a cap of `budget` (set_per_process_memory_fraction)
// in a fresh process: the cuBLAS workspaces come out of the cap first, then
// the replayed allocator must never need a segment past it.
constexpr bool batch_fits(const model_spec& m, const recipe& r, shape s, std::uint64_t batch, bytes budget) {
    s.batch = batch;
    const bytes workspace = cublas_workspace(r);
    if (budget <= workspace) return false;
    if (std::is_constant_evaluated()) return !replay_allocator(m, r, s, budget - workspace).out_of_memory;
    try {
        return !replay_allocator(m, r, s, budget - workspace).out_of_memory;
    } catch (const overflow_error&) {
        return false;  // a batch whose bytes overflow 64 bits fits no device
    }
}

// The analytic peak never exceeds what the allocator needs, so a batch whose
// peak is over the budget cannot fit: a cheap upper bound for the search.
constexpr bool peak_fits(const model_spec& m, const recipe& r, shape s, std::uint64_t batch, bytes budget) {
    s.batch = batch;
    if (std::is_constant_evaluated()) return estimate(m, r, s).peak + cublas_workspace(r) <= budget;
    try {
        return estimate(m, r, s).peak + cublas_workspace(r) <= budget;
    } catch (const overflow_error&) {
        return false;
    }
}

// The largest batch in [1, limit] for which `fits` holds, 0 if none does.
// Memory grows with the batch, as every op's does.
template <class Fits>
constexpr std::uint64_t largest_batch(std::uint64_t limit, Fits fits) {
    if (!fits(1)) return 0;
    std::uint64_t ok = 1;  // invariant: `ok` fits, `bad` does not (or is past the limit)
    std::uint64_t bad = 2;
    while (bad <= limit && fits(bad)) {
        ok = bad;
        bad = bad * 2;
    }
    if (bad > limit) {
        if (fits(limit)) return limit;
        bad = limit;
    }
    while (bad - ok > 1) {
        const std::uint64_t mid = ok + (bad - ok) / 2;
        if (fits(mid)) ok = mid;
        else bad = mid;
    }
    return ok;
}

}  // namespace detail

// Whether step `s` runs under `budget`, the caching allocator's cap, in a
// fresh process: max_batch's own test, so that max_batch(...) fits and one
// more does not.
constexpr bool fits_under(const model_spec& m, const recipe& r, const shape& s, bytes budget) {
    validate(s, m);
    return detail::batch_fits(m, r, s, s.batch, budget);
}

// The largest batch that trains (or serves) under `budget`, the caching
// allocator's cap as torch.cuda.set_per_process_memory_fraction sets it, in a
// fresh process: the cuBLAS workspaces and the allocator's reserved segments
// included. 0 if even batch 1 does not fit. `per_batch.batch` is ignored.
// The analytic peak bounds the search; allocator replays settle it.
constexpr std::uint64_t max_batch(const model_spec& m, const recipe& r, const shape& per_batch, bytes budget,
                                  std::uint64_t limit = max_batch_search_limit) {
    detail::require(limit > 0, "anatomy::max_batch: limit must be > 0");
    shape s = per_batch;
    s.batch = 1;
    validate(s, m);
    std::uint64_t batch =
        detail::largest_batch(limit, [&](std::uint64_t b) { return detail::peak_fits(m, r, s, b, budget); });
    while (batch > 0 && !detail::batch_fits(m, r, s, batch, budget)) --batch;
    return batch;
}

}  // namespace anatomy
