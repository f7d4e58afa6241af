// The per-parameter byte table every source quotes, reproduced recipe by recipe.
#include <anatomy/entries.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/names.hpp>
#include <anatomy/optimizer.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace anatomy;

namespace {

constexpr shape bert_shape{.batch = 4, .seq = 512};

double bytes_per_param(const recipe& r, bytes memory_ledger::*entry) {
    const memory_estimate e = estimate(presets::bert_large, r, bert_shape);
    return per_param(e.model_state.*entry, e.params);
}

double total_per_param(const recipe& r) {
    const memory_estimate e = estimate(presets::bert_large, r, bert_shape);
    return per_param(total(e.model_state), e.params);
}

}  // namespace

TEST_CASE("the textbook table: bytes per parameter of each recipe", "[ledger]") {
    const recipe fp32_adamw{};
    const recipe half_master_adamw{.weights = dtype::fp16, .master = master_weights::fp32};
    const recipe half_inference{.weights = dtype::bf16, .optimizer = optimizer_kind::none, .inference = true};
    const recipe half_master_inference{.weights = dtype::fp16, .master = master_weights::fp32,
                                       .optimizer = optimizer_kind::none, .inference = true};
    CHECK(total_per_param(fp32_adamw) == 16.0);
    CHECK(total_per_param(half_master_adamw) == 18.0);
    CHECK(total_per_param(half_inference) == 2.0);
    CHECK(total_per_param(half_master_inference) == 6.0);

    CHECK(bytes_per_param({.optimizer = optimizer_kind::sgd_momentum}, &memory_ledger::optimizer_state) == 4.0);
    CHECK(bytes_per_param({.optimizer = optimizer_kind::sgd}, &memory_ledger::optimizer_state) == 0.0);
    CHECK(bytes_per_param({.optimizer = optimizer_kind::lion}, &memory_ledger::optimizer_state) == 4.0);
    CHECK(bytes_per_param({.weights = dtype::bf16}, &memory_ledger::optimizer_state) == 4.0);
    // 2 B of uint8 state plus 8 B of fp32 absmax per 256-element block: 2.03 B.
    CHECK(bytes_per_param({.optimizer = optimizer_kind::adam8bit}, &memory_ledger::optimizer_state) ==
          Approx(2.0).margin(0.05));
    CHECK(bytes_per_param({.optimizer = optimizer_kind::adafactor}, &memory_ledger::optimizer_state) < 0.05);
}

TEST_CASE("half weights + fp32 master: the master copy and fp32 gradients", "[ledger]") {
    const memory_estimate e =
        estimate(presets::bert_large, {.weights = dtype::bf16, .master = master_weights::fp32}, bert_shape);
    CHECK(e.model_state.weights == e.params * (2 * B));
    CHECK(e.model_state.master_weights == e.params * (4 * B));
    CHECK(e.model_state.gradients == e.params * (4 * B));
    CHECK(e.model_state.optimizer_state == e.params * (8 * B));
}

TEST_CASE("optimizer state per tensor follows each implementation's layout", "[ledger][optimizer]") {
    const param_tensor matrix{1024, 4096};
    const param_tensor vector{1024, 0};
    CHECK(optimizer_state(optimizer_kind::adamw, matrix, dtype::fp32) == 2 * (1024 * 4096 * (4 * B)));
    CHECK(optimizer_state(optimizer_kind::adamw, matrix, dtype::bf16) == 2 * (1024 * 4096 * (2 * B)));
    CHECK(optimizer_state(optimizer_kind::adamw_fused, vector, dtype::fp32) == 2 * (1024 * (4 * B)) + 4 * B);
    CHECK(optimizer_state(optimizer_kind::adafactor, matrix, dtype::bf16) == (1024 + 4096) * (4 * B));
    CHECK(optimizer_state(optimizer_kind::adafactor, vector, dtype::fp32) == 1024 * (4 * B));
    // bitsandbytes: tensors under 4096 elements keep two fp32 states.
    CHECK(optimizer_state(optimizer_kind::adam8bit, vector, dtype::fp32) == 2 * (1024 * (4 * B)));
    CHECK(optimizer_state(optimizer_kind::adam8bit, param_tensor{4095, 0}, dtype::fp32) == 2 * (4095 * (4 * B)));
    // 4097 elements: 8-bit state and ceil(4097 / 256) = 17 absmax blocks each.
    CHECK(optimizer_state(optimizer_kind::adam8bit, param_tensor{4097, 0}, dtype::fp32) ==
          2 * (4097 * B) + 2 * (17 * (4 * B)));
    CHECK(optimizer_state_tensors(optimizer_kind::adam8bit, matrix, dtype::fp32).size() == 4);
    CHECK(optimizer_shared_state(optimizer_kind::adam8bit, matrix) == 2 * KiB);
    CHECK(optimizer_shared_state(optimizer_kind::adam8bit, vector) == 0 * B);
}

TEST_CASE("the ledger is iterated, never hand-listed", "[ledger]") {
    const memory_estimate e = estimate(presets::gpt2, {}, {.batch = 1, .seq = 128});
    std::vector<std::string> names;
    bytes sum{};
    for_each_entry(e.ledger, [&](std::string_view name, bytes value) {
        names.emplace_back(name);
        sum += value;
    });
    CHECK(names == std::vector<std::string>{"weights", "gradients", "master_weights", "optimizer_state", "activations",
                                            "temporaries", "communication", "gathered_weights", "allocator_rounding"});
    CHECK(sum == total(e.ledger));
    CHECK(sum == e.peak);
    CHECK(total(e.model_state) == e.params * (16 * B));
}

TEST_CASE("the ledger at the peak holds what that phase holds", "[ledger][phases]") {
    // gpt2 at 8 x 1024 peaks in backward, at the loss: no parameter gradient yet.
    const memory_estimate big = estimate(presets::gpt2, {}, {.batch = 8, .seq = 1024});
    CHECK(big.peak == big.phases.backward);
    CHECK(big.ledger.activations > 10 * GiB);
    CHECK(big.ledger.temporaries == bytes{});
    // At 1 x 16 tokens the optimizer step peaks: all gradients, state and
    // foreach AdamW's one parameter-sized temporary.
    const memory_estimate small = estimate(presets::gpt2, {}, {.batch = 1, .seq = 16});
    CHECK(small.peak == small.phases.optimizer);
    CHECK(small.ledger.gradients == small.model_state.gradients);
    CHECK(small.ledger.temporaries >= small.model_state.weights);
    CHECK(small.ledger.activations == bytes{});
}

TEST_CASE("LoRA trains fp32 adapters over a frozen base", "[ledger][lora]") {
    recipe r{.weights = dtype::bf16};
    r.lora = {.rank = 8, .targets = {"q_proj", "v_proj"}};
    const memory_estimate e = estimate(presets::llama_3_2_1b, r, {.batch = 1, .seq = 512});
    // q: A [8, 2048] + B [2048, 8]; v: A [8, 2048] + B [512, 8]; 16 layers.
    const std::uint64_t adapters = 16 * (8 * 2048 + 2048 * 8 + 8 * 2048 + 512 * 8);
    CHECK(e.trainable_params == adapters);
    CHECK(e.params == 1235814400 + adapters);
    CHECK(e.model_state.gradients == adapters * (4 * B));
    CHECK(e.model_state.optimizer_state == adapters * (8 * B));
    CHECK(e.model_state.weights == 1235814400 * (2 * B) + adapters * (4 * B));
}

TEST_CASE("LoRA targets match peft's suffix rule", "[lora]") {
    const lora_config lora{.rank = 4, .targets = {"query", "self_attn.v_proj"}};
    CHECK(lora.targets_module({"attention", "self.query"}));
    CHECK(lora.targets_module({"", "query"}));
    CHECK(lora.targets_module({"model.layers.0.self_attn", "v_proj"}));
    CHECK_FALSE(lora.targets_module({"attention", "self.subquery"}));
    CHECK_FALSE(lora.targets_module({"self_attn", "k_proj"}));
    CHECK_FALSE(lora.targets_module({"cross_attn", "v_proj"}));
    recipe r{};
    r.lora = {.rank = 8, .targets = {"c_attn", "no_such_module"}};
    CHECK_THROWS_WITH(estimate(presets::gpt2, r, {.batch = 1, .seq = 64}), Catch::Contains("matches no linear module"));
}

TEST_CASE("gradient accumulation keeps gradients through forward and backward", "[ledger][phases]") {
    // Measured on an H200: micro-batch 2's forward and backward peaks are each
    // micro-batch 1's plus the gradients already present.
    const shape s{.batch = 8, .seq = 512};
    const memory_estimate one = estimate(presets::gpt2, {}, s);
    const memory_estimate two = estimate(presets::gpt2, {.grad_accum = 2}, s);
    const bytes grads = one.model_state.gradients;
    CHECK(two.phases.forward - one.phases.forward >= grads);
    CHECK(two.phases.forward - one.phases.forward < grads + 1 * MiB);
    CHECK(two.phases.backward - one.phases.backward >= grads);
    CHECK(two.phases.backward - one.phases.backward < grads + 1 * MiB);
    CHECK(two.phases.optimizer == one.phases.optimizer);
}

TEST_CASE("every tensor takes whole 512-byte allocator blocks", "[ledger][allocator]") {
    CHECK(block_size(1 * B) == 512 * B);
    CHECK(block_size(513 * B) == 1 * KiB);
    CHECK(block_size(0 * B) == 0 * B);
    const memory_estimate e = estimate(presets::bert_large, {}, {.batch = 1, .seq = 128});
    // The classifier bias (2 x fp32) takes a 512-byte block, and so does its gradient.
    CHECK(e.ledger.allocator_rounding >= 504 * B);
}

TEST_CASE("recipes and shapes that cannot run are rejected", "[errors]") {
    const shape s{.batch = 1, .seq = 128};
    CHECK_THROWS_WITH(estimate(presets::gpt2, {.master = master_weights::fp32}, s), Catch::Contains("needs bf16 or fp16"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {.inference = true}, s), Catch::Contains("inference takes optimizer none"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {.optimizer = optimizer_kind::none}, s), Catch::Contains("needs an optimizer"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {.kv_cache = true}, s), Catch::Contains("kv_cache needs inference"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {.grad_accum = 0}, s), Catch::Contains("grad_accum must be >= 1"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {.weights = dtype::int8}, s), Catch::Contains("weights must be fp32"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {}, {.batch = 0, .seq = 128}), Catch::Contains("batch must be > 0"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {}, {.batch = 1, .seq = 0}), Catch::Contains("seq must be > 0"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {}, {.batch = 1, .seq = 1025}), Catch::Contains("learned positions"));
    CHECK_THROWS_WITH(estimate(presets::roberta_base, {}, {.batch = 1, .seq = 513}), Catch::Contains("learned positions"));
    CHECK_NOTHROW(estimate(presets::roberta_base, {}, {.batch = 1, .seq = 512}));
    CHECK_THROWS_WITH(estimate(presets::gpt2, {}, {.batch = 1, .seq = 8, .target_seq = 8}),
                      Catch::Contains("encoder-decoder models only"));
}

TEST_CASE("names round-trip for every enum the CLI reads", "[names]") {
    for (const auto& [value, name] : enum_names<optimizer_kind>::table) {
        CHECK(name_of(value) == name);
        CHECK(parse_name<optimizer_kind>(name) == value);
    }
    CHECK(parse_name<task>("seq-cls") == task::seq_cls);
    CHECK_FALSE(parse_name<dtype>("fp8").has_value());
}
