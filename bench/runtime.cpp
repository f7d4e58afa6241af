// Run-time latency of the library's entry points (issue 13's targets):
//   * one anatomy::estimate                          (target: <= 2 us)
//   * one allocator replay of llama-3-8b             (target: <= 100 us)
//   * one anatomy::max_batch solve                   (target: <= 100 us)
//
// Every input is copied out of the constexpr presets into locals and passed
// through benchmark::DoNotOptimize before each call, so the compiler must treat
// it as unknown and cannot constant-fold the (constexpr) computation away.
#include <anatomy/anatomy.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace {

using namespace anatomy;

constexpr recipe fp32_adamw{.weights = dtype::fp32, .optimizer = optimizer_kind::adamw};
constexpr recipe bf16_adamw{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw};
constexpr recipe bf16_master_adamw{.weights = dtype::bf16, .master = master_weights::fp32,
                                   .optimizer = optimizer_kind::adamw};
constexpr recipe bf16_checkpointed{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw, .grad_checkpointing = true};
constexpr recipe bf16_adafactor{.weights = dtype::bf16, .optimizer = optimizer_kind::adafactor};
constexpr recipe bf16_lora{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw,
                           .lora = {.rank = 16, .targets = {"q_proj", "k_proj", "v_proj", "o_proj"}}};

// A copy the optimizer must treat as unknown (DoNotOptimize is an asm barrier
// that may read and write it).
template <class T>
T opaque(const T& value) {
    T copy = value;
    benchmark::DoNotOptimize(copy);
    return copy;
}

// Times `call(model, recipe, shape)` on inputs the optimizer cannot fold.
template <class Call>
void timed(benchmark::State& state, const model_spec& preset, const recipe& preset_recipe, shape preset_shape,
           Call call) {
    model_spec model = opaque(preset);
    recipe r = opaque(preset_recipe);
    volatile std::uint64_t batch = preset_shape.batch;
    volatile std::uint64_t seq = preset_shape.seq;
    for (auto _ : state) {
        benchmark::DoNotOptimize(model);
        benchmark::DoNotOptimize(r);
        auto result = call(model, r, shape{.batch = batch, .seq = seq});
        benchmark::DoNotOptimize(result);
        benchmark::ClobberMemory();
    }
}

void estimate_case(benchmark::State& state, const model_spec& preset, const recipe& preset_recipe, shape preset_shape) {
    timed(state, preset, preset_recipe, preset_shape,
          [](const model_spec& m, const recipe& r, const shape& s) { return estimate(m, r, s); });
}

void max_batch_case(benchmark::State& state, const model_spec& preset, const recipe& preset_recipe, std::uint64_t seq,
                    bytes budget) {
    model_spec model = opaque(preset);
    recipe r = opaque(preset_recipe);
    volatile std::uint64_t seq_v = seq;
    volatile std::uint64_t budget_v = budget.count;
    std::uint64_t answer = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(model);
        benchmark::DoNotOptimize(r);
        const shape s{.batch = 1, .seq = seq_v};
        answer = max_batch(model, r, s, bytes{budget_v});
        benchmark::DoNotOptimize(answer);
    }
    state.counters["max_batch"] = static_cast<double>(answer);
}

// An estimate from an estimator, which lowered the model once: what each
// probe of a max_batch solve or a sweep costs.
void prepared_estimate_case(benchmark::State& state, const model_spec& preset, const recipe& preset_recipe,
                            shape preset_shape) {
    const estimator prepared(opaque(preset), opaque(preset_recipe));
    timed(state, preset, preset_recipe, preset_shape,
          [&](const model_spec&, const recipe&, const shape& s) { return prepared.estimate(s); });
}

// Cost of lowering alone (part of every estimate): builds the op graph.
void lower_case(benchmark::State& state, const model_spec& preset) {
    model_spec model = opaque(preset);
    for (auto _ : state) {
        benchmark::DoNotOptimize(model);
        op_graph g = lower(model);
        benchmark::DoNotOptimize(g);
        benchmark::ClobberMemory();
    }
    state.counters["graph_bytes"] = static_cast<double>(sizeof(op_graph));
}

// The caching-allocator replay (reserved.hpp): what `anatomy estimate` adds to
// an estimate to report reserved memory, and what max_batch runs per candidate.
void replay_case(benchmark::State& state, const model_spec& preset, const recipe& preset_recipe, shape preset_shape) {
    timed(state, preset, preset_recipe, preset_shape,
          [](const model_spec& m, const recipe& r, const shape& s) { return replay_allocator(m, r, s); });
}

// What the CLI does first: look a preset up by name.
void find_case(benchmark::State& state) {
    const char* volatile name = "bert-large";
    for (auto _ : state) {
        std::optional<model_spec> m = presets::find(std::string_view(name));
        benchmark::DoNotOptimize(m);
    }
}

}  // namespace

// The three cases the targets are stated for.
BENCHMARK_CAPTURE(estimate_case, bert_large_fp32_adamw_b4_s512, presets::bert_large, fp32_adamw,
                  shape{.batch = 4, .seq = 512});
BENCHMARK_CAPTURE(estimate_case, llama_3_8b_bf16_adamw_b1_s4096, presets::llama_3_8b, bf16_adamw,
                  shape{.batch = 1, .seq = 4096});
BENCHMARK_CAPTURE(estimate_case, t5_11b_bf16_adafactor_b1_s512, presets::t5_11b, bf16_adafactor,
                  shape{.batch = 1, .seq = 512});
// Other recipes: a master copy and LoRA add work per parameter tensor.
BENCHMARK_CAPTURE(estimate_case, llama_3_8b_bf16_master_adamw_b1_s4096, presets::llama_3_8b, bf16_master_adamw,
                  shape{.batch = 1, .seq = 4096});
BENCHMARK_CAPTURE(estimate_case, llama_3_8b_bf16_lora16_b1_s4096, presets::llama_3_8b, bf16_lora,
                  shape{.batch = 1, .seq = 4096});
BENCHMARK_CAPTURE(estimate_case, gpt2_fp32_adamw_b8_s1024, presets::gpt2, fp32_adamw,
                  shape{.batch = 8, .seq = 1024});

// max_batch: budgets that the model state fits, so the search runs to an
// answer; the cost is about four estimates (the affine prediction and its
// confirmation) and one allocator replay per batch counted down from the
// peak's answer. The answer is shown as the counter max_batch.
BENCHMARK_CAPTURE(max_batch_case, gpt2_fp32_adamw_s1024_in_8GiB, presets::gpt2, fp32_adamw, 1024, 8 * GiB);
BENCHMARK_CAPTURE(max_batch_case, llama_3_8b_bf16_adamw_s4096_in_80GiB, presets::llama_3_8b, bf16_adamw, 4096,
                  80 * GiB);
BENCHMARK_CAPTURE(max_batch_case, bert_large_fp32_adamw_s512_in_80GiB, presets::bert_large, fp32_adamw, 512,
                  80 * GiB);
// The compile-time example, at run time: llama-3-8b, bf16 with
// checkpointing, 4096 tokens, in 80 GiB.
BENCHMARK_CAPTURE(max_batch_case, llama_3_8b_bf16_checkpointed_s4096_in_80GiB, presets::llama_3_8b, bf16_checkpointed,
                  4096, 80 * GiB);
BENCHMARK_CAPTURE(prepared_estimate_case, llama_3_8b_bf16_adamw_b1_s4096, presets::llama_3_8b, bf16_adamw,
                  shape{.batch = 1, .seq = 4096});

// Pieces, for profiling.
BENCHMARK_CAPTURE(lower_case, bert_large, presets::bert_large);
BENCHMARK_CAPTURE(lower_case, llama_3_8b, presets::llama_3_8b);
BENCHMARK_CAPTURE(lower_case, t5_11b, presets::t5_11b);
BENCHMARK(find_case);
BENCHMARK_CAPTURE(replay_case, bert_large_fp32_adamw_b4_s512, presets::bert_large, fp32_adamw,
                  shape{.batch = 4, .seq = 512})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(replay_case, llama_3_8b_bf16_adamw_b1_s4096, presets::llama_3_8b, bf16_adamw,
                  shape{.batch = 1, .seq = 4096})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(replay_case, llama_3_8b_bf16_checkpointed_b4_s4096, presets::llama_3_8b, bf16_checkpointed,
                  shape{.batch = 4, .seq = 4096})
    ->Unit(benchmark::kMicrosecond);

// main() comes from benchmark::benchmark_main.
