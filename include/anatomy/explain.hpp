// A predicted memory snapshot: what is alive when a step peaks, by tensor
// group, like a torch.cuda.memory snapshot read by module.
#pragma once

#include <anatomy/entries.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/kernels.hpp>
#include <anatomy/timeline.hpp>

#include <string>
#include <vector>

namespace anatomy {

struct snapshot_row {
    std::string what;   // "weights", or a kernel such as "mlp.act_fn: silu output"
    std::string where;  // "model state", or the stage: "model.layers x16"
    std::uint64_t count = 1;
    bytes each{};       // per copy (per layer for a repeated stage)
    constexpr bytes total() const { return count * each; }
};

struct memory_snapshot {
    std::string phase;  // the phase that peaks: forward, backward or optimizer
    memory_estimate estimate;
    std::vector<snapshot_row> rows;  // model state, then what each stage keeps after the forward
};

// The tensors alive at the end of the forward pass, when everything backward
// needs exists, then what the peak adds as one row. An optimizer-step peak
// is the model state and the step's scratch. Run-time only: it builds strings.
inline memory_snapshot explain(const model_spec& model, const recipe& r, const shape& s,
                               const device_profile& device = devices::h200) {
    memory_snapshot snap{};
    snap.estimate = estimate(model, r, s, device);
    const memory_estimate& e = snap.estimate;
    snap.phase = e.peak == e.phases.optimizer && !r.inference ? "optimizer"
                 : e.peak == e.phases.backward && !r.inference ? "backward"
                                                               : "forward";
    if (snap.phase == "optimizer") {
        for_each_entry(e.ledger, [&](std::string_view name, bytes b) {
            if (b.count > 0) snap.rows.push_back({std::string(name), "model state", 1, b});
        });
        return snap;
    }
    // What lives through the whole step; gradients only when micro-steps accumulate.
    for_each_entry(e.model_state, [&](std::string_view name, bytes b) {
        if (b.count == 0 || (name == "gradients" && r.grad_accum == 1)) return;
        snap.rows.push_back({std::string(name), "model state", 1, b});
    });

    const shape rs = resolve(s, model);
    const op_graph graph = lower(model);
    const detail::step_plan plan(graph, model, r, rs, device);
    for (std::size_t g = 0; g < plan.group_count; ++g) {
        const detail::run_group& group = plan.groups[g];
        for (std::size_t i = group.first; i < group.first + group.count; ++i) {
            const detail::layer_run& run = plan.runs[i];
            const stage& st = graph.stages[run.stage];
            const expansion& ex = plan.expansions[i];
            const tensor_slot output = detail::handoff(ex, st).slot;
            detail::stage_walk walk(ex.kernels, output, run.input, plan.encoder);
            const bool checkpointed = !r.inference && r.grad_checkpointing && st.block;
            (void)walk.forward(!r.inference && !checkpointed, checkpointed);
            const std::uint64_t layers = run.repeat * group.times;
            std::string where(st.name);
            if (layers > 1) where += " x" + std::to_string(layers);
            for (std::size_t k = 0; k < ex.kernels.size(); ++k) {
                const kernel& kn = ex.kernels[k];
                if (kn.base_model_scoped) continue;  // gone when the base model returns
                const module_path& path = st.ops[kn.op].module;
                const std::string module = path.scope.empty() ? std::string(path.name)
                                                              : std::string(path.scope) + "." + std::string(path.name);
                bytes kept = walk.alive(k) ? kn.out : bytes{};
                if (!r.inference && !checkpointed) kept += kn.saved_extra + (kn.saves_weight_copy ? kn.weight_copy : bytes{});
                if (kept.count == 0) continue;
                // A layer's output is the next layer's input: only the last one is
                // alive here, unless each layer is a checkpoint, which keeps its input.
                const bool handed_on = static_cast<tensor_slot>(k) == output && kept == kn.out && !checkpointed;
                snap.rows.push_back({module + ": " + kn.what, where, handed_on ? 1 : layers, kept});
            }
        }
    }
    const bytes rows_total = [&] {
        bytes sum{};
        for (const snapshot_row& row : snap.rows) sum += row.total();
        return sum;
    }();
    if (e.peak > rows_total)
        snap.rows.push_back({"rest of the " + snap.phase + " peak (grads, scratch)", "step",
                             1, e.peak - rows_total});
    return snap;
}

}  // namespace anatomy
