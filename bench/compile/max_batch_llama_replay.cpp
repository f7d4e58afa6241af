// One of the two allocator replays of bench/compile/max_batch_llama.cpp's
// solve, alone: llama-3-8b, bf16 with checkpointing, 4096 tokens, batch
// BATCH (3 unless defined), under the cap the solve uses (80 GiB less the
// cuBLAS workspaces). Batch 3 fits there, 4 runs out of memory.
// bench/constexpr_ops.sh counts its operations (docs/performance.md):
//
//   bench/constexpr_ops.sh bench/compile/max_batch_llama_replay.cpp -DBATCH=4
#include <anatomy/anatomy.hpp>

#ifndef BATCH
#define BATCH 3
#endif

using namespace anatomy;

namespace {
constexpr recipe checkpointed{.weights = dtype::bf16, .grad_checkpointing = true};
static_assert(replay_allocator(presets::llama_3_8b, checkpointed, {.batch = BATCH, .seq = 4096},
                               80 * GiB - cublas_workspace(checkpointed))
                  .out_of_memory == (BATCH > 3));
}  // namespace
