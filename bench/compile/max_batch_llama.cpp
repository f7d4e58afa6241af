// The compile-time max_batch at its true answer: llama-3-8b, bf16 with
// checkpointing, 4096 tokens, under an 80 GiB cap, runs batch 3 (the H200
// agrees; batch 4 runs out of memory). bench/constexpr_ops.sh counts its
// operations; it compiles only with a raised -fconstexpr-ops-limit.
#include <anatomy/anatomy.hpp>

using namespace anatomy;

static_assert(max_batch(presets::llama_3_8b, {.weights = dtype::bf16, .grad_checkpointing = true}, {.seq = 4096},
                        80 * GiB) == 3);
