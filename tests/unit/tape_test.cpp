// A replay that walks each kind of micro-step once and plays its tape after
// that, and within that walk plays each run's second layer for the later
// ones, must be the replay that walks every layer of every step: the same
// peaks, the same verdict under a cap, the same recorded timeline.
#include "property_cases.hpp"

#include <anatomy/caching_allocator.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/presets.hpp>
#include <anatomy/reserved.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

using namespace anatomy;

namespace {

allocator_replay replay(const detail::prepared_step& p, const model_spec& m, const recipe& r, const shape& s,
                        bytes cap, detail::replay_mode mode, memory_timeline* timeline = nullptr) {
    caching_allocator a(cap);
    return detail::replay_on(p, m, r, s, devices::h200, a, timeline, mode);
}

bool same(const allocator_replay& x, const allocator_replay& y) {
    return x.peak_allocated == y.peak_allocated && x.peak_reserved == y.peak_reserved &&
           x.out_of_memory == y.out_of_memory;
}

}  // namespace

TEST_CASE("a taped replay is the replay that walks every step, capped and not", "[tape]") {
    // The property tests' cases, and two recipes that walk two kinds of
    // micro-step (accumulation; DDP's gradients as bucket views).
    const std::array<recipe, testing::property_recipe_count> properties = testing::property_recipes();
    std::array<recipe, testing::property_recipe_count + 2> recipes{};
    std::copy(properties.begin(), properties.end(), recipes.begin());
    recipes[properties.size()] = recipe{.weights = dtype::bf16, .grad_accum = 3};
    recipes[properties.size() + 1] = recipe{.weights = dtype::bf16, .parallel = parallelism::ddp, .world_size = 2,
                                            .ddp_bucket_view = true};
    std::size_t checked = 0;
    std::size_t out_of_memory = 0;
    testing::for_each_property_case(recipes, [&](std::string_view name, const model_spec& spec, const recipe& r,
                                                 std::size_t k) {
        INFO(name << ", recipe " << k);
        const detail::prepared_step prepared = detail::prepare_step(spec, r, devices::h200);
        const shape s{.batch = 2, .seq = spec.embedding.patches() ? 0ULL : 256ULL};
        const allocator_replay walked = replay(prepared, spec, r, s, {}, detail::replay_mode::walk_every_step);
        CHECK(same(replay(prepared, spec, r, s, {}, detail::replay_mode::taped), walked));
        // Under a cap a little below what it reserves, cached segments
        // are released, and some runs fail: in the last step or earlier.
        for (const std::uint64_t sixteenths : {15, 11}) {
            const bytes cap{walked.peak_reserved.count / 16 * sixteenths};
            const allocator_replay capped = replay(prepared, spec, r, s, cap, detail::replay_mode::walk_every_step);
            CHECK(same(replay(prepared, spec, r, s, cap, detail::replay_mode::taped), capped));
            out_of_memory += capped.out_of_memory ? 1 : 0;
        }
        ++checked;
    });
    CHECK(checked >= 300);
    CHECK(out_of_memory >= checked);  // at least one of the two caps fails, most of the time
}

TEST_CASE("a taped replay records the timeline that walking every step does", "[tape]") {
    for (const recipe& r : {recipe{.weights = dtype::bf16, .grad_accum = 2},
                            recipe{.weights = dtype::bf16, .grad_checkpointing = true}}) {
        const model_spec& m = presets::llama_3_2_1b;
        const detail::prepared_step prepared = detail::prepare_step(m, r, devices::h200);
        const shape s{.batch = 2, .seq = 512};
        memory_timeline taped;
        memory_timeline walked;
        (void)replay(prepared, m, r, s, {}, detail::replay_mode::taped, &taped);
        (void)replay(prepared, m, r, s, {}, detail::replay_mode::walk_every_step, &walked);
        REQUIRE(taped.samples.size() == walked.samples.size());
        REQUIRE(taped.phases.size() == walked.phases.size());
        bool samples_equal = true;
        for (std::size_t i = 0; i < taped.samples.size(); ++i)
            samples_equal = samples_equal && taped.samples[i].reserved == walked.samples[i].reserved &&
                            taped.samples[i].allocated == walked.samples[i].allocated;
        CHECK(samples_equal);
        for (std::size_t i = 0; i < taped.phases.size(); ++i) {
            CHECK(taped.phases[i].sample == walked.phases[i].sample);
            CHECK(std::string_view(taped.phases[i].name) == walked.phases[i].name);
        }
    }
}

TEST_CASE("a taped replay walks two layers of a run and plays the rest, and walks one step of three", "[tape]") {
    // llama-3.2-1b: its 16 layers are one run. The first step walks layers
    // 1 and 2, forward and backward, and plays the other 14 each way; the
    // second and third steps play the first's tape.
    const model_spec& m = presets::llama_3_2_1b;
    REQUIRE(m.layers == 16);
    const recipe r{.weights = dtype::bf16};
    const detail::prepared_step prepared = detail::prepare_step(m, r, devices::h200);
    const shape s{.batch = 2, .seq = 512};
    for (const auto& [mode, played] : {std::pair{detail::replay_mode::taped, std::size_t{2 * 14 + 2}},
                                      std::pair{detail::replay_mode::walk_every_step, std::size_t{0}}}) {
        caching_allocator a;
        (void)detail::replay_on(prepared, m, r, s, devices::h200, a, nullptr, mode);
        CHECK(a.tapes_played() == played);
    }
}

TEST_CASE("a taped replay plays a cycle's later passes, the embedding output held by the first", "[tape]") {
    // gemma-2-2b alternates sliding and full layers: 13 passes of a cycle of
    // two one-layer runs. The first step walks passes 1 and 2, forward and
    // backward, and plays the other 11 each way; the second step and the
    // third are played (the third was skipped, the second leaving the
    // allocator as it found it, until autograd's cuBLAS workspace was
    // placed in the first backward).
    const recipe r{.weights = dtype::bf16};
    const shape s{.batch = 2, .seq = 512};
    const model_spec& gemma2 = presets::gemma_2_2b;
    REQUIRE(gemma2.layers == 26);
    // gemma-3-1b: 4 passes of five sliding layers and a full one, then two
    // sliding layers. The first pass's first layer pins the embedding
    // output, which the last layer frees: the passes between hold it and
    // leave it alone. Each way, the first pass plays three layers of its
    // five-layer run, the second is taped and the last two play it.
    const model_spec& gemma3 = presets::gemma_3_1b;
    REQUIRE(gemma3.layers == 26);
    for (const auto& [m, played] : {std::pair{&gemma2, std::size_t{2 * 11 + 2}}, std::pair{&gemma3, std::size_t{2 * (3 + 2) + 2}}}) {
        const detail::prepared_step prepared = detail::prepare_step(*m, r, devices::h200);
        caching_allocator taped;
        (void)detail::replay_on(prepared, *m, r, s, devices::h200, taped, nullptr, detail::replay_mode::taped);
        CHECK(taped.tapes_played() == played);
        caching_allocator walked;
        (void)detail::replay_on(prepared, *m, r, s, devices::h200, walked, nullptr, detail::replay_mode::walk_every_step);
        CHECK(walked.tapes_played() == 0);
    }
}

TEST_CASE("a tape names tensors by allocation, so its replay frees what it allocated", "[tape][allocator]") {
    caching_allocator first;
    allocator_tape tape;
    const block_id before = first.allocate(4 * MiB, tensor_owner::model);
    first.tape_into(&tape);
    const block_id x = first.allocate(3 * MiB, tensor_owner::step);
    (void)first.allocate(5 * MiB, tensor_owner::step);
    first.release(x);
    (void)first.allocate(2 * MiB, tensor_owner::step);  // takes x's place
    first.release_all(tensor_owner::step);
    first.tape_into(nullptr);
    CHECK(tape.self_contained);
    CHECK(tape.allocations == 3);
    REQUIRE(tape.events.size() == 5);
    CHECK(tape.events[2].call == allocator_call::release);
    CHECK(tape.events[2].value == 0);

    // Played where other blocks lie, the tape frees its own first tensor.
    caching_allocator second;
    const block_id resident = second.allocate(4 * MiB, tensor_owner::model);
    (void)second.allocate(1 * MiB, tensor_owner::model);
    second.play(tape);
    CHECK(second.allocated() == 4 * MiB + 1 * MiB);
    CHECK(second.consistent());
    second.release(resident);  // still live: the tape freed only its own blocks

    // A walk that frees a block from before its tape cannot be played.
    allocator_tape reaching;
    first.tape_into(&reaching);
    first.release(before);
    first.tape_into(nullptr);
    CHECK_FALSE(reaching.self_contained);
    caching_allocator third;
    CHECK_THROWS_WITH(third.play(reaching), Catch::Contains("anatomy::caching_allocator::play"));
}

TEST_CASE("a layer's tape names the blocks from before it that it frees, and plays on others", "[tape][allocator]") {
    caching_allocator first;
    const block_id input = first.allocate(3 * MiB, tensor_owner::step);
    const block_id unnamed = first.allocate(6 * MiB, tensor_owner::step);
    allocator_tape layer;
    first.layer_tape_into(&layer, &input, 1);
    const block_id output = first.allocate(3 * MiB, tensor_owner::step);
    const block_id scratch = first.allocate(1 * MiB, tensor_owner::step);
    first.release(input);
    first.release(scratch);
    first.layer_tape_into(nullptr);
    CHECK(layer.self_contained);
    CHECK(layer.allocations == 2);
    REQUIRE(layer.events.size() == 4);
    CHECK(layer.events[2].call == allocator_call::release_external);
    CHECK(layer.events[2].value == 0);
    CHECK(layer.events[3].call == allocator_call::release);
    CHECK(layer.events[3].value == 1);
    // How the tape names what the layer hands on: its output by ordinal, a
    // freed block not at all.
    CHECK(first.layer_ref(output) == 0);
    CHECK(first.layer_ref(scratch) == no_ref);
    CHECK(first.layer_ref(no_block) == no_ref);

    // Played for the next layer, on the first one's output.
    detail::growing_vector<block_id> placed;
    first.play(layer, &output, placed);
    REQUIRE(placed.size() == 2);
    CHECK(first.allocated() == 6 * MiB + 3 * MiB);  // `unnamed` and the new output
    CHECK(first.consistent());
    first.release(placed[0]);
    first.release(unnamed);
    CHECK(first.allocated() == 0 * B);

    // A layer that frees a block from before it that it was not given cannot be played.
    caching_allocator second;
    const block_id held = second.allocate(2 * MiB, tensor_owner::step);
    allocator_tape reaching;
    second.layer_tape_into(&reaching);
    second.release(held);
    second.layer_tape_into(nullptr);
    CHECK_FALSE(reaching.self_contained);
    CHECK_THROWS_WITH(second.play(reaching, nullptr, placed), Catch::Contains("anatomy::caching_allocator::play"));
}

TEST_CASE("the allocator is unchanged since a token only with the same segments and live blocks", "[tape][allocator]") {
    caching_allocator a;
    const block_id weight = a.allocate(4 * MiB, tensor_owner::model);
    const caching_allocator::state_token start = a.state();
    CHECK(a.unchanged_since(start));
    // A tensor made and freed within the segment: its gap merges back.
    const block_id scratch = a.allocate(8 * MiB, tensor_owner::step);
    CHECK_FALSE(a.unchanged_since(start));
    a.release(scratch);
    CHECK(a.unchanged_since(start));
    // As many live blocks, but another one: an older block freed, a newer kept.
    a.release(weight);
    const block_id other = a.allocate(4 * MiB, tensor_owner::model);
    CHECK(a.allocated() == 4 * MiB);
    CHECK_FALSE(a.unchanged_since(start));
    // A new segment, though every tensor made since is freed.
    const caching_allocator::state_token before_segment = a.state();
    const block_id large = a.allocate(64 * MiB, tensor_owner::step);
    a.release(large);
    CHECK_FALSE(a.unchanged_since(before_segment));
    a.release(other);
}

TEST_CASE("a replay skips the micro-steps and steps that repeat one that left the allocator as it found it",
          "[tape]") {
    // With 8 micro-steps of accumulation, llama-3.2-1b's later micro-steps
    // leave the allocator as they found it: the replay stops playing them,
    // and answers what the replay that walks every micro-step does, capped
    // and not.
    const model_spec& m = presets::llama_3_2_1b;
    const recipe r{.weights = dtype::bf16, .grad_accum = 8};
    const shape s{.batch = 2, .seq = 512};
    const detail::prepared_step prepared = detail::prepare_step(m, r, devices::h200);
    caching_allocator taped;
    const allocator_replay skipped = detail::replay_on(prepared, m, r, s, devices::h200, taped);
    // Without skips: the first micro-step of each kind walked, the others
    // played, 3 steps of 8, and each walk plays 2 × 14 layers.
    CHECK(taped.tapes_played() < 3 * 8 - 2 + 2 * 2 * 14);
    const allocator_replay walked = replay(prepared, m, r, s, {}, detail::replay_mode::walk_every_step);
    CHECK(same(skipped, walked));
    for (const std::uint64_t sixteenths : {15, 12}) {
        const bytes cap{walked.peak_reserved.count / 16 * sixteenths};
        CHECK(same(replay(prepared, m, r, s, cap, detail::replay_mode::taped),
                   replay(prepared, m, r, s, cap, detail::replay_mode::walk_every_step)));
    }
}
