// The allocator replay under a cap, batch by batch, beside what a fresh
// process measured (tests/data/fresh-fit-*.jsonl): whether it runs out of
// memory, and its peak allocated and reserved bytes. Serving with the KV
// cache, bf16 weights (docs/accuracy.md, "Held-out recipes": deepseek-v2-lite
// at 2,048 tokens under 48 GiB, batches 33 to 39).
//
//   g++ -std=c++20 -O2 -Iinclude -Iexamples/cli bench/probe/capped_replay.cpp -o /tmp/capped_replay -lfmt
//   /tmp/capped_replay tests/data/configs/deepseek-v2-lite.json 2048 48 33 39
#include <anatomy/anatomy.hpp>

#include "hf_config.hpp"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    using namespace anatomy;
    if (argc != 6) {
        std::fprintf(stderr, "usage: capped_replay CONFIG SEQ CAP_GIB FIRST_BATCH LAST_BATCH\n");
        return 2;
    }
    const model_spec m = cli::load_hf_config(argv[1]).spec;
    const recipe r{.weights = dtype::bf16, .optimizer = optimizer_kind::none, .inference = true, .kv_cache = true};
    const std::uint64_t seq = std::strtoull(argv[2], nullptr, 10);
    // As max_batch tests a fit: cuBLASLt's workspace comes off the cap first.
    const bytes cap = std::strtoull(argv[3], nullptr, 10) * GiB - cublas_workspace_beside_replay();
    const std::uint64_t last = std::strtoull(argv[5], nullptr, 10);
    for (std::uint64_t b = std::strtoull(argv[4], nullptr, 10); b <= last; ++b) {
        const allocator_replay x = replay_allocator(m, r, {.batch = b, .seq = seq}, cap);
        std::printf("batch %llu: %s, peak allocated %.2f GiB, reserved %.2f GiB\n", static_cast<unsigned long long>(b),
                    x.out_of_memory ? "out of memory" : "fits", static_cast<double>(x.peak_allocated.count) / GiB.count,
                    static_cast<double>(x.peak_reserved.count) / GiB.count);
    }
}
