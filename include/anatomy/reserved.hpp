// Replays one process of training (or serving) through the caching-allocator
// model: the model is built, then whole steps run, so that the segments the
// first steps leave behind shape the later ones, as on a GPU.
#pragma once

#include <anatomy/caching_allocator.hpp>
#include <anatomy/estimate.hpp>

#include <array>
#include <utility>

namespace anatomy {

struct allocator_replay {
    bytes peak_allocated{};  // max_memory_allocated over the steps, whole-block slack included
    bytes peak_reserved{};   // max_memory_reserved
    bool out_of_memory = false;  // a request did not fit the cap
};

namespace detail {

// Parameters as transformers builds them: module by module, layer by layer.
// from_config on the GPU builds a tied module's own weight too, and tying
// frees it once the model is built (traced on the H200 for nine models,
// bench/torch_reference/construction.py: the tied lm_head or MLM decoder,
// and T5's stacks' embed_tokens): its segment stays cached, for the step's
// tensors and the cuBLAS workspace. Sharded and quantized models are built
// elsewhere (on the meta device, or loaded).
constexpr void build_model(const op_graph& graph, const recipe& r, caching_allocator& a) {
    const bool builds_tied = r.quantize == quantization::none && (r.parallel == parallelism::none || detail::ddp(r));
    growing_vector<block_id> replaced;
    for (std::size_t i = 0; i < graph.stages.size(); ++i)
        for (std::uint64_t layer = 0; layer < graph.copies(i); ++layer)
            for (const op& o : graph.stages[i].ops) {
                if (r.offload == offload_target::params) continue;  // kept in CPU memory
                if (quantized_weight(o, r)) {
                    for (bytes part : quantized_weight_tensors(r.quantize, o.weight)) a.allocate(part, tensor_owner::model);
                } else if (!o.weight.empty() && (!o.tied || builds_tied)) {
                    const bytes weight = weight_shard(o.weight, r).numel() * size_of(r.weights);
                    const block_id b = a.allocate(weight, tensor_owner::model);
                    if (o.tied) replaced.push_back(b);
                    if (o.own_table_replaced && builds_tied) replaced.push_back(a.allocate(weight, tensor_owner::model));
                }
                if (!o.bias.empty()) a.allocate(weight_shard(o.bias, r).numel() * size_of(r.weights), tensor_owner::model);
                if (o.kind == op_kind::linear && r.lora.enabled() && r.lora.targets_module(o.module)) {
                    a.allocate(detail::checked_mul(r.lora.rank, o.in_width) * size_of(lora_adapter_dtype), tensor_owner::model);
                    a.allocate(detail::checked_mul(o.out_width, r.lora.rank) * size_of(lora_adapter_dtype), tensor_owner::model);
                }
            }
    for (const block_id b : replaced) a.release(b);
}

// optimizer.step(): the first one creates the state, parameter by parameter;
// every one allocates the implementation's scratch, then frees it.
constexpr void optimizer_step(const op_graph& graph, const recipe& r, bool first, caching_allocator& a) {
    if (r.offload != offload_target::none) return;  // the CPU steps
    const step_scratch scratch = scratch_of(r.optimizer);
    param_tensor largest{};
    bytes largest_scratch{};
    // A parameter's shard of the state, and whether it has an fp32 master copy.
    const auto state_of = [&r](const parameter_tensor_group& group) {
        const bool master = r.master == master_weights::fp32 && is_half(group.type);
        return std::pair{state_shard(group.tensor, r), master};
    };
    // The first step creates the state, layer by layer in model.parameters()
    // order (the optimizers' _init_group); then the update's scratch is
    // allocated for every tensor (a foreach op makes one result per tensor).
    if (first)
        for_each_parameter_in_model_order(graph, r, [&](const parameter_tensor_group& group) {
            if (!group.trainable) return;
            const auto [shard, master] = state_of(group);
            if (master) a.allocate(shard.numel() * size_of(dtype::fp32), tensor_owner::model, block_use::master_weights);
            if (!pages_state(r.optimizer))  // paged state is managed memory, outside the allocator
                for (bytes state : optimizer_state_tensors(r.optimizer, shard, master ? dtype::fp32 : group.type))
                    a.allocate(state, tensor_owner::model, block_use::optimizer_state);
        });
    for_each_parameter_in_model_order(graph, r, [&](const parameter_tensor_group& group) {
        if (!group.trainable) return;
        const auto [shard, master] = state_of(group);
        const bytes tensor = shard.numel() * size_of(scratch_type(r.optimizer, master ? dtype::fp32 : group.type));
        if (scratch == step_scratch::one_per_tensor) a.allocate(tensor, tensor_owner::step, block_use::temporaries);
        if (is_zero(r.parallel) && master)
            a.allocate(shard.numel() * size_of(dtype::fp32), tensor_owner::step, block_use::temporaries);
        if (shard.numel() > largest.numel()) {
            largest = shard;
            largest_scratch = tensor;
        }
    });
    if (first) a.allocate(optimizer_shared_state(r.optimizer, largest), tensor_owner::model, block_use::optimizer_state);
    a.release_all(tensor_owner::step);
    // The loop's two temporaries peak at the largest parameter.
    if (scratch == step_scratch::two_per_tensor) {
        a.allocate(largest_scratch, tensor_owner::step, block_use::temporaries);
        a.allocate(largest_scratch, tensor_owner::step, block_use::temporaries);
        a.release_all(tensor_owner::step);
    }
}

// How a replay makes the micro-steps' calls: `taped` walks each kind of
// micro-step once and plays its tape after that, and within that walk tapes
// a run's second layer and plays it for the later ones (step_walker);
// `walk_every_step` walks every layer of every step, the reference the tapes
// are tested against.
enum class replay_mode : std::uint8_t { taped, walk_every_step };

// Three steps of training (two forwards of serving), each micro-step in
// order, on `a`; `timeline`, when given, records them.
constexpr allocator_replay replay_on(const prepared_step& prepared, const model_spec& model, const recipe& r,
                                     const shape& asked, const device_profile& device, caching_allocator& a,
                                     memory_timeline* timeline = nullptr,
                                     replay_mode mode = replay_mode::taped) {
    validate(asked, model);
    const shape s = resolve(asked, model);
    const op_graph& graph = prepared.graph;
    const state_count& st = prepared.state;
    a.record_into(timeline);
    a.mark("model");
    detail::build_model(graph, r, a);
    // Peaks are the steps' (measured after reset_peak_memory_stats): the
    // tied weights built and freed above are not one.
    a.restart_peak_allocated();
    // DDP's construction: one flat bucket holding every gradient (its 25 MiB
    // buckets are adjacent allocations; one block stands for them).
    // Viewed as the gradients, the bucket is the ledger's gradients; otherwise its communication.
    if (detail::ddp(r))
        a.allocate(st.logical.gradients, tensor_owner::model,
                   r.ddp_bucket_view ? block_use::gradients : block_use::communication);
    // DeepSpeed's buffers, allocated when the engine is built.
    for (const bytes buffer : st.zero_buffers) a.allocate(buffer, tensor_owner::model, block_use::communication);
    const bool view = detail::ddp(r) && r.ddp_bucket_view;
    const bytes gathered = detail::gathered_during_step(st, r);
    const recipe compute = compute_recipe(r);
    const int steps = r.inference ? 2 : 3;
    // A micro-step's walk depends only on whether the gradients exist: one tape for each.
    std::array<allocator_tape, 2> tapes{};
    std::array<bool, 2> taped{};
    // A micro-step or step that leaves the allocator as it found it is
    // repeated exactly by the next one that makes the same calls: those are
    // skipped, unless every call is walked or recorded.
    const bool skip_repeats = mode == replay_mode::taped && timeline == nullptr;
    for (int step = 0; step < steps && !a.out_of_memory(); ++step) {
        const caching_allocator::state_token step_start = a.state();
        for (std::uint64_t micro = 0; micro < r.grad_accum; ++micro) {
            const caching_allocator::state_token micro_start = a.state();
            // FSDP's all-gathered parameters: freed when the step's tensors are.
            a.mark("forward");
            (void)a.allocate(gathered, tensor_owner::step, block_use::gathered_weights);
            const bool grads_exist = micro > 0 || view;
            const std::size_t kind = grads_exist ? 1 : 0;
            // The forward's cuBLAS handle makes its workspace at the first
            // product and keeps it: a block wherever best fit puts it (in a
            // fresh process, in the tied head's cached segment), which cap
            // pressure cannot release. Autograd's handle makes its own at the
            // first backward product (traced: right after the head's first
            // gradient). The walk places both. cuBLASLt's is taken off the
            // cap instead (cublas_workspace_beside_replay).
            if (step == 0 && micro == 0) {
                a.defer_workspace(device.cublas_workspace(), blas_thread::forward);
                if (!r.inference) a.defer_workspace(device.cublas_workspace(), blas_thread::backward);
            }
            if (taped[kind] && tapes[kind].self_contained) {
                a.play(tapes[kind]);
            } else {
                const bool taping = mode == replay_mode::taped && !taped[kind];
                if (taping) a.tape_into(&tapes[kind]);
                (void)detail::walk_step(graph, model, compute, s, device, 0, grads_exist, &a,
                                        mode == replay_mode::taped);
                a.tape_into(nullptr);
                taped[kind] = taped[kind] || taping;
            }
            // The later micro-steps all have gradients, and make this one's calls when it had.
            if (skip_repeats && grads_exist && a.unchanged_since(micro_start)) break;
        }
        if (r.inference) continue;
        a.mark("optimizer");
        // ZeRO has taken autograd's gradients before its step (state_count::step_frees_gradients).
        if (st.step_frees_gradients) a.release_all(tensor_owner::gradient);
        detail::optimizer_step(graph, r, step == 0, a);
        a.release_all(tensor_owner::gradient);  // zero_grad(set_to_none=True)
        detail::require(a.consistent(), "anatomy::replay_allocator: internal error, the allocator model lost a block");
        // Every step after the first makes the same calls (the first creates the optimizer's state).
        if (skip_repeats && step > 0 && a.unchanged_since(step_start)) break;
    }
    a.record_into(nullptr);
    // The peak is the step's tensors', as the estimate's: the workspaces' blocks are not in it.
    return {a.peak_tensors(), a.peak_reserved(), a.out_of_memory()};
}

constexpr allocator_replay replay_on(const model_spec& model, const recipe& r, const shape& asked,
                                     const device_profile& device, caching_allocator& a,
                                     memory_timeline* timeline = nullptr) {
    validate(r);
    validate(r, device);
    validate(asked, model);
    return replay_on(prepare_step(model, r, device), model, r, asked, device, a, timeline);
}

}  // namespace detail

// Three steps of training (two forwards of serving), each micro-step in
// order, against a fresh allocator holding at most `cap` (0: no cap).
constexpr allocator_replay replay_allocator(const model_spec& model, const recipe& r, const shape& asked,
                                           bytes cap = {}, const device_profile& device = devices::h200) {
    caching_allocator a(cap);
    return detail::replay_on(model, r, asked, device, a);
}

// The same replay, recorded: every allocation and free, and the phases.
// Run time only.
inline memory_timeline record_replay(const model_spec& model, const recipe& r, const shape& s,
                                     const device_profile& device = devices::h200) {
    memory_timeline t;
    caching_allocator a;
    (void)detail::replay_on(model, r, s, device, a, &t);
    return t;
}

}  // namespace anatomy
