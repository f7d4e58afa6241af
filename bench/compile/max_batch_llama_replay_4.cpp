// One of the two allocator replays of bench/compile/max_batch_llama.cpp's
// solve, alone: llama-3-8b, bf16 with checkpointing, 4096 tokens, batch 4,
// under the cap the solve uses (80 GiB less the cuBLAS workspaces), where it
// runs out of memory. bench/constexpr_ops.sh counts its operations (docs/performance.md).
#include <anatomy/anatomy.hpp>

using namespace anatomy;

namespace {
constexpr recipe checkpointed{.weights = dtype::bf16, .grad_checkpointing = true};
static_assert(replay_allocator(presets::llama_3_8b, checkpointed, {.batch = 4, .seq = 4096},
                               80 * GiB - cublas_workspace(checkpointed))
                  .out_of_memory);
}  // namespace
