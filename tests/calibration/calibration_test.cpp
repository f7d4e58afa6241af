// The estimator against real steps measured on an H200 (PyTorch 2.11,
// transformers 5.17): the files of ../shared/calibration, copied to
// tests/data/ with the configs they were built from. Each case's spec is
// turned into a recipe and shape; the predicted peak must match `peak_alloc`
// within bars set just above what the estimator achieves on each file, so
// that a regression fails.
#include "hf_config.hpp"

#include <anatomy/anatomy.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace anatomy;

namespace {

struct calibration_case {
    std::string name;
    model_spec model;
    recipe training;
    shape size;
    double peak_alloc;
    std::vector<std::string> lora_targets;  // the recipe's targets point into these
    double peak_reserved;  // max_memory_reserved, the cuBLAS workspaces in it; 0 where not measured
};

// A case's recipe, pointing at its LoRA targets.
recipe targeted(const calibration_case& c) {
    recipe r = c.training;
    for (std::size_t i = 0; i < c.lora_targets.size(); ++i) r.lora.targets[i] = c.lora_targets[i];
    return r;
}

// A case's model: a preset where one exists, else the config it was built
// from. `presets_first = false` reads the config as it is, whose
// architectures pick the task (roberta-large's is RobertaForMaskedLM, where
// the preset is a sequence classifier).
model_spec model_named(const std::string& config, const std::string& configs, bool presets_first = true) {
    static const std::map<std::string, std::string> preset_of{{"llama3.2-1b", "llama-3.2-1b"}};
    const auto it = preset_of.find(config);
    if (presets_first) {
        if (const auto spec = presets::find(it == preset_of.end() ? config : it->second)) return *spec;
    }
    return cli::load_hf_config(configs + "/" + config + ".json").spec;
}

recipe recipe_of(const nlohmann::json& spec) {
    recipe r{};
    const std::string weights = spec.value("weights", "fp32");
    if (weights == "bf16") r.weights = dtype::bf16;
    if (weights == "fp16") r.weights = dtype::fp16;
    const std::string amp = spec.value("amp", "");
    if (amp == "fp16") r.autocast = autocast_mode::fp16;
    if (amp == "bf16") r.autocast = autocast_mode::bf16;
    const std::string opt = spec.value("opt", "adamw");
    if (opt == "sgdm") r.optimizer = optimizer_kind::sgd_momentum;
    if (opt == "sgd") r.optimizer = optimizer_kind::sgd;
    if (opt == "adafactor") r.optimizer = optimizer_kind::adafactor;
    if (opt == "lion") r.optimizer = optimizer_kind::lion;  // bitsandbytes' Lion, 32-bit
    if (opt == "adamw8bit") r.optimizer = optimizer_kind::adam8bit;
    // The families file's loops: "drop" is model(**b).loss.backward(); the
    // Trainer's default optimizer in 5.17 is adamw_torch_fused.
    const std::string loop = spec.value("loop", "keep");
    if (loop == "drop") r.loop = training_loop::loss_only;
    if (loop == "trainer") {
        r.loop = training_loop::hf_trainer;
        r.optimizer = optimizer_kind::adamw_fused;
    }
    if (opt == "none") r.optimizer = optimizer_kind::none;
    if (spec.value("fused", false)) r.optimizer = optimizer_kind::adamw_fused;
    if (!spec.value("foreach", true)) r.optimizer = optimizer_kind::adamw_forloop;
    if (spec.value("attn", "sdpa") == "eager") r.attention = attention_kernel::eager;
    // measure.py's gc "nonreentrant": gradient_checkpointing_enable with use_reentrant=False.
    const nlohmann::json gc = spec.value("gc", nlohmann::json(false));
    r.grad_checkpointing = gc.is_string() ? gc.get<std::string>() == "nonreentrant" : gc.get<bool>();
    if (gc.is_string()) r.checkpoint = checkpoint_impl::non_reentrant;
    r.compile = spec.value("compile", false);  // torch.compile(model), default mode
    r.inference = spec.value("inference", false);
    if (r.inference) r.optimizer = optimizer_kind::none;
    r.kv_cache = r.inference && spec.value("use_cache", false);
    r.grad_accum = spec.value("grad_accum", std::uint64_t{1});
    // The first files say lora_rank (peft's default alpha), the families file lora (alpha 16).
    r.lora.rank = spec.value("lora_rank", spec.value("lora", std::uint64_t{0}));
    r.lora.dropout = spec.value("lora_dropout", 0.0);
    // DeepSpeed ZeRO on one GPU (bench/torch_reference/deepspeed_measure.py):
    // bf16 with an fp32 master copy, as its bf16 mode runs.
    if (spec.contains("stage")) {
        const std::uint64_t stage = spec.at("stage").get<std::uint64_t>();
        r.parallel = stage == 1 ? parallelism::zero1 : stage == 2 ? parallelism::zero2 : parallelism::zero3;
        r.master = master_weights::fp32;
        const std::string offload = spec.value("offload", nlohmann::json()).is_string() ? spec.at("offload").get<std::string>() : "";
        if (offload == "offopt") r.offload = offload_target::optimizer;
        if (offload == "offall") r.offload = offload_target::params;
    }
    // A quantized base: the QLoRA file's `qlora` is NF4, the LLM.int8 file says
    // `quant`. The rest is cast to fp32 by prepare_model_for_kbit_training,
    // which the inference cases skip.
    const bool nf4 = spec.contains("qlora") && spec.at("qlora").is_boolean() && spec.at("qlora").get<bool>();
    const std::string quant = spec.value("quant", nf4 ? "nf4" : "");
    if (!quant.empty()) {
        r.quantize = quant == "int8" ? quantization::int8 : quantization::nf4;
        if (spec.value("kbit_prepare", true)) r.weights = dtype::fp32;
    }
    return r;
}

// A spec's budget: the cap its run was measured under
// (set_per_process_memory_fraction), or with `gpu` the whole card, as
// max_batch(..., device) and the CLI's --gpu budget it (the card's memory
// less what lies outside the allocator).
bytes budget_of(const nlohmann::json& spec) {
    if (spec.contains("gpu")) {
        const device_matches card = find_devices(spec.at("gpu").get<std::string>());
        REQUIRE(card.count == 1);
        return allocator_budget(*card.found[0]);
    }
    return bytes{static_cast<std::uint64_t>(spec.at("budget_gib").get<double>() * 1073741824.0)};
}

// recipe_of with the spec's LoRA targets (peft's q_proj, v_proj where a
// `lora` rank names none), held in `targets` for the recipe to point into.
recipe recipe_with_targets(const nlohmann::json& spec, std::vector<std::string>& targets) {
    recipe r = recipe_of(spec);
    targets = spec.value("lora_targets", spec.contains("lora") ? std::vector<std::string>{"q_proj", "v_proj"}
                                                               : std::vector<std::string>{});
    for (std::size_t i = 0; i < targets.size(); ++i) r.lora.targets[i] = targets[i];
    return r;
}

// Largest-batch searches measure a batch, not a peak.
bool needs_later_work(const nlohmann::json& spec) { return spec.contains("budget_gib"); }

std::vector<calibration_case> load_cases(const char* path, std::size_t& deferred,
                                        const std::string& configs = ANATOMY_CALIBRATION_CONFIGS,
                                        bool presets_first = true) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::vector<calibration_case> cases;
    std::string line;
    deferred = 0;
    while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        if (!j.contains("case")) continue;
        const auto& spec = j.at("spec");
        // use_cache=False in training is set on the model config, not a recipe flag.
        if (!spec.value("inference", false) && !spec.value("use_cache", true)) continue;
        if (needs_later_work(spec)) {
            ++deferred;
            continue;
        }
        const model_spec model = model_named(spec.at("model").get<std::string>(), configs, presets_first);
        // An image model's sequence is its patches plus the CLS token.
        const std::uint64_t seq = model.embedding.patches() ? 0 : spec.at("seq").get<std::uint64_t>();
        cases.push_back({j.at("case").get<std::string>(), model, recipe_of(spec),
                         shape{.batch = spec.at("batch").get<std::uint64_t>(), .seq = seq,
                               .target_seq = spec.value("tgt", std::uint64_t{0})},
                         j.at("peak_alloc").get<double>(),
                         spec.value("lora_targets", spec.contains("lora") ? std::vector<std::string>{"q_proj", "v_proj"}
                                                                          : std::vector<std::string>{}),
                         j.value("peak_reserved", 0.0)});
    }
    return cases;
}

// Cases measured one per process: their peaks hold the cuBLAS workspaces,
// which the estimate leaves to fit checks, so they are taken off.
std::vector<calibration_case> load_fresh_process_cases(const char* path,
                                                      const std::string& configs = ANATOMY_CALIBRATION_CONFIGS,
                                                      bool presets_first = true) {
    std::size_t deferred = 0;
    std::vector<calibration_case> cases = load_cases(path, deferred, configs, presets_first);
    for (auto& c : cases) c.peak_alloc -= static_cast<double>(cublas_workspace(c.training).count);
    return cases;
}

double median_of(const std::vector<double>& sorted) {
    const std::size_t n = sorted.size();
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

// Median and max |predicted - measured| / measured of the peak.
std::pair<double, double> peak_errors(const std::vector<calibration_case>& cases) {
    std::vector<double> errors;
    for (const auto& c : cases) {
        const memory_estimate e = estimate(c.model, targeted(c), c.size);
        const double error = (static_cast<double>(e.peak.count) - c.peak_alloc) / c.peak_alloc;
        UNSCOPED_INFO(c.name << ": predicted " << e.peak.count << ", measured " << c.peak_alloc << ", error "
                             << 100 * error << "%");
        errors.push_back(std::fabs(error));
    }
    std::sort(errors.begin(), errors.end());
    return {median_of(errors), errors.back()};
}

// What a measured file must hold: how many steps and largest-batch
// searches, and the bars on the steps' peak errors.
struct file_expectation {
    std::size_t steps;
    std::size_t searches;
    double median;
    double max;
};

void check_file_peaks(const char* path, const file_expectation& expected) {
    std::size_t searches = 0;
    const auto cases = load_cases(path, searches);
    REQUIRE(cases.size() == expected.steps);
    CHECK(searches == expected.searches);
    const auto [median, max] = peak_errors(cases);
    CHECK(median <= expected.median);
    CHECK(max <= expected.max);
}

}  // namespace

TEST_CASE("predicted peaks match the H200 measurements of the first eight types", "[calibration]") {
    std::size_t deferred = 0;
    const auto cases = load_cases(ANATOMY_CALIBRATION_FILE, deferred);
    REQUIRE(cases.size() == 32);
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.08 %, max 2.18 % (bert-base amp, allocator whole-block slack).
    CHECK(median <= 0.001);
    CHECK(max <= 0.023);
}

TEST_CASE("cases the model was not built on meet the same bar", "[calibration]") {
    // LoRA, gradient accumulation, fp32 Llama, eager T5, inference with and
    // without a cache, other shapes (docs/accuracy.md).
    std::size_t deferred = 0;
    const auto cases = load_cases(ANATOMY_EXTRA_CASES_FILE, deferred);
    REQUIRE(cases.size() == 12);
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.10 %, max 0.28 % (bert-base eager).
    CHECK(median <= 0.0012);
    CHECK(max <= 0.003);
}

TEST_CASE("the newer families match their H200 measurements", "[calibration][families]") {
    // qwen3, gemma2 (eager and SDPA), gemma3 (training, inference with a
    // sliding-window cache), phi3, olmo2, gpt_neox, opt, falcon, bloom, gptj,
    // modernbert, vit, LoRA on qwen3, and the mixtures of experts qwen3_moe,
    // mixtral and deepseek_v2 (latent attention; training, and inference with
    // its latent cache), on scaled-down configs; the Trainer, a loss-only
    // loop and bitsandbytes' Lion on gpt2, QLoRA on tinyllama.
    // Achieved: median 0.05 %, max 0.33 % (qwen3 bf16).
    check_file_peaks(ANATOMY_FAMILIES_FILE, {.steps = 24, .searches = 2, .median = 0.0008, .max = 0.004});
}

// Which of the replay's figures a case's measurement checks.
enum class replayed_figure { peak_allocated, peak_reserved };

// The replay's |figure - measured| / measured for each case, sorted:
// max_memory_allocated, or max_memory_reserved (the cuBLAS workspaces in it).
std::vector<double> replay_errors(const std::vector<calibration_case>& cases,
                                  replayed_figure figure = replayed_figure::peak_allocated) {
    const bool reserved = figure == replayed_figure::peak_reserved;
    std::vector<double> errors;
    for (const auto& c : cases) {
        const double measured = reserved ? c.peak_reserved : c.peak_alloc;
        REQUIRE(measured > 0);
        const allocator_replay x = replay_allocator(c.model, targeted(c), c.size);
        const double replayed = static_cast<double>((reserved ? x.peak_reserved : x.peak_allocated).count);
        const double error = (replayed - measured) / measured;
        UNSCOPED_INFO(c.name << ": replayed " << replayed << ", measured " << measured << ", error " << 100 * error << "%");
        errors.push_back(std::fabs(error));
    }
    std::sort(errors.begin(), errors.end());
    return errors;
}

TEST_CASE("the allocator replay's peak matches the H200's max_memory_allocated",
          "[calibration][families][replay]") {
    // max_batch and the fit verdicts read the replay, whose peak counts each
    // block whole, as the GPU's allocator does.
    std::size_t searches = 0;
    SECTION("scaled-down configs") {
        // Achieved: median 0.013 %, max 0.23 % (qwen3 bf16). gemma3 inference
        // was 0.27 % over while every pass of Gemma 3's cycle pinned its
        // input as the embedding output (the first pin never freed).
        const auto errors = replay_errors(load_cases(ANATOMY_FAMILIES_FILE, searches));
        REQUIRE(errors.size() == 24);
        CHECK(median_of(errors) <= 0.0002);
        CHECK(errors.back() <= 0.0025);
    }
    SECTION("the first eight types") {
        // The CLI's peak (reported_peak). Achieved: median 0.01 %, max 0.91 %
        // (bert-large fp32, under); the analytic walk's 0.07 % and 2.18 %
        // (bert-base under autocast: cached blocks handed out whole).
        std::size_t deferred = 0;
        const auto errors = replay_errors(load_cases(ANATOMY_CALIBRATION_FILE, deferred));
        REQUIRE(errors.size() == 32);
        CHECK(median_of(errors) <= 0.0002);
        CHECK(errors.back() <= 0.01);
    }
    SECTION("real-size checkpoints") {
        // Achieved: median 0.008 %, max 0.18 % (qwen3-0.6b). falcon-7b was
        // 3.8 % under while no gradient reached Falcon's attention branch
        // (mlp_output += attention_output was the MLP's output alone).
        const auto errors = replay_errors(load_cases(ANATOMY_REALSIZE_FILE, searches));
        REQUIRE(errors.size() == 18);
        CHECK(median_of(errors) <= 0.0002);
        CHECK(errors.back() <= 0.002);
    }
}

TEST_CASE("Falcon's attention branch and Gemma 3's embedding output, as measured on the H200",
          "[calibration][families][replay]") {
    // bench/torch_reference/cases/falcon-gemma3-checks.json. LoRA on
    // falcon-7b's query_key_value trains only through the attention branch,
    // which reaches the residual stream by mlp_output += attention_output:
    // taken as the MLP's output alone, the estimate was 2.0 % (batch 1) and
    // 10.7 % (batch 4) under; then +2.71 % at batch 1 while Falcon's one K/V
    // head was copied to every head there too (at batch 1 the bmm broadcasts
    // it as a view). Now -0.52 % and -0.40 %, the replays +0.05 % and -0.23 %.
    // gemma-3-1b inference: the replay peaked 1.33 % over while every pass
    // pinned its input; now +0.15 %.
    std::size_t searches = 0;
    const auto cases = load_cases(ANATOMY_FALCON_GEMMA3_FILE, searches);
    REQUIRE(cases.size() == 3);
    CHECK(searches == 1);
    for (const auto& c : cases) {
        INFO(c.name);
        const double measured = c.peak_alloc;
        const double predicted = static_cast<double>(estimate(c.model, targeted(c), c.size).peak.count);
        const double replayed = static_cast<double>(replay_allocator(c.model, targeted(c), c.size).peak_allocated.count);
        if (c.name.starts_with("falcon")) {
            CHECK(std::fabs(predicted - measured) / measured <= 0.006);
            CHECK(std::fabs(replayed - measured) / measured <= 0.003);
        } else {
            CHECK(std::fabs(predicted - measured) / measured <= 0.0015);  // -0.13 %
            CHECK(std::fabs(replayed - measured) / measured <= 0.002);
        }
    }
}

TEST_CASE("T5 at 2048 tokens: SDPA as measured, eager over", "[calibration]") {
    // bench/torch_reference/cases/t5-long.json: t5-small fp32 AdamW, batch 2,
    // 2048 source and 512 target tokens. SDPA: +0.05 %. Eager: +1.43 %, the
    // safe side; its forward is over by as much (107 MB), which the scores'
    // tensors, 256 MiB each a layer here, do not explain one by one
    // (docs/accuracy.md). T5's position bias gets no gradient in the model,
    // and neither peak shows one: the bias is 128 MiB here.
    std::size_t searches = 0;
    const auto cases = load_cases(ANATOMY_T5_LONG_FILE, searches);
    REQUIRE(cases.size() == 2);
    for (const auto& c : cases) {
        INFO(c.name);
        const double error = (static_cast<double>(estimate(c.model, targeted(c), c.size).peak.count) - c.peak_alloc) / c.peak_alloc;
        if (c.name.ends_with("eager")) {
            CHECK(error >= 0.0);
            CHECK(error <= 0.016);
        } else {
            CHECK(std::fabs(error) <= 0.001);
        }
    }
}

TEST_CASE("real-size checkpoints of the newer families match their H200 measurements", "[calibration][families]") {
    // Never-seen configs of published checkpoints (tests/data/configs),
    // measured the same way: bench/torch_reference/cases/realsize.json.
    // Achieved: median 0.02 %, max 2.07 % (phi-3-mini inference without a cache).
    check_file_peaks(ANATOMY_REALSIZE_FILE, {.steps = 18, .searches = 2, .median = 0.0005, .max = 0.022});
}

TEST_CASE("real-size checkpointed steps match their H200 measurements", "[calibration][checkpointing]") {
    // llama-3-8b at 4096 tokens, batches 1 to 4, and qwen3-8b and
    // llama-3.2-1b at 2048, bf16 + AdamW with gradient checkpointing
    // (bench/torch_reference/cases/checkpointed.json).
    // Achieved: median 0.003 %, max 0.08 % (llama-3-8b without checkpointing, low).
    check_file_peaks(ANATOMY_CHECKPOINTED_FILE, {.steps = 7, .searches = 6, .median = 0.0001, .max = 0.001});
}

TEST_CASE("real-size mixtures of experts match their H200 measurements", "[calibration][experts]") {
    // olmoe-1b-7b whole, and a few layers of qwen3-30b-a3b, mixtral-8x7b,
    // deepseek-v2-lite and qwen1.5-moe-a2.7b (tests/data/configs-moe):
    // training, LoRA, checkpointing, inference with the cache
    // (bench/torch_reference/cases/moe-realsize.json).
    std::size_t deferred = 0;
    const auto cases = load_cases(ANATOMY_MOE_REALSIZE_FILE, deferred, ANATOMY_MOE_CONFIGS);
    REQUIRE(cases.size() == 8);
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.01 %, max 0.21 % (mixtral-8x7b, two layers).
    CHECK(median <= 0.0003);
    CHECK(max <= 0.003);
    // Reserved, replayed. Achieved: median 0.17 %, max 2.1 % (olmoe-1b-7b
    // training, over). qwen3-30b-a3b serving at 4 x 8192 was 11 % under
    // while the walk freed the experts' gathered rows and masked outputs
    // after their last reader, not when grouped_mm_experts_forward returns.
    const auto reserved = replay_errors(cases, replayed_figure::peak_reserved);
    CHECK(median_of(reserved) <= 0.003);
    CHECK(reserved.back() <= 0.025);
}

TEST_CASE("held-out recipes on real-size configs match an H100's measurements", "[calibration][heldout]") {
    // Sixteen steps measured on 2026-12-07, after the rules they check were
    // written, with measure_h200.py's bookkeeping in one process after a
    // warm-up case (bench/torch_reference/cases/heldout.json): LoRA, the
    // Trainer, a loss-only loop, Lion, 8-bit Adam, QLoRA, SGD with momentum,
    // Adafactor on T5, fp16 autocast, checkpointing, ViT, and serving with
    // Mistral's window, OLMoE's experts and DeepSeek's latent cache.
    std::size_t deferred = 0;
    const auto cases = load_cases(ANATOMY_HELDOUT_FILE, deferred, ANATOMY_DATA_DIR "/configs", false);
    REQUIRE(cases.size() == 16);
    // OLMoE serving at 8 x 4096 peaks inside the last layer's experts, with
    // grouped_mm_experts_forward's names (the gathered tokens, the masked
    // down output, the routing bookkeeping) held to its end: 6.2 % under
    // while the walk freed them after their last reader; -0.01 % now.
    // The analytic walk. Achieved: median 0.03 %, max 0.47 %
    // (gpt2-xl under fp16 autocast, under: cached blocks handed out whole).
    const auto [median, max] = peak_errors(cases);
    CHECK(median <= 0.0004);
    CHECK(max <= 0.005);
    // The replay, the CLI's peak. Achieved: median 0.005 %, max 0.18 % (vit-large, over).
    const auto replayed = replay_errors(cases);
    CHECK(median_of(replayed) <= 0.0001);
    CHECK(replayed.back() <= 0.002);
}

TEST_CASE("QLoRA steps match their H200 measurements", "[calibration][qlora]") {
    // NF4 with double quantization, bf16 compute, prepare_model_for_kbit_training,
    // LoRA (bench/torch_reference/cases/qlora.json), each in a process of its own.
    const auto cases = load_fresh_process_cases(ANATOMY_QLORA_FILE);
    REQUIRE(cases.size() == 5);  // 3 QLoRA steps, 2 NF4 inference (with and without the cache)
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.09 %, max 0.88 % (tinyllama NF4 inference with the cache, low).
    CHECK(median <= 0.0011);
    CHECK(max <= 0.009);
}

TEST_CASE("LLM.int8 steps match their H200 measurements", "[calibration][qlora]") {
    // load_in_8bit (threshold 6.0), each in a process of its own: inference with
    // and without the cache (tinyllama, llama-3.2-1b, qwen2.5 in fp16), and LoRA
    // after prepare_model_for_kbit_training (tinyllama with and without
    // checkpointing, qwen2.5 on all seven projections, qwen3, llama-3.2-1b):
    // bench/torch_reference/cases/int8.json and int8-check.json.
    const auto cases = load_fresh_process_cases(ANATOMY_INT8_FILE);
    REQUIRE(cases.size() == 9);
    const auto [median, max] = peak_errors(cases);
    for (const auto& c : cases) {
        INFO(c.name);
        CHECK(c.training.quantize == quantization::int8);
    }
    // Achieved: median 0.26 %, max 0.85 % (tinyllama LoRA under checkpointing, low).
    CHECK(median <= 0.003);
    CHECK(max <= 0.009);
}

TEST_CASE("checkpointed LoRA over a quantized base recomputes whole layers, as measured", "[calibration][qlora]") {
    // peft's prepare_model_for_kbit_training turns checkpointing on without
    // use_reentrant, and PyTorch 2.11 then takes the reentrant implementation:
    // the recompute runs every kernel of the layer (recipe.hpp,
    // checkpoint_impl). Measured after the rule was found, each in a process
    // of its own: tinyllama NF4, llama-3.2-1b NF4 on all seven projections,
    // qwen2.5 LLM.int8 (bench/torch_reference/cases/quantized-gc.json).
    const auto cases = load_fresh_process_cases(ANATOMY_QUANTIZED_GC_FILE);
    REQUIRE(cases.size() == 3);
    for (const auto& c : cases) {
        INFO(c.name);
        CHECK(reentrant_checkpoint(c.training));
    }
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.28 %, max 0.69 % (tinyllama NF4, low); with the early
    // stop of the non-reentrant implementation, 0.55 % and 1.22 %.
    CHECK(median <= 0.003);
    CHECK(max <= 0.007);
}

TEST_CASE("Trainer steps match their H200 measurements, its checkpoint non-reentrant over a quantized base too",
          "[calibration][trainer][qlora]") {
    // transformers.Trainer(gradient_checkpointing=True) over an NF4 base
    // (QLoRA on q,v, and on all seven projections), bf16 weights, bf16
    // autocast, and QLoRA without checkpointing
    // (bench/torch_reference/cases/trainer.json, run by shared/calibration's
    // measure_h200.py). Each record counts the run's calls of
    // torch.utils.checkpoint.checkpoint by their use_reentrant argument.
    std::size_t searches = 0;
    auto cases = load_cases(ANATOMY_TRAINER_FILE, searches);
    REQUIRE(cases.size() == 5);
    // One process ran them all: only the first case's peak holds the cuBLAS
    // workspaces, which the later cases found allocated.
    cases.front().peak_alloc -= static_cast<double>(cublas_workspace(cases.front().training).count);

    std::ifstream in(ANATOMY_TRAINER_FILE);
    std::string line;
    std::size_t checked = 0;
    while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        if (!j.contains("checkpoint_calls") || j.at("checkpoint_calls").empty()) continue;
        INFO(j.at("case").get<std::string>());
        REQUIRE(j.at("checkpoint_calls").size() == 1);  // one implementation for the whole run
        const bool measured_reentrant = j.at("checkpoint_calls").contains("True");
        CHECK(reentrant_checkpoint(recipe_of(j.at("spec"))) == measured_reentrant);
        ++checked;
    }
    CHECK(checked == 4);

    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.016 %, max 0.18 % (tinyllama QLoRA checkpointed, low).
    CHECK(median <= 0.0003);
    CHECK(max <= 0.0025);

    // Over the quantized base, the reentrant recompute would be farther off.
    for (const auto& c : cases) {
        if (c.training.quantize == quantization::none || !c.training.grad_checkpointing) continue;
        INFO(c.name);
        recipe r = targeted(c);
        const auto error = [&](checkpoint_impl impl) {
            r.checkpoint = impl;
            return std::fabs(static_cast<double>(estimate(c.model, r, c.size).peak.count) - c.peak_alloc);
        };
        CHECK(error(checkpoint_impl::as_enabled) < error(checkpoint_impl::reentrant));
    }
}

TEST_CASE("over a quantized base, checkpointed, the fit verdicts are the H200's", "[calibration][qlora][max_batch]") {
    // Single batches under a cap, each in a process of its own
    // (bench/torch_reference/cases/quantized-gc-fit.json): QLoRA checkpointed
    // as peft leaves it (reentrant) and non-reentrantly. At 7 x 2048 under
    // 24 GiB tinyllama ran out of memory either way; the replay fitted it
    // until it placed autograd's cuBLAS workspace where the H200 makes it,
    // after the head's first gradient, pinning a segment the layers' scores
    // used.
    std::ifstream in(ANATOMY_QUANTIZED_GC_FIT_FILE);
    REQUIRE(in.good());
    std::string line;
    std::size_t trials = 0;
    while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        if (!j.contains("fits")) continue;
        const auto& spec = j.at("spec");
        INFO(j.at("case").get<std::string>());
        std::vector<std::string> targets;
        const recipe r = recipe_with_targets(spec, targets);
        const model_spec model = model_named(spec.at("model").get<std::string>(), ANATOMY_CALIBRATION_CONFIGS);
        const shape s{.batch = spec.at("batch").get<std::uint64_t>(), .seq = spec.at("seq").get<std::uint64_t>()};
        CHECK(fits_under(model, r, s, budget_of(spec)) == j.at("fits").get<bool>());
        ++trials;
    }
    CHECK(trials == 9);
}

TEST_CASE("torch.compile'd steps match their H200 measurements", "[calibration][compile]") {
    // torch.compile(model), default mode, after train(): gpt2 (fp32, autocast,
    // eager attention, a loss-only loop), llama-3.2-1b (bf16, autocast,
    // checkpointing), qwen2.5, qwen3, tinyllama and bert-base
    // (bench/torch_reference/cases/compile.json), each in a process of its own.
    const auto cases = load_fresh_process_cases(ANATOMY_COMPILE_FILE);
    REQUIRE(cases.size() == 11);
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.43 %, max 1.27 % (tinyllama under autocast, high).
    CHECK(median <= 0.005);
    CHECK(max <= 0.014);
}

TEST_CASE("T5 in bf16 runs SDPA's math kernel in fp32, as an H100 measured", "[calibration][t5]") {
    // T5's relative bias needs a gradient, so SDPA takes its math kernel,
    // which computes half inputs in fp32 (aten's upcast): scores, softmax and
    // dropout at twice the bf16 bytes. t5-large (bf16, Adafactor and AdamW,
    // 4 and 8 x 1024 tokens, 256 target) and t5-base (bf16, 8 x 1024), one
    // forked process a case (tests/data/t5-bf16-h100.jsonl, measure.py). With
    // the kernel in bf16 the estimate was 30 % under; fp32 t5-large is the
    // control, which the upcast does not touch.
    const auto cases = load_fresh_process_cases((std::string(ANATOMY_DATA_DIR) + "/t5-bf16-h100.jsonl").c_str());
    REQUIRE(cases.size() == 5);
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.07 %, max 0.36 % (t5-base, under); -30 % before.
    CHECK(median <= 0.001);
    CHECK(max <= 0.005);
}

TEST_CASE("CrossEntropyLoss on half logits keeps half log-probabilities and an fp32 copy, as an H100 measured",
          "[calibration][head]") {
    // BERT's, RoBERTa's, DistilBERT's and T5's heads call CrossEntropyLoss on
    // the logits as they are: cross_entropy runs log_softmax in their dtype,
    // and nll_loss, on autocast's fp32 list, copies the result to fp32 and
    // keeps that copy for backward. Eight cases, one forked process each
    // (tests/data/half-logits-h100.jsonl, measure.py --trace): roberta-large
    // and bert-large MLM under fp16 autocast at 4 x 512, bert-base (bf16
    // autocast) and distilbert (fp16) MLM at 16 x 512, roberta-base MLM in
    // bf16 (no autocast, no copy), t5-base under bf16 autocast and t5-large
    // under fp16 at 1024 -> 256 tokens, flan-t5-base in bf16. With
    // log_softmax taken in fp32 the masked LMs were 2.47 to 8.36 % over: one
    // half logits tensor too many.
    const auto cases = load_fresh_process_cases((std::string(ANATOMY_DATA_DIR) + "/half-logits-h100.jsonl").c_str(),
                                                std::string(ANATOMY_DATA_DIR) + "/configs", false);
    REQUIRE(cases.size() == 8);
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.48 %, max 0.69 % (bert-base, under: the whole-block
    // slack the analytic peak leaves to the replay).
    CHECK(median <= 0.005);
    CHECK(max <= 0.008);
    const std::vector<double> replayed = replay_errors(cases);
    // Achieved: max 0.53 % (t5-large fp16, over).
    CHECK(replayed.back() <= 0.006);
}

TEST_CASE("compiling drops the two quoted steps' peaks as measured", "[calibration][compile]") {
    // The two steps the issue quotes, eager and compiled on an H200:
    // gpt2 amp-bf16 8 x 1024 went 13.4 -> 8.1 GiB, llama-3.2-1b bf16 4 x 2048
    // 34.0 -> 23.5 GiB. The estimate must show the same drop, within 2 %.
    const model_spec gpt2 = model_named("gpt2", ANATOMY_CALIBRATION_CONFIGS);
    const model_spec llama = model_named("llama3.2-1b", ANATOMY_CALIBRATION_CONFIGS);
    recipe amp{};
    amp.autocast = autocast_mode::bf16;
    recipe bf16{};
    bf16.weights = dtype::bf16;
    for (const auto& [model, r, s, eager_gib, compiled_gib] :
         {std::tuple{gpt2, amp, shape{.batch = 8, .seq = 1024}, 13.4, 8.1},
          std::tuple{llama, bf16, shape{.batch = 4, .seq = 2048}, 34.0, 23.5}}) {
        recipe compiled = r;
        compiled.compile = true;
        const double eager = static_cast<double>(estimate(model, r, s).peak.count) / 1073741824.0;
        const double fused = static_cast<double>(estimate(model, compiled, s).peak.count) / 1073741824.0;
        CHECK(std::abs(eager / eager_gib - 1.0) <= 0.02);
        CHECK(std::abs(fused / compiled_gib - 1.0) <= 0.02);
    }
}

TEST_CASE("DeepSpeed ZeRO on one GPU matches its H200 measurements", "[calibration][deepspeed]") {
    // ZeRO-1, 2, 3, with the optimizer and the parameters offloaded to the
    // CPU, on gpt2 and tinyllama (DeepSpeed 0.19.8, its config defaults).
    std::size_t deferred = 0;
    const auto cases = load_cases(ANATOMY_DEEPSPEED_FILE, deferred);
    REQUIRE(cases.size() == 12);
    const auto [median, max] = peak_errors(cases);
    // Achieved: median 0.06 %, max 1.01 % (low: gpt2 ZeRO-1, 68 MiB in
    // every phase not found yet).
    CHECK(median <= 0.001);
    CHECK(max <= 0.011);
}

TEST_CASE("the allocator replay holds DeepSpeed's buffers: within 1 % of the H200's max_memory_allocated",
          "[calibration][deepspeed][replay]") {
    // The replay is what max_batch and the fit verdicts read. Without ZeRO-3's
    // bucket and gradient partition it allocated 26.40 GB for tinyllama at
    // 2 x 1024, 1.1 % under the 26.69 GB measured.
    std::size_t deferred = 0;
    const auto cases = load_cases(ANATOMY_DEEPSPEED_FILE, deferred);
    REQUIRE(cases.size() == 12);
    for (const auto& c : cases) {
        INFO(c.name);
        const double replayed = static_cast<double>(replay_allocator(c.model, c.training, c.size).peak_allocated.count);
        // Achieved: at most 0.82 % under (gpt2 ZeRO-1: the 68 MiB the estimate
        // misses too), 0.08 % under with everything offloaded, tinyllama's
        // ZeRO-1 and 2 within 0.01 %, and at most 2.7 % over (tinyllama ZeRO-3,
        // whose gradient partition the replay keeps through the step).
        CHECK(replayed >= c.peak_alloc * 0.99);
        CHECK(replayed <= c.peak_alloc * 1.03);
    }
}

TEST_CASE("largest batches under a cap never exceed the measured ones, and equal all but one", "[calibration][max_batch]") {
    // Every largest-batch search measured with set_per_process_memory_fraction
    // (the families, real-size and recipes files, LLM.int8 with LoRA among
    // them, and the real-size checkpointed, LoRA and autocast searches):
    // max_batch must never exceed them, and must equal all but one. Under a
    // cap the verdict turns on where the optimizer's state lands in the
    // segments the first backward left: PyTorch creates it parameter by
    // parameter in model order, then the update's scratch. Created in another
    // order, gpt2 --loop loss-only at 1024 under 12 GiB answered 5 where 6
    // runs, llama-3-8b with checkpointing at 4096 under 80 GiB 2 where 3 runs,
    // and mistral-7b there 9 where 11 run. phi-3-mini with checkpointing at
    // 4096 under 80 GiB answered 17, and a fresh H200 process runs 18 for
    // three steps (segments_phi-3-mini_bf16_gc_b18_s4096_cap80GiB), until its
    // sliding-window mask, rotary tables and forward cuBLAS workspace were
    // made after the embeddings, as transformers makes them (the serving
    // walk test); it answers 18 now. The one miss: gemma-3-1b fp32 inference
    // at 256 tokens under 24 GiB answers 74 where the search ran 78, reusing one process; a fresh process runs
    // 74 (the next test). It answered 77 while the replay leaked the
    // embedding output, whose holes let the released segments fit.
    std::size_t exact = 0;
    std::size_t searches = 0;
    for (const auto& [path, configs] : {std::pair{ANATOMY_FAMILIES_FILE, ANATOMY_CALIBRATION_CONFIGS},
                                        std::pair{ANATOMY_REALSIZE_FILE, ANATOMY_CALIBRATION_CONFIGS},
                                        std::pair{ANATOMY_RECIPES_MAXBATCH_FILE, ANATOMY_CALIBRATION_CONFIGS},
                                        std::pair{ANATOMY_CHECKPOINTED_FILE, ANATOMY_CALIBRATION_CONFIGS},
                                        std::pair{ANATOMY_REALSIZE_MAXBATCH_FILE, ANATOMY_CALIBRATION_CONFIGS},
                                        std::pair{ANATOMY_FALCON_GEMMA3_FILE, ANATOMY_CALIBRATION_CONFIGS}}) {
        std::ifstream in(path);
        REQUIRE(in.good());
        std::string line;
        while (std::getline(in, line)) {
            const auto j = nlohmann::json::parse(line);
            if (!j.contains("max_batch")) continue;
            const auto& spec = j.at("spec");
            INFO(j.at("case").get<std::string>());
            const model_spec model = model_named(spec.at("model").get<std::string>(), configs);
            const std::uint64_t measured = j.at("max_batch").get<std::uint64_t>();
            std::vector<std::string> targets;
            const recipe r = recipe_with_targets(spec, targets);
            const std::uint64_t answer =
                max_batch(model, r, {.seq = spec.at("seq").get<std::uint64_t>()}, budget_of(spec));
            CHECK(answer <= measured);
            if (answer == measured) ++exact;
            ++searches;
        }
    }
    CHECK(searches == 20);
    CHECK(exact == 19);
}

// The searches of a fresh-fit file (fresh-fit-*.jsonl, one fresh process a
// trial): each one's largest batch that ran, smallest that ran out of memory
// (none: the largest std::uint64_t), and max_batch's answer. A batch that ran
// out of memory must not fit, which this checks.
struct fresh_search {
    std::string name;
    std::uint64_t largest_run = 0;
    std::uint64_t smallest_failed = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t answer = 0;
    // The trials bracket the answer: the next batch ran out of memory.
    bool bracketed() const { return smallest_failed == largest_run + 1; }
};
std::vector<fresh_search> fresh_searches(const char* path, const std::string& configs = ANATOMY_CALIBRATION_CONFIGS,
                                         bool presets_first = true) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::vector<fresh_search> searches;
    std::string line;
    while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        if (!j.contains("trials")) continue;
        const auto& spec = j.at("spec");
        fresh_search search{.name = j.at("case").get<std::string>()};
        INFO(search.name);
        const model_spec model = model_named(spec.at("model").get<std::string>(), configs, presets_first);
        std::vector<std::string> targets;
        const recipe r = recipe_with_targets(spec, targets);
        const shape per_batch{.seq = spec.at("seq").get<std::uint64_t>(),
                              .target_seq = spec.value("tgt", std::uint64_t{0})};
        for (const auto& t : j.at("trials")) {
            const std::uint64_t batch = t.at("batch").get<std::uint64_t>();
            INFO("batch " << batch);
            if (t.at("ok").get<bool>()) {
                search.largest_run = std::max(search.largest_run, batch);
            } else {
                search.smallest_failed = std::min(search.smallest_failed, batch);
                shape trial = per_batch;
                trial.batch = batch;
                CHECK_FALSE(fits_under(model, r, trial, budget_of(spec)));
            }
        }
        search.answer = max_batch(model, r, per_batch, budget_of(spec));
        searches.push_back(search);
    }
    return searches;
}

// Each answer against its search's trials: none above the largest batch that
// ran and, `within_one`, none more than one below it. Counts the answers
// below it, and the exact ones where the trials bracket them.
struct answer_tally {
    std::size_t exact = 0;
    std::size_t below = 0;
};
answer_tally check_answers(const std::vector<fresh_search>& searches, bool within_one) {
    answer_tally tally;
    for (const fresh_search& search : searches) {
        INFO(search.name << ": answer " << search.answer << ", largest run " << search.largest_run);
        CHECK(search.answer <= search.largest_run);
        if (within_one) CHECK(search.answer + 1 >= search.largest_run);
        if (search.answer < search.largest_run) ++tally.below;
        if (search.bracketed() && search.answer == search.largest_run) ++tally.exact;
    }
    return tally;
}

TEST_CASE("serving under a cap: no fit where a fresh H200 process ran out of memory, and its largest batch",
          "[calibration][max_batch]") {
    // One fresh process a batch, two forwards under the cap
    // (tests/data/fresh-fit-inference-h200.jsonl). gemma-3-1b fp32 at 256
    // tokens under 24 GiB runs 71 to 74 and runs out of memory at 75 to 78,
    // where a search in one process ran 78 after its earlier trials (the
    // test above). In a fresh process from_config leaves a tied head's block
    // cached when tying frees it, and the 32 MiB made right after the first
    // matmul (the cuBLAS workspace) lands in it, so cap pressure cannot
    // release it (docs/accuracy.md). Building neither, the replay answered
    // 70 there, 52 for llama-3.2-1b fp32 (74 runs) and 45 for qwen3-0.6b
    // bf16 (49 runs), and 38 for gpt2 fp32, which runs out of memory; given
    // the cached head alone, 78 for gemma-3-1b. Building both, it answers
    // 74, 74, 49 and 28 (gpt2 runs 29 as well; 38 does not).
    std::size_t exact = 0;
    const std::vector<fresh_search> searches = fresh_searches(ANATOMY_FRESH_FIT_INFERENCE_FILE);
    for (const fresh_search& search : searches) {
        INFO(search.name);
        CHECK(search.answer <= search.largest_run);
        // Where the trials bracket the answer, it is the fresh one.
        if (search.bracketed()) {
            CHECK(search.answer == search.largest_run);
            ++exact;
        }
    }
    CHECK(searches.size() == 4);
    CHECK(exact == 3);
}

TEST_CASE("training under a cap: no fit where a fresh H200 process ran out of memory, and no answer above what ran",
          "[calibration][max_batch]") {
    // One fresh process a trial, three steps under the cap
    // (tests/data/fresh-fit-training-h200.jsonl, bench/torch_reference/fresh_fit.py
    // --spec): max_batch's answer for each real-size and recipes search of
    // the test above that reused one process, and ten QLoRA and LLM.int8
    // searches (eight checkpointed, as peft leaves it or non-reentrantly),
    // most with the next batch, where it ran out of memory. Every answer
    // ran; the eight bracketed are exact (the other two run out of memory
    // one batch up in quantized-gc-fit-h200.jsonl), and phi-3-mini answers
    // 18, which runs (it answered 17 until the base model's once-per-forward
    // tensors came after the embeddings: the serving walk test). SDPA's math
    // kernel walked as the H200 traces show it (7e562b6, reverted) answered llama-3.2-1b NF4 at 4096 under 24 GiB 2
    // and tinyllama LLM.int8 at 2048 under 20 GiB 6, which ran out of memory.
    // One search takes the whole H200 (`gpu`): llama-3-8b checkpointed at
    // 4096 runs 9, and 10 runs out of physical memory; with the context
    // measured at the first CUDA call, not after a step, the answer was 10.
    // Five searches of families no fresh process had checked (tenth
    // session), each bracketed: olmoe-1b-7b (a mixture of experts) at 2048,
    // gemma-3-4b checkpointed at 4096 and deepseek-v2-lite LoRA r16 on
    // q_proj, o_proj at 2048 are exact (5, 3, 4); falcon-7b and olmo-2-7b
    // checkpointed at 2048 answer 4 and 9 where 5 and 10 run
    // (docs/accuracy.md: the allocator model, fed the H200's requests, runs
    // them too; the walk's differ).
    const std::vector<fresh_search> searches = fresh_searches(ANATOMY_FRESH_FIT_TRAINING_FILE);
    const answer_tally tally = check_answers(searches, true);
    CHECK(searches.size() == 25);
    CHECK(tally.exact == 12);
    CHECK(tally.below == 2);
}

// The scratch tensors of the token embedding's backward (the first
// embedding kernel of the model).
std::vector<std::uint64_t> token_embedding_backward_scratch(const model_spec& model, const recipe& r, const shape& s) {
    for (const stage& st : lower(model).stages)
        for (const kernel& k : expand(st, model, r, s, devices::h200, stage_input_info{}).kernels)
            if (std::string_view(k.what) == "embedding")
                return {k.backward_workspace.tensors[0].count, k.backward_workspace.tensors[1].count};
    FAIL("no embedding kernel");
    return {};
}

TEST_CASE("embedding backward's partial sums are the size the H200's traces requested, above 3,072 indices only",
          "[calibration][embedding]") {
    // Requests of embedding_dense_backward's fp32 partial sums in the
    // H200's allocator traces, once per step
    // (bench/torch_reference/results/segments_<case>.jsonl.gz: `gzip -dc F |
    // grep -c '"alloc", [0-9]*, SIZE]'` finds each once a step).
    struct traced_case {
        const char* model;
        const char* recipe;
        std::uint64_t batch, seq, partial_sums;
    };
    const traced_case cases[] = {
        {"llama-3-8b", R"({"weights": "bf16", "gc": true})", 1, 4096, 73809920},
        {"llama-3-8b", R"({"weights": "bf16", "gc": true})", 3, 4096, 221446144},
        {"qwen3-4b", R"({"amp": "bf16", "gc": true})", 4, 2048, 92272640},
        {"qwen3-4b", R"({"amp": "bf16", "gc": true})", 5, 2048, 115343360},
        {"phi-3-mini", R"({"weights": "bf16", "gc": true})", 18, 4096, 484589568},
        {"falcon-7b", R"({"weights": "bf16", "gc": true})", 5, 2048, 204734464},
        {"olmo-2-7b", R"({"weights": "bf16", "gc": true})", 10, 2048, 369098752},
    };
    for (const traced_case& c : cases) {
        INFO(c.model << " " << c.batch << " x " << c.seq);
        const model_spec model = model_named(c.model, ANATOMY_CALIBRATION_CONFIGS);
        const auto scratch = token_embedding_backward_scratch(model, recipe_of(nlohmann::json::parse(c.recipe)),
                                                              {.batch = c.batch, .seq = c.seq});
        CHECK(std::count(scratch.begin(), scratch.end(), c.partial_sums) == 1);
    }
    // gpt2 fp32 at 2 x 1024 (segments_gpt2_fp32_b2_s1024): 2,048 indices, no
    // partial sums; the tied table's gradient (50,257 x 768 fp32, summed into
    // the head's) is the kernel's only scratch.
    const auto gpt2 = token_embedding_backward_scratch(presets::gpt2, recipe{}, {.batch = 2, .seq = 1024});
    CHECK(gpt2 == std::vector<std::uint64_t>{50257 * 768 * 4, 0});
}

// The modules of a model's first layer, in the order its forward calls them.
std::vector<std::string> first_layer_modules(const model_spec& model) {
    std::vector<std::string> names;
    for (const stage& st : lower(model).stages) {
        if (!st.block) continue;
        for (const op& o : st.ops) names.emplace_back(o.module.name);
        break;
    }
    return names;
}

bool calls_in_order(const std::vector<std::string>& modules, std::initializer_list<const char*> order) {
    auto at = modules.begin();
    for (const char* name : order) {
        at = std::find(at, modules.end(), name);
        if (at == modules.end()) return false;
    }
    return true;
}

TEST_CASE("q and k norms run where the family's code calls them", "[calibration][walk]") {
    // transformers 5.17: Qwen3 and OLMo write q_norm(q_proj(x)), then k's,
    // then v_proj; Gemma 3 projects q, k and v, then norms q and k.
    for (const char* family : {"qwen3-4b", "olmo-2-7b", "olmoe-1b-7b"}) {
        INFO(family);
        const auto modules = first_layer_modules(model_named(family, ANATOMY_CALIBRATION_CONFIGS));
        CHECK(calls_in_order(modules, {"q_proj", "q_norm", "k_proj", "k_norm", "v_proj"}));
    }
    const auto gemma = first_layer_modules(model_named("gemma-3-4b", ANATOMY_CALIBRATION_CONFIGS));
    CHECK(calls_in_order(gemma, {"q_proj", "k_proj", "v_proj", "q_norm", "k_norm"}));
}

// Allocations (positive) and frees (negative) of at least 1 MiB, with each
// run of frees between two allocations sorted: the order of frees with no
// allocation between them leaves the allocator in the same state.
std::vector<std::int64_t> large_requests_canonical(const std::vector<std::int64_t>& events) {
    std::vector<std::int64_t> out;
    std::size_t frees_from = 0;
    const auto close_frees = [&] { std::sort(out.begin() + static_cast<std::ptrdiff_t>(frees_from), out.end()); };
    for (const std::int64_t e : events) {
        if (e > -(1 << 20) && e < (1 << 20)) continue;
        if (e > 0) {
            close_frees();
            out.push_back(e);
            frees_from = out.size();
        } else {
            out.push_back(e);
        }
    }
    close_frees();
    return out;
}

// A kept trace's window of large requests (request_window.py), from its
// first allocation to its last: the window's first and last runs of frees
// may be cut.
std::vector<std::int64_t> traced_window(const nlohmann::json& j) {
    const std::vector<std::int64_t> traced = large_requests_canonical(j.at("events").get<std::vector<std::int64_t>>());
    const auto allocation = [](std::int64_t e) { return e > 0; };
    const auto first = std::find_if(traced.begin(), traced.end(), allocation);
    const auto last = std::find_if(traced.rbegin(), traced.rend(), allocation).base();
    return {first, last};
}

// The large requests of the replay's three steps (two forwards serving),
// recorded, the model's build first.
std::vector<std::int64_t> replayed_requests(const model_spec& model, const recipe& r, const shape& s) {
    const memory_timeline timeline = record_replay(model, r, s);
    std::vector<std::int64_t> walked;
    std::int64_t before = 0;
    for (const memory_sample& sample : timeline.samples) {
        std::int64_t now = 0;
        for (const bytes b : sample.allocated) now += static_cast<std::int64_t>(b.count);
        walked.push_back(now - before);
        before = now;
    }
    return large_requests_canonical(walked);
}

nlohmann::json data_file(const std::string& name) {
    std::ifstream in(std::string(ANATOMY_DATA_DIR) + "/" + name);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

TEST_CASE("OLMo 2's checkpointed forward makes the H200's requests, two layers running", "[calibration][walk]") {
    // Two layers of the first step's checkpointed forward of olmo-2-7b at
    // 10 x 2048 as the H200's allocator saw them
    // (tests/data/olmo2-forward-requests-h200.json, from a kept trace by
    // bench/torch_reference/request_window.py), found in the walk's replay:
    // q_norm right after q_proj, each norm holding its argument until it
    // returns, and both RoPE casts after both rotations.
    const nlohmann::json j = data_file("olmo2-forward-requests-h200.json");
    const auto& spec = j.at("spec");
    const std::vector<std::int64_t> window = traced_window(j);
    REQUIRE(window.size() > 100);
    const model_spec model = model_named(spec.at("model").get<std::string>(), ANATOMY_CALIBRATION_CONFIGS);
    const std::vector<std::int64_t> replayed = replayed_requests(
        model, recipe_of(spec), {.batch = spec.at("batch").get<std::uint64_t>(), .seq = spec.at("seq").get<std::uint64_t>()});
    CHECK(std::search(replayed.begin(), replayed.end(), window.begin(), window.end()) != replayed.end());
}

TEST_CASE("serving with a KV cache makes the H100's requests, the whole first forward", "[calibration][walk]") {
    // Every request of 1 MiB or more from the first after the model's build
    // to the logits, use_cache=True, as a fresh H100 process made them under
    // the cap (request_window.py): gemma-3-1b at 10 x 4096 (2,855 requests)
    // and mistral-7b at 23 x 4096, its sliding window (2,341). The walk made
    // them only once the base model's once-per-forward tensors came after
    // the embeddings, as transformers makes them: the sliding-window mask
    // built from four (seq, seq) bools, one kept; each rotary embedding's
    // fp32 tables and its cos and sin; the forward's cuBLAS workspace at the
    // first product (the rotary frequencies); SDPA's additive mask before
    // its output; and inputs_embeds held through the final norm. Before, the
    // same segments opened in another order, and the replay fit gemma-3-1b's
    // batch 10, which runs out of memory in the second forward.
    for (const char* file : {"gemma3-serving-requests-h100.json", "mistral-serving-requests-h100.json"}) {
        INFO(file);
        const nlohmann::json j = data_file(file);
        const auto& spec = j.at("spec");
        const std::vector<std::int64_t> window = traced_window(j);
        CHECK(window.size() > 2300);
        const model_spec model =
            model_named(spec.at("model").get<std::string>(), std::string(ANATOMY_DATA_DIR) + "/configs", false);
        const std::vector<std::int64_t> replayed =
            replayed_requests(model, recipe_of(spec),
                              {.batch = spec.at("batch").get<std::uint64_t>(), .seq = spec.at("seq").get<std::uint64_t>()});
        CHECK(std::search(replayed.begin(), replayed.end(), window.begin(), window.end()) != replayed.end());
    }
}

TEST_CASE("a whole H100: max_batch is the largest batch a fresh H100 process trains, or one below",
          "[calibration][max_batch]") {
    // Fourteen searches on an H100 80GB HBM3, one fresh process a trial,
    // capped at cudaMemGetInfo's free memory at the first CUDA call so that
    // physical memory runs out first (tests/data/fresh-fit-training-h100.jsonl),
    // each bracketed: ten full fine-tunes and four LoRA searches (dense
    // models, a sliding-window one, an MoE), at 2048 to 8192 tokens. The budget is
    // the h100-80gb profile's (its total and context measured on that card);
    // the kernels are the H200's, sm90 both. Thirteen are exact; olmo-2-7b
    // checkpointed at 2048 answers 9 where 10 runs, as under the H200's
    // 80 GiB cap (docs/accuracy.md).
    const std::vector<fresh_search> searches =
        fresh_searches((std::string(ANATOMY_DATA_DIR) + "/fresh-fit-training-h100.jsonl").c_str());
    for (const fresh_search& search : searches) CHECK(search.bracketed());
    CHECK(searches.size() == 14);
    CHECK(check_answers(searches, true).exact == 13);
}

TEST_CASE("OLMoE training under a cap: no fit where a fresh H100 process ran out of memory",
          "[calibration][max_batch][experts]") {
    // olmoe-1b-7b bf16 + AdamW at 2048 tokens, one fresh process a trial, under
    // 66 to 72 GiB (tests/data/fresh-fit-olmoe-h100.jsonl, 2026-12-07): every
    // trial ran out of memory, most in the optimizer step (its 64 experts'
    // 3-D weights, 256 and 512 MiB a tensor). fresh_searches checks that
    // fits_under says no to each; max_batch answers 0, 0, 2 and 2, below the
    // smallest batch that failed. No batch ran: none bracketed.
    const std::vector<fresh_search> searches = fresh_searches(
        (std::string(ANATOMY_DATA_DIR) + "/fresh-fit-olmoe-h100.jsonl").c_str(), ANATOMY_DATA_DIR "/configs", false);
    REQUIRE(searches.size() == 4);
    for (const fresh_search& search : searches) {
        INFO(search.name << ": answer " << search.answer << ", smallest failed " << search.smallest_failed);
        CHECK(search.answer < search.smallest_failed);
    }
}

TEST_CASE("recipes no capped search had covered: every answer runs in a fresh H100 process",
          "[calibration][max_batch]") {
    // Searches under a cap on an H100 80GB HBM3, one fresh process a trial
    // (tests/data/fresh-fit-recipes-h100.jsonl): fp16 autocast with its
    // GradScaler, fp32 and bf16 full fine-tunes, Adafactor, SGD with momentum,
    // bitsandbytes' Lion, eager attention, accumulation, loss-only loops,
    // torch.compile, encoders, T5, BLOOM, OPT, GPT-NeoX and ModernBERT. They
    // were run at the answer and the next batch. Two answers were wrong
    // until their mechanisms were fixed: t5-large in bf16 answered 10, which
    // ran out of memory (SDPA's math kernel upcast only Falcon's half inputs
    // to fp32, where aten upcasts every one, and T5's bias needs the math
    // kernel), and roberta-large's masked-LM loss under fp16 autocast
    // answered 12 where 13 runs (its log_softmax was taken in fp32;
    // cross_entropy runs it in fp16 and nll_loss keeps an fp32 copy). Three
    // searches made after the fixes (bert-base and distilbert MLM, t5-base
    // under autocast) are exact; bert-base and distilbert answered 33 and 20
    // before, where 35 and 22 run. So are six more (fp32 qwen3-0.6b's grouped
    // K/V in the math kernel at 4096 tokens, OPT-350m's projected embeddings,
    // gpt2-large and gemma-2-2b eager, LoRA under autocast with
    // checkpointing, BLOOM with Adafactor). gpt2-medium answers 3 where 4
    // runs with 25 MB to spare, and pythia-1b under bf16 autocast with
    // checkpointing 5 where 6 runs: since each parameter's gradient has its
    // own block (kernel::param_grads), the capped replay at batch 6 places
    // them in another order and runs out; with a module's summed into one
    // block it fit, as the H100 did (23.48 GiB reserved).
    const std::vector<fresh_search> searches =
        fresh_searches((std::string(ANATOMY_DATA_DIR) + "/fresh-fit-recipes-h100.jsonl").c_str(),
                       std::string(ANATOMY_DATA_DIR) + "/configs", false);
    CHECK(searches.size() == 29);
    CHECK(check_answers(searches, true).exact == 27);
}

TEST_CASE("a measured card's profile holds what its card showed: cudaMemGetInfo's total, the most outside the "
          "allocator after a step",
          "[calibration][device]") {
    // bench/torch_reference/context_growth.py, one process a workload: used
    // memory less memory_reserved at the first call, after the build and
    // after each step. The profile's context is the largest after a step.
    const auto check = [](const device_profile& card, const std::string& file, std::size_t workloads) {
        INFO(card.name);
        std::ifstream in(std::string(ANATOMY_DATA_DIR) + "/" + file);
        REQUIRE(in.good());
        std::uint64_t most = 0;
        std::size_t count = 0;
        std::string line;
        while (std::getline(in, line)) {
            const auto j = nlohmann::json::parse(line);
            CHECK(j.at("total").get<std::uint64_t>() == card.total.count);
            for (const auto& [point, used] : j.at("outside_allocator").items())
                if (point.rfind("step", 0) == 0) most = std::max(most, used.get<std::uint64_t>());
            ++count;
        }
        CHECK(count == workloads);
        CHECK(card.total_from == figure_source::measured);
        CHECK(card.context_from == figure_source::measured);
        CHECK(card.context.count == most);
    };
    check(devices::h200, "context-growth-h200.jsonl", 10);
    // The eager-attention workload (tinyllama at 4 x 2048) ran out of memory on the H100.
    check(devices::h100_80gb, "context-growth-h100.jsonl", 9);
}

TEST_CASE("serving with a KV cache under a cap: twelve answers run in a fresh H100 process", "[calibration][max_batch]") {
    // Twelve searches, one fresh process a trial, two forwards under no_grad
    // with use_cache=True (tests/data/fresh-fit-serving-h100.jsonl). Before
    // the cache update rebound key_states and value_states (the originals
    // die once update() returns) and SDPA's fused kernels made their
    // log-sum-exp only for a backward, llama-3.2-1b at 2048 under 24 GiB
    // answered 37 and phi-3-mini 14, which ran out of memory; they now
    // answer 35 and 13, exact. gemma-3-1b at 4096 under 24 GiB answered 10,
    // which ran out of memory in its second forward (fragmentation: the
    // serving walk test), until the base model's masks, rotary tables and
    // the forward's cuBLAS workspace were made where transformers makes
    // them; it answers 9 now, exact. gpt2 and
    // falcon-7b answer one below the largest batch that ran (falcon: the
    // math kernel's locals, docs/accuracy.md). qwen1.5-moe-a2.7b answered 19
    // (20 runs, 21 does not) once the embedding output lived through the
    // final norm, until its shared expert ran before the router, as its trace
    // shows (segments_qwen1.5-moe-a2.7b_bf16_serve-cache_*); it answers 20.
    // olmoe-1b-7b at 4096 under 24 GiB answered 10 (8 runs, 9 and 10 do not)
    // while the walk freed grouped_mm_experts_forward's names after their
    // last reader; held to its end, it answers 8. deepseek-v2-lite at 2048
    // under 48 GiB answered 34 (36 runs, 37 does not), 38 with those names
    // held, until its RoPE was DeepSeek's complex product (both .float()
    // copies first) and its table the complex one, whose matmul makes the
    // forward's cuBLAS workspace: its capped replay then reserves what the
    // H100 did at 33 to 36 (its segment trace, docs/accuracy.md), and it
    // answers 36.
    const std::vector<fresh_search> searches =
        fresh_searches((std::string(ANATOMY_DATA_DIR) + "/fresh-fit-serving-h100.jsonl").c_str(),
                       std::string(ANATOMY_DATA_DIR) + "/configs", false);
    CHECK(searches.size() == 12);
    CHECK(check_answers(searches, false).exact == 10);
}
