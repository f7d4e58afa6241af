// Megatron per rank against Megatron-LM's own arithmetic
// (megatron/training/theoretical_memory_usage.py, evaluated for these
// configurations; its activation figure is the sequence-parallel, selective
// recompute path, Table 2's last row) and against Table 2 itself.
#include <anatomy/megatron.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

using namespace anatomy;
using megatron::config;
using megatron::recompute;

TEST_CASE("megatron: weights, optimizer and activations as theoretical_memory_usage.py computes them") {
    struct expected {
        model_spec model;
        shape micro;
        config c;
        std::uint64_t params_on_rank, weights_and_optimizer, activations;
    };
    const expected cases[] = {
        // GPT-3 175B, tp 8, pp 16, dp 8, distributed optimizer, 64 micro-batches of 1 x 2048.
        {presets::gpt3_175b, {.batch = 1, .seq = 2048}, {8, 16, 8, true, recompute::selective, true, 64},
         1437634752, 10782260640, 10318020608},
        // GPT-3 175B, tp 8, one stage: the output layer's activations are on it.
        {presets::gpt3_175b, {.batch = 1, .seq = 2048}, {8, 1, 1, true, recompute::selective, false, 0},
         21822508032, 392805144576, 10335815680},
        // Llama-2-70B, tp 8, pp 4, 3 micro-batches: fewer than the stages, so 3 in flight.
        {presets::llama_2_70b, {.batch = 1, .seq = 4096}, {8, 4, 2, true, recompute::selective, true, 3},
         2172690688, 26072288256, 8065658880},
        // Llama-2-70B, tp 8, one stage, untied output layer on it.
        {presets::llama_2_70b, {.batch = 2, .seq = 4096}, {8, 1, 1, true, recompute::selective, false, 0},
         8623653888, 155225769984, 21651005440},
    };
    for (const expected& e : cases) {
        CHECK(megatron::parameters_on_most_loaded_rank(e.model, e.c) == e.params_on_rank);
        CHECK(megatron::weights_and_optimizer(e.model, e.c).count == e.weights_and_optimizer);
        CHECK(megatron::activations(e.model, e.micro, e.c).count == e.activations);
    }
}

TEST_CASE("megatron: Table 2, activation bytes per layer") {
    // s = 2048, b = 1, h = 12288, a = 96: sbh = 25,165,824 and 5as/h = 80.
    const model_spec m = presets::gpt3_175b;
    const shape micro{.batch = 1, .seq = 2048};
    const std::uint64_t sbh = 2048ULL * 12288;
    const auto layer = [&](std::uint64_t tp, bool sp, recompute r) {
        return megatron::layer_activations(m, micro, {.tp = tp, .sp = sp, .activations = r}).count;
    };
    CHECK(layer(1, false, recompute::none) == sbh * (34 + 80));
    CHECK(layer(8, false, recompute::none) == sbh * 10 + sbh * (24 + 80) / 8);
    CHECK(layer(8, true, recompute::none) == sbh * (34 + 80) / 8);
    CHECK(layer(8, false, recompute::selective) == sbh * 10 + sbh * 24 / 8);
    CHECK(layer(8, true, recompute::selective) == sbh * 34 / 8);
    CHECK(layer(8, true, recompute::full) == 2 * sbh / 8);
}

TEST_CASE("megatron: bad configurations are refused by name") {
    CHECK_THROWS_WITH(megatron::activations(presets::gpt3_175b, {.batch = 1, .seq = 2048}, {.tp = 7}),
                      Catch::Contains("anatomy::megatron::validate: tp must divide the attention heads"));
    CHECK_THROWS_WITH(megatron::activations(presets::gpt3_175b, {.batch = 1, .seq = 2048}, {.pp = 7}),
                      Catch::Contains("pp must divide the layers"));
    CHECK_THROWS_WITH(megatron::activations(presets::t5_base, {.batch = 1, .seq = 512}, {}),
                      Catch::Contains("decoder-only"));
}
