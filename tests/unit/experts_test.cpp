// Mixtures of experts: total against active parameters, and what routing
// adds to a step.
#include <anatomy/estimate.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

#include <cstdint>

using namespace anatomy;

TEST_CASE("active parameters are the total less the routed experts a token does not use", "[experts][params]") {
    // Mixtral-8x7B: 32 layers of 8 experts, 2 per token, each gate/up/down of 4096 x 14336.
    const std::uint64_t expert = 3ULL * 4096 * 14336;
    const op_graph g = lower(presets::mixtral_8x7b);
    CHECK(parameter_count(g) - active_parameter_count(g, presets::mixtral_8x7b) == 32ULL * (8 - 2) * expert);
    // A dense model: every parameter is active.
    CHECK(active_parameter_count(lower(presets::llama_3_8b), presets::llama_3_8b) == parameter_count(lower(presets::llama_3_8b)));
}

TEST_CASE("the load-balancing loss keeps each MoE layer's router logits and their softmax", "[experts]") {
    model_spec m = presets::qwen3_30b_a3b;
    m.layers = 4;
    const recipe r{.weights = dtype::bf16};
    const shape s{.batch = 1, .seq = 1024};
    model_spec with_aux = m;
    with_aux.experts.aux_loss = true;
    // 4 layers x (the logits the output keeps + the softmax the loss keeps), 1024 tokens x 128 experts in bf16.
    const bytes per_layer = 2 * block_size(1024 * 128 * (2 * B));
    CHECK(estimate(with_aux, r, s).phases.forward - estimate(m, r, s).phases.forward == 4 * per_layer);
}

TEST_CASE("more experts per token route more rows: the peak grows with top_k", "[experts]") {
    model_spec m = presets::qwen3_30b_a3b;
    m.layers = 2;
    const recipe r{.weights = dtype::bf16};
    bytes previous{};
    for (std::uint64_t k : {1, 2, 4, 8, 16}) {
        m.experts.top_k = k;
        const bytes peak = estimate(m, r, {.batch = 2, .seq = 1024}).phases.backward;
        CHECK(peak > previous);
        previous = peak;
    }
    m.experts.top_k = 129;
    CHECK_THROWS_WITH(estimate(m, r, {.batch = 1, .seq = 16}), Catch::Contains("experts.top_k"));
}
