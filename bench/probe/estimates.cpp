// 500 estimates of llama-3-8b (bf16, AdamW, 1 x 4096) from one estimator, and
// with an argument 3 allocator replays too: what bench/estimate_instructions.sh
// counts instructions of.
#include <anatomy/anatomy.hpp>

#include <cstdio>

int main(int argc, char**) {
    using namespace anatomy;
    const estimator e(presets::llama_3_8b, {.weights = dtype::bf16, .optimizer = optimizer_kind::adamw});
    volatile std::uint64_t seq = 4096;  // not a constant: nothing is folded
    std::uint64_t sink = 0;
    for (int i = 0; i < 500; ++i) sink += e.estimate({.batch = 1, .seq = seq}).peak.count;
    for (int i = 0; i < 3 * (argc > 1); ++i) sink += e.replay({.batch = 1, .seq = seq}).peak_reserved.count;
    std::printf("%llu\n", static_cast<unsigned long long>(sink % 7));
}
