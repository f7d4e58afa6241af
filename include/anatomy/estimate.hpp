// The estimate: model spec + recipe + shape -> ledger, phase peaks, peak and
// reserved bytes. One code path for constant evaluation and run time.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/bytes.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/ledger.hpp>
#include <anatomy/model.hpp>
#include <anatomy/optimizer.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/shape.hpp>

#include <algorithm>
#include <cstdint>

namespace anatomy {

struct phase_peaks {
    ANATOMY_REFLECTABLE(phase_peaks,
                        (bytes, forward),
                        (bytes, backward),
                        (bytes, optimizer));
};

struct memory_estimate {
    std::uint64_t params = 0;
    std::uint64_t trainable_params = 0;
    memory_ledger ledger{};
    phase_peaks phases{};
    bytes peak{};      // the largest phase peak: what max_memory_allocated shows
    bytes reserved{};  // what the caching allocator holds at the peak
};

// One parameter tensor of the model, repeated `copies` times (once per layer).
struct parameter_tensor_group {
    param_tensor tensor;
    std::uint64_t copies = 1;
    dtype type = dtype::fp32;
    bool trainable = true;
};

// peft creates LoRA adapters in fp32 and keeps them there over half base
// weights (get_peft_model's autocast_adapter_dtype=True).
inline constexpr dtype lora_adapter_dtype = dtype::fp32;

// Calls f(parameter_tensor_group) for every parameter tensor, LoRA adapters
// included. Tied weights are visited once.
template <class F>
constexpr void for_each_parameter(const op_graph& graph, const recipe& r, F&& f) {
    const bool frozen_base = r.lora.enabled() || r.inference;
    for_each_op(graph, [&](const stage& s, const op& o) {
        const bool trainable = !frozen_base;
        if (!o.tied && !o.weight.empty()) f(parameter_tensor_group{o.weight, s.repeat, r.weights, trainable});
        if (!o.bias.empty()) f(parameter_tensor_group{o.bias, s.repeat, r.weights, trainable});
        if (o.kind == op_kind::linear && r.lora.enabled() && r.lora.targets_module(o.module)) {
            f(parameter_tensor_group{{r.lora.rank, o.in_width}, s.repeat, lora_adapter_dtype, !r.inference});
            f(parameter_tensor_group{{o.out_width, r.lora.rank}, s.repeat, lora_adapter_dtype, !r.inference});
        }
    });
}

namespace detail {

constexpr void check_lora_targets(const op_graph& graph, const recipe& r) {
    if (!r.lora.enabled()) return;
    for (const std::string_view& target : r.lora.targets) {
        if (target.empty()) continue;
        bool found = false;
        for_each_op(graph, [&](const stage&, const op& o) {
            lora_config one{.rank = 1, .targets = {target}};
            found = found || (o.kind == op_kind::linear && one.targets_module(o.module));
        });
        detail::require(found, "anatomy::estimate: a LoRA target matches no linear module of this model");
    }
}

}  // namespace detail

constexpr memory_estimate estimate(const model_spec& model, const recipe& r, const shape& s) {
    validate(r);
    validate(s, model);
    const op_graph graph = lower(model);
    detail::check_lora_targets(graph, r);

    memory_estimate e{};
    memory_ledger& l = e.ledger;
    bytes persistent_blocks{};
    param_tensor largest{};
    for_each_parameter(graph, r, [&](const parameter_tensor_group& p) {
        const std::uint64_t n = detail::checked_mul(p.tensor.numel(), p.copies);
        e.params = detail::checked_add(e.params, n);
        const bytes weight = p.tensor.numel() * size_of(p.type);
        l.weights += p.copies * weight;
        persistent_blocks += p.copies * block_size(weight);

        const bool master = r.master == master_weights::fp32 && is_half(p.type) && (p.trainable || r.inference);
        if (master) {
            const bytes copy = p.tensor.numel() * size_of(dtype::fp32);
            l.master_weights += p.copies * copy;
            persistent_blocks += p.copies * block_size(copy);
        }
        if (!p.trainable) return;
        e.trainable_params = detail::checked_add(e.trainable_params, n);
        // Under a master copy, gradients reach the optimizer in fp32.
        const dtype grad_type = master ? dtype::fp32 : p.type;
        const bytes grad = p.tensor.numel() * size_of(grad_type);
        l.gradients += p.copies * grad;
        persistent_blocks += p.copies * block_size(grad);
        for (bytes state : optimizer_state_tensors(r.optimizer, p.tensor, grad_type)) {
            l.optimizer_state += p.copies * state;
            persistent_blocks += p.copies * block_size(state);
        }
        if (p.tensor.numel() > largest.numel()) largest = p.tensor;
    });
    const bytes shared_state = optimizer_shared_state(r.optimizer, largest);
    l.optimizer_state += shared_state;
    persistent_blocks += block_size(shared_state);

    // Model state only: activations and temporaries are not modelled yet.
    const bytes resident = l.weights + l.master_weights + l.optimizer_state;
    // Gradients of earlier micro-steps stay alive through later forwards.
    e.phases.forward = r.grad_accum > 1 ? resident + l.gradients : resident;
    e.phases.backward = r.inference ? 0 * B : resident + l.gradients;
    e.phases.optimizer = r.inference ? 0 * B : resident + l.gradients;
    e.peak = std::max({e.phases.forward, e.phases.backward, e.phases.optimizer});
    e.reserved = persistent_blocks;
    return e;
}

// Per-parameter bytes of a ledger entry, for tables such as "16 B/param".
constexpr double per_param(bytes entry, std::uint64_t params) {
    return params == 0 ? 0.0 : static_cast<double>(entry.count) / static_cast<double>(params);
}

}  // namespace anatomy
