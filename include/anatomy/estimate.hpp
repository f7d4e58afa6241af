// The estimate: model spec + recipe + shape -> model state, phase peaks, the
// peak and the ledger of what is alive at it. One code path for constant
// evaluation and run time.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/bytes.hpp>
#include <anatomy/device.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/ledger.hpp>
#include <anatomy/model.hpp>
#include <anatomy/optimizer.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/shape.hpp>
#include <anatomy/kernels.hpp>
#include <anatomy/timeline.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace anatomy {

// The peak of each phase of the step; for_each_phase (<anatomy/entries.hpp>)
// names them.
struct phase_peaks {
    bytes forward;
    bytes backward;
    bytes optimizer;
};

struct memory_estimate {
    std::uint64_t params = 0;
    // What one token passes through: params less the routed experts it does
    // not use (a dense model: params). Memory follows params, compute this.
    std::uint64_t active_params = 0;
    std::uint64_t trainable_params = 0;
    memory_ledger model_state{};  // weights, gradients, master weights, optimizer state: exact bytes
    memory_ledger ledger{};       // what is alive at the peak, entry by entry; sums to `peak`
    phase_peaks phases{};
    bytes peak{};  // the largest phase peak: what max_memory_allocated shows
    bytes host{};  // what offloading keeps in CPU memory, per rank
    bytes nvme{};  // or on an NVMe drive
    // A paged optimizer's state in CUDA managed memory: on the device, but
    // outside the caching allocator (not in `peak`); fit checks add it.
    bytes managed{};
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
    bool quantized = false;  // stored by bitsandbytes (quantized_weight_tensors)
};

// Whether an op's weight is stored quantized under the recipe.
constexpr bool quantized_weight(const op& o, const recipe& r) {
    return r.quantize != quantization::none && o.kind == op_kind::linear && !o.full_precision;
}

namespace detail {

// Calls f(parameter_tensor_group) for each parameter tensor of one op, LoRA
// adapters included; `copies` is how many of them the group stands for.
template <class F>
constexpr void for_each_parameter_of(const op& o, const stage& s, std::uint64_t copies, const recipe& r, F&& f) {
    const bool trainable = !(r.lora.enabled() || r.inference);
    if (!o.tied && !o.weight.empty())
        f(parameter_tensor_group{o.weight, copies, r.weights, trainable, &s, quantized_weight(o, r)});
    if (!o.bias.empty()) f(parameter_tensor_group{o.bias, copies, r.weights, trainable, &s});
    if (o.kind == op_kind::linear && r.lora.enabled() && r.lora.targets_module(o.module)) {
        f(parameter_tensor_group{{r.lora.rank, o.in_width}, copies, lora_adapter_dtype, !r.inference, &s});
        f(parameter_tensor_group{{o.out_width, r.lora.rank}, copies, lora_adapter_dtype, !r.inference, &s});
    }
}

// Every parameter tensor one at a time, in model.parameters() order: layer by
// layer, as the optimizer's first step creates their state.
template <class F>
constexpr void for_each_parameter_in_model_order(const op_graph& graph, const recipe& r, F&& f) {
    for (std::size_t i = 0; i < graph.stages.size(); ++i)
        for (std::uint64_t layer = 0; layer < graph.copies(i); ++layer)
            for (const op& o : graph.stages[i].ops) for_each_parameter_of(o, graph.stages[i], 1, r, f);
}

}  // namespace detail

// Calls f(parameter_tensor_group) for every parameter tensor, LoRA adapters
// included, each op's for all copies of its stage at once. Tied weights are
// visited once.
template <class F>
constexpr void for_each_parameter(const op_graph& graph, const recipe& r, F&& f) {
    for (std::size_t i = 0; i < graph.stages.size(); ++i)
        for (const op& o : graph.stages[i].ops) detail::for_each_parameter_of(o, graph.stages[i], graph.copies(i), r, f);
}

namespace detail {

constexpr void check_lora_targets(const op_graph& graph, const recipe& r) {
    if (!r.lora.enabled()) return;
    for (const std::string_view& target : r.lora.targets) {
        if (target.empty()) continue;
        bool found = false;
        for_each_op(graph, [&](const stage&, const op& o) {
            found = found || (o.kind == op_kind::linear && o.module.matches(target));
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
    bytes bucket_blocks{};     // DDP's gradient buckets and DeepSpeed's buffers, alive from construction on
    std::array<bytes, 2> zero_buffers{};  // DeepSpeed's, one block each (bytes{}: none), in bucket_blocks
    // FSDP: unsharded parameters in the compute dtype, all-gathered: the root
    // group's, one block's (the largest), and every block's.
    bytes gathered_root{};
    bytes gathered_block{};
    bytes gathered_blocks{};
    bytes host{};  // offloaded off the GPU (to CPU memory or NVMe)
    bytes managed{};  // a paged optimizer's state, in CUDA managed memory
    bytes zero_grad_partition{};  // ZeRO's fp32 copy of a rank's gradient partition, at the step
    bytes gathered_live{};  // ZeRO-3 with offloaded parameters: those it keeps live on the GPU
    // ZeRO frees autograd's gradients before the step's own buffers peak.
    bool step_frees_gradients = false;
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
// DeepSpeed ZeRO-3 with offloaded parameters fetches them to the GPU and
// keeps up to stage3_max_live_parameters of them there; without offload, a
// rank of one already holds whole parameters and gathers nothing.
constexpr bytes gathered_during_step(const state_count& st, const recipe& r) {
    if (r.parallel == parallelism::zero3 && r.offload == offload_target::params) return st.gathered_live;
    if (r.parallel == parallelism::zero3 && r.world_size == 1) return bytes{};
    return st.gathered_root + (r.fsdp_reshard_after_forward ? st.gathered_block : st.gathered_blocks);
}

// DeepSpeed's buffers beside the model state, measured on one H200 with
// DeepSpeed 0.19.8 (tests/data/deepspeed-h200.jsonl), sized from its config:
// ZeRO-3 allocates an IPG bucket of reduce_bucket_size elements at the start
// and, unless the optimizer is offloaded, a persistent gradient partition
// (the parameters' dtype); with an offloaded optimizer ZeRO-2 keeps one
// buffer the size of the largest parameter; ZeRO-3 with offloaded parameters
// keeps up to stage3_max_live_parameters fetched. They are the ledger's
// `communication`.
constexpr void zero_buffers(const op_graph&, const recipe& r, std::uint64_t params, param_tensor largest,
                            state_count& st) {
    const bytes elem = size_of(r.weights);
    const std::uint64_t partition = ceil_div(params, r.world_size);
    if (r.parallel == parallelism::zero3) {
        st.zero_buffers[0] = block_size(r.zero_reduce_bucket * elem);
        // On one rank autograd's gradients are whole and are copied into the
        // partition; on several, the partition holds the reduce-scattered
        // shard the walk keeps.
        if (r.offload == offload_target::none && r.world_size == 1) st.zero_buffers[1] = block_size(partition * elem);
        if (r.offload == offload_target::params) {
            // Fetched parameters stay up to max_live_parameters, and a module
            // runs with all of its own: the root group and a block at least.
            const std::uint64_t live = params < r.zero_max_live_parameters ? params : r.zero_max_live_parameters;
            const bytes modules = st.gathered_root + st.gathered_block;
            st.gathered_live = block_size(live * elem) > modules ? block_size(live * elem) : modules;
        }
    } else if (r.offload != offload_target::none && r.parallel == parallelism::zero2) {
        st.zero_buffers[0] = block_size(largest.numel() * elem);
    }
    // The step finds autograd's gradients gone: converted to the fp32
    // partition, moved into ZeRO-3's gradient partition, or sent to the host.
    st.step_frees_gradients = true;
    const bytes buffers = st.zero_buffers[0] + st.zero_buffers[1];
    st.logical.communication += buffers;
    st.bucket_blocks += buffers;
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
        bytes weight = weight_shard(group.tensor, r).numel() * size_of(p.type);
        if (group.quantized) {
            weight = bytes{};
            for (bytes part : quantized_weight_tensors(r.quantize, group.tensor)) {
                weight += part;
                st.resident_blocks += p.copies * block_size(part);
            }
            l.weights += p.copies * weight;
            return;  // frozen: no gradient, no optimizer state
        }
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
            } else if (pages_state(r.optimizer)) {
                st.managed += p.copies * state;
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
    if (is_zero(r.parallel)) zero_buffers(graph, r, e.params, largest, st);
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
    // ZeRO-3 steps its fp32 partition a sub-group at a time: two fp32 buffers
    // of the largest sub-group (measured: 2 x 4 B x min(params, sub_group_size)).
    if (r.parallel == parallelism::zero3) {
        const std::uint64_t partition = ceil_div(e.params, r.world_size);
        const std::uint64_t group = partition < r.zero_sub_group ? partition : r.zero_sub_group;
        st.step_temporaries = 2 * block_size(group * size_of(dtype::fp32));
    }
    return st;
}

// What one stage hands to the next: its output tensor.
struct stage_handoff {
    stage_input_info output;
    tensor_slot slot;
};

constexpr stage_handoff handoff(const expansion& ex, const stage& st) {
    const tensor_slot out = ex.op_output[st.output_op()];
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
    // `times` identical walks: the change per walk is constant, so the peak
    // is in the first walk or in the last.
    constexpr void repeat(const live_bytes& one, std::uint64_t times) {
        if (times == 0) return;
        if (times > static_cast<std::uint64_t>(INT64_MAX))
            throw overflow_error("anatomy: a layer count overflows 63 bits; use fewer layers");
        const auto n = static_cast<std::int64_t>(times);
        note_peak(sum(live, one.peak), sum(grads, one.grads_at_peak));
        if (n > 1)  // the last walk, from where the others left live memory
            note_peak(sum(sum(live, product(n - 1, one.now)), one.peak),
                      sum(sum(grads, product(n - 1, one.grads)), one.grads_at_peak));
        live = sum(live, product(n, one.now));
        grads = sum(grads, product(n, one.grads));
    }
    // Signed and checked: a walk's totals may fall, but never wrap.
    static constexpr std::int64_t product(std::int64_t a, std::int64_t b) {
        if (a == 0 || b == 0) return 0;
        const std::uint64_t ua = a < 0 ? 0 - static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a);
        const std::uint64_t ub = b < 0 ? 0 - static_cast<std::uint64_t>(b) : static_cast<std::uint64_t>(b);
        if (ua > static_cast<std::uint64_t>(INT64_MAX) / ub)
            throw overflow_error("anatomy: live memory overflows 63 bits in a multiplication; use smaller sizes");
        return a * b;
    }
    static constexpr std::int64_t sum(std::int64_t a, std::int64_t b) {
        if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < -INT64_MAX - b))
            throw overflow_error("anatomy: live memory overflows 63 bits in an addition; use smaller sizes");
        return a + b;
    }
    // What a walk that started at zero did, as one repeatable walk.
    constexpr live_bytes as_walk() const { return {.now = live, .peak = peak, .grads = grads, .grads_at_peak = grads_at_peak}; }
};

struct step_peaks {
    std::int64_t forward = 0;
    std::int64_t backward = 0;
    std::int64_t after_forward = 0;
    std::int64_t grads_at_backward_peak = 0;  // parameter gradients alive at the backward peak
};

// A run of identical layers of one stage, from one input. This, run_group
// and stage_handoff have no default member initializers: step_plan's arrays
// of them are set only up to their counts.
struct layer_run {
    std::size_t stage;
    stage_input_info input;
    std::uint64_t repeat;
};

// Runs [first, first + count) walked `times` times in a row: a stage, or one
// cycle of the layer pattern.
struct run_group {
    std::size_t first;
    std::size_t count;
    std::uint64_t times;
};

inline constexpr std::size_t max_runs = 2 * max_stages + 8;

// The step's order of runs: a stage whose first layer gets a different input
// (one that needs no gradient, under LoRA's frozen embeddings) is two runs,
// and a cycle whose first pass does is walked once, then times - 1 more.
// Each run's kernels are expanded once, here, for the plan and both walks.
// The arrays are set only up to their counts (zeroing them all cost 1.5 %
// of an estimate), so a plan is built in place, never copied.
struct step_plan {
    constexpr step_plan(const op_graph& graph, const model_spec& m, const recipe& r, const shape& s,
                        const device_profile& d);
    step_plan(const step_plan&) = delete;

    layer_run runs[max_runs];
    std::size_t run_count = 0;
    std::vector<expansion> expansions;  // by run
    run_group groups[max_runs];
    std::size_t group_count = 0;
    stage_handoff out[max_stages];  // each stage's output, as walked last
    stage_input_info encoder{};

    // Adds `run` of stage `st`, its kernels expanded in place.
    constexpr const expansion& add_run(layer_run run, const stage& st, const model_spec& m, const recipe& r,
                                       const shape& s, const device_profile& d) {
        runs[run_count++] = run;
        expand_into(expansions.emplace_back(), st, m, r, s, d, run.input, encoder);
        return expansions.back();
    }
    constexpr void add_group(std::size_t first, std::uint64_t times) {
        if (run_count > first && times > 0) groups[group_count++] = {first, run_count - first, times};
    }
};

constexpr bool same_input(stage_input_info a, stage_input_info b) {
    return a.size == b.size && a.type == b.type && a.requires_grad == b.requires_grad;
}

// Adds the runs of stage i fed by `input`; returns its output.
constexpr stage_input_info plan_stage(step_plan& plan, const op_graph& graph, std::size_t i, const model_spec& m,
                                      const recipe& r, const shape& s, const device_profile& d, stage_input_info input) {
    const stage& st = graph.stages[i];
    stage_handoff out = handoff(plan.add_run({i, input, st.repeat}, st, m, r, s, d), st);
    if (st.repeat > 1 && !same_input(out.output, input)) {
        // The first layer is a run of its own; the later ones get its output.
        plan.runs[plan.run_count - 1].repeat = 1;
        out = handoff(plan.add_run({i, out.output, st.repeat - 1}, st, m, r, s, d), st);
    }
    plan.out[i] = out;
    if (st.encoder_output) plan.encoder = out.output;
    return out.output;
}

constexpr step_plan::step_plan(const op_graph& graph, const model_spec& m, const recipe& r, const shape& s,
                               const device_profile& d) {
    stage_input_info previous{};
    const layer_cycle& c = graph.cycle;
    // At most two runs a stage, and a cycle's stages planned twice.
    expansions.reserve(2 * (graph.stages.size() + (c.times > 1 ? c.count : 0)));
    for (std::size_t i = 0; i < graph.stages.size();) {
        if (c.times > 1 && i == c.first) {
            const stage_input_info entry = previous;
            std::size_t first = run_count;
            for (std::size_t j = c.first; j < c.first + c.count; ++j) previous = plan_stage(*this, graph, j, m, r, s, d, previous);
            if (same_input(previous, entry)) {
                add_group(first, c.times);
            } else {
                add_group(first, 1);
                first = run_count;
                for (std::size_t j = c.first; j < c.first + c.count; ++j)
                    previous = plan_stage(*this, graph, j, m, r, s, d, previous);
                add_group(first, c.times - 1);
            }
            i += c.count;
            continue;
        }
        const std::size_t first = run_count;
        previous = plan_stage(*this, graph, i, m, r, s, d, previous);
        add_group(first, 1);
        ++i;
    }
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
// an allocator, every layer makes its calls in turn, every tensor handed to
// it by identity; without one, a run of identical layers is walked once, and
// a cycle of the layer pattern once per distinct input.
//
// With an allocator and `tape_layers`, a run's layers are not all walked:
// they make the same calls, on blocks of their own. The second layer's calls
// are taped, forward and backward (the first may differ: it pins the
// embedding output), and played for the later ones on their own blocks from
// before them (externals): forward, the layer's input; backward, what its
// forward left and its output's gradient. A play makes the calls a walk
// would: a walk never reads the allocator's answers, and the layers of a run
// share their kernels, so the same externals are blocks in each. (After an
// out-of-memory they are all no_block, but then the replay's answer is
// settled: the peaks no longer move.) The passes of a cycle of the layer
// pattern (Gemma's sliding and full layers) are taped and played the same
// way, a pass for a layer.
class step_walker {
public:
    constexpr step_walker(const op_graph& graph, const model_spec& m, const recipe& r, const shape& s,
                          const device_profile& d, caching_allocator* allocator, bool tape_layers = true)
        : graph_(graph), m_(m), r_(r), s_(s), d_(d), allocator_(allocator), plan_(graph, m, r, s, d),
          tape_layers_(allocator != nullptr && tape_layers) {
        if (!allocator_) forward_walks_.reserve(plan_.run_count);  // emplaced into: they must not move
    }

    constexpr step_peaks walk(std::int64_t base, bool grads_exist) {
        step_peaks p{};
        running fwd{.live = base, .peak = base};
        forward(fwd);
        fwd.live -= forward_scoped_;  // autocast's region and the model's forward end
        if (allocator_) allocator_->release_all(tensor_owner::cache);
        p.forward = fwd.peak;
        p.after_forward = fwd.live;
        if (r_.inference) {
            if (allocator_) allocator_->release_all(tensor_owner::step);
            return p;
        }
        running bwd{.live = fwd.live, .peak = fwd.live};
        if (allocator_) allocator_->mark("backward");
        backward(bwd, grads_exist);
        // The step's outputs (logits, the KV cache) die with the step.
        if (allocator_) allocator_->release_all(tensor_owner::step);
        p.backward = bwd.peak;
        p.grads_at_backward_peak = bwd.grads_at_peak;
        return p;
    }

private:
    // One layer's calls, taped, and what its walk gave: played for the later
    // layers of its run.
    struct taped_layer {
        allocator_tape tape;
        // The blocks the layer hands on, as the tape names them (layer_ref):
        // forward, its output, then what push_blocks_to recorded; backward, its
        // input's gradient, then what it handed over to the graph.
        growing_vector<std::size_t> outputs;
        live_bytes walked{};  // the walk's own count, the same for every layer
        std::int64_t forward_scoped = 0;
        bytes graph_kept{};
        bool playable = false;
    };

    // Where `run`'s layer is taped, forward or backward (one run at a
    // time), when layers are taped and the run has layers past the second;
    // not while a pass of its cycle is taped, which walks every layer.
    constexpr taped_layer* taped(const layer_run& run) {
        return tape_layers_ && !taping_pass_ && run.repeat > 2 ? &taped_ : nullptr;
    }
    // Where a pass of `group`, a cycle of the layer pattern, is taped, when
    // it has passes past the second. Its passes make the same calls, as a
    // run's layers do (the first may pin the embedding output), so the second
    // is taped and played for the rest. The head's run and cross-attention
    // do more in backward than their run's walk: no cycle holds them.
    constexpr taped_layer* taped(const run_group& group) {
        if (!tape_layers_ || group.times <= 2) return nullptr;
        for (std::size_t i = group.first; i < group.first + group.count; ++i)
            if (i + 1 == plan_.run_count || reads_encoder(graph_.stages[plan_.runs[i].stage])) return nullptr;
        return &taped_;
    }
    constexpr void start_taping(taped_layer& layer, const block_id* externals, std::size_t count) {
        layer = taped_layer{};
        allocator_->layer_tape_into(&layer.tape, externals, count);
    }
    // Starts taping a backward (a layer's or a pass's), whose externals are
    // the `left` blocks its forward left on top of recorded_, then its
    // output's gradient, pushed on for the purpose.
    constexpr void start_taping_backward(taped_layer& layer, std::size_t left, block_id output_grad) {
        recorded_.push_back(output_grad);
        start_taping(layer, recorded_.data() + (recorded_.size() - (left + 1)), left + 1);
        recorded_.pop_back();
    }
    // Ends the tape. The layer hands on `first`, then rest[0, count).
    constexpr void stop_taping(taped_layer& layer, const live_bytes& walked, block_id first, const block_id* rest,
                               std::size_t count) {
        allocator_->layer_tape_into(nullptr);
        layer.walked = walked;
        layer.playable = layer.tape.self_contained;
        for (std::size_t i = 0; i <= count; ++i) {
            const std::size_t ref = allocator_->layer_ref(i == 0 ? first : rest[i - 1]);
            layer.playable = layer.playable && ref != untaped_ref;
            layer.outputs.push_back(ref);
        }
    }
    // Plays `layer` on these externals; placed_ then holds its allocations' blocks.
    constexpr void play(const taped_layer& layer, const block_id* externals) {
        allocator_->play(layer.tape, externals, placed_);
    }
    // The block a played layer handed on as its output `i`.
    constexpr block_id handed_on(const taped_layer& layer, std::size_t i, const block_id* externals) const {
        const std::size_t ref = layer.outputs[i];
        if (ref == no_ref) return no_block;
        return (ref & external_ref) != 0 ? externals[ref & ~external_ref] : placed_[ref];
    }
    // A taped forward (a layer's or a pass's) played from the current input:
    // what its walk would have done.
    constexpr void play_forward(const taped_layer& layer, running& target) {
        const block_id input = previous_block_;
        play(layer, &input);
        target.repeat(layer.walked, 1);
        forward_scoped_ = running::sum(forward_scoped_, layer.forward_scoped);
        previous_block_ = handed_on(layer, 0, &input);
        for (std::size_t i = 1; i < layer.outputs.size(); ++i) recorded_.push_back(handed_on(layer, i, &input));
    }
    // A taped backward played on the `left` blocks its forward left on top
    // of recorded_ and the gradient of its output; returns its input's gradient.
    constexpr block_id play_backward(const taped_layer& layer, running& target, std::size_t left, block_id output_grad) {
        recorded_.push_back(output_grad);
        const block_id* external = recorded_.data() + (recorded_.size() - (left + 1));
        play(layer, external);
        target.repeat(layer.walked, 1);
        graph_kept_ += layer.graph_kept;
        const block_id input_grad = handed_on(layer, 0, external);
        for (std::size_t i = 1; i < layer.outputs.size(); ++i) graph_kept_blocks_.push_back(handed_on(layer, i, external));
        recorded_.truncate(recorded_.size() - (left + 1));
        return input_grad;
    }
    // How many blocks a pass of `group` leaves on recorded_ for its backward.
    constexpr std::size_t left_by_pass(const run_group& group) const {
        std::size_t n = 0;
        for (std::size_t i = group.first; i < group.first + group.count; ++i)
            n += static_cast<std::size_t>(plan_.runs[i].repeat) * walk_blocks::pushed(plan_.expansions[i].kernels.size());
        return n;
    }

    constexpr bool checkpointed(std::size_t stage_index) const {
        return !r_.inference && r_.grad_checkpointing && graph_.stages[stage_index].block;
    }
    constexpr std::size_t run_index(const layer_run& run) const {
        return static_cast<std::size_t>(&run - plan_.runs);
    }
    constexpr const expansion& expanded(const layer_run& run) const { return plan_.expansions[run_index(run)]; }
    constexpr tensor_slot output_slot(const layer_run& run, const expansion& ex) const {
        return handoff(ex, graph_.stages[run.stage]).slot;
    }
    // The stage after T5's encoder is fed the encoder output, which the model
    // output keeps: no stage frees it.
    constexpr bool input_held(std::size_t stage_index) const {
        return stage_index > 0 && graph_.stages[stage_index - 1].encoder_output;
    }
    // The model's forward keeps the embedding output in a local until its
    // layers are done: only the first layer may free it.
    constexpr bool first_layers(std::size_t stage_index) const {
        return graph_.stages[stage_index].block && stage_index > 0 && !graph_.stages[stage_index - 1].block;
    }

    constexpr void forward(running& fwd) {
        for (std::size_t g = 0; g < plan_.group_count; ++g) {
            const run_group& group = plan_.groups[g];
            if (!allocator_) {
                // One pass, extrapolated.
                running one_pass{};
                running& target = group.times > 1 ? one_pass : fwd;
                for (std::size_t i = group.first; i < group.first + group.count; ++i) forward_run(plan_.runs[i], target);
                if (&target == &one_pass) fwd.repeat(one_pass.as_walk(), group.times);
                continue;
            }
            // Replaying, every pass makes its calls: the second's taped, played for the later ones.
            taped_layer* tape = taped(group);
            for (std::uint64_t pass = 0; pass < group.times; ++pass) {
                first_pass_ = pass == 0;
                final_pass_ = pass + 1 == group.times;
                if (tape != nullptr && pass >= 2 && tape->playable) {
                    play_forward(*tape, fwd);
                    // The taped pass was not the last: it did not end the layers.
                    if (final_pass_) release_embedding_after(plan_.runs[group.first + group.count - 1], fwd);
                } else if (tape != nullptr && pass == 1) {
                    tape_forward_pass(group, *tape, fwd);
                    if (!tape->playable) tape = nullptr;  // the later passes walk, and may tape their layers
                } else {
                    for (std::size_t i = group.first; i < group.first + group.count; ++i) forward_run(plan_.runs[i], fwd);
                }
            }
            first_pass_ = true;
            final_pass_ = true;
        }
    }
    // Walks a pass of `group` with every layer walked, taping it into `tape`.
    // A play sets nothing the walker holds as the embedding output, so a
    // pass that pinned or released it cannot be played.
    constexpr void tape_forward_pass(const run_group& group, taped_layer& tape, running& fwd) {
        const block_id input = previous_block_;
        const bytes held_before = held_embedding_;
        const block_id held_block_before = held_embedding_block_;
        const std::size_t recorded_before = recorded_.size();
        const std::int64_t scoped_before = forward_scoped_;
        start_taping(tape, &input, 1);
        taping_pass_ = true;
        running pass{};
        for (std::size_t i = group.first; i < group.first + group.count; ++i) forward_run(plan_.runs[i], pass);
        taping_pass_ = false;
        fwd.repeat(pass.as_walk(), 1);
        tape.forward_scoped = forward_scoped_ - scoped_before;
        // The output, then what the pass's layers recorded.
        stop_taping(tape, pass.as_walk(), previous_block_, recorded_.data() + recorded_before,
                    recorded_.size() - recorded_before);
        tape.playable = tape.playable && held_embedding_ == held_before && held_embedding_block_ == held_block_before;
    }

    // The base model returns before the head runs: its masks and rotary tables die.
    constexpr void release_base_model(running& target) {
        target.live -= base_model_scoped_;
        base_model_scoped_ = 0;
        if (allocator_) allocator_->release_all(tensor_owner::base_model);
    }

    constexpr void forward_run(const layer_run& run, running& target) {
        const stage& st = graph_.stages[run.stage];
        if (st.head) release_base_model(target);
        const expansion& ex = expanded(run);
        const tensor_slot out = output_slot(run, ex);
        const bool ckpt = checkpointed(run.stage);
        const bool training = !r_.inference;
        // The model's first layer; a cycle's later passes start with the same run.
        const bool first = first_layers(run.stage) && &run == &plan_.runs[first_block_run()] && first_pass_;
        const std::uint64_t walks = allocator_ ? run.repeat : 1;
        const std::uint64_t times = group_times_of(run);
        taped_layer* layer = taped(run);
        for (std::uint64_t w = 0; w < walks; ++w) {
            const block_id input = previous_block_;
            if (layer != nullptr && w >= 2 && layer->playable) {
                play_forward(*layer, target);
                continue;
            }
            const bool taping = layer != nullptr && w == 1;
            if (taping) start_taping(*layer, &input, 1);
            // Replayed, each layer's walk is its own and not kept. Otherwise
            // the walk is kept at its run's index, for backward_run.
            if (allocator_) layer_walk_.clear();
            else detail::require(forward_walks_.size() == run_index(run),
                                 "anatomy::estimate: internal error, the forward walked a run out of order");
            stage_walk& walk = (allocator_ ? layer_walk_ : forward_walks_)
                                   .emplace_back(ex.kernels, out, run.input, plan_.encoder, previous_block_,
                                                 input_held(run.stage));
            walk.observe(allocator_);
            // Replaying, the first layer keeps the embedding output, which is
            // released when the layers are done.
            const bool pin = allocator_ && first && w == 0 && st.repeat > 1 && !ckpt;
            const live_bytes one = walk.forward(training && !ckpt, ckpt || pin);
            // Counted, the embedding output the model holds is alive through
            // every layer: the first frees it in its walk, the later ones
            // add it.
            if (!allocator_ && first && walk.input_freed() && st.repeat > 1) held_embedding_ = run.input.size;
            const std::int64_t held =
                !allocator_ && (st.block || st.closes_stack) ? live_bytes::signed_size(held_embedding_) : 0;
            target.live += held;
            target.repeat(one, run.repeat / walks);
            target.live -= held;
            if (pin && walk.input_pinned_only()) {
                held_embedding_ = run.input.size;
                held_embedding_block_ = previous_block_;
            }
            forward_scoped_ = running::sum(
                forward_scoped_,
                running::product(live_bytes::signed_size(bytes{checked_mul(run.repeat / walks, allocator_ ? 1 : times)}),
                                 live_bytes::signed_size(walk.forward_scoped())));
            // Only the embeddings make them: a stage walked once.
            base_model_scoped_ = running::sum(base_model_scoped_, live_bytes::signed_size(walk.base_model_scoped()));
            previous_block_ = walk.output_block();
            if (allocator_) walk.push_blocks_to(recorded_);
            if (taping) {
                layer->forward_scoped = live_bytes::signed_size(walk.forward_scoped());
                // The output, then what push_blocks_to recorded.
                const std::size_t pushed = walk_blocks::pushed(ex.kernels.size());
                stop_taping(*layer, one, previous_block_, recorded_.data() + (recorded_.size() - pushed), pushed);
            }
        }
        if (final_pass_) release_embedding_after(run, target);
    }
    // When its stack returns, after the last layer and the final norm, the
    // embedding output the model held for its layers (inputs_embeds) is
    // freed (traced: gemma-3-1b serving).
    constexpr void release_embedding_after(const layer_run& run, running& target) {
        const stage& st = graph_.stages[run.stage];
        const bool stack_returns = st.closes_stack || (st.block && !stack_goes_on_after(run));
        if (held_embedding_.count == 0 || !stack_returns) return;
        if (allocator_) {
            allocator_->release(held_embedding_block_);
            target.live -= live_bytes::signed_size(held_embedding_);
        }
        held_embedding_ = bytes{};
        held_embedding_block_ = no_block;
    }

    // A compiled step's backward starts from a gradient for every output of
    // the graph that needs one: AOTAutograd materializes zeros for those the
    // loss does not reach (the logits, the KV cache), alive through the
    // head's backward at least (traced: with an untied head, its weight
    // gradient is computed beside them). A loss compiled as a graph of its
    // own (head_part::loss_graph_break) hands the model's graph a real logits
    // gradient instead. A half-precision head whose vocabulary is not a
    // multiple of 8 has its matmuls padded (inductor's pad_mm): backward
    // copies the logits' gradient once per matmul (traced: gpt2 under
    // autocast, vocabulary 50257; none in fp32).
    struct compiled_tangents {
        bytes logits{};
        bytes cache{};
    };
    constexpr compiled_tangents tangents() const {
        compiled_tangents t{};
        if (!r_.compile) return t;
        for (std::size_t g = 0; g < plan_.group_count; ++g) {
            const run_group& group = plan_.groups[g];
            for (std::size_t i = group.first; i < group.first + group.count; ++i) {
                const layer_run& run = plan_.runs[i];
                for (const kernel& k : expanded(run).kernels) {
                    if (!k.returned || !k.requires_grad) continue;
                    if (run.stage + 1 == graph_.stages.size()) {
                        const bool zeros = !(m_.head.loss_graph_break && m_.head.kind == task::causal_lm);
                        const bool half_head = is_half(r_.weights) || r_.autocast != autocast_mode::off;
                        const std::uint64_t pads = half_head && m_.embedding.vocab % 8 != 0 ? 2 : 0;
                        t.logits += ((zeros ? 1 : 0) + pads) * k.out;
                    }
                    else
                        t.cache += checked_mul(run.repeat, group.times) * k.out;
                }
            }
        }
        return t;
    }

    constexpr void backward(running& bwd, bool grads_exist) {
        const auto allocate = [&](bytes b, block_use use = block_use::activations) {
            bwd.live += live_bytes::signed_size(b);
            return allocator_ ? allocator_->allocate(b, tensor_owner::step, use) : no_block;
        };
        const compiled_tangents zeros = tangents();
        if (zeros.cache.count > 0) (void)allocate(zeros.cache);
        bool logits_tangent_live = zeros.logits.count > 0;
        const block_id logits_tangent = logits_tangent_live ? allocate(zeros.logits) : no_block;
        bool encoder_grad_allocated = false;
        block_id output_grad = no_block;
        for (std::size_t g = plan_.group_count; g-- > 0;) {
            const run_group& group = plan_.groups[g];
            const std::uint64_t passes = allocator_ ? group.times : 1;
            running one_pass{};
            running& target = group.times > 1 && !allocator_ ? one_pass : bwd;
            taped_layer* tape = allocator_ ? taped(group) : nullptr;
            for (std::uint64_t pass = 0; pass < passes; ++pass) {
                if (tape != nullptr && pass >= 2 && tape->playable) {
                    output_grad = play_backward(*tape, bwd, left_by_pass(group), output_grad);
                    continue;
                }
                if (tape != nullptr && pass == 1) {
                    output_grad = tape_backward_pass(group, *tape, bwd, grads_exist, output_grad);
                    if (!tape->playable) tape = nullptr;  // the later passes walk, and may tape their layers
                    continue;
                }
                for (std::size_t i = group.first + group.count; i-- > group.first;) {
                    const layer_run& run = plan_.runs[i];
                    const stage& st = graph_.stages[run.stage];
                    if (run.stage + 1 == graph_.stages.size() && i + 1 == plan_.run_count)
                        output_grad = allocate(plan_.out[run.stage].output.size);  // d(loss)
                    const bool encoder_grad = reads_encoder(st);
                    if (encoder_grad && !encoder_grad_allocated) {
                        // Every cross-attention adds into one gradient of the encoder output.
                        (void)allocate(plan_.encoder.size);
                        encoder_grad_allocated = true;
                    }
                    output_grad = backward_run(run, target, grads_exist, encoder_grad, output_grad);
                    if (logits_tangent_live && i + 1 == plan_.run_count) {
                        bwd.live -= live_bytes::signed_size(zeros.logits);
                        if (allocator_) allocator_->release(logits_tangent);
                        logits_tangent_live = false;
                    }
                    // DeepSpeed ZeRO-1 and 2 (contiguous_gradients, its
                    // default, and forced by offload) allocate their IPG
                    // bucket, reduce_bucket_size elements in the gradients'
                    // dtype, in the first gradient hook of the backward, and
                    // free it at its end (traced: tinyllama ZeRO-2 with the
                    // optimizer offloaded, 953.67 MiB from setup_buckets).
                    if (i + 1 == plan_.run_count && (r_.parallel == parallelism::zero1 || r_.parallel == parallelism::zero2))
                        (void)allocate(block_size(checked_mul(r_.zero_reduce_bucket, size_of(r_.weights).count) * B),
                                       block_use::communication);
                }
            }
            if (&target == &one_pass) bwd.repeat(one_pass.as_walk(), group.times);
        }
        bwd.live -= live_bytes::signed_size(graph_kept_);
        for (block_id block : graph_kept_blocks_) allocator_->release(block);
        graph_kept_ = bytes{};
        graph_kept_blocks_.clear();
    }

    // Walks a pass of `group` backward with every layer walked, taping it
    // into `tape`. Returns its input's gradient.
    constexpr block_id tape_backward_pass(const run_group& group, taped_layer& tape, running& bwd, bool grads_exist,
                                          block_id output_grad) {
        const std::size_t left = left_by_pass(group);
        const std::size_t kept_before = graph_kept_blocks_.size();
        const bytes kept_bytes_before = graph_kept_;
        start_taping_backward(tape, left, output_grad);
        taping_pass_ = true;
        running pass{};
        for (std::size_t i = group.first + group.count; i-- > group.first;)
            output_grad = backward_run(plan_.runs[i], pass, grads_exist, false, output_grad);
        taping_pass_ = false;
        bwd.repeat(pass.as_walk(), 1);
        tape.graph_kept = graph_kept_ - kept_bytes_before;
        // The input's gradient, then what went to the graph.
        stop_taping(tape, pass.as_walk(), output_grad, graph_kept_blocks_.data() + kept_before,
                    graph_kept_blocks_.size() - kept_before);
        return output_grad;
    }

    constexpr block_id backward_run(const layer_run& run, running& target, bool grads_exist, bool encoder_grad,
                                    block_id output_grad) {
        const stage& st = graph_.stages[run.stage];
        const expansion& ex = expanded(run);
        const stage_handoff out = handoff(ex, st);
        const std::uint64_t walks = allocator_ ? run.repeat : 1;
        taped_layer* layer = taped(run);
        const std::size_t pushed = walk_blocks::pushed(ex.kernels.size());
        for (std::uint64_t w = 0; w < walks; ++w) {
            if (layer != nullptr && w >= 2 && layer->playable) {
                output_grad = play_backward(*layer, target, pushed, output_grad);
                continue;
            }
            const bool taping = layer != nullptr && w == 1;
            const std::size_t kept_before = graph_kept_blocks_.size();
            const bytes kept_bytes_before = graph_kept_;
            if (taping) start_taping_backward(*layer, pushed, output_grad);
            // The layer's forward blocks are on top of the stack, its input's last.
            const block_id input_block = allocator_ ? recorded_.back() : no_block;
            // Unreplayed and not recomputed, the layer's forward walk is still
            // in the state its backward needs.
            const bool walked = !allocator_ && !checkpointed(run.stage);
            if (!walked) layer_walk_.clear();
            stage_walk& walk = walked ? forward_walks_[run_index(run)]
                                      : layer_walk_.emplace_back(ex.kernels, out.slot, run.input, plan_.encoder,
                                                                 input_block, input_held(run.stage));
            live_bytes one{};
            if (checkpointed(run.stage)) {
                // Recompute the layer with autograd on (all of it when the
                // checkpoint is reentrant), run its backward, then drop the
                // recomputed output and the checkpoint's input.
                if (allocator_) walk_blocks::drop_from(recorded_, ex.kernels.size());
                walk.observe(allocator_);
                const live_bytes recompute = walk.forward(true, true, !reentrant_checkpoint(r_));
                const block_id recomputed = walk.output_block();
                live_bytes back = walk.backward(grads_exist, encoder_grad, output_grad, reduction(r_, st));
                walk.end_graph(back);  // the recomputed graph dies with the checkpoint's backward
                one = back;
                const bool recompute_peaks = recompute.peak > recompute.now + back.peak;
                one.peak = recompute_peaks ? recompute.peak : recompute.now + back.peak;
                one.grads_at_peak = recompute_peaks ? 0 : back.grads_at_peak;
                one.now = recompute.now + back.now -
                          (walk.output_made() ? live_bytes::signed_size(out.output.size) : 0) -
                          live_bytes::signed_size(run.input.size);
                if (allocator_) {
                    allocator_->release(recomputed);
                    allocator_->release(input_block);
                }
            } else {
                if (!walked) (void)walk.forward(true, false);  // rebuilds what autograd saved, silently
                if (allocator_) walk.restore_from(recorded_);
                walk.observe(allocator_);
                one = walk.backward(grads_exist, encoder_grad, output_grad, reduction(r_, st));
                // The step's graph dies when its backward ends.
                walk.hand_over_graph([&](bytes size, block_id block) {
                    graph_kept_ += checked_mul(run.repeat / walks, allocator_ ? 1 : group_times_of(run)) * size;
                    if (allocator_) graph_kept_blocks_.push_back(block);
                });
            }
            target.repeat(one, run.repeat / walks);
            output_grad = walk.input_grad_block();
            if (taping) {
                layer->graph_kept = graph_kept_ - kept_bytes_before;
                // The input's gradient, then what went to the graph.
                stop_taping(*layer, one, output_grad, graph_kept_blocks_.data() + kept_before,
                            graph_kept_blocks_.size() - kept_before);
            }
        }
        return output_grad;
    }

    constexpr std::size_t first_block_run() const {
        for (std::size_t i = 0; i < plan_.run_count; ++i)
            if (graph_.stages[plan_.runs[i].stage].block) return i;
        return plan_.run_count;
    }
    // The run after `run` is a layer or its stack's final norm: the stack has not returned.
    constexpr bool stack_goes_on_after(const layer_run& run) const {
        const std::size_t i = run_index(run);
        if (i + 1 >= plan_.run_count) return false;
        const stage& next = graph_.stages[plan_.runs[i + 1].stage];
        return next.block || next.closes_stack;
    }
    constexpr std::uint64_t group_times_of(const layer_run& run) const {
        const std::size_t i = run_index(run);
        for (std::size_t g = 0; g < plan_.group_count; ++g)
            if (i >= plan_.groups[g].first && i < plan_.groups[g].first + plan_.groups[g].count) return plan_.groups[g].times;
        return 1;
    }

    const op_graph& graph_;
    const model_spec& m_;
    const recipe& r_;
    const shape& s_;
    const device_profile& d_;
    caching_allocator* allocator_;
    step_plan plan_;
    // Without an allocator, each run's forward walk, kept for its backward
    // (which then need not walk the forward again), by run index.
    std::vector<stage_walk> forward_walks_;
    // A walk that is not kept (a replayed layer's, a recomputed one's): one
    // slot, reused. A std::optional here was zero-filled, 12 KB a walk.
    std::vector<stage_walk> layer_walk_;
    std::int64_t forward_scoped_ = 0;
    std::int64_t base_model_scoped_ = 0;  // what the base model holds until it returns
    block_id previous_block_ = no_block;
    bytes held_embedding_{};  // the embedding output, held by the model until its stack returns
    block_id held_embedding_block_ = no_block;
    // Which pass of a cycle a replay walks: only the first pins the
    // embedding output, only the last frees it. A count's one pass is both.
    bool first_pass_ = true;
    bool final_pass_ = true;
    growing_vector<block_id> recorded_;  // stage_walk::push_blocks_to of every layer walked forward
    // What the step's autograd graph keeps past its kernels' backward
    // (kernel::saved_with_graph), freed when the backward ends.
    bytes graph_kept_{};
    growing_vector<block_id> graph_kept_blocks_;
    bool tape_layers_ = false;
    bool taping_pass_ = false;  // a cycle's pass is being taped: its layers are all walked
    taped_layer taped_;  // the run's taped layer or the cycle's taped pass, while its forward or backward runs
    growing_vector<block_id> placed_;  // a played layer's allocations' blocks
};

constexpr step_peaks walk_step(const op_graph& graph, const model_spec& m, const recipe& r, const shape& s,
                               const device_profile& d, std::int64_t base, bool grads_exist,
                               caching_allocator* allocator = nullptr, bool tape_layers = true) {
    return step_walker(graph, m, r, s, d, allocator, tape_layers).walk(base, grads_exist);
}

}  // namespace detail

// Whether the step computes in bf16 anywhere.
constexpr bool uses_bf16(const recipe& r) {
    return r.weights == dtype::bf16 || r.autocast == autocast_mode::bf16 ||
           (is_4bit(r.quantize) && r.quant_compute == dtype::bf16);
}

// A recipe the device cannot run: bf16 needs sm80 (a V100 has none).
constexpr void validate(const recipe& r, const device_profile& device) {
    detail::require(!uses_bf16(r) || device.has_bf16(),
                    "anatomy::estimate: bf16 needs compute capability 8.0 or newer, which this device lacks; "
                    "use fp16 or fp32 (weights, autocast, quant_compute)");
}

namespace detail {

// What every estimate of one model under one recipe shares, whatever the
// shape: the lowered graph and the model state. Probing many shapes (a
// max_batch solve, a sweep) prepares once.
struct prepared_step {
    // Member by member: as an aggregate, `prepared_step{lower(m), {}, {}}`
    // was zero-filled whole by g++ before the graph was built, 213 KB of
    // memset, more than half of a plain estimate's instructions.
    constexpr explicit prepared_step(const model_spec& model) : graph(lower(model)), counts{}, state{} {}

    op_graph graph;
    memory_estimate counts;  // the parameter counts and the model state
    state_count state;
};

constexpr prepared_step prepare_step(const model_spec& model, const recipe& r, const device_profile& device) {
    validate(r);
    validate(r, device);
    require(!r.compile || (!model.experts.enabled() && !model.attention.latent() &&
                           model.stack != stack_kind::encoder_decoder),
            "anatomy::estimate: torch.compile is modelled for dense decoders and encoders; mixtures of "
            "experts, latent attention and encoder-decoders are not measured compiled: drop compile");
    prepared_step p(model);
    check_lora_targets(p.graph, r);
    memory_estimate& e = p.counts;
    p.state = count_model_state(p.graph, r, e);
    // LoRA adapters are not in the graph: every token passes through them.
    e.active_params = checked_add(active_parameter_count(p.graph, model), e.params - parameter_count(p.graph));
    e.model_state = p.state.logical;
    (r.offload_to == offload_device::nvme ? e.nvme : e.host) = p.state.host;
    e.managed = p.state.managed;
    return p;
}

// The estimate of one shape, from the prepared model and recipe.
constexpr memory_estimate estimate_prepared(const prepared_step& prepared, const model_spec& model, const recipe& r,
                                            const shape& asked, const device_profile& device) {
    validate(asked, model);
    const shape s = resolve(asked, model);
    const op_graph& graph = prepared.graph;
    const state_count& st = prepared.state;
    memory_estimate e = prepared.counts;
    const bool accumulating = detail::gradients_preallocated(r);
    const bytes resident = st.resident_blocks + st.bucket_blocks;
    const bytes gathered = detail::gathered_during_step(st, r);
    const bytes forward_base = (accumulating ? resident + st.gradient_blocks : resident) + gathered;
    const detail::step_peaks walk = detail::walk_step(graph, model, compute_recipe(r), s, device,
                                                      detail::live_bytes::signed_size(forward_base), accumulating);

    e.phases.forward = bytes{static_cast<std::uint64_t>(walk.forward)};
    if (!r.inference) {
        e.phases.backward = bytes{static_cast<std::uint64_t>(walk.backward)};
        e.phases.optimizer = resident + (st.step_frees_gradients ? bytes{} : st.gradient_blocks) + st.step_temporaries;
    }
    e.peak = e.phases.forward;
    if (e.phases.backward > e.peak) e.peak = e.phases.backward;
    if (e.phases.optimizer > e.peak) e.peak = e.phases.optimizer;

    memory_ledger& l = e.ledger;
    l = st.logical;
    const bool optimizer_peak = !r.inference && e.peak == e.phases.optimizer;
    const bool backward_peak = !optimizer_peak && !r.inference && e.peak == e.phases.backward;
    bytes grads_at_peak = accumulating ? st.gradient_blocks : bytes{};
    if (optimizer_peak) grads_at_peak = st.step_frees_gradients ? bytes{} : st.gradient_blocks;
    if (backward_peak && !accumulating) grads_at_peak = bytes{static_cast<std::uint64_t>(walk.grads_at_backward_peak)};
    if (optimizer_peak) l.temporaries = st.step_temporaries;
    // Gradients are reported as allocated (block-rounded) when only some exist.
    l.gradients = grads_at_peak == st.gradient_blocks ? st.logical.gradients : grads_at_peak;
    if (optimizer_peak && st.step_frees_gradients) l.gradients = bytes{};
    const bytes state_blocks = resident + grads_at_peak;
    const bytes state_logical = l.weights + l.master_weights + l.optimizer_state + l.gradients + l.communication;
    l.allocator_rounding = state_blocks - state_logical;
    if (!optimizer_peak) l.gathered_weights = gathered;
    // Whatever else is alive at the peak belongs to the step's tensors.
    l.activations = e.peak - state_blocks - l.temporaries - l.gathered_weights;
    return e;
}

}  // namespace detail

// `device`: the GPU the step runs on (its SDPA kernels, SM count); the
// measured H200 by default.
constexpr memory_estimate estimate(const model_spec& model, const recipe& r, const shape& asked,
                                   const device_profile& device = devices::h200) {
    validate(r);
    validate(r, device);
    validate(asked, model);
    return detail::estimate_prepared(detail::prepare_step(model, r, device), model, r, asked, device);
}

// Per-parameter bytes of a ledger entry, for tables such as "16 B/param".
constexpr double per_param(bytes entry, std::uint64_t params) {
    return params == 0 ? 0.0 : static_cast<double>(entry.count) / static_cast<double>(params);
}

}  // namespace anatomy
