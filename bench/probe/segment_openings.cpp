// Where a replay opens segments: for each phase of each step (the marks a
// recorded replay carries), how many times the reserved bytes grew and by
// how much. docs/performance.md ("A step that repeats the one before").
//
//   g++ -std=c++20 -O2 -Iinclude bench/probe/segment_openings.cpp -o /tmp/segment_openings && /tmp/segment_openings
#include <anatomy/anatomy.hpp>

#include <cstdio>

using namespace anatomy;

namespace {

void report(const char* name, const model_spec& m, const recipe& r, const shape& s) {
    const memory_timeline t = record_replay(m, r, s);
    std::printf("%s\n", name);
    for (std::size_t p = 0; p < t.phases.size(); ++p) {
        const std::size_t first = t.phases[p].sample;
        const std::size_t end = p + 1 < t.phases.size() ? t.phases[p + 1].sample : t.samples.size();
        std::size_t openings = 0;
        std::uint64_t grown = 0;
        std::uint64_t before = first > 0 ? t.samples[first - 1].reserved.count : 0;
        for (std::size_t i = first; i < end; ++i) {
            const std::uint64_t now = t.samples[i].reserved.count;
            if (now > before) {
                ++openings;
                grown += now - before;
            }
            before = now;
        }
        std::printf("  %-10s %6zu calls  %4zu openings  %10.1f MiB\n", t.phases[p].name, end - first, openings,
                    static_cast<double>(grown) / (1024.0 * 1024.0));
    }
}

}  // namespace

int main() {
    constexpr recipe bf16_adamw{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw};
    constexpr recipe bf16_checkpointed{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw,
                                       .grad_checkpointing = true};
    constexpr recipe fp32_adamw{.weights = dtype::fp32, .optimizer = optimizer_kind::adamw};
    report("llama-3-8b bf16, 1 x 4096", presets::llama_3_8b, bf16_adamw, {.batch = 1, .seq = 4096});
    report("llama-3-8b bf16 checkpointed, 4 x 4096", presets::llama_3_8b, bf16_checkpointed, {.batch = 4, .seq = 4096});
    report("bert-large fp32, 4 x 512", presets::bert_large, fp32_adamw, {.batch = 4, .seq = 512});
}
