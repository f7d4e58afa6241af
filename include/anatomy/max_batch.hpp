// The largest batch that fits a budget, for sizing a run before launch.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/device.hpp>
#include <anatomy/reserved.hpp>
#include <anatomy/shape.hpp>

#include <cstdint>
#include <type_traits>

namespace anatomy {

// Batches above this are not searched: a larger answer is reported as the limit.
inline constexpr std::uint64_t max_batch_search_limit = 1ULL << 16;

// The cuBLAS workspaces a step allocates through the caching allocator: one
// per thread that multiplies (training: the forward's and autograd's), and
// cuBLASLt's once (device_profile::cublas_workspace).
constexpr bytes cublas_workspace(const recipe& r, const device_profile& device = devices::h200) {
    return (r.inference ? 1 : 2) * device.cublas_workspace() + device_profile::cublaslt_workspace;
}

namespace detail {

// Whether `batch` runs under a cap of `budget` (set_per_process_memory_fraction)
// in a fresh process: the cuBLAS workspaces come out of the cap first, then
// the replayed allocator must never need a segment past it.
constexpr bool batch_fits(const model_spec& m, const recipe& r, shape s, std::uint64_t batch, bytes budget,
                          const device_profile& d) {
    s.batch = batch;
    const bytes workspace = cublas_workspace(r, d);
    if (budget <= workspace) return false;
    if (std::is_constant_evaluated()) return !replay_allocator(m, r, s, budget - workspace, d).out_of_memory;
    try {
        return !replay_allocator(m, r, s, budget - workspace, d).out_of_memory;
    } catch (const overflow_error&) {
        return false;  // a batch whose bytes overflow 64 bits fits no device
    }
}

// The analytic peak never exceeds what the allocator needs, so a batch whose
// peak is over the budget cannot fit: a cheap upper bound for the search.
constexpr bool peak_fits(const model_spec& m, const recipe& r, shape s, std::uint64_t batch, bytes budget,
                         const device_profile& d) {
    s.batch = batch;
    if (std::is_constant_evaluated()) return estimate(m, r, s, d).peak + cublas_workspace(r, d) <= budget;
    try {
        return estimate(m, r, s, d).peak + cublas_workspace(r, d) <= budget;
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
constexpr bool fits_under(const model_spec& m, const recipe& r, const shape& s, bytes budget,
                          const device_profile& device = devices::h200) {
    validate(s, m);
    return detail::batch_fits(m, r, s, s.batch, budget, device);
}

// The largest batch that trains (or serves) under `budget`, the caching
// allocator's cap as torch.cuda.set_per_process_memory_fraction sets it, in a
// fresh process: the cuBLAS workspaces and the allocator's reserved segments
// included. 0 if even batch 1 does not fit. `per_batch.batch` is ignored.
// The analytic peak bounds the search; allocator replays settle it.
constexpr std::uint64_t max_batch(const model_spec& m, const recipe& r, const shape& per_batch, bytes budget,
                                  std::uint64_t limit = max_batch_search_limit,
                                  const device_profile& device = devices::h200) {
    detail::require(limit > 0, "anatomy::max_batch: limit must be > 0");
    shape s = per_batch;
    s.batch = 1;
    validate(s, m);
    std::uint64_t batch =
        detail::largest_batch(limit, [&](std::uint64_t b) { return detail::peak_fits(m, r, s, b, budget, device); });
    while (batch > 0 && !detail::batch_fits(m, r, s, batch, budget, device)) --batch;
    return batch;
}

// The largest batch on `device`: its memory less its CUDA context.
constexpr std::uint64_t max_batch(const model_spec& m, const recipe& r, const shape& per_batch,
                                  const device_profile& device) {
    return max_batch(m, r, per_batch, allocator_budget(device), max_batch_search_limit, device);
}

}  // namespace anatomy
