// A build that checks a memory budget at compile time.
//
// "llama-3-8b, bf16 weights + AdamW: does a training step fit 80 GiB per GPU?
// 16 GiB?" The answers are static_asserts: if the recipe grows past the
// budget, this file stops compiling and the compiler prints the computed MiB
// and the budget MiB.
#include <anatomy/anatomy.hpp>

#include <cstdio>

namespace {

using namespace anatomy;

constexpr recipe bf16_adamw{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw};
constexpr memory_estimate plan = estimate(presets::llama_3_8b, bf16_adamw, shape{.batch = 1, .seq = 4096});

static_assert(fits_budget<plan.peak, 80 * GiB>(), "llama-3-8b bf16 + AdamW fits an 80 GiB card");
// 16 GiB does not: weights, gradients and AdamW state alone are 8 B/param.
// Writing fits_budget<plan.peak, 16 * GiB>() here fails the build with
// budget_check<needed_MiB<78197>, budget_MiB<16384>, false>.
static_assert(!fits(plan.peak, 16 * GiB));

}  // namespace

int main() {
    std::printf("llama-3-8b, bf16 + AdamW, 1 x 4096 tokens: %llu MiB at the peak. Fits 80 GiB: yes. Fits 16 GiB: no.\n",
                static_cast<unsigned long long>(mib_ceil(plan.peak)));
}
