#include <anatomy/anatomy.hpp>
#include <anatomy/format.hpp>

int main() {
    using namespace anatomy;
    constexpr memory_estimate plan = estimate(presets::gpt2, recipe{}, shape{.batch = 1, .seq = 128});
    static_assert(fits_budget<plan.peak, 2 * GiB>());
    fmt::print("gpt2 fp32 + AdamW model state: {}\n", plan.peak);
    return plan.params == 124439808 ? 0 : 1;
}
