// Fails to compile with ANATOMY_EXPECT_FAIL: inference with an optimizer is
// not a recipe that can run.
#include <anatomy/estimate.hpp>
#include <anatomy/presets.hpp>

using namespace anatomy;

#ifdef ANATOMY_EXPECT_FAIL
constexpr recipe serving{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw, .inference = true};
#else
constexpr recipe serving{.weights = dtype::bf16, .optimizer = optimizer_kind::none, .inference = true};
#endif
constexpr memory_estimate plan = estimate(presets::gpt2, serving, {.batch = 1, .seq = 128});
static_assert(plan.trainable_params == 0);
