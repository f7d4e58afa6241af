// The search behind every largest-batch answer: max_batch, llm.c's and the
// peak set's.
#pragma once

#include <cstdint>

namespace anatomy::detail {

// The largest batch in [1, limit] for which `fits` holds, 0 if none does,
// searched from `guess`: doubling steps away from it until `fits` changes,
// then bisection. `known` is a batch known to fit (0: none). Memory grows
// with the batch, as every op's does, so `fits` holds below its answer only.
template <class Fits>
constexpr std::uint64_t largest_batch_from(std::uint64_t guess, std::uint64_t known, std::uint64_t limit, Fits fits) {
    if (known >= limit) return limit;
    std::uint64_t ok = known;  // invariant: `ok` fits (0: nothing does yet)
    std::uint64_t bad = limit == UINT64_MAX ? limit : limit + 1;  // and `bad` does not, or is past the limit
    // The next step away from the guess: doubled, or the whole gap, without wrapping.
    const auto next = [&](std::uint64_t step) { return step <= (bad - ok) / 2 ? 2 * step : bad - ok; };
    if (guess <= ok) guess = ok + 1;
    if (guess > limit) guess = limit;
    if (fits(guess)) {
        ok = guess;
        for (std::uint64_t step = 1; step < bad - ok; step = next(step)) {
            if (!fits(ok + step)) {
                bad = ok + step;
                break;
            }
            ok += step;
        }
    } else {
        bad = guess;
        for (std::uint64_t step = 1; step < bad - ok; step = next(step)) {
            if (fits(bad - step)) {
                ok = bad - step;
                break;
            }
            bad -= step;
        }
    }
    while (bad - ok > 1) {
        const std::uint64_t mid = ok + (bad - ok) / 2;
        if (fits(mid)) ok = mid;
        else bad = mid;
    }
    return ok;
}

}  // namespace anatomy::detail
