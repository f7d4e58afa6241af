// The byte ledger: named entries that add up to a memory total.
//
// Printing, JSON and tests iterate over the entries with for_each_entry
// (<anatomy/entries.hpp>, opt-in): adding an entry here and there adds it
// everywhere, and entries.hpp fails to compile if it is added here only.
#pragma once

#include <anatomy/bytes.hpp>

namespace anatomy {

struct memory_ledger {
    bytes weights;
    bytes gradients;
    bytes master_weights;
    bytes optimizer_state;
    bytes activations;         // tensors of the step alive at the peak
    bytes temporaries;         // the optimizer step's scratch tensors
    bytes communication;       // DDP's gradient buckets
    bytes gathered_weights;    // FSDP's all-gathered (unsharded) parameters
    bytes allocator_rounding;  // model state rounded up to 512-byte blocks
};

}  // namespace anatomy
