// How far a layer extrapolation of the allocator replay could go
// (docs/performance.md, "The replay in 100 us"). For a few benchmark cases:
//   - the runs of identical layers in the replay's calls (the same calls,
//     sizes, owners and uses, a period apart): the model's construction,
//     each step's forward and backward, and the optimizer's steps;
//   - the calls that lie in a layer whose observable effect (each call's
//     change of reserved and allocated bytes) equals an earlier layer's of
//     its run: an upper bound on what skipping repeated layers could skip,
//     whatever the period it repeats with, since a skipped layer's effect
//     must be one already seen, and that is not sufficient;
//   - the blocks the pools cache at the start of each layer: whether the
//     allocator's state repeats from layer to layer.
//
//   g++ -std=c++20 -O2 -Iinclude bench/probe/layer_repetition.cpp -o /tmp/layer_repetition && /tmp/layer_repetition
#include <anatomy/anatomy.hpp>
#include <anatomy/reserved.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace anatomy;

struct layer_run {
    std::size_t start, period, layers;
};

// Runs of at least three layers: events equal a period apart, a release
// compared by its call alone (which tensor it frees moves with the layer).
std::vector<layer_run> layer_runs(const allocator_tape& tape) {
    const std::vector<allocator_event>& e = tape.events;
    const auto same = [&](std::size_t i, std::size_t j) {
        return e[i].call == e[j].call && e[i].owner == e[j].owner && e[i].use == e[j].use &&
               (e[i].call == allocator_call::release || e[i].value == e[j].value);
    };
    std::vector<layer_run> runs;
    for (std::size_t i = 0; i < e.size();) {
        layer_run best{i, 0, 0};
        for (std::size_t period = 8; period <= 1024 && i + 3 * period <= e.size(); ++period) {
            std::size_t equal = 0;
            while (i + period + equal < e.size() && same(i + equal, i + period + equal)) ++equal;
            const std::size_t layers = equal / period + 1;
            if (layers >= 3 && layers * period > best.layers * best.period) best = {i, period, layers};
        }
        if (best.period == 0) {
            ++i;
            continue;
        }
        runs.push_back(best);
        i += best.layers * best.period;
    }
    return runs;
}

struct effect {
    std::uint64_t reserved, allocated;
    bool operator==(const effect&) const = default;
};

// Plays `tape` on a fresh allocator call by call: each call's effect, and
// the blocks cached before each call.
void play(const allocator_tape& tape, std::vector<effect>& effects, std::vector<std::size_t>& cached) {
    caching_allocator a;
    std::vector<block_id> placed(tape.allocations, no_block);
    std::size_t next = 0;
    for (const allocator_event& e : tape.events) {
        cached.push_back(a.cached_blocks());
        const effect before{a.reserved().count, a.allocated().count};
        switch (e.call) {
            case allocator_call::allocate: placed[next++] = a.allocate(bytes{e.value}, e.owner, e.use); break;
            case allocator_call::release: a.release(placed[e.value]); break;
            case allocator_call::release_all: a.release_all(e.owner); break;
            case allocator_call::mark: break;
        }
        effects.push_back({a.reserved().count - before.reserved, a.allocated().count - before.allocated});
    }
}

void probe(const char* name, const model_spec& m, const recipe& r, const shape& asked) {
    const detail::prepared_step p = detail::prepare_step(m, r, devices::h200);
    // The whole replay on one tape: the model built, then three steps, each
    // walked, as detail::replay_on makes them (no accumulation, no DDP).
    allocator_tape tape;
    {
        caching_allocator a;
        a.tape_into(&tape);
        detail::build_model(p.graph, r, a);
        for (int step = 0; step < 3; ++step) {
            a.mark("step");
            (void)detail::walk_step(p.graph, m, compute_recipe(r), resolve(asked, m), devices::h200, 0, false, &a);
            detail::optimizer_step(p.graph, r, step == 0, a);
            a.release_all(tensor_owner::gradient);
        }
        a.tape_into(nullptr);
    }
    std::vector<effect> effects;
    std::vector<std::size_t> cached;
    play(tape, effects, cached);
    std::size_t repeated = 0;
    std::printf("%s: %zu calls\n", name, tape.events.size());
    for (const layer_run& run : layer_runs(tape)) {
        std::size_t run_repeated = 0;
        for (std::size_t layer = 1; layer < run.layers; ++layer) {
            const std::size_t begin = run.start + layer * run.period;
            const auto repeats = [&](std::size_t earlier) {
                for (std::size_t i = 0; i < run.period; ++i)
                    if (!(effects[begin + i] == effects[run.start + earlier * run.period + i])) return false;
                return true;
            };
            bool seen = false;
            for (std::size_t earlier = 0; earlier < layer && !seen; ++earlier) seen = repeats(earlier);
            if (seen) run_repeated += run.period;
        }
        repeated += run_repeated;
        std::printf("  %zu layers of %zu calls at call %zu: %zu calls in layers whose effect repeats an earlier layer's;"
                    " blocks cached at each layer's start:", run.layers, run.period, run.start, run_repeated);
        for (std::size_t layer = 0; layer < run.layers; ++layer) std::printf(" %zu", cached[run.start + layer * run.period]);
        std::printf("\n");
    }
    const double share = static_cast<double>(repeated) / static_cast<double>(tape.events.size());
    std::printf("  in all: %zu of %zu calls (%.1f %%) repeat; skipping them for free would be %.1fx faster\n", repeated,
                tape.events.size(), 100 * share, 1 / (1 - share));
}

}  // namespace

int main() {
    probe("llama-3-8b bf16 1 x 4096", presets::llama_3_8b, {.weights = dtype::bf16}, {.batch = 1, .seq = 4096});
    probe("llama-3-8b bf16 checkpointed 4 x 4096", presets::llama_3_8b,
          {.weights = dtype::bf16, .grad_checkpointing = true}, {.batch = 4, .seq = 4096});
    probe("bert-large fp32 4 x 512", presets::bert_large, {}, {.batch = 4, .seq = 512});
}
