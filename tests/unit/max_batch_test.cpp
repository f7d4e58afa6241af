#include <anatomy/max_batch.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

using namespace anatomy;

TEST_CASE("max_batch is 0 when the model state alone does not fit", "[max_batch]") {
    CHECK(max_batch(presets::llama_3_8b, {.weights = dtype::bf16}, {.seq = 2048}, 16 * GiB) == 0);
}

TEST_CASE("max_batch is the largest batch the replayed allocator runs under the cap", "[max_batch]") {
    for (const bytes budget : {8 * GiB, 16 * GiB, 24 * GiB}) {
        INFO(budget.count);
        const std::uint64_t b = max_batch(presets::gpt2, {}, {.seq = 1024}, budget);
        REQUIRE(b > 0);
        const bytes cap = budget - cublas_workspace_beside_replay();
        CHECK_FALSE(replay_allocator(presets::gpt2, {}, {.batch = b, .seq = 1024}, cap).out_of_memory);
        CHECK(replay_allocator(presets::gpt2, {}, {.batch = b + 1, .seq = 1024}, cap).out_of_memory);
    }
}

TEST_CASE("max_batch never exceeds its search limit", "[max_batch]") {
    CHECK(max_batch(presets::tinybert, {.weights = dtype::bf16}, {.seq = 8}, 80 * GiB, 37) == 37);
}

TEST_CASE("max_batch reports invalid inputs", "[max_batch][errors]") {
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 0}, 10 * GiB), Catch::Contains("seq must be > 0"));
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 8}, 10 * GiB, 0), Catch::Contains("limit must be > 0"));
}

// Real searches on an H200 (bench/torch_reference/max_batch_search.py and
// fresh_fit.py, results/*.json): the largest batch that ran three steps under
// torch.cuda.set_per_process_memory_fraction, each batch in a fresh process.
TEST_CASE("max_batch gives the largest batch the H200 ran", "[max_batch][h200]") {
    struct measured_search {
        const char* name;
        model_spec model;
        recipe training;
        shape per_batch;
        bytes cap;
        std::uint64_t real;
    };
    const measured_search cases[] = {
        {"gpt2 fp32, 16 GiB", presets::gpt2, {}, {.seq = 1024}, 16 * GiB, 7},
        {"gpt2 fp32, 40 GiB", presets::gpt2, {}, {.seq = 1024}, 40 * GiB, 19},
        {"bert-large fp32, 16 GiB", presets::bert_large, {}, {.seq = 512}, 16 * GiB, 14},
        {"tinyllama bf16, 40 GiB", presets::tinyllama_1_1b, {.weights = dtype::bf16}, {.seq = 2048}, 40 * GiB, 7},
        {"llama-3.2-1b bf16 gc, 40 GiB", presets::llama_3_2_1b, {.weights = dtype::bf16, .grad_checkpointing = true},
         {.seq = 2048}, 40 * GiB, 8},
        {"qwen2.5-0.5b amp bf16, 24 GiB", presets::qwen2_5_0_5b, {.autocast = autocast_mode::bf16}, {.seq = 1024},
         24 * GiB, 4},
        {"t5-small fp32, 8 GiB", presets::t5_small, {}, {.seq = 512, .target_seq = 128}, 8 * GiB, 20},
        {"distilbert amp fp16, 4 GiB", presets::distilbert_base, {.autocast = autocast_mode::fp16}, {.seq = 128},
         4 * GiB, 117},
    };
    for (const auto& c : cases) {
        INFO(c.name);
        // Exact since the optimizer's state is created in model order, then
        // its scratch: four of these were one batch (or 4.3 %) short before.
        CHECK(max_batch(c.model, c.training, c.per_batch, c.cap) == c.real);
    }
}

TEST_CASE("the allocator replay frees each tensor's own block: reserved never falls below the peak",
          "[allocator][replay]") {
    // Freeing by size alone once returned a parameter gradient's block for a
    // dead activation: llama-3-8b fp32 with checkpointing at 8 x 512 replayed
    // to 134.6 GB reserved under its own 160.6 GB peak.
    const recipe r{.grad_checkpointing = true};
    const shape s{.batch = 8, .seq = 512};
    const memory_estimate e = estimate(presets::llama_3_8b, r, s);
    const allocator_replay replay = replay_allocator(presets::llama_3_8b, r, s);
    CHECK(replay.peak_allocated >= e.peak);
    CHECK(replay.peak_reserved >= replay.peak_allocated);
    // And the fit verdicts agree: the largest batch under the replayed need fits, one more does not.
    const bytes budget = replay.peak_reserved + cublas_workspace_beside_replay();
    const std::uint64_t best = max_batch(presets::llama_3_8b, r, {.seq = 512}, budget, 64);
    CHECK(best >= 8);
    CHECK(replay_allocator(presets::llama_3_8b, r, {.batch = best + 1, .seq = 512}).peak_reserved +
              cublas_workspace_beside_replay() > budget);
}

TEST_CASE("sliding-window layers are a cycle of stages; the estimate is linear in it", "[graph][layers]") {
    // gemma-3-27b: 62 layers, five sliding to one full: ten cycles of 6, then 2 sliding.
    const op_graph g = lower(presets::gemma_3_27b);
    CHECK(g.cycle.times == 10);
    std::uint64_t layers = 0;
    for (std::size_t i = 0; i < g.stages.size(); ++i)
        if (g.stages[i].block) layers += g.copies(i);
    CHECK(layers == 62);
    // The walk over one cycle extrapolates to what a layer-by-layer replay sees.
    const recipe r{.weights = dtype::bf16, .grad_checkpointing = true};
    const shape s{.batch = 1, .seq = 1024};
    CHECK(replay_allocator(presets::gemma_3_1b, r, s).peak_allocated >= estimate(presets::gemma_3_1b, r, s).peak);
}

TEST_CASE("the search from a guess finds the largest fitting batch in a few probes", "[max_batch][search]") {
    // Every threshold, every guess: the answer is the threshold, and the
    // probes grow with the log of the guess's distance from it, not with it.
    constexpr std::uint64_t limit = 200;
    for (std::uint64_t answer = 0; answer <= limit; ++answer) {
        for (std::uint64_t guess = 1; guess <= limit; ++guess) {
            for (const std::uint64_t known : {std::uint64_t{0}, answer > 0 ? std::uint64_t{1} : std::uint64_t{0}}) {
                std::uint64_t probes = 0;
                const std::uint64_t found = detail::largest_batch_from(guess, known, limit, [&](std::uint64_t b) {
                    ++probes;
                    REQUIRE(b >= 1);
                    REQUIRE(b <= limit);
                    return b <= answer;
                });
                INFO("answer " << answer << ", guess " << guess << ", known " << known);
                REQUIRE(found == answer);
                const std::uint64_t distance = guess > answer ? guess - answer : answer - guess;
                std::uint64_t log2 = 0;
                while ((std::uint64_t{1} << log2) <= distance) ++log2;
                REQUIRE(probes <= 2 * log2 + 2);
            }
        }
    }
    // A right guess costs two probes: it fits and one more does not.
    std::uint64_t probes = 0;
    CHECK(detail::largest_batch_from(94, 1, 1 << 16, [&](std::uint64_t b) { return ++probes, b <= 94; }) == 94);
    CHECK(probes == 2);
    // The whole 64-bit range: no step wraps.
    CHECK(detail::largest_batch_from(1, 0, UINT64_MAX, [](std::uint64_t b) { return b <= (1ULL << 62); }) ==
          1ULL << 62);
}

TEST_CASE("an estimator answers every shape as estimate() and replay_allocator() do, in any order",
          "[max_batch][estimator]") {
    const recipe r{.weights = dtype::bf16, .grad_checkpointing = true};
    const estimator e(presets::gpt2, r);
    for (const std::uint64_t batch : {4, 1, 8, 1}) {
        const shape s{.batch = batch, .seq = 512};
        INFO("batch " << batch);
        CHECK(e.estimate(s).peak == estimate(presets::gpt2, r, s).peak);
        CHECK(e.estimate(s).ledger.activations == estimate(presets::gpt2, r, s).ledger.activations);
        CHECK(e.replay(s).peak_reserved == replay_allocator(presets::gpt2, r, s).peak_reserved);
    }
    CHECK(max_batch(e, {.seq = 512}, 8 * GiB) == max_batch(presets::gpt2, r, {.seq = 512}, 8 * GiB));
    const device_matches v100 = find_devices("v100-16gb");
    REQUIRE(v100.count == 1);
    CHECK_THROWS_WITH(estimator(presets::gpt2, {.weights = dtype::bf16}, *v100.found[0]),
                      Catch::Contains("bf16 needs compute capability 8.0"));
}

TEST_CASE("max_batch and fits_under refuse DeepSpeed ZeRO, whose reserved memory is not modelled",
          "[max_batch][errors]") {
    // The H200 in a fresh process reserves 10-16 % more than the replay for
    // tinyllama under ZeRO-1, 2 and 3: a fit verdict would claim batches that
    // do not run.
    for (const parallelism p : {parallelism::zero1, parallelism::zero2, parallelism::zero3}) {
        const recipe zero{.weights = dtype::bf16, .master = master_weights::fp32, .parallel = p};
        CHECK_THROWS_WITH(max_batch(presets::gpt2, zero, {.seq = 256}, 40 * GiB),
                          Catch::Contains("DeepSpeed ZeRO's reserved memory is not modelled"));
        CHECK_THROWS_WITH(fits_under(presets::gpt2, zero, {.batch = 1, .seq = 256}, 40 * GiB),
                          Catch::Contains("DeepSpeed ZeRO's reserved memory is not modelled"));
    }
    // The twin: DDP's fit is the replay's.
    const recipe ddp{.weights = dtype::bf16, .parallel = parallelism::ddp, .world_size = 2};
    CHECK(max_batch(presets::gpt2, ddp, {.seq = 256}, 40 * GiB) > 0);
}

TEST_CASE("max_batch answers checkpointing over a quantized base, and refuses it under the Trainer",
          "[max_batch][errors]") {
    // tinyllama NF4 LoRA checkpointed, reentrant as peft leaves it or not: a
    // fresh H200 process runs 6 x 2048 under a 24 GiB cap and runs out of
    // memory at 7 (tests/data/fresh-fit-training-h200.jsonl,
    // quantized-gc-fit-h200.jsonl).
    recipe qlora{.weights = dtype::fp32, .grad_checkpointing = true, .quantize = quantization::nf4};
    qlora.lora.rank = 8;
    qlora.lora.targets[0] = "q_proj";
    qlora.lora.targets[1] = "v_proj";
    for (const checkpoint_impl impl : {checkpoint_impl::as_enabled, checkpoint_impl::non_reentrant}) {
        qlora.checkpoint = impl;
        CHECK(max_batch(presets::tinyllama_1_1b, qlora, {.seq = 2048}, 24 * GiB) == 6);
        CHECK_FALSE(fits_under(presets::tinyllama_1_1b, qlora, {.batch = 7, .seq = 2048}, 24 * GiB));
    }
    // Under the Trainer (its non-reentrant checkpoint) the replay reserved
    // 4.9 % less than the H200 did.
    qlora.loop = training_loop::hf_trainer;
    CHECK_THROWS_WITH(max_batch(presets::tinyllama_1_1b, qlora, {.seq = 2048}, 24 * GiB),
                      Catch::Contains("over a quantized base under transformers.Trainer is not modelled"));
    CHECK_THROWS_WITH(fits_under(presets::tinyllama_1_1b, qlora, {.batch = 4, .seq = 2048}, 24 * GiB),
                      Catch::Contains("or ask without grad_checkpointing"));
    // The reentrant checkpoint was measured only over a quantized base.
    recipe reentrant{.weights = dtype::bf16, .grad_checkpointing = true};
    reentrant.checkpoint = checkpoint_impl::reentrant;
    CHECK_THROWS_WITH(max_batch(presets::tinyllama_1_1b, reentrant, {.seq = 2048}, 24 * GiB),
                      Catch::Contains("checkpoint_impl::non_reentrant"));
    // The twins: the Trainer without checkpointing, and the plain base
    // checkpointed non-reentrantly.
    recipe unchecked = qlora;
    unchecked.grad_checkpointing = false;
    unchecked.checkpoint = checkpoint_impl::as_enabled;
    CHECK(max_batch(presets::tinyllama_1_1b, unchecked, {.seq = 1024}, 24 * GiB) > 0);
    recipe plain = reentrant;
    plain.checkpoint = checkpoint_impl::as_enabled;
    CHECK(max_batch(presets::tinyllama_1_1b, plain, {.seq = 2048}, 24 * GiB) > 0);
}
