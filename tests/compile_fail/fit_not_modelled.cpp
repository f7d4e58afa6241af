// Fails to compile with ANATOMY_EXPECT_FAIL: max_batch refuses the reentrant
// checkpoint, whose reserved memory is not modelled, and the compiler prints
// why. The passing twin checkpoints non-reentrantly.
#include <anatomy/max_batch.hpp>
#include <anatomy/presets.hpp>

using namespace anatomy;

#ifdef ANATOMY_EXPECT_FAIL
constexpr recipe training{.grad_checkpointing = true, .checkpoint = checkpoint_impl::reentrant};
#else
constexpr recipe training{.grad_checkpointing = true, .checkpoint = checkpoint_impl::non_reentrant};
#endif
static_assert(max_batch(presets::tinybert, training, {.seq = 64}, 1 * GiB, 4) >= 1);
