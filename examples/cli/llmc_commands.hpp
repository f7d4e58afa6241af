// `anatomy estimate|max-batch --framework llm.c`: karpathy/llm.c's
// train_gpt2.cu, one cudaMalloc per buffer, and the lines it prints about them.
#pragma once

#include "app.hpp"

#include <anatomy/driver.hpp>
#include <anatomy/llmc.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <utility>

namespace anatomy::cli {
namespace app_detail {

struct llmc_request {
    llmc::gpt2_config config{};
    llmc::run_config run{};
    std::string model_name;
    std::string source;  // "llm.c descriptor", "preset" or "config <path>"
    std::uint64_t batch = 0;
    std::uint64_t seq = 0;
    bytes budget{};
    std::optional<device_profile> gpu;
};

// What llm.c's process holds on `gpu` besides its buffers. Measured on the
// H200 only; other cards are assumed to take the same.
inline bytes llmc_overhead(const device_profile&, const llmc::run_config& run) { return llmc::h200_process_overhead(run); }

inline llmc_request build_llmc_request(const raw_options& o, bool with_batch) {
    const std::pair<bool, const char*> pytorch_only[] = {
        {!o.autocast.empty(), "--autocast"},
        {!o.master.empty(), "--master-weights (llm.c keeps an fp32 copy unless --no-master-weights)"},
        {!o.attention.empty(), "--attention (pass --cudnn for llm.c's cuDNN build)"},
        {o.grad_checkpointing, "--grad-checkpointing (llm.c recomputes with --recompute)"},
        {o.compile, "--compile (train_gpt2.cu is CUDA C, not a torch.compile'd model)"},
        {!o.grad_accum.empty(), "--grad-accum (llm.c's accumulation allocates nothing more)"},
        {!o.lora_rank.empty() || !o.lora_targets.empty() || !o.lora_dropout.empty(), "--lora-*"},
        {!o.num_labels.empty(), "--num-labels"},
        {o.inference, "--inference"},
        {o.kv_cache, "--kv-cache"},
        {!o.target_seq.empty(), "--target-seq"},
        {!o.parallel.empty() || !o.world_size.empty() || o.ddp_bucket_view || o.fsdp_no_reshard ||
             !o.fsdp_param_dtype.empty() || !o.offload.empty() || !o.offload_device.empty(),
         "--parallel, --world-size and the DDP and FSDP flags (one GPU here)"}};
    for (const auto& [given, flag] : pytorch_only)
        if (given) usage("--framework llm.c: {} does not apply to llm.c's train_gpt2.cu; drop it", flag);
    if (!o.optimizer.empty() && o.optimizer != "adamw")
        usage("--framework llm.c: train_gpt2.cu trains with AdamW only; drop --optimizer {}", shorten(o.optimizer));
    if (!o.task.empty() && o.task != "causal-lm")
        usage("--framework llm.c: train_gpt2.cu trains causal-lm only; drop --task {}", shorten(o.task));
    if (!o.config.empty() && !o.model.empty()) usage("--config and --model exclude each other; pass one of them");
    if (o.config.empty() && o.model.empty())
        usage("pass --model (an llm.c descriptor such as d12, or a gpt2 preset) or --config FILE");

    llmc_request q;
    if (with_batch) q.batch = parse_count("--batch", o.batch);
    q.seq = parse_count("--seq", o.seq);
    if (!o.weights.empty()) {
        q.run.floatx = parse_enum<dtype>("--weights", o.weights);
        if (q.run.floatx != dtype::bf16 && q.run.floatx != dtype::fp32)
            usage("--framework llm.c: --weights is llm.c's build precision, bf16 (default) or fp32; got {}",
                  shorten(o.weights));
    }
    if (!o.recompute.empty()) {
        if (o.recompute != "0" && o.recompute != "1" && o.recompute != "2")
            usage("--recompute: is llm.c's -r, 0, 1 or 2; got \"{}\"", shorten(o.recompute));
        q.run.recompute = o.recompute[0] - '0';
    }
    q.run.cudnn = o.cudnn;
    q.run.master_weights = !o.no_master_weights;
    if (q.run.cudnn && q.run.floatx != dtype::bf16) usage("--cudnn: llm.c's cuDNN attention needs the bf16 build");

    if (!o.model.empty()) {
        if (const std::optional<llmc::gpt2_config> c = llmc::from_descriptor(o.model)) {
            q.config = *c;
            q.source = "llm.c descriptor";
        } else if (const std::optional<model_spec> preset = presets::find(o.model)) {
            try {
                q.config = llmc::from_model(*preset);
            } catch (const anatomy::error& e) {
                input("--model {}: {}", o.model, without_prefix(e.what()));
            }
            q.source = "preset";
        } else {
            usage("--model: \"{}\" is neither an llm.c descriptor (d6 ... d84, gpt2:d12, gpt3:c768) nor a "
                  "preset; see `anatomy presets`",
                  shorten(o.model));
        }
        q.model_name = o.model;
    } else {
        hf_model loaded = load_hf_config(o.config, std::nullopt);
        try {
            q.config = llmc::from_model(loaded.spec);
        } catch (const anatomy::error& e) {
            input("{}: {}", loaded.name, without_prefix(e.what()));
        }
        q.model_name = std::move(loaded.name);
        q.source = "config " + o.config;
    }
    if (q.seq > q.config.max_seq_len)
        input("--seq {}: llm.c asserts T <= max_seq_len, {} for {}; use --seq {} or less", q.seq,
              q.config.max_seq_len, q.model_name, q.config.max_seq_len);
    read_budget(o, q.budget, q.gpu, [&](const device_profile& g) { return llmc_overhead(g, q.run); });
    return q;
}

inline std::string llmc_run_text(const llmc::run_config& run) {
    return fmt::format("llm.c train_gpt2.cu: {} build, -r {}, cuDNN attention {}, fp32 master weights {} (-w {})",
                       name_of(run.floatx), run.recompute, run.cudnn ? "on" : "off",
                       run.master_weights ? "on" : "off", run.master_weights ? 1 : 0);
}

inline void print_llmc_header(std::ostream& out, const llmc_request& q, bool with_batch) {
    const llmc::gpt2_config& c = q.config;
    out << fmt::format("{:<10}{} ({}): GPT-2, {} layers, {} heads, {} channels, max_seq_len {}, vocab {} "
                       "padded to {}\n",
                       "model", q.model_name, q.source, c.layers, c.heads, c.channels, c.max_seq_len, c.vocab,
                       c.padded_vocab);
    out << fmt::format("{:<10}{}\n", "shape",
                       with_batch ? fmt::format("batch {}, seq {}", q.batch, q.seq) : fmt::format("seq {}", q.seq));
    out << fmt::format("{:<10}{}\n", "run", llmc_run_text(q.run));
}

// The line train_gpt2.cu prints when it allocates `b`, if any.
inline std::string llmc_announcement(const llmc::buffer& b) {
    const std::uint64_t mib = llmc::printed_mib(b.size);
    if (b.name == "parameters") return fmt::format("allocated {} MiB for model parameters", mib);
    if (b.name == "parameter_gradients") return fmt::format("allocating {} MiB for parameter gradients", mib);
    if (b.name == "activations") return fmt::format("allocating {} MiB for activations", mib);
    if (b.name == "adamw_m") return fmt::format("allocating {} MiB for AdamW optimizer state m", mib);
    if (b.name == "adamw_v") return fmt::format("allocating {} MiB for AdamW optimizer state v", mib);
    if (b.name == "master_weights") return fmt::format("allocating {} MiB for master copy of params", mib);
    return {};
}

struct llmc_figures {
    llmc::buffer_list buffers;  // every buffer alive after the first step, in cudaMalloc order
    bytes peak{};               // their sum
    bytes footprint{};          // the device memory their cudaMalloc calls map
    bytes per_sequence{};
    bytes startup_footprint{};  // what is allocated when llm.c prints its device usage
};

inline llmc_figures llmc_compute(const llmc_request& q, std::uint64_t batch) {
    try {
        llmc_figures f;
        f.buffers = llmc::peak_allocations(q.config, q.run, batch, q.seq);
        f.peak = llmc::total(f.buffers);
        f.footprint = llmc::device_footprint(f.buffers);
        f.startup_footprint = llmc::device_footprint(llmc::allocations(q.config, q.run, batch, q.seq));
        f.per_sequence = llmc::bytes_per_sequence(q.config, q.run, batch, q.seq);
        return f;
    } catch (const overflow_error&) {
        input("the estimate overflows 64 bits ({}, batch {}, seq {}); use a smaller batch or sequence",
              q.model_name, batch, q.seq);
    } catch (const anatomy::error& e) {
        input("{}", without_prefix(e.what()));
    }
}

inline ojson llmc_json(const llmc_request& q, std::string_view command, bool with_batch, const llmc_figures& f,
                       std::uint64_t batch) {
    const llmc::gpt2_config& c = q.config;
    ojson j;
    j["command"] = command;
    j["framework"] = "llm.c";
    j["model"] = q.model_name;
    j["source"] = q.source;
    j["llmc"] = ojson{{"layers", c.layers},       {"heads", c.heads},   {"channels", c.channels},
                      {"max_seq_len", c.max_seq_len}, {"vocab", c.vocab}, {"padded_vocab", c.padded_vocab}};
    j["run"] = ojson{{"floatx", name_of(q.run.floatx)},
                     {"recompute", q.run.recompute},
                     {"cudnn", q.run.cudnn},
                     {"master_weights", q.run.master_weights}};
    if (with_batch) j["batch"] = batch;
    j["seq"] = q.seq;
    j["params"] = llmc::parameter_count(c);
    j["peak_bytes"] = f.peak.count;
    ojson ledger = ojson::object();
    ojson entries = ojson::object();
    for (const llmc::buffer& b : f.buffers) {
        ledger[std::string(b.name)] = b.size.count;
        const std::string entry(b.entry);
        entries[entry] = (entries.contains(entry) ? entries[entry].get<std::uint64_t>() : 0) + b.size.count;
    }
    j["ledger"] = std::move(ledger);
    j["ledger_entries"] = std::move(entries);
    j["device_footprint_bytes"] = f.footprint.count;
    j["memory_per_sequence_bytes"] = f.per_sequence.count;
    ojson printed = ojson::object();
    for (const llmc::buffer& b : f.buffers)
        if (const std::string line = llmc_announcement(b); !line.empty()) printed[std::string(b.name)] = line;
    printed["memory_per_sequence"] = fmt::format("memory per sequence: {} MiB", llmc::printed_mib(f.per_sequence));
    j["printed"] = std::move(printed);
    return j;
}

inline void print_llmc_buffers(std::ostream& out, const llmc_figures& f) {
    out << fmt::format("{:<24}{:<17}{:>17}{:>12}  {}\n", "buffer (cudaMalloc order)", "entry", "bytes", "MiB",
                       "llm.c prints");
    for (const llmc::buffer& b : f.buffers)
        out << fmt::format("{:<24}{:<17}{:>17}{:>12.2f}  {}\n", b.name, b.entry, grouped(b.size.count),
                           in_mib(b.size), llmc_announcement(b));
    out << fmt::format("{:<41}{:>17}{:>12.2f}\n", "peak (the sum)", grouped(f.peak.count), in_mib(f.peak));
    out << fmt::format("{:<41}{:>17}{:>12.2f}  2 MiB pages per cudaMalloc, shared pool pages below 2 MiB\n", "device footprint",
                       grouped(f.footprint.count), in_mib(f.footprint));
    out << fmt::format("\nmemory per sequence: {} MiB ({} bytes: the activation arena divided by B)\n",
                       llmc::printed_mib(f.per_sequence), grouped(f.per_sequence.count));
}

inline void cmd_estimate_llmc(const raw_options& o, std::ostream& out) {
    const llmc_request q = build_llmc_request(o, true);
    const llmc_figures f = llmc_compute(q, q.batch);
    std::optional<std::uint64_t> fits_batch;
    if (q.gpu) fits_batch = llmc::max_batch(q.config, q.run, q.seq, q.budget);
    const auto usage_line = [&] { return llmc_overhead(*q.gpu, q.run) + f.startup_footprint; };
    if (o.json) {
        ojson j = llmc_json(q, "estimate", true, f, q.batch);
        if (o.explain) {
            ojson arena = ojson::array();
            for (const llmc::arena_tensor& t : llmc::activation_arena(q.config, q.run, q.batch, q.seq))
                arena.push_back(ojson{{"name", t.name}, {"elements", t.elements}, {"dtype", name_of(t.type)},
                                      {"bytes", t.size().count}});
            j["explain"] = ojson{{"activation_arena", std::move(arena)}};
        }
        if (q.gpu) {
            const bytes used = usage_line();
            j["gpu"] = ojson{{"name", q.gpu->name},
                             {"total_bytes", q.gpu->total.count},
                             {"process_overhead_bytes", llmc_overhead(*q.gpu, q.run).count},
                             {"budget_bytes", q.budget.count},
                             {"needed_bytes", f.footprint.count},
                             {"fits", f.footprint <= q.budget},
                             {"max_batch", *fits_batch},
                             {"printed_device_memory_usage_mib", used / MiB},
                             {"printed_estimated_max_batch",
                              used <= q.gpu->total
                                  ? ojson(llmc::printed_max_batch(q.config, q.run, q.batch, q.seq, q.gpu->total - used))
                                  : ojson(nullptr)}};
        }
        out << json_text(j) << '\n';
        return;
    }
    print_llmc_header(out, q, true);
    out << fmt::format("\n{:<18}{:>17}\n\n", "params", grouped(llmc::parameter_count(q.config)));
    print_llmc_buffers(out, f);
    if (q.gpu) {
        const bytes used = usage_line();
        out << fmt::format("\n{} ({} total; llm.c's process holds {} besides its buffers{}):\n", q.gpu->name,
                           q.gpu->total, llmc_overhead(*q.gpu, q.run),
                           q.gpu->name == "h200" ? "" : ", as measured on an H200");
        if (used <= q.gpu->total) {
            out << fmt::format("  llm.c prints: device memory usage: {} MiB / {} MiB\n", used / MiB,
                               q.gpu->total / MiB);
            out << fmt::format("  llm.c prints:  -> estimated maximum batch size: {}\n",
                               llmc::printed_max_batch(q.config, q.run, q.batch, q.seq, q.gpu->total - used));
        }
        out << fmt::format("  needs {} of device memory; {}; the largest batch that fits is {}\n", f.footprint,
                           f.footprint <= q.budget ? fmt::format("fits, {} to spare", q.budget - f.footprint)
                                                   : fmt::format("does not fit by {}", f.footprint - q.budget),
                           *fits_batch);
    }
    if (o.explain) {
        out << fmt::format("\nactivation arena (fill_in_activation_sizes), {} tensors:\n", llmc::arena_tensor_count);
        out << fmt::format("{:<16}{:>20}{:>8}{:>17}\n", "tensor", "elements", "dtype", "bytes");
        for (const llmc::arena_tensor& t : llmc::activation_arena(q.config, q.run, q.batch, q.seq))
            out << fmt::format("{:<16}{:>20}{:>8}{:>17}\n", t.name, grouped(t.elements), name_of(t.type),
                               grouped(t.size().count));
    }
}

inline void cmd_max_batch_llmc(const raw_options& o, std::ostream& out) {
    const llmc_request q = build_llmc_request(o, false);
    std::uint64_t best = 0;
    try {
        best = llmc::max_batch(q.config, q.run, q.seq, q.budget);
    } catch (const anatomy::error& e) {
        input("{}", without_prefix(e.what()));
    }
    const std::uint64_t at = std::max<std::uint64_t>(best, 1);
    const llmc_figures f = llmc_compute(q, at);
    if (o.json) {
        ojson j = llmc_json(q, "max-batch", false, f, at);
        j["budget_bytes"] = q.budget.count;
        j["max_batch"] = best;
        j["search_limit"] = max_batch_search_limit;
        j["capped"] = best == max_batch_search_limit;
        j["at_batch"] = at;
        if (q.gpu)
            j["gpu"] = ojson{{"name", q.gpu->name},
                             {"total_bytes", q.gpu->total.count},
                             {"process_overhead_bytes", llmc_overhead(*q.gpu, q.run).count}};
        out << json_text(j) << '\n';
        return;
    }
    print_llmc_header(out, q, false);
    out << fmt::format("{:<10}{} ({} bytes){}, each buffer a cudaMalloc of its own\n\n", "budget",
                       q.budget, grouped(q.budget.count),
                       q.gpu ? fmt::format(": {} minus llm.c's process overhead", q.gpu->name) : std::string());
    if (best == 0)
        out << fmt::format("max batch 0: even batch 1 does not fit; it needs {} ({} bytes) > {}\n", f.footprint,
                           grouped(f.footprint.count), q.budget);
    else
        out << fmt::format("max batch {}\n", best);
    out << fmt::format("at batch {}: peak {} ({} bytes), device footprint {} ({} bytes)\n", at, f.peak,
                       grouped(f.peak.count), f.footprint, grouped(f.footprint.count));
}

}  // namespace app_detail
}  // namespace anatomy::cli
