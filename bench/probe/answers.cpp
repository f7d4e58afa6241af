// Every answer a change to the estimator's speed must leave alone, one line
// each: the estimate (peak, activations, forward phase, parameters) of every
// preset under 8 recipes at batches 1 and 4 (a recipe a preset cannot run
// prints its error), and the allocator replay
// (peak allocated, peak reserved, and under a cap 64 MiB below that
// reserve: OOM and peak reserved) of every preset up to 1.6 B parameters
// under 7 recipes at batches 1 and 3, and those presets' max_batch at 256
// tokens in 4 and 24 GiB. bench/same_answers.sh diffs two trees.
#include <anatomy/anatomy.hpp>
#include <anatomy/reserved.hpp>

#include <cstdio>
#include <exception>
#include <iterator>
#include <string>

int main() {
    using namespace anatomy;
    recipe recipes[] = {recipe{},
                        recipe{.weights = dtype::bf16},
                        recipe{.weights = dtype::bf16, .grad_checkpointing = true},
                        recipe{.weights = dtype::fp16, .master = master_weights::fp32},
                        recipe{.grad_accum = 2},
                        recipe{.optimizer = optimizer_kind::none, .inference = true},
                        recipe{.weights = dtype::bf16, .compile = true},
                        recipe{.lora = {.rank = 8}}};
    for (const auto& p : presets::all) {
        const model_spec m = p.spec;  // a model_spec, or a preset that converts to one
        const std::string name(p.name);
        // LoRA on the first linear module of a layer, whatever the family calls it.
        const op_graph graph = lower(m);
        std::string_view target;
        for_each_op(graph, [&](const stage& st, const op& o) {
            if (target.empty() && st.block && o.kind == op_kind::linear) target = o.module.name;
        });
        recipes[std::size(recipes) - 1].lora.targets[0] = target;
        for (std::size_t k = 0; k < std::size(recipes); ++k)
            for (const std::uint64_t b : {1, 4}) {
                const shape s{.batch = b, .seq = m.embedding.patches() ? 0ULL : 512ULL};
                try {
                    const memory_estimate e = estimate(m, recipes[k], s);
                    std::printf("estimate %s %zu %llu: %llu %llu %llu %llu\n", name.c_str(), k,
                                static_cast<unsigned long long>(b), static_cast<unsigned long long>(e.peak.count),
                                static_cast<unsigned long long>(e.ledger.activations.count),
                                static_cast<unsigned long long>(e.phases.forward.count),
                                static_cast<unsigned long long>(e.params));
                } catch (const std::exception& x) {
                    std::printf("estimate %s %zu %llu: %s\n", name.c_str(), k, static_cast<unsigned long long>(b), x.what());
                }
            }
        if (parameter_count(lower(m)) > 1'600'000'000ULL) continue;
        for (std::size_t k = 0; k + 1 < std::size(recipes); ++k)
            for (const std::uint64_t b : {1, 3}) {
                const shape s{.batch = b, .seq = m.embedding.patches() ? 0ULL : 256ULL};
                try {
                    const allocator_replay free_run = replay_allocator(m, recipes[k], s);
                    const allocator_replay capped = replay_allocator(m, recipes[k], s, free_run.peak_reserved - 64 * MiB);
                    std::printf("replay %s %zu %llu: %llu %llu %d %llu\n", name.c_str(), k, static_cast<unsigned long long>(b),
                                static_cast<unsigned long long>(free_run.peak_allocated.count),
                                static_cast<unsigned long long>(free_run.peak_reserved.count), capped.out_of_memory ? 1 : 0,
                                static_cast<unsigned long long>(capped.peak_reserved.count));
                } catch (const std::exception& x) {
                    std::printf("replay %s %zu %llu: %s\n", name.c_str(), k, static_cast<unsigned long long>(b), x.what());
                }
            }
        for (std::size_t k = 0; k + 1 < std::size(recipes); ++k)
            for (const bytes budget : {4 * GiB, 24 * GiB}) {
                const shape s{.batch = 1, .seq = m.embedding.patches() ? 0ULL : 256ULL};
                try {
                    std::printf("max_batch %s %zu %llu: %llu\n", name.c_str(), k,
                                static_cast<unsigned long long>(budget.count / GiB.count),
                                static_cast<unsigned long long>(max_batch(m, recipes[k], s, budget)));
                } catch (const std::exception& x) {
                    std::printf("max_batch %s %zu %llu: %s\n", name.c_str(), k,
                                static_cast<unsigned long long>(budget.count / GiB.count), x.what());
                }
            }
    }
}
