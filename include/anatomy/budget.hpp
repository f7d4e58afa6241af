// Compile-time memory budgets.
//
//   constexpr auto plan = anatomy::estimate(model, recipe, shape);
//   static_assert(anatomy::fits_budget<plan.peak, 80 * anatomy::GiB>());
//
// When the plan does not fit, the compiler names the instantiation
// budget_check<needed_MiB<N>, budget_MiB<M>, false>: the computed and the
// allowed size, in MiB, are in the message.
#pragma once

#include <anatomy/bytes.hpp>

#include <cstdint>

namespace anatomy {

template <std::uint64_t MiB>
struct needed_MiB {};
template <std::uint64_t MiB>
struct budget_MiB {};

namespace detail {
template <class Needed, class Budget, bool Fits>
struct budget_check {
    static_assert(Fits, "anatomy::fits_budget: the estimate exceeds the budget (see needed_MiB and budget_MiB above); "
                        "raise the budget or shrink the batch, sequence or recipe");
    static constexpr bool value = Fits;
};
}  // namespace detail

constexpr bool fits(bytes needed, bytes budget) { return needed <= budget; }

// Compiles only if `Needed` fits in `Budget`.
template <bytes Needed, bytes Budget>
consteval bool fits_budget() {
    return detail::budget_check<needed_MiB<mib_ceil(Needed)>, budget_MiB<Budget / MiB>, fits(Needed, Budget)>::value;
}

}  // namespace anatomy
