// The estimate: model spec + recipe + shape -> model state, phase peaks, the
// peak and the ledger of what is alive at it. One code path for constant
// evaluation and run time.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/bytes.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/ledger.hpp>
#include <anatomy/model.hpp>
#include <anatomy/optimizer.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/shape.hpp>
#include <anatomy/kernels.hpp>
#include <anatomy/timeline.hpp>

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
    memory_ledger model_state{};  // weights, gradients, master weights, optimizer state: exact bytes
    memory_ledger ledger{};       // what is alive at the peak, entry by entry; sums to `peak`
    phase_peaks phases{};
    bytes peak{};  // the largest phase peak: what max_memory_allocated shows
    bytes host{};  // what offloading keeps in CPU memory, per rank
    bytes nvme{};  // or on an NVMe drive
    // What the caching allocator reserves depends on the order of every
    // allocation: replay_allocator (reserved.hpp) replays it.
};

// One parameter tensor of the model, repeated `copies` times (once per layer).
struct parameter_tensor_group {
    param_tensor tensor;
    std::uint64_t copies = 1;
    dtype type = dtype::fp32;
    bool trainable = true;
    const stage* owner = nullptr;  // the stage that holds it
};

// Calls f(parameter_tensor_group) for every parameter tensor, LoRA adapters
// included. Tied weights are visited once.
template <class F>
constexpr void for_each_parameter(const op_graph& graph, const recipe& r, F&& f) {
    const bool frozen_base = r.lora.enabled() || r.inference;
    for_each_op(graph, [&](const stage& s, const op& o) {
        const bool trainable = !frozen_base;
        if (!o.tied && !o.weight.empty()) f(parameter_tensor_group{o.weight, s.repeat, r.weights, trainable, &s});
        if (!o.bias.empty()) f(parameter_tensor_group{o.bias, s.repeat, r.weights, trainable, &s});
        if (o.kind == op_kind::linear && r.lora.enabled() && r.lora.targets_module(o.module)) {
            f(parameter_tensor_group{{r.lora.rank, o.in_width}, s.repeat, lora_adapter_dtype, !r.inference, &s});
            f(parameter_tensor_group{{o.out_width, r.lora.rank}, s.repeat, lora_adapter_dtype, !r.inference, &s});
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

// The model state as the allocator holds it: logical bytes per ledger entry
// and the same tensors rounded up to allocator blocks.
struct state_count {
    memory_ledger logical{};
    bytes resident_blocks{};   // weights, master weights and optimizer state
    bytes gradient_blocks{};
    bytes step_temporaries{};  // optimizer.step() scratch
    bytes bucket_blocks{};     // DDP's gradient buckets, alive from construction on
    // FSDP: unsharded parameters in the compute dtype, all-gathered: the root
    // group's, one block's (the largest), and every block's.
    bytes gathered_root{};
    bytes gathered_block{};
    bytes gathered_blocks{};
    bytes host{};  // offloaded off the GPU (to CPU memory or NVMe)
    bytes zero_grad_partition{};  // ZeRO's fp32 copy of a rank's gradient partition, at the step
};

// What one rank holds of a tensor. FSDP2 shards each parameter along dim 0,
// padded to a multiple of the world: ceil(rows / world) rows. ZeRO partitions
// flattened tensors: ceil(numel / world) elements.
constexpr param_tensor shard_of(param_tensor t, const recipe& r) {
    if (r.parallel == parallelism::fsdp) return {detail::ceil_div(t.rows, r.world_size), t.cols};
    if (is_zero(r.parallel)) return {detail::ceil_div(t.numel(), r.world_size), 0};
    return t;
}
// Which parts of the model state a rank holds only a shard of.
constexpr param_tensor weight_shard(param_tensor t, const recipe& r) {
    return r.parallel == parallelism::fsdp || r.parallel == parallelism::zero3 ? shard_of(t, r) : t;
}
constexpr param_tensor gradient_shard(param_tensor t, const recipe& r) {
    return r.parallel == parallelism::zero1 ? t : shard_of(t, r);
}
constexpr param_tensor state_shard(param_tensor t, const recipe& r) { return shard_of(t, r); }


namespace detail {

// DDP flattens every gradient into buckets (flat tensors, 25 MiB each) when
// it is built. With gradient_as_bucket_view the gradients are views of them;
// without, autograd's gradients are copied in and out and the buckets are a
// second copy of every gradient.
constexpr bool ddp(const recipe& r) { return r.parallel == parallelism::ddp; }
constexpr bool fsdp(const recipe& r) { return r.parallel == parallelism::fsdp; }
constexpr bool gathers(const recipe& r) { return fsdp(r) || r.parallel == parallelism::zero3; }
constexpr bool gradients_preallocated(const recipe& r) { return r.grad_accum > 1 || (ddp(r) && r.ddp_bucket_view); }

// FSDP2 and ZeRO-3 keep the root group gathered from the first forward to the
// end of backward, and one block at a time besides (every block without
// resharding after forward).
constexpr bytes gathered_during_step(const state_count& st, const recipe& r) {
    return st.gathered_root + (r.fsdp_reshard_after_forward ? st.gathered_block : st.gathered_blocks);
}

constexpr state_count count_model_state(const op_graph& graph, const recipe& r, memory_estimate& e) {
    state_count st{};
    memory_ledger& l = st.logical;
    param_tensor largest{};
    bytes largest_scratch{};
    bytes all_scratch{};
    const stage* block_stage = nullptr;
    bytes block{};
    for_each_parameter(graph, r, [&](const parameter_tensor_group& group) {
        const std::uint64_t n = checked_mul(group.tensor.numel(), group.copies);
        e.params = checked_add(e.params, n);
        if (gathers(r)) {
            const bytes gathered = r.world_size * weight_shard(group.tensor, r).numel() * size_of(compute_dtype(r));
            if (!group.owner->block) {
                st.gathered_root += gathered;
            } else {
                if (group.owner != block_stage) block = bytes{};
                block_stage = group.owner;
                block += gathered;
                if (block > st.gathered_block) st.gathered_block = block;
                st.gathered_blocks += group.copies * gathered;
            }
        }
        parameter_tensor_group p = group;
        p.tensor = state_shard(group.tensor, r);
        const bool offload_state = r.offload != offload_target::none;
        const bytes weight = weight_shard(group.tensor, r).numel() * size_of(p.type);
        if (r.offload == offload_target::params) {
            st.host += p.copies * weight;
        } else {
            l.weights += p.copies * weight;
            st.resident_blocks += p.copies * block_size(weight);
        }

        const bool master = r.master == master_weights::fp32 && is_half(p.type) && (p.trainable || r.inference);
        if (master) {
            const bytes copy = p.tensor.numel() * size_of(dtype::fp32);
            if (offload_state) {
                st.host += p.copies * copy;
            } else {
                l.master_weights += p.copies * copy;
                st.resident_blocks += p.copies * block_size(copy);
            }
        }
        if (!p.trainable) return;
        e.trainable_params = checked_add(e.trainable_params, n);
        // Under a master copy the optimizer works in fp32: PyTorch-style
        // recipes keep fp32 gradients; ZeRO keeps them in the parameters'
        // dtype and converts its partition at the step (`zero_grad_partition`).
        const dtype state_type = master ? dtype::fp32 : p.type;
        const dtype grad_type = is_zero(r.parallel) ? p.type : state_type;
        const bytes grad = gradient_shard(group.tensor, r).numel() * size_of(grad_type);
        l.gradients += p.copies * grad;
        st.gradient_blocks += p.copies * block_size(grad);
        for (bytes state : optimizer_state_tensors(r.optimizer, p.tensor, state_type)) {
            if (offload_state) {
                st.host += p.copies * state;
            } else {
                l.optimizer_state += p.copies * state;
                st.resident_blocks += p.copies * block_size(state);
            }
        }
        if (is_zero(r.parallel) && master && !offload_state)
            st.zero_grad_partition += p.copies * block_size(p.tensor.numel() * size_of(dtype::fp32));
        const bytes scratch = block_size(p.tensor.numel() * size_of(scratch_type(r.optimizer, state_type)));
        all_scratch += p.copies * scratch;
        if (p.tensor.numel() > largest.numel()) {
            largest = p.tensor;
            largest_scratch = scratch;
        }
    });
    if (ddp(r) && !r.ddp_bucket_view) {
        l.communication = l.gradients;
        st.bucket_blocks = block_size(l.gradients);
    }
    const bytes shared_state = optimizer_shared_state(r.optimizer, largest);
    if (r.offload != offload_target::none) {
        st.host += shared_state;
        return st;  // the step runs on the CPU
    }
    l.optimizer_state += shared_state;
    st.resident_blocks += block_size(shared_state);
    switch (scratch_of(r.optimizer)) {
        case step_scratch::none: break;
        case step_scratch::one_per_tensor: st.step_temporaries = all_scratch; break;
        case step_scratch::two_per_tensor: st.step_temporaries = 2 * largest_scratch; break;
    }
    st.step_temporaries += st.zero_grad_partition;
    return st;
}

// What one stage hands to the next: its output tensor.
struct stage_handoff {
    stage_input_info output{};
    tensor_slot slot = no_slot;
};

constexpr stage_handoff handoff(const expansion& ex, const stage& st) {
    const tensor_slot out = ex.op_output[st.ops.size() - 1];
    tensor_slot root = out;
    while (root >= 0 && ex.kernels[static_cast<std::size_t>(root)].alias)
        root = ex.kernels[static_cast<std::size_t>(root)].in[0];
    const kernel& k = ex.kernels[static_cast<std::size_t>(root)];
    return {{k.out, k.type, k.requires_grad}, out};
}

constexpr bool reads_encoder(const stage& st) {
    for (const op& o : st.ops)
        for (op_input i : o.inputs)
            if (i == encoder_output) return true;
    return false;
}

// Running totals of a walk over stages: live bytes and the parameter
// gradients among them, and both at the peak.
struct running {
    std::int64_t live = 0;
    std::int64_t grads = 0;
    std::int64_t peak = 0;
    std::int64_t grads_at_peak = 0;

    constexpr void note_peak(std::int64_t candidate, std::int64_t grads_then) {
        if (candidate > peak) {
            peak = candidate;
            grads_at_peak = grads_then;
        }
    }
    // `repeat` identical walks: the change per walk is constant, so the peak
    // is in the first walk or in the last.
    constexpr void repeat(const live_bytes& one, std::uint64_t times) {
        const auto n = static_cast<std::int64_t>(times);
        note_peak(live + one.peak, grads + one.grads_at_peak);
        note_peak(live + (n - 1) * one.now + one.peak, grads + (n - 1) * one.grads + one.grads_at_peak);
        live += n * one.now;
        grads += n * one.grads;
    }
};

struct step_peaks {
    std::int64_t forward = 0;
    std::int64_t backward = 0;
    std::int64_t after_forward = 0;
    std::int64_t grads_at_backward_peak = 0;  // parameter gradients alive at the backward peak
};

// A run of identical layers. A block stage is one run, or two when its first
// layer differs: its input needs no gradient (frozen embeddings under LoRA)
// while every later layer's input does.
struct layer_run {
    stage_input_info input{};
    std::uint64_t repeat = 0;
};

struct stage_plan {
    std::array<layer_run, 2> runs{};
    std::size_t run_count = 0;
    stage_handoff out{};
};

constexpr stage_plan plan_stage(const stage& st, const model_spec& m, const recipe& r, const shape& s,
                                stage_input_info input, stage_input_info encoder) {
    stage_plan plan{};
    const stage_handoff first = handoff(expand(st, m, r, s, input, encoder), st);
    plan.out = first;
    if (st.repeat > 1 && first.output.requires_grad != input.requires_grad) {
        plan.runs[0] = {input, 1};
        plan.runs[1] = {first.output, st.repeat - 1};
        plan.run_count = 2;
        plan.out = handoff(expand(st, m, r, s, first.output, encoder), st);
    } else {
        plan.runs[0] = {input, st.repeat};
        plan.run_count = 1;
    }
    return plan;
}

// How a block's parameter gradients are reduced when its backward ends. `r`
// is the recipe the step computes with; its gradients are in r.weights.
constexpr gradient_reduction reduction(const recipe& r, const stage& st) {
    const bool sharded = r.parallel == parallelism::fsdp || r.parallel == parallelism::zero2 ||
                         r.parallel == parallelism::zero3;
    if (!sharded || !st.block) return {};
    // FSDP2 reduces into the shards' own dtype (reduce_dtype fp32 over fp32
    // shards); ZeRO keeps the parameters' dtype.
    const dtype kept = r.parallel == parallelism::fsdp && r.fsdp_param_dtype != dtype::fp32 ? dtype::fp32 : r.weights;
    return {r.world_size, size_of(kept).count, size_of(r.weights).count};
}

// Walks forward then backward over the stages, from `base` live bytes. With
// an allocator, every layer is walked in turn and every allocation reported
// to it; without one, a run of identical layers is walked once.
constexpr step_peaks walk_step(const op_graph& graph, const model_spec& m, const recipe& r, const shape& s,
                               std::int64_t base, bool grads_exist, caching_allocator* allocator = nullptr) {
    step_peaks p{};
    running fwd{.live = base, .peak = base};
    const bool training = !r.inference;
    std::array<stage_plan, 12> plans{};
    stage_input_info previous{};
    stage_input_info encoder{};
    std::int64_t autocast_cache = 0;
    std::int64_t held_embedding = 0;
    for (std::size_t i = 0; i < graph.stages.size(); ++i) {
        const stage& st = graph.stages[i];
        plans[i] = plan_stage(st, m, r, s, previous, encoder);
        const bool checkpointed = training && r.grad_checkpointing && st.block;
        // The model's forward keeps the embedding output in a local until its
        // layers are done: only the first layer may free it.
        const bool first_layers = st.block && i > 0 && !graph.stages[i - 1].block;
        for (std::size_t k = 0; k < plans[i].run_count; ++k) {
            const layer_run& run = plans[i].runs[k];
            const expansion ex = expand(st, m, r, s, run.input, encoder);
            const tensor_slot out = handoff(ex, st).slot;
            const std::uint64_t walks = allocator ? run.repeat : 1;
            for (std::uint64_t w = 0; w < walks; ++w) {
                stage_walk walk(ex.kernels, out, run.input, encoder);
                walk.observe(allocator);
                // Replaying, the first layer keeps the embedding output, which
                // is released when the layers are done.
                const bool pin = allocator && first_layers && k == 0 && w == 0 && st.repeat > 1 && !checkpointed;
                const live_bytes one = walk.forward(training && !checkpointed, checkpointed || pin);
                const std::int64_t held = !allocator && first_layers && k == 0 && walk.input_freed() && st.repeat > 1
                                              ? live_bytes::signed_size(previous.size)
                                              : 0;
                fwd.live += held;
                fwd.repeat(one, run.repeat / walks);
                fwd.live -= held;
                if (pin && walk.input_pinned_only()) {
                    held_embedding = live_bytes::signed_size(previous.size);
                }
                autocast_cache += static_cast<std::int64_t>(run.repeat / walks) *
                                  live_bytes::signed_size(walk.autocast_cache());
            }
        }
        if (held_embedding > 0 && st.block) {
            allocator->release(bytes{static_cast<std::uint64_t>(held_embedding)});
            fwd.live -= held_embedding;
            held_embedding = 0;
        }
        previous = plans[i].out.output;
        if (st.encoder_output) encoder = previous;
    }
    fwd.live -= autocast_cache;  // autocast's region ends with the forward
    if (allocator) allocator->release_all(tensor_owner::cache);
    p.forward = fwd.peak;
    p.after_forward = fwd.live;
    if (!training) {
        if (allocator) allocator->release_all(tensor_owner::step);
        return p;
    }

    running bwd{.live = fwd.live, .peak = fwd.live};
    const auto allocate = [&](bytes b) {
        bwd.live += live_bytes::signed_size(b);
        if (allocator) allocator->allocate(b, tensor_owner::step);
    };
    bool encoder_grad_allocated = false;
    for (std::size_t i = graph.stages.size(); i-- > 0;) {
        const stage& st = graph.stages[i];
        if (i + 1 == graph.stages.size()) allocate(plans[i].out.output.size);  // d(loss)
        const bool encoder_grad = reads_encoder(st);
        if (encoder_grad && !encoder_grad_allocated) {
            // Every cross-attention adds into one gradient of the encoder output.
            allocate(encoder.size);
            encoder_grad_allocated = true;
        }
        const bool checkpointed = r.grad_checkpointing && st.block;
        for (std::size_t k = plans[i].run_count; k-- > 0;) {
            const layer_run& run = plans[i].runs[k];
            const expansion ex = expand(st, m, r, s, run.input, encoder);
            const stage_handoff out = handoff(ex, st);
            const std::uint64_t walks = allocator ? run.repeat : 1;
            for (std::uint64_t w = 0; w < walks; ++w) {
                stage_walk walk(ex.kernels, out.slot, run.input, encoder);
                live_bytes one{};
                if (checkpointed) {
                    // Recompute the layer with autograd on, run its backward,
                    // then drop the recomputed output and the checkpoint's input.
                    walk.observe(allocator);
                    const live_bytes recompute = walk.forward(true, true);
                    const live_bytes back = walk.backward(grads_exist, encoder_grad, reduction(r, st));
                    one = back;
                    one.peak = recompute.peak > recompute.now + back.peak ? recompute.peak : recompute.now + back.peak;
                    one.grads_at_peak = recompute.peak > recompute.now + back.peak ? 0 : back.grads_at_peak;
                    one.now = recompute.now + back.now - live_bytes::signed_size(out.output.size) -
                              live_bytes::signed_size(run.input.size);
                    if (allocator) {
                        allocator->release(out.output.size);
                        allocator->release(run.input.size);
                    }
                } else {
                    (void)walk.forward(true, false);  // rebuilds what autograd saved, silently
                    walk.observe(allocator);
                    one = walk.backward(grads_exist, encoder_grad, reduction(r, st));
                }
                bwd.repeat(one, run.repeat / walks);
            }
        }
    }
    // The step's outputs (logits, the KV cache) die with the step.
    if (allocator) allocator->release_all(tensor_owner::step);
    p.backward = bwd.peak;
    p.grads_at_backward_peak = bwd.grads_at_peak;
    return p;
}

}  // namespace detail

constexpr memory_estimate estimate(const model_spec& model, const recipe& r, const shape& s) {
    validate(r);
    validate(s, model);
    const op_graph graph = lower(model);
    detail::check_lora_targets(graph, r);

    memory_estimate e{};
    const state_count st = detail::count_model_state(graph, r, e);
    e.model_state = st.logical;
    (r.offload_to == offload_device::nvme ? e.nvme : e.host) = st.host;
    // Gradients of earlier micro-steps, or DDP's buckets viewed as gradients,
    // stay alive through the forward.
    const bool accumulating = detail::gradients_preallocated(r);
    const bytes resident = st.resident_blocks + st.bucket_blocks;
    const bytes gathered = detail::gathered_during_step(st, r);
    const bytes forward_base = (accumulating ? resident + st.gradient_blocks : resident) + gathered;
    const detail::step_peaks walk = detail::walk_step(graph, model, compute_recipe(r), s,
                                                      detail::live_bytes::signed_size(forward_base), accumulating);

    e.phases.forward = bytes{static_cast<std::uint64_t>(walk.forward)};
    if (!r.inference) {
        e.phases.backward = bytes{static_cast<std::uint64_t>(walk.backward)};
        e.phases.optimizer = resident + st.gradient_blocks + st.step_temporaries;
    }
    e.peak = e.phases.forward;
    if (e.phases.backward > e.peak) e.peak = e.phases.backward;
    if (e.phases.optimizer > e.peak) e.peak = e.phases.optimizer;

    memory_ledger& l = e.ledger;
    l = st.logical;
    const bool optimizer_peak = !r.inference && e.peak == e.phases.optimizer;
    const bool backward_peak = !optimizer_peak && !r.inference && e.peak == e.phases.backward;
    bytes grads_at_peak = accumulating ? st.gradient_blocks : bytes{};
    if (optimizer_peak) grads_at_peak = st.gradient_blocks;
    if (backward_peak && !accumulating) grads_at_peak = bytes{static_cast<std::uint64_t>(walk.grads_at_backward_peak)};
    if (optimizer_peak) l.temporaries = st.step_temporaries;
    // Gradients are reported as allocated (block-rounded) when only some exist.
    l.gradients = grads_at_peak == st.gradient_blocks ? st.logical.gradients : grads_at_peak;
    const bytes state_blocks = resident + grads_at_peak;
    const bytes state_logical = l.weights + l.master_weights + l.optimizer_state + l.gradients + l.communication;
    l.allocator_rounding = state_blocks - state_logical;
    if (!optimizer_peak) l.gathered_weights = gathered;
    // Whatever else is alive at the peak belongs to the step's tensors.
    l.activations = e.peak - state_blocks - l.temporaries - l.gathered_weights;
    return e;
}

// Per-parameter bytes of a ledger entry, for tables such as "16 B/param".
constexpr double per_param(bytes entry, std::uint64_t params) {
    return params == 0 ? 0.0 : static_cast<double>(entry.count) / static_cast<double>(params);
}

}  // namespace anatomy
