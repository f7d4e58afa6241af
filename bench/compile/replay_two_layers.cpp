// The replay of bench/compile/replay_tinyllama.cpp with two layers: a quick
// proxy for bench/constexpr_ops.sh (about 20 s), with about 1,700 allocator
// calls (docs/performance.md).
#include <anatomy/anatomy.hpp>

using namespace anatomy;

constexpr model_spec two_layers() {
    model_spec m = presets::tinyllama_1_1b;
    m.layers = 2;
    return m;
}
static_assert(replay_allocator(two_layers(), {.weights = dtype::bf16}, {.batch = 1, .seq = 256}).peak_reserved >
              0 * GiB);
