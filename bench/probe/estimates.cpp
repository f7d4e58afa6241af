// What bench/estimate_instructions.sh counts instructions of, for
// llama-3-8b (bf16, AdamW, 1 x 4096), by the first argument:
//   (none)    500 estimates from one estimator
//   replays   the same, then 3 allocator replays
//   plain     500 plain estimate() calls, each lowering the model again
//   checkpointed  an estimator with gradient checkpointing, then 3
//             replays at 4 x 4096 (less `checkpointed-none`: the replays)
//   accumulating  an estimator with 16 micro-steps of accumulation, then
//             one replay (less `accumulating-none`: the replay)
// A profile of the replays alone is callgrind on `replays` less the first.
#include <anatomy/anatomy.hpp>

#include <cstdio>
#include <string_view>

int main(int argc, char** argv) {
    using namespace anatomy;
    const std::string_view mode = argc > 1 ? argv[1] : "";
    const recipe r{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw};
    const model_spec model = presets::llama_3_8b;
    volatile std::uint64_t seq = 4096;  // not a constant: nothing is folded
    std::uint64_t sink = 0;
    if (mode.starts_with("checkpointed")) {
        const estimator e(model, recipe{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw,
                                        .grad_checkpointing = true});
        for (int i = 0; i < 3 * (mode == "checkpointed"); ++i)
            sink += e.replay({.batch = 4, .seq = seq}).peak_reserved.count;
    } else if (mode.starts_with("accumulating")) {
        recipe accumulating = r;
        accumulating.grad_accum = 16;
        const estimator e(model, accumulating);
        if (mode == "accumulating") sink += e.replay({.batch = 1, .seq = seq}).peak_reserved.count;
    } else if (mode == "plain") {
        for (int i = 0; i < 500; ++i) sink += estimate(model, r, {.batch = 1, .seq = seq}).peak.count;
    } else {
        const estimator e(model, r);
        for (int i = 0; i < 500; ++i) sink += e.estimate({.batch = 1, .seq = seq}).peak.count;
        for (int i = 0; i < 3 * (mode == "replays"); ++i) sink += e.replay({.batch = 1, .seq = seq}).peak_reserved.count;
    }
    std::printf("%llu\n", static_cast<unsigned long long>(sink % 7));
}
