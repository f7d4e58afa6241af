// Fails to compile with ANATOMY_EXPECT_FAIL: a spec with zero heads is
// rejected in constant evaluation, naming the field.
#include <anatomy/estimate.hpp>
#include <anatomy/presets.hpp>

using namespace anatomy;

constexpr model_spec spec = [] {
    model_spec m = presets::gpt2;
#ifdef ANATOMY_EXPECT_FAIL
    m.attention.heads = 0;
#endif
    return m;
}();
constexpr memory_estimate plan = estimate(spec, {}, {.batch = 1, .seq = 128});
static_assert(plan.params > 0);
