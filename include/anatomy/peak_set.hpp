// The peak set: the buffers alive when a step peaks, in the order the step
// allocates them. Model state is listed tensor by tensor, as PyTorch holds it;
// what the step adds is one buffer per ledger entry. A validator allocates the
// set on a real card; max_batch_of_peak_set sizes a batch for it.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/static_vector.hpp>
#include <anatomy/driver.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/ledger.hpp>
#include <anatomy/max_batch.hpp>
#include <anatomy/model.hpp>
#include <anatomy/optimizer.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/shape.hpp>

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace anatomy {

// `copies` buffers of `size` bytes each, all counted under ledger `entry`.
struct planned_buffer {
    std::string_view entry;  // a memory_ledger field name
    std::string_view what;
    bytes size;
    std::uint64_t copies;
    constexpr bytes total() const { return copies * size; }
};

using peak_set = detail::static_vector<planned_buffer, 320>;

// The peak set of one step, with the estimate it comes from.
struct planned_step {
    memory_estimate estimate;
    peak_set buffers;
};

namespace detail {
constexpr std::string_view tensor_role(const param_tensor& t) { return t.cols == 0 ? "vector" : "matrix"; }
}  // namespace detail

constexpr planned_step plan_peak_set(const model_spec& model, const recipe& r, const shape& s) {
    planned_step step{estimate(model, r, s), {}};
    const memory_estimate& e = step.estimate;
    peak_set& set = step.buffers;
    const op_graph graph = lower(model);
    // Gradients at the peak: all of them (optimizer peak, accumulation), or
    // those backward has produced so far, which the ledger reports as one sum.
    const bool all_gradients = e.ledger.gradients == e.model_state.gradients;
    param_tensor largest{};
    for (const char* entry : {"weights", "gradients", "master_weights", "optimizer_state"}) {
        const std::string_view name = entry;
        for_each_parameter(graph, r, [&](const parameter_tensor_group& p) {
            const bool master = r.master == master_weights::fp32 && is_half(p.type) && (p.trainable || r.inference);
            const dtype grad_type = master ? dtype::fp32 : p.type;
            const std::string_view what = detail::tensor_role(p.tensor);
            if (name == "weights") {
                set.push_back({"weights", what, p.tensor.numel() * size_of(p.type), p.copies});
                if (p.trainable && p.tensor.numel() > largest.numel()) largest = p.tensor;
            } else if (name == "master_weights" && master) {
                set.push_back({"master_weights", what, p.tensor.numel() * size_of(dtype::fp32), p.copies});
            } else if (name == "optimizer_state" && p.trainable) {
                for (bytes state : optimizer_state_tensors(r.optimizer, p.tensor, grad_type))
                    set.push_back({"optimizer_state", what, state, p.copies});
            } else if (name == "gradients" && p.trainable && all_gradients) {
                set.push_back({"gradients", what, p.tensor.numel() * size_of(grad_type), p.copies});
            }
        });
        if (name == "gradients" && !all_gradients && e.ledger.gradients.count > 0)
            set.push_back({"gradients", "produced so far", e.ledger.gradients, 1});
        if (name == "optimizer_state") {
            const bytes shared = optimizer_shared_state(r.optimizer, largest);
            if (shared.count > 0) set.push_back({"optimizer_state", "shared", shared, 1});
        }
    }
    if (e.ledger.communication.count > 0)
        set.push_back({"communication", "DDP gradient buckets", e.ledger.communication, 1});
    if (e.ledger.gathered_weights.count > 0)
        set.push_back({"gathered_weights", "FSDP all-gathered parameters", e.ledger.gathered_weights, 1});
    if (e.ledger.activations.count > 0) set.push_back({"activations", "alive at the peak", e.ledger.activations, 1});
    if (e.ledger.temporaries.count > 0) set.push_back({"temporaries", "optimizer step", e.ledger.temporaries, 1});
    return step;
}

// The device memory `set` takes when each buffer is a cudaMalloc of its own,
// made in order on a device with no other allocation.
constexpr bytes device_footprint(const peak_set& set) {
    cuda_driver driver;
    bytes sum{};
    for (const planned_buffer& b : set)
        for (std::uint64_t copy = 0; copy < b.copies; ++copy) sum += driver.allocate(b.size);
    return sum;
}

// The largest batch whose peak set, each buffer a cudaMalloc of its own, fits
// `budget` bytes of free device memory; 0 if batch 1 does not. What
// anatomy-validate proves on a card. `per_batch.batch` is ignored.
constexpr std::uint64_t max_batch_of_peak_set(const model_spec& m, const recipe& r, const shape& per_batch,
                                              bytes budget, std::uint64_t limit = max_batch_search_limit) {
    detail::require(limit > 0, "anatomy::max_batch_of_peak_set: limit must be > 0");
    shape s = per_batch;
    s.batch = 1;
    validate(s, m);
    return detail::largest_batch_from(1, 0, limit, [&](std::uint64_t b) {
        s.batch = b;
        if (std::is_constant_evaluated()) return device_footprint(plan_peak_set(m, r, s).buffers) <= budget;
        try {
            return device_footprint(plan_peak_set(m, r, s).buffers) <= budget;
        } catch (const overflow_error&) {
            return false;  // a batch whose bytes overflow 64 bits fits no device
        }
    });
}

}  // namespace anatomy
