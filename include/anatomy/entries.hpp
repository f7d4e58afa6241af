// The ledger's and the phase peaks' entries by name, for printing, JSON and
// tests: for_each_entry(ledger, f) calls f("weights", bytes), and so on.
//
// Opt-in, like explain.hpp: Boost.Hana's reflection costs a TU about 0.3 s
// of g++ -O0, and a build that only checks budgets does not need names.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/reflection.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/ledger.hpp>

#include <string_view>

BOOST_HANA_ADAPT_STRUCT(anatomy::memory_ledger, weights, gradients, master_weights, optimizer_state, activations,
                        temporaries, communication, gathered_weights, allocator_rounding);
BOOST_HANA_ADAPT_STRUCT(anatomy::phase_peaks, forward, backward, optimizer);

namespace anatomy {

// A field added to one of the structs must be named above, or its bytes
// would be missing from every table and total.
static_assert(detail::adapted_field_count<memory_ledger>() * sizeof(bytes) == sizeof(memory_ledger),
              "anatomy: memory_ledger has a field that entries.hpp does not adapt; add it to BOOST_HANA_ADAPT_STRUCT");
static_assert(detail::adapted_field_count<phase_peaks>() * sizeof(bytes) == sizeof(phase_peaks),
              "anatomy: phase_peaks has a field that entries.hpp does not adapt; add it to BOOST_HANA_ADAPT_STRUCT");

// Calls f(std::string_view name, bytes value) for each entry, in order.
template <class F>
constexpr void for_each_entry(const memory_ledger& ledger, F&& f) {
    detail::for_each_field(ledger, f);
}

// Calls f(std::string_view name, bytes value) for "forward", "backward" and
// "optimizer".
template <class F>
constexpr void for_each_phase(const phase_peaks& phases, F&& f) {
    detail::for_each_field(phases, f);
}

constexpr bytes total(const memory_ledger& ledger) {
    bytes sum{};
    for_each_entry(ledger, [&](std::string_view, bytes value) { sum += value; });
    return sum;
}

}  // namespace anatomy
