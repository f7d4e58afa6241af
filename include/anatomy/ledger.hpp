// The byte ledger: named entries that add up to a memory total.
//
// Printing, JSON and tests iterate over the fields with for_each_entry; adding
// an entry here adds it everywhere.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/reflection.hpp>

#include <string_view>

namespace anatomy {

struct memory_ledger {
    ANATOMY_REFLECTABLE(memory_ledger,
                        (bytes, weights),
                        (bytes, gradients),
                        (bytes, master_weights),
                        (bytes, optimizer_state),
                        (bytes, activations),          // tensors of the step alive at the peak
                        (bytes, temporaries),          // the optimizer step's scratch tensors
                        (bytes, communication),        // DDP's gradient buckets
                        (bytes, gathered_weights),     // FSDP's all-gathered (unsharded) parameters
                        (bytes, allocator_rounding));  // model state rounded up to 512-byte blocks
};

// Calls f(std::string_view name, bytes value) for each entry, in order.
template <class F>
constexpr void for_each_entry(const memory_ledger& ledger, F&& f) {
    detail::for_each_field(ledger, f);
}

constexpr bytes total(const memory_ledger& ledger) {
    bytes sum{};
    for_each_entry(ledger, [&](std::string_view, bytes value) { sum += value; });
    return sum;
}

}  // namespace anatomy
