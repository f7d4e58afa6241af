// One allocator replay in constant evaluation: tinyllama-1.1b, bf16, 1 x 256
// (docs/performance.md). bench/constexpr_ops.sh counts its operations; it
// compiles only with a raised -fconstexpr-ops-limit.
#include <anatomy/anatomy.hpp>

using namespace anatomy;

static_assert(replay_allocator(presets::tinyllama_1_1b, {.weights = dtype::bf16}, {.batch = 1, .seq = 256})
                  .peak_reserved > 0 * GiB);
