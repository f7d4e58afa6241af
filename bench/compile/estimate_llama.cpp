// One constant-evaluated estimate, for bench/constexpr_ops.sh: llama-3-8b,
// bf16 + AdamW, one 2048-token sequence, as in three_budgets.cpp.
#include <anatomy/anatomy.hpp>

namespace {
using namespace anatomy;
constexpr recipe bf16_adamw{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw};
constexpr memory_estimate llama = estimate(presets::llama_3_8b, bf16_adamw, shape{.batch = 1, .seq = 2048});
static_assert(llama.peak.count > 0);
}  // namespace
