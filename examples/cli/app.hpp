// The anatomy command line's flags, requests and PyTorch commands; cli.hpp
// puts them together with the llm.c commands into run().
//
// Exit status: 0 on success, 2 when the command line is wrong on its own
// (unknown flag or value, missing or malformed flag), 1 when the inputs are
// well formed but cannot be estimated (a bad config.json, a task the model
// does not train, a size that overflows). Errors are one line on stderr,
// starting with "anatomy: ".
#pragma once

#include "hf_config.hpp"
#include "support.hpp"

#include <anatomy/anatomy.hpp>
#include <anatomy/entries.hpp>
#include <anatomy/explain.hpp>
#include <anatomy/format.hpp>
#include <anatomy/reserved.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#ifndef ANATOMY_CLI_VERSION
#define ANATOMY_CLI_VERSION "unknown"
#endif

namespace anatomy::cli {

namespace app_detail {

using ojson = nlohmann::ordered_json;

template <class... Args>
[[noreturn]] void usage(fmt::format_string<Args...> format, Args&&... args) {
    throw usage_error("anatomy: " + fmt::format(format, std::forward<Args>(args)...));
}

template <class... Args>
[[noreturn]] void input(fmt::format_string<Args...> format, Args&&... args) {
    throw input_error("anatomy: " + fmt::format(format, std::forward<Args>(args)...));
}

// The flags as typed; numbers and names are parsed here, not by CLI11, so
// that every message follows one style.
struct raw_options {
    std::string config, model, task, batch, seq, target_seq, weights, autocast, master, optimizer, attention, loop, quantize,
        checkpoint_impl,
        grad_accum, lora_rank, lora_targets, lora_dropout, num_labels, budget, gpu, framework, recompute, parallel,
        world_size, fsdp_param_dtype, offload, offload_device, tp, pp, micro_batches, zero_reduce_bucket,
        zero_max_live_params, zero_sub_group, plot;
    bool grad_checkpointing = false, inference = false, kv_cache = false, compile = false, json = false, explain = false,
         cudnn = false, no_master_weights = false, ddp_bucket_view = false, fsdp_no_reshard = false, sp = false,
         selective_recompute = false, distributed_optimizer = false;
};

// What one estimate or max-batch command asks for.
struct request {
    model_spec model{};
    std::string model_name;   // the preset, or the config's display name
    std::string config_path;  // empty for a preset
    std::string task_from;
    std::string weights_from;  // "--weights", the config's dtype key, or "the default"
    recipe base{};  // without LoRA targets: make_recipe() points them at lora_targets
    std::vector<std::string> lora_targets;
    shape s{};
    bytes budget{};
    std::optional<device_profile> gpu;  // --gpu: the card to fit on
    // The device the step runs on: --gpu's, else the measured H200.
    const device_profile& device() const { return gpu ? *gpu : devices::h200; }

    // The recipe views this request's strings: use it while the request lives.
    recipe make_recipe() const {
        recipe r = base;
        for (std::size_t i = 0; i < lora_targets.size(); ++i) r.lora.targets[i] = lora_targets[i];
        return r;
    }
};

inline std::string grouped(std::uint64_t n) {
    const std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// A whole number > 0 given to `flag`.
inline std::uint64_t parse_count(std::string_view flag, std::string_view text) {
    const std::string shown = shorten(std::string(text));
    if (text.empty()) usage("{}: needs a whole number > 0", flag);
    if (text.front() == '-') usage("{}: must be > 0, got {}", flag, shown);
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range)
        usage("{}: {} does not fit 64 bits; use a smaller number", flag, shown);
    if (ec != std::errc() || end != text.data() + text.size())
        usage("{}: \"{}\" is not a whole number; write e.g. {} 8", flag, shown, flag);
    if (value == 0) usage("{}: must be > 0, got {}", flag, shown);
    return value;
}

template <NamedEnum Enum>
Enum parse_enum(std::string_view flag, std::string_view text) {
    if (const std::optional<Enum> value = parse_name<Enum>(text)) return *value;
    usage("{}: unknown {} \"{}\"; choose one of {}", flag, enum_names<Enum>::what, shorten(std::string(text)),
          choices<Enum>());
}

// A dtype as anatomy names it (fp32, bf16, fp16) or as torch does
// (float32, float, bfloat16, float16, half).
inline dtype parse_dtype(std::string_view flag, std::string_view text) {
    constexpr std::pair<std::string_view, dtype> torch_names[] = {
        {"float32", dtype::fp32}, {"float", dtype::fp32},  {"bfloat16", dtype::bf16},
        {"float16", dtype::fp16}, {"half", dtype::fp16}};
    for (const auto& [name, type] : torch_names)
        if (text == name) return type;
    return parse_enum<dtype>(flag, text);
}

inline std::string gpu_names() {
    std::string out;
    for (const device_profile& g : device_profiles) out += fmt::format("{}{}", out.empty() ? "" : ", ", g.name);
    return out;
}

// --gpu NAME, ignoring case; a prefix names the one card it starts.
inline device_profile parse_gpu(const std::string& name) {
    const device_matches m = find_devices(name);
    if (m.count == 1) return *m.found[0];
    if (m.count == 0) usage("--gpu: unknown card \"{}\"; choose one of {}", shorten(name), gpu_names());
    std::string names;
    for (std::size_t i = 0; i < m.count; ++i) names += fmt::format("{}{}", i == 0 ? "" : ", ", m.found[i]->name);
    usage("--gpu: \"{}\" is ambiguous: it matches {}; name one", shorten(name), names);
}

inline std::string preset_names() {
    std::string out;
    for (const auto& p : presets::all) {
        if (!out.empty()) out += ", ";
        out += p.name;
    }
    return out;
}

// --- command line definition -------------------------------------------------

template <NamedEnum Enum>
CLI::Option* add_enum(CLI::App& app, const std::string& flag, std::string& target, std::string_view what,
                      std::string_view default_name) {
    std::string help = fmt::format("{}: {}", what, choices<Enum>(" | "));
    if (!default_name.empty()) help += fmt::format(" (default {})", default_name);
    return app.add_option(flag, target, help)->type_name("NAME");
}

inline void add_model_flags(CLI::App& app, raw_options& o, bool with_batch) {
    app.add_option("--config", o.config, "a Hugging Face config.json (or a directory holding one)")
        ->type_name("FILE");
    app.add_option("--model", o.model, "a preset; see `anatomy presets`")->type_name("PRESET");
    add_enum<task>(app, "--task", o.task, "what the model is trained for",
                   "from the config's architectures, else the family's");
    if (with_batch) app.add_option("--batch", o.batch, "sequences per micro-batch")->type_name("B")->required();
    app.add_option("--seq", o.seq, "tokens per sequence (the encoder's, for T5; image models derive it)")->type_name("S");
    app.add_option("--target-seq", o.target_seq, "decoder (label) tokens per sequence, T5 only (default: --seq)")
        ->type_name("T");
    add_enum<dtype>(app, "--weights", o.weights, "parameter dtype (or torch's float32, bfloat16, float16, half)",
                    "the config's dtype, else fp32");
    add_enum<autocast_mode>(app, "--autocast", o.autocast, "torch.autocast dtype", "off");
    add_enum<master_weights>(app, "--master-weights", o.master,
                             "a master copy the optimizer updates (fp32 needs --weights bf16 or fp16)", "none");
    add_enum<optimizer_kind>(app, "--optimizer", o.optimizer, "optimizer", "adamw; none with --inference");
    add_enum<attention_kernel>(app, "--attention", o.attention, "attention kernel", "sdpa");
    add_enum<quantization>(app, "--quantize", o.quantize,
                           "a bitsandbytes base: nf4/fp4 (4-bit, double quantization, bf16 compute) or int8 "
                           "(LLM.int8, threshold 6.0); training it needs LoRA (QLoRA: the rest of the model in fp32)",
                           "none");
    add_enum<training_loop>(app, "--loop", o.loop,
                            "how the step is written: plain keeps the outputs through backward, loss-only and "
                            "hf-trainer (transformers.Trainer, AdamW fused by default) do not",
                            "plain");
    app.add_flag("--grad-checkpointing", o.grad_checkpointing, "gradient checkpointing (transformers' default)");
    add_enum<checkpoint_impl>(app, "--checkpoint-impl", o.checkpoint_impl,
                              "torch.utils.checkpoint's implementation under --grad-checkpointing: as-enabled is "
                              "transformers' non-reentrant one, or with --quantize the reentrant one that peft's "
                              "prepare_model_for_kbit_training leaves PyTorch to pick (not with --loop hf-trainer, "
                              "which turns transformers' on again)",
                              "as-enabled");
    app.add_flag("--compile", o.compile,
                 "torch.compile(model), default mode: inductor fuses pointwise kernels, AOTAutograd picks what "
                 "backward keeps");
    app.add_option("--grad-accum", o.grad_accum, "gradient accumulation steps (default 1)")->type_name("N");
    app.add_option("--lora-rank", o.lora_rank, "LoRA rank; needs --lora-targets")->type_name("R");
    app.add_option("--lora-dropout", o.lora_dropout, "peft's lora_dropout (default 0): a mask per adapted input")
        ->type_name("P");
    app.add_option("--lora-targets", o.lora_targets, "modules LoRA adapts, comma-separated (e.g. q_proj,v_proj)")
        ->type_name("LIST");
    app.add_option("--num-labels", o.num_labels, "classes of a seq-cls head (default: the config's, else 2)")
        ->type_name("N");
    app.add_flag("--inference", o.inference, "a forward pass under no_grad: no gradients, no optimizer");
    app.add_flag("--kv-cache", o.kv_cache, "with --inference: use_cache=True");
    add_enum<parallelism>(app, "--parallel", o.parallel, "how ranks share the work; the batch is per rank", "none");
    app.add_option("--world-size", o.world_size, "ranks (GPUs) with --parallel; figures are per rank")
        ->type_name("N");
    app.add_flag("--ddp-bucket-view", o.ddp_bucket_view, "DDP(gradient_as_bucket_view=True)");
    app.add_flag("--fsdp-no-reshard", o.fsdp_no_reshard, "FSDP2 fully_shard(reshard_after_forward=False)");
    add_enum<offload_target>(app, "--offload", o.offload,
                             "DeepSpeed's offload with a ZeRO stage (params needs zero3)", "none");
    add_enum<offload_device>(app, "--offload-device", o.offload_device, "where --offload puts it", "cpu");
    app.add_option("--zero-reduce-bucket", o.zero_reduce_bucket,
                   "DeepSpeed reduce_bucket_size, elements (default 500000000): ZeRO-3's IPG bucket")
        ->type_name("N");
    app.add_option("--zero-max-live-params", o.zero_max_live_params,
                   "DeepSpeed stage3_max_live_parameters (default 1000000000): fetched parameters kept under offload")
        ->type_name("N");
    app.add_option("--zero-sub-group-size", o.zero_sub_group,
                   "DeepSpeed sub_group_size (default 1000000000): what ZeRO-3's step updates at once")
        ->type_name("N");
    app.add_option("--tp", o.tp, "Megatron tensor parallel size (Korthikanti et al. 2022 formulas)")->type_name("N");
    app.add_option("--pp", o.pp, "Megatron pipeline stages, 1F1B schedule")->type_name("N");
    app.add_flag("--sp", o.sp, "Megatron sequence parallelism");
    app.add_flag("--selective-recompute", o.selective_recompute, "Megatron selective activation recompute");
    app.add_option("--micro-batches", o.micro_batches, "Megatron micro-batches per step (default: at least --pp)")
        ->type_name("N");
    app.add_flag("--distributed-optimizer", o.distributed_optimizer, "Megatron's optimizer state sharded over DP");
    app.add_option("--fsdp-param-dtype", o.fsdp_param_dtype,
                   "FSDP2 MixedPrecisionPolicy(param_dtype=..., reduce_dtype=fp32): bf16 or fp16")
        ->type_name("NAME");
    app.add_option("--gpu", o.gpu, "a card from the catalogue (" + gpu_names() + "): fit against its memory")
        ->type_name("NAME");
    app.add_flag("--json", o.json, "print one JSON object");
    app.add_option("--framework", o.framework,
                   "what runs the step: pytorch (default) or llm.c (karpathy/llm.c's train_gpt2.cu)")
        ->type_name("NAME");
    app.add_option("--recompute", o.recompute, "llm.c's -r: 0 none, 1 GELU (its default), 2 GELU and LayerNorm")
        ->type_name("N");
    app.add_flag("--cudnn", o.cudnn, "llm.c built with USE_CUDNN=1 (cuDNN flash attention)");
    app.add_flag("--no-master-weights", o.no_master_weights, "llm.c's -w 0: no fp32 master copy");
}

// `--framework` and the flags that belong to one framework only.
inline bool wants_llmc(const raw_options& o) {
    if (!o.framework.empty() && o.framework != "pytorch" && o.framework != "llm.c")
        usage("--framework: unknown framework \"{}\"; choose pytorch or llm.c", shorten(o.framework));
    if (o.framework == "llm.c") return true;
    if (!o.recompute.empty())
        usage("--recompute: is llm.c's -r and needs --framework llm.c; for PyTorch pass --grad-checkpointing");
    if (o.cudnn) usage("--cudnn: describes an llm.c build and needs --framework llm.c");
    if (o.no_master_weights)
        usage("--no-master-weights: is llm.c's -w 0 and needs --framework llm.c; PyTorch runs keep no master "
              "copy unless --master-weights fp32");
    return false;
}

// --budget SIZE or --gpu NAME. A card's budget is its total minus `overhead`:
// what the process holds before its first buffer.
inline void read_budget(const raw_options& o, bytes& budget, std::optional<device_profile>& gpu,
                        const std::function<bytes(const device_profile&)>& overhead) {
    if (!o.budget.empty()) {
        try {
            budget = parse_bytes(o.budget);
        } catch (const overflow_error&) {
            usage("--budget: \"{}\" overflows 64 bits; use a smaller size", shorten(o.budget));
        } catch (const anatomy::error& e) {
            usage("--budget: cannot read \"{}\": {}", shorten(o.budget), without_prefix(e.what()));
        }
        if (budget.count == 0) usage("--budget: must be > 0, got \"{}\"", shorten(o.budget));
    }
    if (!o.gpu.empty()) {
        gpu = parse_gpu(o.gpu);
        if (!o.budget.empty())
            usage("--gpu and --budget exclude each other: --gpu {} sets the budget to the card minus its context",
                  o.gpu);
        budget = gpu->total - overhead(*gpu);
    }
}

// --- building the request ------------------------------------------------------

inline recipe build_recipe(const raw_options& o, std::vector<std::string>& lora_targets) {
    recipe r{};
    if (!o.weights.empty()) r.weights = parse_dtype("--weights", o.weights);
    if (!o.autocast.empty()) r.autocast = parse_enum<autocast_mode>("--autocast", o.autocast);
    if (!o.master.empty()) r.master = parse_enum<master_weights>("--master-weights", o.master);
    if (!o.attention.empty()) r.attention = parse_enum<attention_kernel>("--attention", o.attention);
    if (!o.loop.empty()) r.loop = parse_enum<training_loop>("--loop", o.loop);
    if (!o.quantize.empty()) r.quantize = parse_enum<quantization>("--quantize", o.quantize);
    if (r.quantize != quantization::none && !o.inference) {
        if (o.lora_rank.empty())
            usage("--quantize {}: {} weights take no gradient; add --lora-rank R --lora-targets LIST (QLoRA)",
                  o.quantize, r.quantize == quantization::int8 ? "8-bit" : "4-bit");
        // peft.prepare_model_for_kbit_training casts what is not quantized to fp32.
        r.weights = dtype::fp32;
    }
    if (r.loop != training_loop::plain && o.inference)
        usage("--loop {}: is a training loop; drop it with --inference", o.loop);
    // Plain values, not std::optional: g++ 12 at -O2 warns that an engaged
    // optional's payload "may be used uninitialized" here.
    const bool has_optimizer = !o.optimizer.empty();
    // TrainingArguments' default optim in transformers 5.17 is adamw_torch_fused.
    const optimizer_kind default_optimizer =
        o.loop == "hf-trainer" ? optimizer_kind::adamw_fused : optimizer_kind::adamw;
    const optimizer_kind optimizer =
        has_optimizer ? parse_enum<optimizer_kind>("--optimizer", o.optimizer) : default_optimizer;
    if (!o.grad_accum.empty()) r.grad_accum = parse_count("--grad-accum", o.grad_accum);

    r.inference = o.inference;
    r.kv_cache = o.kv_cache;
    r.grad_checkpointing = o.grad_checkpointing;
    if (!o.checkpoint_impl.empty()) {
        r.checkpoint = parse_enum<checkpoint_impl>("--checkpoint-impl", o.checkpoint_impl);
        if (!r.grad_checkpointing) usage("--checkpoint-impl {}: needs --grad-checkpointing", o.checkpoint_impl);
    }
    r.compile = o.compile;
    if (o.inference) {
        if (has_optimizer && optimizer != optimizer_kind::none)
            usage("--inference: takes no optimizer (it implies none); drop --optimizer {}", name_of(optimizer));
        r.optimizer = optimizer_kind::none;
        if (r.grad_accum != 1) usage("--inference: takes no --grad-accum; drop it");
        if (r.grad_checkpointing) usage("--inference: takes no --grad-checkpointing; drop it");
    } else {
        r.optimizer = optimizer;
        if (r.optimizer == optimizer_kind::none)
            usage("--optimizer none: training needs an optimizer; pass --inference for a forward pass only");
        if (r.kv_cache) usage("--kv-cache: needs --inference");
    }
    if (r.optimizer == optimizer_kind::paged_adamw8bit && r.parallel != parallelism::none)
        usage("--optimizer paged-adamw8bit: modelled on one GPU; drop --parallel");
    if (!o.parallel.empty()) r.parallel = parse_enum<parallelism>("--parallel", o.parallel);
    if (!o.world_size.empty()) r.world_size = parse_count("--world-size", o.world_size);
    r.ddp_bucket_view = o.ddp_bucket_view;
    r.fsdp_reshard_after_forward = !o.fsdp_no_reshard;
    if (r.parallel != parallelism::none && o.inference)
        usage("--parallel {}: trains; drop it with --inference (each rank serves a replica)", name_of(r.parallel));
    // Each of --parallel and --world-size needs the other: no rank count is guessed.
    if (!o.world_size.empty() && r.parallel == parallelism::none)
        usage("--world-size {}: needs --parallel (ddp, fsdp, zero1, zero2 or zero3)", r.world_size);
    if (r.parallel != parallelism::none && o.world_size.empty())
        usage("--parallel {}: needs --world-size N, the ranks sharing the step (1 for one GPU)", name_of(r.parallel));
    if (!o.offload.empty()) r.offload = parse_enum<offload_target>("--offload", o.offload);
    if (r.offload != offload_target::none && !is_zero(r.parallel))
        usage("--offload {}: needs --parallel zero1, zero2 or zero3", name_of(r.offload));
    if (r.offload == offload_target::params && r.parallel != parallelism::zero3)
        usage("--offload params: needs --parallel zero3 (only stage 3 partitions parameters)");
    if (!o.offload_device.empty()) {
        if (r.offload == offload_target::none) usage("--offload-device: needs --offload optimizer or params");
        r.offload_to = parse_enum<offload_device>("--offload-device", o.offload_device);
    }
    if (is_zero(r.parallel) && (!o.lora_rank.empty() || r.autocast != autocast_mode::off))
        usage("--parallel {}: modelled without LoRA or --autocast; pass --weights bf16 --master-weights fp32, as "
              "DeepSpeed's bf16 mode runs",
              name_of(r.parallel));
    if (r.ddp_bucket_view && r.parallel != parallelism::ddp) usage("--ddp-bucket-view: needs --parallel ddp");
    const auto zero_size = [&](std::string_view flag, const std::string& text, std::uint64_t& target) {
        if (text.empty()) return;
        if (!is_zero(r.parallel)) usage("{}: is a DeepSpeed ZeRO setting; needs --parallel zero1, zero2 or zero3", flag);
        target = parse_count(flag, text);
    };
    zero_size("--zero-reduce-bucket", o.zero_reduce_bucket, r.zero_reduce_bucket);
    zero_size("--zero-max-live-params", o.zero_max_live_params, r.zero_max_live_parameters);
    zero_size("--zero-sub-group-size", o.zero_sub_group, r.zero_sub_group);
    if (o.fsdp_no_reshard && r.parallel != parallelism::fsdp) usage("--fsdp-no-reshard: needs --parallel fsdp");
    if (!o.fsdp_param_dtype.empty()) {
        if (r.parallel != parallelism::fsdp) usage("--fsdp-param-dtype: needs --parallel fsdp");
        r.fsdp_param_dtype = parse_dtype("--fsdp-param-dtype", o.fsdp_param_dtype);
        if (!is_half(r.fsdp_param_dtype)) usage("--fsdp-param-dtype: bf16 or fp16, got {}", o.fsdp_param_dtype);
    }
    if (r.parallel == parallelism::fsdp && (r.lora.enabled() || !o.lora_rank.empty() ||
                                            r.master != master_weights::none || r.autocast != autocast_mode::off))
        usage("--parallel fsdp: modelled without LoRA, --master-weights or --autocast; for mixed precision pass "
              "--fsdp-param-dtype bf16");

    if (!o.lora_dropout.empty() && o.lora_rank.empty()) usage("--lora-dropout: needs --lora-rank and --lora-targets");
    if (o.lora_rank.empty() != o.lora_targets.empty())
        usage("{}: needs {} too", o.lora_rank.empty() ? "--lora-targets" : "--lora-rank",
              o.lora_rank.empty() ? "--lora-rank R" : "--lora-targets LIST (e.g. q_proj,v_proj)");
    if (!o.lora_rank.empty()) {
        r.lora.rank = parse_count("--lora-rank", o.lora_rank);
        if (!o.lora_dropout.empty()) {
            double p = -1.0;
            const char* end = o.lora_dropout.data() + o.lora_dropout.size();
            const auto [ptr, ec] = std::from_chars(o.lora_dropout.data(), end, p);
            if (ec != std::errc{} || ptr != end || !(p >= 0.0 && p < 1.0))
                usage("--lora-dropout: \"{}\" is not a probability in [0, 1)", shorten(o.lora_dropout));
            r.lora.dropout = p;
        }
        std::string_view rest = o.lora_targets;
        while (true) {
            const std::size_t comma = rest.find(',');
            std::string_view name = rest.substr(0, comma);
            while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
            while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
            if (name.empty())
                usage("--lora-targets: \"{}\" has an empty module name; write e.g. q_proj,v_proj",
                      shorten(o.lora_targets));
            lora_targets.emplace_back(name);
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
        if (lora_targets.size() > r.lora.targets.size())
            usage("--lora-targets: at most {} modules, got {}", r.lora.targets.size(), lora_targets.size());
    }
    return r;
}

inline std::string linear_modules(const op_graph& graph) {
    std::vector<std::string_view> names;
    for_each_op(graph, [&](const stage&, const op& node) {
        if (node.kind != op_kind::linear) return;
        std::string_view name = node.module.name;
        if (const std::size_t dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    });
    std::string out;
    for (std::string_view n : names) out += fmt::format("{}{}", out.empty() ? "" : ", ", n);
    return out;
}

inline request build_request(const raw_options& o, bool with_batch) {
    request q;
    // Flags first: the command line on its own.
    if (!o.config.empty() && !o.model.empty())
        usage("--config and --model exclude each other; pass one of them");
    if (o.config.empty() && o.model.empty())
        usage("pass --model PRESET or --config FILE (see `anatomy presets`)");
    const std::optional<task> task_override =
        o.task.empty() ? std::nullopt : std::optional(parse_enum<task>("--task", o.task));
    if (with_batch) q.s.batch = parse_count("--batch", o.batch);
    if (!o.seq.empty()) q.s.seq = parse_count("--seq", o.seq);
    if (!o.target_seq.empty()) q.s.target_seq = parse_count("--target-seq", o.target_seq);
    const bool has_num_labels = !o.num_labels.empty();
    const std::uint64_t num_labels = has_num_labels ? parse_count("--num-labels", o.num_labels) : 0;
    q.base = build_recipe(o, q.lora_targets);
    read_budget(o, q.budget, q.gpu, [](const device_profile& g) { return g.context; });
    if (!o.model.empty()) {
        const std::optional<model_spec> preset = presets::find(o.model);
        if (!preset)
            usage("--model: unknown preset \"{}\"; choose one of {} (or pass --config FILE)", shorten(o.model),
                  preset_names());
        q.model = *preset;
        q.model_name = o.model;
    }

    // Then the model, and what the flags ask of it.
    if (!o.config.empty()) {
        hf_model loaded = load_hf_config(o.config, task_override);
        q.model = loaded.spec;
        q.model_name = std::move(loaded.name);
        q.config_path = o.config;
        q.task_from = std::move(loaded.task_from);
        // from_pretrained loads the weights in the config's dtype; QLoRA's
        // prepare_model_for_kbit_training casts what is not quantized to fp32.
        const bool kbit_training = q.base.quantize != quantization::none && !q.base.inference;
        if (o.weights.empty() && loaded.weights && !kbit_training) {
            q.base.weights = *loaded.weights;
            q.weights_from = fmt::format("the config's {}", loaded.weights_key);
        }
    } else if (task_override) {
        if (!supports_task(q.model, *task_override))
            input("--task {}: {} is {} model and trains {} only", name_of(*task_override), q.model_name,
                  stack_name(q.model.stack), supported_tasks(q.model));
        q.model.head.kind = *task_override;
        q.task_from = "--task";
    } else {
        q.task_from = "the preset's";
    }
    if (q.weights_from.empty())
        q.weights_from = !o.weights.empty() ? "--weights"
                         : q.base.quantize != quantization::none && !q.base.inference ? "--quantize (QLoRA)"
                                                                                     : "the default";
    if (q.base.master == master_weights::fp32 && !is_half(q.base.weights))
        usage("--master-weights fp32: needs --weights bf16 or fp16 (the fp32 copy is the master)");
    const std::string_view arch = q.model.model_type;
    if (has_num_labels) {
        if (q.model.head.kind != task::seq_cls && q.model.head.kind != task::image_cls)
            input("--num-labels: applies to tasks seq-cls and image-cls only; {} runs {}", q.model_name,
                  name_of(q.model.head.kind));
        q.model.head.num_labels = num_labels;
    }
    if (q.s.target_seq != 0 && q.model.stack != stack_kind::encoder_decoder)
        input("--target-seq: applies to encoder-decoder models (t5) only; {} is {} model ({}); drop it",
              q.model_name, stack_name(q.model.stack), arch);
    if (q.model.embedding.patches()) {
        if (q.s.seq != 0 && q.s.seq != image_tokens(q.model))
            input("--seq {}: {} is an image model whose sequence is its {} patches + 1; drop --seq", q.s.seq,
                  q.model_name, q.model.embedding.patch_count());
        q.s.seq = image_tokens(q.model);
    } else if (q.s.seq == 0) {
        usage("--seq: needs a whole number > 0 (only image models derive it)");
    }
    if (q.model.embedding.positions > 0 && !q.model.embedding.patches() && q.s.seq > usable_positions(q.model))
        input("--seq {}: exceeds the {} learned positions of {} (max_position_embeddings); use --seq {} or less",
              q.s.seq, usable_positions(q.model), q.model_name, usable_positions(q.model));
    if (q.base.kv_cache && q.model.stack == stack_kind::encoder)
        input("--kv-cache: {} is an encoder ({}) and keeps no KV cache; drop --kv-cache", q.model_name, arch);
    try {
        validate(q.model);
    } catch (const anatomy::error& e) {
        input("{}: {}", q.model_name, without_prefix(e.what()));
    }
    if (uses_bf16(q.base) && !q.device().has_bf16())
        input("--gpu {}: compute capability {}.{} has no bf16 kernels (they need 8.0); use --weights fp16 or fp32 "
              "(the bf16 came from {})",
              q.device().name, q.device().major, q.device().minor,
              q.base.autocast == autocast_mode::bf16 ? "--autocast" : q.base.weights == dtype::bf16 ? q.weights_from : "--quantize");
    if (q.base.lora.enabled()) {
        const op_graph graph = lower(q.model);
        for (const std::string& target : q.lora_targets) {
            bool found = false;
            for_each_op(graph, [&](const stage&, const op& node) {
                found = found || (node.kind == op_kind::linear && node.module.matches(target));
            });
            if (!found)
                input("--lora-targets: \"{}\" matches no linear module of {}; its linear modules are {}",
                      shorten(target), q.model_name, linear_modules(graph));
        }
    }
    try {
        validate(q.make_recipe());
    } catch (const anatomy::error& e) {
        usage("{}", without_prefix(e.what()));
    }
    return q;
}

// --- estimating ----------------------------------------------------------------

inline std::string shape_text(const request& q, bool with_batch) {
    std::string out = with_batch ? fmt::format("batch {}, seq {}", q.s.batch, q.s.seq) : fmt::format("seq {}", q.s.seq);
    if (q.model.stack == stack_kind::encoder_decoder) out += fmt::format(", target seq {}", target_length(q.s));
    return out;
}

// An estimate with what the allocator replay adds: reserved memory.
struct estimate_result {
    memory_estimate e;
    allocator_replay replay;
    bool fits = false;  // with a budget, by max-batch's test: set by with_fit
    // The replay's reserved memory is not modelled for DeepSpeed ZeRO, for
    // checkpointing over a quantized base, and for the reentrant checkpoint
    // (detail::require_fit_modelled): shown, but
    // marked with this note, how far off an H200 was; empty when modelled.
    std::string_view unmodelled_note;
};

// The table's note on a reserved figure that is not modelled.
inline std::string_view unmodelled_reserved_note(const recipe& r) {
    switch (detail::reserved_gap_of(r)) {
        case detail::reserved_gap::none: break;
        case detail::reserved_gap::zero: return "(not modelled for DeepSpeed ZeRO: an H200 reserves 10-16 % more)";
        case detail::reserved_gap::quantized_checkpoint_in_trainer:
            return "(not modelled for checkpointing over a quantized base under the Trainer: an H200 reserved 5 % more)";
        case detail::reserved_gap::reentrant_checkpoint:
            return "(not modelled for the reentrant checkpoint over a plain base: never measured there)";
    }
    return {};
}

// The peak the CLI reports as max_memory_allocated. The replay hands each
// tensor the block PyTorch's allocator would, whole when the rest is not
// worth splitting (up to 52 MiB at bert-base's peak), which the analytic
// walk cannot know: on the 82 steps of the calibration files the replay's
// peak is within 0.91 % of the measured, the walk's within 2.18 %
// (docs/accuracy.md). Where the replay's reserved memory is not modelled
// (reserved_gap_of) neither is its allocation order: the walk's peak then.
inline bool peak_from_replay(const estimate_result& x) { return x.unmodelled_note.empty(); }
inline bytes reported_peak(const estimate_result& x) {
    return peak_from_replay(x) ? x.replay.peak_allocated : x.e.peak;
}

// What the step takes of the card: the allocator's reserved memory (the
// forward's and autograd's cuBLAS workspaces in it), cuBLASLt's, and a
// paged optimizer's managed memory.
inline bytes device_need(const estimate_result& x) {
    return x.replay.peak_reserved + cublas_workspace_beside_replay() + x.e.managed;
}

[[noreturn]] inline void overflowed(const request& q, bool with_batch) {
    input("the estimate overflows 64 bits ({}, {}); use a smaller batch, sequence or model", q.model_name,
          shape_text(q, with_batch));
}

// Fit checks refuse what detail::reserved_modelled says is not modelled.
inline void require_fit_modelled(const request& q) {
    try {
        detail::require_fit_modelled(q.make_recipe());
    } catch (const anatomy::error& e) {
        input("{}", without_prefix(e.what()));
    }
}

// Whether step `e`'s analytic peak alone keeps it out of the budget: a paged
// optimizer's managed memory comes out of a card's memory first (a --budget
// is the allocator's cap, which it does not touch), and the allocator never
// needs less than the peak.
inline bool peak_rules_out(const request& q, const memory_estimate& e) {
    const bytes managed = q.gpu ? e.managed : bytes{};
    return managed >= q.budget || e.peak + cublas_workspace(q.make_recipe(), q.device()) > q.budget - managed;
}

// Whether step `s` fits the request's budget, by max-batch's test: the
// allocator replayed under the cap with the cuBLAS workspaces it does not
// place taken first.
inline bool step_fits(const request& q, const estimator& prepared, const shape& s, const estimate_result& x) {
    require_fit_modelled(q);
    // One whose peak is over the cap cannot run, and one whose uncapped
    // replay stays under it runs the same under it: only the rest is
    // replayed capped.
    if (peak_rules_out(q, x.e)) return false;
    if (device_need(x) <= q.budget) return true;
    try {
        return fits_under(prepared, s, q.budget - (q.gpu ? x.e.managed : bytes{}));
    } catch (const overflow_error&) {
        return false;
    }
}

// The estimate of step `s` with its fit under the request's budget.
inline estimate_result with_fit(const request& q, const estimator& prepared, const shape& s, estimate_result x) {
    if (q.budget.count > 0) x.fits = step_fits(q, prepared, s, x);
    return x;
}

// The request's estimator: its model and recipe lowered once for every shape.
inline estimator prepare_estimator(const request& q) {
    try {
        return estimator(q.model, q.make_recipe(), q.device());
    } catch (const overflow_error&) {
        overflowed(q, false);
    } catch (const anatomy::error& e) {
        input("{}", without_prefix(e.what()));
    }
}

// The analytic estimate of step `s`, without the allocator replay.
inline memory_estimate estimate_only(const request& q, const estimator& prepared, const shape& s, bool with_batch) {
    try {
        // Token counts must fit 64 bits even where the estimate does not use them all;
        // bytes arithmetic is checked, so count them as bytes.
        (void)(s.batch * (s.seq * B) + s.batch * (target_length(s) * B));
        return prepared.estimate(s);
    } catch (const overflow_error&) {
        overflowed(q, with_batch);
    } catch (const anatomy::error& e) {
        input("{}", without_prefix(e.what()));
    }
}

inline estimate_result run_estimate(const request& q, const estimator& prepared, const shape& s, bool with_batch) {
    const memory_estimate e = estimate_only(q, prepared, s, with_batch);
    try {
        return {e, prepared.replay(s), false, unmodelled_reserved_note(q.make_recipe())};
    } catch (const overflow_error&) {
        overflowed(q, with_batch);
    } catch (const anatomy::error& err) {
        input("{}", without_prefix(err.what()));
    }
}

// One estimate of the request, its fit under the budget included.
inline estimate_result run_estimate(const request& q, const shape& s, bool with_batch) {
    try {
        (void)(s.batch * (s.seq * B) + s.batch * (target_length(s) * B));
    } catch (const overflow_error&) {
        overflowed(q, with_batch);
    }
    const estimator prepared = prepare_estimator(q);
    return with_fit(q, prepared, s, run_estimate(q, prepared, s, with_batch));
}

// --- output ----------------------------------------------------------------------

inline std::string recipe_text(const request& q) {
    const recipe r = q.make_recipe();
    std::string out = fmt::format("weights {}{}, autocast {}, master weights {}, optimizer {}, attention {}",
                                  name_of(r.weights),
                                  q.weights_from.starts_with("the config's") ? fmt::format(" (from {})", q.weights_from)
                                                                             : std::string(),
                                  name_of(r.autocast), name_of(r.master), name_of(r.optimizer), name_of(r.attention));
    // transformers 5.17 gives a family without SDPA eager attention.
    if (r.attention == attention_kernel::sdpa && !q.model.attention.sdpa)
        out += fmt::format(" (estimated as eager: {} has no SDPA path in transformers 5.17)", q.model.model_type);
    out += fmt::format("\n{:<10}loop {}, grad accum {}, grad checkpointing {}, compile {}", "", name_of(r.loop),
                       r.grad_accum,
                       !r.grad_checkpointing     ? "off"
                       : reentrant_checkpoint(r) ? "on (reentrant)"
                                                 : "on (non-reentrant)",
                       r.compile ? "on" : "off");
    if (r.quantize != quantization::none)
        out += fmt::format(", {} base ({}{})", name_of(r.quantize),
                           is_4bit(r.quantize) ? fmt::format("{} compute", name_of(r.quant_compute))
                                               : std::string("LLM.int8, outlier threshold 6.0"),
                           r.inference ? "" : "; the rest fp32, as prepare_model_for_kbit_training casts it");
    if (r.lora.enabled()) {
        std::string targets;
        for (const std::string& t : q.lora_targets) targets += fmt::format("{}{}", targets.empty() ? "" : ",", t);
        out += fmt::format(", LoRA rank {} on {}", r.lora.rank, targets);
    } else {
        out += ", LoRA off";
    }
    out += fmt::format(", inference {}", r.inference ? (r.kv_cache ? "on (KV cache)" : "on") : "off");
    if (r.parallel == parallelism::ddp)
        out += fmt::format("\n{:<10}DDP over {} ranks{}; per rank", "", r.world_size,
                           r.ddp_bucket_view ? ", gradients as bucket views" : "");
    if (r.parallel == parallelism::fsdp)
        out += fmt::format("\n{:<10}FSDP2 over {} ranks, {}, param dtype {}; per rank", "", r.world_size,
                           r.fsdp_reshard_after_forward ? "resharded after forward" : "not resharded after forward",
                           name_of(compute_dtype(r)));
    if (is_zero(r.parallel))
        out += fmt::format("\n{:<10}DeepSpeed ZeRO stage {} over {} ranks, offload {}{}; per rank", "",
                           name_of(r.parallel).substr(4), r.world_size, name_of(r.offload),
                           r.offload == offload_target::none ? "" : fmt::format(" to {}", name_of(r.offload_to)));
    return out;
}

// What the header's shape line says: sweep describes its grid itself.
enum class shape_line : std::uint8_t { with_batch, without_batch, none };
inline void print_header(std::ostream& out, const request& q, shape_line shape) {
    std::string task = std::string(name_of(q.model.head.kind));
    if (q.model.head.kind == task::seq_cls || q.model.head.kind == task::image_cls)
        task += fmt::format(" ({} labels)", q.model.head.num_labels);
    const std::string source = q.config_path.empty() ? "preset" : fmt::format("config {}", q.config_path);
    out << fmt::format("{:<10}{} ({}), arch {}, task {}\n", "model", q.model_name, source, q.model.model_type,
                       task);
    if (shape != shape_line::none)
        out << fmt::format("{:<10}{}\n", "shape", shape_text(q, shape == shape_line::with_batch));
    out << fmt::format("{:<10}{}\n", "recipe", recipe_text(q));
}

// A table whose columns fit their widest cell, whatever the values: the first
// column left-aligned, the rest right-aligned, a note after the last.
class text_table {
public:
    void row(std::vector<std::string> cells, std::string note = {}) { rows_.push_back({std::move(cells), std::move(note)}); }
    void gap() { rows_.push_back({}); }
    void print(std::ostream& out) const {
        std::vector<std::size_t> width;
        for (const line& l : rows_)
            for (std::size_t i = 0; i < l.cells.size(); ++i) {
                if (width.size() <= i) width.push_back(0);
                width[i] = std::max(width[i], l.cells[i].size());
            }
        for (const line& l : rows_) {
            std::string text;
            for (std::size_t i = 0; i < l.cells.size(); ++i)
                text += i == 0 ? fmt::format("{:<{}}", l.cells[i], width[0] + 2)
                               : fmt::format("{:>{}}", l.cells[i], width[i] + (i == 1 ? 0 : 2));
            if (!l.note.empty()) text += "  " + l.note;
            out << text << '\n';
        }
    }

private:
    struct line {
        std::vector<std::string> cells;
        std::string note;
    };
    std::vector<line> rows_;
};

inline void print_estimate(std::ostream& out, const estimate_result& x) {
    const memory_estimate& e = x.e;
    text_table counts;
    counts.row({"params", grouped(e.params)});
    if (e.active_params != e.params)
        counts.row({"active params", grouped(e.active_params)}, "(per token: top-k of the routed experts)");
    counts.row({"trainable params", grouped(e.trainable_params)});
    counts.print(out);
    out << '\n';

    // One table for the ledgers, the phases and the totals, so that every
    // column lines up with the widest value in it.
    text_table t;
    const auto sized = [&](std::string_view name, bytes b, bool per_param_column, std::string note = {}) {
        std::vector<std::string> cells{std::string(name), grouped(b.count), fmt::format("{}", b),
                                       fmt::format("{:.2f}", in_mib(b))};
        if (per_param_column) cells.push_back(fmt::format("{:.2f}", per_param(b, e.params)));
        t.row(std::move(cells), std::move(note));
    };
    t.row({"model state", "bytes", "size", "MiB", "B/param"});
    for_each_entry(e.model_state, [&](std::string_view name, bytes b) {
        if (name == "activations" || name == "temporaries" || name == "allocator_rounding") return;
        if ((name == "communication" || name == "gathered_weights") && b.count == 0) return;
        sized(name, b, true);
    });
    sized("total", total(e.model_state), true);
    t.gap();
    t.row({"at the peak", "bytes", "size", "MiB", "B/param"});
    for_each_entry(e.ledger, [&](std::string_view name, bytes b) { sized(name, b, true); });
    sized("total", total(e.ledger), true);
    t.gap();
    t.row({"phase peak", "bytes", "size", "MiB"});
    for_each_phase(e.phases, [&](std::string_view name, bytes b) { sized(name, b, false); });
    t.gap();
    sized("peak", reported_peak(x), false,
          peak_from_replay(x) ? "(the allocator's max_memory_allocated, replayed: each tensor in the block it gets, "
                                "whole-block slack included)"
                              : "(the allocator's max_memory_allocated, from the analytic walk: the ledger above)");
    if (peak_from_replay(x))
        sized("tensors' peak", e.peak, false, "(the analytic walk: the ledger above, each tensor in its rounded block)");
    sized("reserved", x.replay.peak_reserved, false,
          x.unmodelled_note.empty()
              ? "(max_memory_reserved, the cuBLAS workspaces in it; with cuBLASLt's and the CUDA context, what a "
                "card must hold: --gpu checks it)"
              : std::string(x.unmodelled_note));
    if (e.host.count > 0) sized("host (offloaded)", e.host, false);
    if (e.nvme.count > 0) sized("NVMe (offloaded)", e.nvme, false);
    if (e.managed.count > 0)
        sized("managed", e.managed, false, "(paged optimizer state, CUDA managed memory: on the card, not in the allocator's peak)");
    if (!peak_from_replay(x))
        sized("replayed peak", x.replay.peak_allocated, false, "(allocator replay, whole-block slack included)");
    t.print(out);
}

inline void print_fit(std::ostream& out, const request& q, const estimate_result& x) {
    const bytes needed = device_need(x);
    const std::string where = q.gpu ? fmt::format("{} ({} total, context {})", q.gpu->name, q.gpu->total, q.gpu->context)
                                    : fmt::format("budget {}", q.budget);
    out << fmt::format("\n{}: needs {} = reserved {} (the cuBLAS workspaces in it) + cuBLASLt's workspace {}; {}\n",
                       where, needed, x.replay.peak_reserved, cublas_workspace_beside_replay(),
                       x.fits ? "fits (as max-batch tests it: the allocator replayed under the cap)"
                                       : "does not fit (as max-batch tests it: the allocator replayed under the cap)");
}

inline void print_explain(std::ostream& out, const request& q) {
    const memory_snapshot snap = explain(q.model, q.make_recipe(), q.s, q.device());
    out << fmt::format("\npredicted snapshot: the {} phase peaks at {} (the tensors' peak)\n", snap.phase,
                       snap.estimate.peak);
    out << fmt::format("{:<56}{:<28}{:>6}{:>14}{:>14}\n", "tensor", "where", "count", "each MiB", "total MiB");
    for (const snapshot_row& row : snap.rows)
        out << fmt::format("{:<56}{:<28}{:>6}{:>14.2f}{:>14.2f}\n", row.what, row.where, row.count, in_mib(row.each),
                           in_mib(row.total()));
}

inline ojson explain_json(const request& q) {
    const memory_snapshot snap = explain(q.model, q.make_recipe(), q.s, q.device());
    ojson rows = ojson::array();
    for (const snapshot_row& row : snap.rows)
        rows.push_back(ojson{{"what", row.what}, {"where", row.where}, {"count", row.count},
                             {"bytes_each", row.each.count}, {"bytes", row.total().count}});
    return ojson{{"phase", snap.phase}, {"tensors", std::move(rows)}};
}

inline ojson gpu_json(const request& q, const estimate_result& x) {
    const bytes needed = device_need(x);
    const device_profile& d = *q.gpu;
    return ojson{{"name", d.name},
                 {"compute_capability", fmt::format("{}.{}", d.major, d.minor)},
                 {"sms", d.sms},
                 {"total_bytes", d.total.count},
                 {"context_bytes", d.context.count},
                 {"cublas_workspace_bytes", cublas_workspace(q.make_recipe(), d).count},
                 // where each figure comes from: measured on the card, or not
                 {"sources", ojson{{"total", name_of(d.total_from)},
                                   {"context", name_of(d.context_from)},
                                   {"sms", name_of(figure_source::public_reports)},
                                   {"cublas_workspace", name_of(d.kernels_from)},
                                   {"sdpa_backend", name_of(d.kernels_from)}}},
                 {"budget_bytes", q.budget.count},
                 {"needed_bytes", needed.count},
                 {"fits", x.fits}};
}

inline ojson spec_json(const model_spec& m) {
    ojson j;
    j["model_type"] = m.model_type;
    j["stack"] = name_of(m.stack);
    j["hidden"] = m.hidden;
    j["layers"] = m.layers;
    if (m.stack == stack_kind::encoder_decoder) j["decoder_layers"] = m.decoder_layers;
    j["heads"] = m.heads();
    j["kv_heads"] = m.kv_head_count();
    j["head_dim"] = m.head_width();
    j["v_head_dim"] = m.v_head_width();
    j["mlp"] = m.mlp.kind == mlp_kind::gated ? "gated" : "plain";
    j["mlp_hidden"] = m.mlp.hidden;
    j["vocab"] = m.embedding.vocab;
    j["positions"] = m.embedding.positions;
    j["norm"] = m.norm.kind == norm_kind::rms_norm ? "rms_norm" : "layer_norm";
    j["residual"] = m.block.residual == residual_kind::parallel ? "parallel" : "sequential";
    j["tied"] = m.head.tied;
    ojson windows = ojson::array();
    for (std::uint64_t i = 0; i < m.pattern.length; ++i) windows.push_back(m.pattern.windows[i]);
    j["layer_windows"] = std::move(windows);  // one cycle of the layers' sliding windows (0: full)
    j["sdpa"] = m.attention.sdpa;
    return j;
}

inline ojson inputs_json(std::string_view command, const request& q, bool with_batch) {
    const recipe r = q.make_recipe();
    ojson j;
    j["command"] = command;
    j["model"] = q.model_name;
    if (q.config_path.empty()) j["preset"] = q.model_name;
    else j["config"] = q.config_path;
    j["model_type"] = q.model.model_type;
    j["task"] = name_of(q.model.head.kind);
    j["task_from"] = q.task_from;
    if (q.model.head.kind == task::seq_cls || q.model.head.kind == task::image_cls)
        j["num_labels"] = q.model.head.num_labels;
    if (with_batch) j["batch"] = q.s.batch;
    j["seq"] = q.s.seq;
    if (q.model.stack == stack_kind::encoder_decoder) j["target_seq"] = target_length(q.s);
    ojson rj;
    rj["weights"] = name_of(r.weights);
    rj["autocast"] = name_of(r.autocast);
    rj["weights_from"] = q.weights_from;
    rj["master_weights"] = name_of(r.master);
    rj["optimizer"] = name_of(r.optimizer);
    rj["attention"] = name_of(r.attention);
    rj["loop"] = name_of(r.loop);
    rj["quantize"] = name_of(r.quantize);
    rj["attention_implementation"] = r.attention == attention_kernel::eager || !q.model.attention.sdpa ? "eager" : "sdpa";
    rj["grad_accum"] = r.grad_accum;
    rj["grad_checkpointing"] = r.grad_checkpointing;
    if (r.grad_checkpointing)
        rj["checkpoint_impl"] = name_of(reentrant_checkpoint(r) ? checkpoint_impl::reentrant : checkpoint_impl::non_reentrant);
    rj["compile"] = r.compile;
    rj["lora_rank"] = r.lora.rank;
    rj["lora_targets"] = q.lora_targets;
    rj["inference"] = r.inference;
    rj["kv_cache"] = r.kv_cache;
    rj["parallel"] = name_of(r.parallel);
    rj["world_size"] = r.world_size;
    rj["ddp_bucket_view"] = r.ddp_bucket_view;
    rj["fsdp_reshard_after_forward"] = r.fsdp_reshard_after_forward;
    rj["fsdp_param_dtype"] = name_of(compute_dtype(r));
    rj["offload"] = name_of(r.offload);
    rj["offload_device"] = name_of(r.offload_to);
    j["recipe"] = std::move(rj);
    j["spec"] = spec_json(q.model);
    return j;
}

inline void add_estimate_json(ojson& j, const estimate_result& x) {
    const memory_estimate& e = x.e;
    j["params"] = e.params;
    j["active_params"] = e.active_params;
    j["trainable_params"] = e.trainable_params;
    ojson state = ojson::object();
    for_each_entry(e.model_state, [&](std::string_view name, bytes b) {
        if (name != "activations" && name != "temporaries" && name != "allocator_rounding") state[std::string(name)] = b.count;
    });
    j["model_state"] = std::move(state);
    j["peak_bytes"] = reported_peak(x).count;
    j["peak_from"] = peak_from_replay(x) ? "replay" : "analytic";
    j["tensor_peak_bytes"] = e.peak.count;
    j["host_bytes"] = e.host.count;
    j["nvme_bytes"] = e.nvme.count;
    j["managed_bytes"] = e.managed.count;
    j["reserved_bytes"] = x.replay.peak_reserved.count;
    j["reserved_modelled"] = x.unmodelled_note.empty();
    j["replayed_peak_bytes"] = x.replay.peak_allocated.count;
    ojson phases = ojson::object();
    for_each_phase(e.phases, [&](std::string_view name, bytes b) { phases[std::string(name)] = b.count; });
    j["phases"] = std::move(phases);
    ojson ledger = ojson::object();
    for_each_entry(e.ledger, [&](std::string_view name, bytes b) { ledger[std::string(name)] = b.count; });
    j["ledger"] = std::move(ledger);
}

// --- commands --------------------------------------------------------------------

inline void cmd_estimate(const raw_options& o, std::ostream& out) {
    const request q = build_request(o, true);
    const estimate_result e = run_estimate(q, q.s, true);
    if (o.json) {
        ojson j = inputs_json("estimate", q, true);
        add_estimate_json(j, e);
        if (q.gpu) j["gpu"] = gpu_json(q, e);
        if (q.budget.count > 0) {
            j["budget_bytes"] = q.budget.count;
            j["fits"] = e.fits;
        }
        if (o.explain) j["explain"] = explain_json(q);
        out << json_text(j) << '\n';
        return;
    }
    print_header(out, q, shape_line::with_batch);
    out << '\n';
    print_estimate(out, e);
    if (q.budget.count > 0) print_fit(out, q, e);
    if (o.explain) print_explain(out, q);
}

inline void cmd_max_batch(const raw_options& o, std::ostream& out) {
    const request q = build_request(o, false);
    const estimator prepared = prepare_estimator(q);
    std::uint64_t best = 0;
    try {
        // A paged optimizer's managed memory comes out of a card's memory
        // first; a --budget is the allocator's cap, which it does not touch.
        shape one = q.s;
        one.batch = 1;
        const bytes managed = q.gpu ? prepared.estimate(one).managed : bytes{};
        best = managed >= q.budget ? 0 : max_batch(prepared, q.s, q.budget - managed);
    } catch (const overflow_error&) {
        overflowed(q, false);
    } catch (const anatomy::error& e) {
        input("{}", without_prefix(e.what()));
    }
    shape at = q.s;
    at.batch = std::max<std::uint64_t>(best, 1);
    const estimate_result e = run_estimate(q, prepared, at, false);
    const bool capped = best == max_batch_search_limit;
    const std::string cap_note = fmt::format(
        "the batch is capped at the search limit ({}): the true maximum may be larger", max_batch_search_limit);
    if (o.json) {
        ojson j = inputs_json("max-batch", q, false);
        j["budget_bytes"] = q.budget.count;
        j["max_batch"] = best;
        j["search_limit"] = max_batch_search_limit;
        j["capped"] = capped;
        j["at_batch"] = at.batch;
        add_estimate_json(j, e);
        if (q.gpu) j["gpu"] = gpu_json(q, e);
        out << json_text(j) << '\n';
        return;
    }
    print_header(out, q, shape_line::without_batch);
    out << fmt::format("{:<10}{} ({} bytes){}, checked against the reserved memory plus cuBLAS workspaces\n\n",
                       "budget", q.budget, grouped(q.budget.count),
                       q.gpu ? fmt::format(": {} minus its CUDA context", q.gpu->name) : std::string());
    if (best == 0) {
        out << fmt::format("max batch 0: even batch 1 does not fit; it needs {} ({} bytes) > {}\n",
                           device_need(e), grouped(device_need(e).count), q.budget);
    } else {
        out << fmt::format("max batch {}\n", best);
        if (capped) out << "note: " << cap_note << '\n';
    }
    out << fmt::format("at batch {}: peak {} ({} bytes), reserved {} ({} bytes)\n", at.batch, reported_peak(e),
                       grouped(reported_peak(e).count), e.replay.peak_reserved, grouped(e.replay.peak_reserved.count));
}

inline void cmd_presets(bool as_json, std::ostream& out) {
    ojson list = ojson::array();
    if (!as_json)
        out << fmt::format("{:<19}{:<13}{:<11}{:>20}{:>20}\n", "preset", "model_type", "task", "params", "active params");
    for (const auto& p : presets::all) {
        const model_spec spec = p.spec();
        const op_graph graph = lower(spec);
        const std::uint64_t params = parameter_count(graph);
        const std::uint64_t active = active_parameter_count(graph, spec);
        if (as_json) {
            list.push_back(ojson{{"name", p.name}, {"model_type", spec.model_type}, {"task", name_of(spec.head.kind)},
                                 {"params", params}, {"active_params", active}});
        } else {
            out << fmt::format("{:<19}{:<13}{:<11}{:>20}{:>20}\n", p.name, spec.model_type, name_of(spec.head.kind),
                               grouped(params), grouped(active));
        }
    }
    if (as_json) out << json_text(ojson{{"presets", std::move(list)}}) << '\n';
}

inline std::string cli11_message(const CLI::ParseError& e, std::string_view command) {
    std::string text = one_line(e.what());
    if (!text.empty() && text.front() >= 'A' && text.front() <= 'Z' && !(text.size() > 1 && text[1] >= 'A' && text[1] <= 'Z'))
        text.front() = static_cast<char>(text.front() - 'A' + 'a');
    const std::string help = command.empty() ? "anatomy --help" : fmt::format("anatomy {} --help", command);
    return fmt::format("anatomy: {}; see `{}`", text, help);
}

}  // namespace app_detail

}  // namespace anatomy::cli
