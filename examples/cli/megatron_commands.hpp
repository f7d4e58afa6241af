// `anatomy estimate --tp N --pp N [--sp]`: Megatron-LM per rank, from the
// published formulas (include/anatomy/megatron.hpp).
#pragma once

#include "app.hpp"

#include <anatomy/megatron.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <utility>

namespace anatomy::cli {
namespace app_detail {

inline bool wants_megatron(const raw_options& o) {
    return !o.tp.empty() || !o.pp.empty() || o.sp || o.selective_recompute || !o.micro_batches.empty() ||
           o.distributed_optimizer;
}

inline void cmd_estimate_megatron(const raw_options& o, std::ostream& out) {
    const std::pair<bool, const char*> other_flags[] = {
        {!o.framework.empty() && o.framework != "pytorch", "--framework"},
        {!o.weights.empty() || !o.autocast.empty() || !o.master.empty(),
         "--weights, --autocast and --master-weights (Megatron's formulas assume bf16 with fp32 master weights)"},
        {!o.optimizer.empty(), "--optimizer (the formulas assume Adam)"},
        {!o.parallel.empty() || o.ddp_bucket_view || o.fsdp_no_reshard || !o.fsdp_param_dtype.empty() ||
             !o.offload.empty() || !o.offload_device.empty(),
         "--parallel and its flags"},
        {!o.lora_rank.empty() || !o.lora_targets.empty() || o.inference || o.kv_cache || !o.grad_accum.empty() ||
             !o.attention.empty(),
         "--lora-*, --inference, --kv-cache, --grad-accum and --attention"},
        {o.explain || !o.gpu.empty(), "--explain and --gpu"}};
    for (const auto& [given, flag] : other_flags)
        if (given) usage("--tp/--pp: Megatron's formulas take no {}; drop it", flag);
    if (o.grad_checkpointing && o.selective_recompute)
        usage("--selective-recompute and --grad-checkpointing (full recompute) exclude each other");
    raw_options model_only = o;
    model_only.world_size.clear();  // the ranks are read here: tp x pp x dp
    const request q = build_request(model_only, true);
    megatron::config c;
    if (!o.tp.empty()) c.tp = parse_count("--tp", o.tp);
    if (!o.pp.empty()) c.pp = parse_count("--pp", o.pp);
    if (!o.micro_batches.empty()) c.micro_batches = parse_count("--micro-batches", o.micro_batches);
    c.sp = o.sp;
    c.distributed_optimizer = o.distributed_optimizer;
    c.activations = o.grad_checkpointing     ? megatron::recompute::full
                    : o.selective_recompute ? megatron::recompute::selective
                                            : megatron::recompute::none;
    std::uint64_t model_parallel = 0;  // tp x pp, checked: 2^32 x 2^32 must not wrap to 0 and divide
    try {
        model_parallel = detail::checked_mul(c.tp, c.pp);
    } catch (const overflow_error&) {
        input("--tp {} --pp {}: tp x pp overflows 64 bits; use tp and pp that divide the heads and layers", c.tp,
              c.pp);
    }
    const std::uint64_t world = o.world_size.empty() ? model_parallel : parse_count("--world-size", o.world_size);
    if (world % model_parallel != 0)
        usage("--world-size {}: must be a multiple of tp x pp = {}", world, model_parallel);
    c.dp = world / model_parallel;
    bytes state{}, acts{};
    try {
        state = megatron::weights_and_optimizer(q.model, c);
        acts = megatron::activations(q.model, q.s, c);
    } catch (const overflow_error&) {
        overflowed(q, true);
    } catch (const anatomy::error& e) {
        input("{}", without_prefix(e.what()));
    }
    const std::uint64_t params = megatron::parameters_on_most_loaded_rank(q.model, c);
    const bytes peak = state + acts;
    const char* recompute_name = c.activations == megatron::recompute::full        ? "full"
                                 : c.activations == megatron::recompute::selective ? "selective"
                                                                                   : "none";
    if (o.json) {
        ojson j;
        j["command"] = "estimate";
        j["framework"] = "megatron";
        j["model"] = q.model_name;
        j["batch"] = q.s.batch;
        j["seq"] = q.s.seq;
        j["megatron"] = ojson{{"tp", c.tp}, {"pp", c.pp}, {"dp", c.dp}, {"sp", c.sp}, {"recompute", recompute_name},
                              {"distributed_optimizer", c.distributed_optimizer},
                              {"micro_batches_in_flight", megatron::in_flight(c)}};
        j["params_on_rank"] = params;
        j["peak_bytes"] = peak.count;
        j["ledger"] = ojson{{"weights_and_optimizer", state.count}, {"activations", acts.count}};
        out << json_text(j) << '\n';
        return;
    }
    out << fmt::format("{:<10}{} ({}), per micro-batch: batch {}, seq {}\n", "model", q.model_name,
                       q.config_path.empty() ? "preset" : q.config_path, q.s.batch, q.s.seq);
    out << fmt::format("{:<10}Megatron-LM: tp {}, pp {} (1F1B, {} micro-batches in flight), dp {}, sequence "
                       "parallel {}, recompute {}, distributed optimizer {}\n",
                       "parallel", c.tp, c.pp, megatron::in_flight(c), c.dp, c.sp ? "on" : "off", recompute_name,
                       c.distributed_optimizer ? "on" : "off");
    out << fmt::format("{:<10}Korthikanti et al. (2022) Table 2 and theoretical_memory_usage.py: bf16 with fp32 "
                       "master weights and Adam, the most loaded rank (the first stage)\n\n",
                       "formulas");
    out << fmt::format("{:<24}{:>17}\n", "parameters on the rank", grouped(params));
    out << fmt::format("{:<24}{:>24}{:>13}\n", "", "bytes", "size");
    out << fmt::format("{:<24}{:>24}{:>13}\n", "weights and optimizer", grouped(state.count), state);
    out << fmt::format("{:<24}{:>24}{:>13}\n", "activations", grouped(acts.count), acts);
    out << fmt::format("{:<24}{:>24}{:>13}\n", "total", grouped(peak.count), peak);
}

}  // namespace app_detail
}  // namespace anatomy::cli
