// Fails to compile with ANATOMY_EXPECT_FAIL: a checkpoint implementation
// without gradient checkpointing picks nothing.
#include <anatomy/estimate.hpp>
#include <anatomy/presets.hpp>

using namespace anatomy;

#ifdef ANATOMY_EXPECT_FAIL
constexpr recipe training{.weights = dtype::bf16, .checkpoint = checkpoint_impl::reentrant};
#else
constexpr recipe training{.weights = dtype::bf16, .grad_checkpointing = true, .checkpoint = checkpoint_impl::reentrant};
#endif
constexpr memory_estimate plan = estimate(presets::gpt2, training, {.batch = 1, .seq = 128});
static_assert(plan.peak > plan.model_state.weights);
