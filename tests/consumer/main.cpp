#include <anatomy/anatomy.hpp>
#include <anatomy/format.hpp>

int main() {
    using namespace anatomy;
    constexpr memory_estimate plan = estimate(presets::gpt2, recipe{}, shape{.batch = 1, .seq = 128});
    static_assert(fits_budget<plan.peak, 4 * GiB>());
    fmt::print("gpt2 fp32 + AdamW, 1 x 128 tokens: {}\n", plan.peak);
    return plan.params == 124439808 ? 0 : 1;
}
