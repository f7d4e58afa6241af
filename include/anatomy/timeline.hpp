// The memory timeline of one training step: forward, backward, optimizer.
//
// Each stage's kernels are walked with reference counts, as PyTorch frees
// tensors: an output lives until its last forward reader has run, or, when
// autograd saved it, until the backward of its last saver. Backward allocates
// input gradients and parameter gradients and frees what each kernel saved.
// A repeated block is walked once: every layer is the same, so live memory
// changes by the same amount per layer and the peak is at the first or the
// last layer.
//
// When an allocator observes a walk, every tensor is handed to it by
// identity: allocate() gives each tensor its block, and a free returns that
// block, never another of the same size.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/bytes.hpp>
#include <anatomy/caching_allocator.hpp>
#include <anatomy/detail/growing_vector.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/kernels.hpp>

#include <cstdint>
#include <vector>

namespace anatomy {

namespace detail {

// A signed running total of bytes: walks free before they allocate.
struct live_bytes {
    std::int64_t now = 0;
    std::int64_t peak = 0;
    std::int64_t grads = 0;          // parameter gradients among `now`
    std::int64_t grads_at_peak = 0;  // and among `peak`
    caching_allocator* allocator = nullptr;  // when set, sees every allocation and free

    static constexpr std::int64_t signed_size(bytes b) {
        if (b.count > static_cast<std::uint64_t>(INT64_MAX)) throw overflow_error("anatomy: a tensor overflows 63 bits; use smaller sizes");
        return static_cast<std::int64_t>(b.count);
    }
    // An empty tensor changes nothing and gets no block (the allocator's
    // allocate(0) is no_block too): most kernels have no workspace, no saved
    // extra and no weight copy.
    constexpr block_id add(bytes b, tensor_owner owner = tensor_owner::step) {
        if (b.count == 0) return no_block;
        const block_id id = allocator ? allocator->allocate(b, owner) : no_block;
        const std::int64_t s = signed_size(b);
        if (now > INT64_MAX - s) throw overflow_error("anatomy: live memory overflows 63 bits; use smaller sizes");
        now += s;
        if (now > peak) {
            peak = now;
            grads_at_peak = grads;
        }
        return id;
    }
    constexpr block_id add_grad(bytes b) {
        grads += signed_size(b);
        return add(b, tensor_owner::gradient);
    }
    constexpr void sub(bytes b, block_id id) {
        if (b.count == 0) return;
        if (allocator) allocator->release(id);
        now -= signed_size(b);
    }
    // A transient: counted at its peak, then gone.
    constexpr void touch(bytes b) { sub(b, add(b)); }
};

// Sharded data parallelism (FSDP2, ZeRO 2 and 3) reduce-scatters a block's
// parameter gradients when its backward ends: each rank keeps 1/world of
// them, in the dtype of its shards (`keep_size / grad_size` of their bytes).
struct gradient_reduction {
    std::uint64_t world = 1;  // 1: gradients stay whole
    std::uint64_t keep_size = 1;
    std::uint64_t grad_size = 1;
};

inline constexpr std::size_t slot_count = max_kernels_per_stage + 2;

// A slot's index in arrays of slot_count: a kernel's own, then input_slot
// (-1) and encoder_slot (-2). One compare: the walks index on every read.
constexpr std::size_t index_of(tensor_slot s) {
    return s >= 0 ? static_cast<std::size_t>(s) : max_kernels_per_stage + static_cast<std::size_t>(-1 - s);
}

// The blocks a forward walk left allocated for its backward: each tensor's
// (the stage input's among them), each kernel's saved extras and saved weight
// copies. Only the slots of a stage's `n` kernels and its two inputs are
// set: the arrays are sized for the largest stage, and writing them whole
// was most of a walk's cost.
struct walk_blocks {
    block_id tensor[slot_count];
    block_id extra[max_kernels_per_stage];
    block_id weight[max_kernels_per_stage];

    constexpr explicit walk_blocks(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) tensor[i] = extra[i] = weight[i] = no_block;
        tensor[index_of(input_slot)] = tensor[index_of(encoder_slot)] = no_block;
    }

    // Those of a stage of `n` kernels, appended to `out` (a stack of the
    // layers walked forward: the replay keeps only what it uses), and taken
    // back off it for the layer's backward. The stage input's block is last.
    // A tensor already freed (freed[slot]) is pushed as no_block: its block
    // may hold another tensor by now.
    static constexpr std::size_t pushed(std::size_t n) { return 3 * n + 2; }
    constexpr void push_to(growing_vector<block_id>& out, std::size_t n, const bool* freed) const {
        const std::size_t at = out.size();
        out.extend(pushed(n));
        block_id* to = out.data() + at;
        for (std::size_t i = 0; i < n; ++i) {
            *to++ = freed[i] ? no_block : tensor[i];
            *to++ = extra[i];
            *to++ = weight[i];
        }
        *to++ = tensor[index_of(encoder_slot)];
        *to = freed[index_of(input_slot)] ? no_block : tensor[index_of(input_slot)];
    }
    // What push_to recorded for a stage of `n` kernels, dropped unread.
    static constexpr void drop_from(growing_vector<block_id>& in, std::size_t n) { in.truncate(in.size() - pushed(n)); }
    constexpr void pop_from(growing_vector<block_id>& in, std::size_t n) {
        const std::size_t at = in.size() - pushed(n);
        const block_id* from = in.data() + at;
        for (std::size_t i = 0; i < n; ++i) {
            tensor[i] = *from++;
            extra[i] = *from++;
            weight[i] = *from++;
        }
        tensor[index_of(encoder_slot)] = *from++;
        tensor[index_of(input_slot)] = *from;
        in.truncate(at);
    }
};

// One walk of a stage's kernels: the forward, then (optionally) its backward.
class stage_walk {
public:
    // `input_block`: the block of the stage input (the previous stage's
    // output); `input_held`: something outside the stage keeps the input
    // alive (T5's encoder output, which the model output holds).
    constexpr stage_walk(const kernel_list& kernels, tensor_slot output, stage_input_info input,
                         stage_input_info encoder, block_id input_block = no_block, bool input_held = false)
        : kernels_(kernels), output_(output), input_(input), encoder_(encoder), input_held_(input_held),
          blocks_(kernels.size()) {
        blocks_.tensor[index_of(input_slot)] = input_block;
        for (const std::size_t i : {index_of(input_slot), index_of(encoder_slot)}) {
            clear(i);
            root_[i] = static_cast<std::uint16_t>(i);
        }
        for (std::size_t i = 0; i < kernels_.size(); ++i) {
            // Kernel i reads slots up to its own: each is cleared before it is counted.
            clear(i);
            // A view reads an earlier slot, whose root is set.
            root_[i] = static_cast<std::uint16_t>(kernels_[i].alias ? root_of(kernels_[i].in[0]) : i);
            for (tensor_slot s : kernels_[i].in)
                if (s != no_slot) ++readers_[root_of(s)];
            // A Python name is one more reader, until kernel i has run.
            for (std::uint8_t j = 0; j < kernels_[i].reference_count; ++j) ++readers_[root_of(kernels_[i].references[j])];
        }
    }

    // Forward; `saving`: autograd records (false under no_grad or inside a
    // checkpointed block). `keep_input`: the stage input is kept regardless
    // (a checkpoint saves its inputs). The stage input stays alive until the
    // stage returns: the caller's Python frame holds it.
    //
    // `stops_early`: a non-reentrant checkpoint's recompute in backward, which
    // stops once the last tensor the forward saved is saved again
    // (torch.utils.checkpoint's default early stop; traced: a llama-3-8b
    // layer's recompute never runs down_proj or the residual add). An op saves its
    // inputs before it runs and its outputs after, so the last saving kernel
    // runs only if it saves what it makes; the frames then unwind, and every
    // tensor not saved dies.
    constexpr live_bytes forward(bool saving, bool keep_input, bool stops_early = false) {
        live_bytes live{};
        live.allocator = allocator_;
        saving_ = saving;
        std::size_t end = kernels_.size();
        bool last_runs = true;
        if (stops_early && saving)
            for (std::size_t i = kernels_.size(); i-- > 0;)
                if (saves_something(kernels_[i])) {
                    end = i + 1;
                    last_runs = kernels_[i].saves_output || kernels_[i].saved_extra.count > 0;
                    break;
                }
        const std::size_t input = index_of(input_slot);
        ++saved_[input];
        if (keep_input) ++saved_[input];
        // A compiled kernel's backward recomputes from earlier tensors, which
        // must outlive their forward readers.
        if (saving)
            for (const kernel& k : kernels_)
                for (std::uint8_t j = 0; j < k.recompute_count; ++j) ++saved_[root_of(k.recomputes_from[j])];
        for (std::size_t i = 0; i < end; ++i) {
            const kernel& k = kernels_[i];
            const bool made = i + 1 < end || last_runs;
            // The first product of the forward makes its cuBLAS handle's workspace.
            const bool multiplies = live.allocator != nullptr && (k.cublas_forward || k.cublas_backward);
            if (multiplies) live.allocator->place_workspace_after_next_allocation(true, blas_thread::forward);
            if (k.base_model_scoped) {
                // Built once by the base model's forward and dropped when it returns.
                (void)live.add(k.out, tensor_owner::base_model);
                base_model_scoped_ += k.out;
                freed_[i] = true;
            } else if (made && k.extra_before_output) {
                const bytes early = k.saved_extra + k.workspace;
                const block_id early_block = live.add(early);
                if (!k.alias) blocks_.tensor[i] = live.add(k.out);
                if (saving && k.saved_extra.count > 0) blocks_.extra[i] = early_block;
                else live.sub(early, early_block);
            } else if (made) {
                if (!k.alias) blocks_.tensor[i] = live.add(k.out);
                live.touch(k.workspace);
                if (saving) blocks_.extra[i] = live.add(k.saved_extra);
                else live.touch(k.saved_extra);
            } else {
                freed_[i] = true;  // stopped while saving its inputs: never made
            }
            if (multiplies) live.allocator->place_workspace_after_next_allocation(false, blas_thread::forward);
            // Autocast's copy of the weight: most kernels have none.
            if (k.weight_copy.count > 0) {
                if (saving && k.saves_weight_copy) {
                    blocks_.weight[i] = live.add(k.weight_copy);
                } else if (k.caches_weight_copy) {
                    (void)live.add(k.weight_copy, tensor_owner::cache);
                    forward_scoped_ += k.weight_copy;
                } else {
                    live.touch(k.weight_copy);
                }
            }
            std::size_t read[3];  // the inputs' roots, the first `reads`: for both loops below
            std::size_t reads = 0;
            for (std::size_t j = 0; j < 3; ++j) {
                if (k.in[j] == no_slot) continue;
                const std::size_t r = read[reads++] = root_of(k.in[j]);
                --readers_[r];
                if (saving && (k.saves_inputs >> j & 1u)) ++saved_[r];
            }
            if (saving && k.saves_output) ++saved_[root_[i]];
            for (std::uint8_t j = 0; j < k.reference_count; ++j) --readers_[root_of(k.references[j])];
            for (std::size_t j = 0; j < reads; ++j) release_if_dead(read[j], live);
            for (std::uint8_t j = 0; j < k.reference_count; ++j) release_if_dead(root_of(k.references[j]), live);
            release_if_dead(root_[i], live);
        }
        if (end < kernels_.size() || !last_runs) {
            // The recompute stopped: the kernels after it never read their
            // inputs, and every name dies with the unwound frames.
            for (std::size_t i = end; i < kernels_.size(); ++i) {
                freed_[i] = true;
                for (tensor_slot s : kernels_[i].in)
                    if (s != no_slot) --readers_[root_of(s)];
                for (std::uint8_t j = 0; j < kernels_[i].reference_count; ++j)
                    --readers_[root_of(kernels_[i].references[j])];
            }
            for (std::size_t i = 0; i < end; ++i) release_if_dead(root_[i], live);
            output_made_ = !freed_[root_of(output_)];
        }
        --saved_[input];
        release_if_dead(input, live);
        input_freed_ = freed_[input];
        input_pinned_only_ = keep_input && saved_[input] == 1 && readers_[input] == 0;
        return live;
    }

    // What the forward made that lives until the forward returns: autocast's
    // cached weight copies.
    constexpr bytes forward_scoped() const { return forward_scoped_; }
    // The base model's tensors it made (masks, rotary tables), dropped before the head.
    constexpr bytes base_model_scoped() const { return base_model_scoped_; }
    constexpr bool input_freed() const { return input_freed_; }
    // A recompute that stopped early did not make the stage output.
    constexpr bool output_made() const { return output_made_; }
    // forward(_, true) kept the input only because it was asked to.
    constexpr bool input_pinned_only() const { return input_pinned_only_; }

    // Pushes the blocks the forward left for backward onto `recorded`.
    constexpr void push_blocks_to(growing_vector<block_id>& recorded) const {
        blocks_.push_to(recorded, kernels_.size(), freed_);
    }
    // Takes the blocks push_to recorded for this stage back off `recorded`.
    constexpr void restore_from(growing_vector<block_id>& recorded) { blocks_.pop_from(recorded, kernels_.size()); }
    constexpr block_id output_block() const { return blocks_.tensor[root_of(output_)]; }
    constexpr block_id input_block() const { return blocks_.tensor[index_of(input_slot)]; }
    // After backward: the block of the stage input's gradient.
    constexpr block_id input_grad_block() const { return grad_block_[index_of(input_slot)]; }

    // Backward of the same stage, after forward(true, ...). The gradient of the
    // stage output is alive on entry (the caller counted it, in
    // `output_grad`); the gradient of the stage input is alive on exit.
    // `grads_exist`: parameter gradients from an earlier micro-step absorb the
    // new ones, which are then transient.
    constexpr live_bytes backward(bool grads_exist, bool encoder_grad_alive, block_id output_grad,
                                  gradient_reduction reduce = {}) {
        live_bytes live{};
        // The parameter gradients made, one tensor each (a weight's, a bias's).
        bytes param_grads[2 * max_kernels_per_stage];  // the first param_grad_count
        block_id param_blocks[2 * max_kernels_per_stage];
        std::size_t param_grad_count = 0;
        live.allocator = allocator_;
        grad_[root_of(output_)] = true;
        grad_block_[root_of(output_)] = output_grad;
        if (encoder_grad_alive) grad_[index_of(encoder_slot)] = true;
        for (std::size_t n = kernels_.size(); n-- > 0;) {
            const kernel& k = kernels_[n];
            if (!k.requires_grad || !grad_[root_[n]]) {
                release_saved(k, n, live);
                continue;
            }
            // A view's gradient is its base's (its root's), alive already: a
            // reader of hidden[:, 0] allocated zeros of the base's shape.
            if (k.alias) {
                if (k.in[1] != no_slot && (k.grad_inputs & 2u)) share_gradient(root_[n], root_of(k.in[1]), live);
                continue;
            }
            // Transients of this backward: its scratch, gradients summed into
            // existing ones, and (accumulating) the new parameter gradients.
            // Each is its own tensor; all are alive at once at worst. Empty
            // ones are left out: live_bytes would skip them.
            bytes transients[7];  // the first transient_count
            block_id transient_blocks[7];
            std::size_t transient_count = 0;
            const auto transient = [&](bytes b) {
                if (b.count > 0) transients[transient_count++] = b;
            };
            transient(k.backward_workspace.tensors[0]);
            transient(k.backward_workspace.tensors[1]);
            // What only an allocator sees (the live total is the same): the
            // first backward that multiplies makes autograd's cuBLAS
            // workspace right after its first output, and a linear without a
            // bias makes its weight's gradient before its input's (with
            // gradients from an earlier micro-step, one summed in and freed last).
            const auto new_param_grads = [&] {
                for (bytes g : {k.param_grads.weight, k.param_grads.bias}) {
                    if (g.count == 0) continue;
                    param_blocks[param_grad_count] = live.add_grad(g);
                    param_grads[param_grad_count++] = g;
                }
            };
            const bool ordered = live.allocator != nullptr && (k.cublas_backward || k.param_grads_first);
            const bool params_first = ordered && k.param_grads_first && !k.param_grads.empty();
            const bool summed_first = params_first && grads_exist;
            block_id summed_blocks[2]{no_block, no_block};
            if (ordered) {
                live.allocator->place_workspace_after_next_allocation(k.cublas_backward, blas_thread::backward);
                if (summed_first) {
                    summed_blocks[0] = live.add(k.param_grads.weight);
                    summed_blocks[1] = live.add(k.param_grads.bias);
                } else if (params_first) {
                    new_param_grads();
                }
            }
            for (std::size_t j = 0; j < 3; ++j) {
                if (!(k.grad_inputs >> j & 1u) || k.in[j] == no_slot) continue;
                const std::size_t r = root_of(k.in[j]);
                if (grad_[r]) {
                    transient(size_at(r));
                } else {
                    grad_[r] = true;
                    grad_block_[r] = live.add(size_at(r));
                }
            }
            if (!params_first) {
                if (grads_exist) {
                    transient(k.param_grads.weight);
                    transient(k.param_grads.bias);
                } else {
                    new_param_grads();
                }
            }
            for (std::size_t t = 0; t < transient_count; ++t) transient_blocks[t] = live.add(transients[t]);
            for (std::size_t t = transient_count; t-- > 0;) live.sub(transients[t], transient_blocks[t]);
            if (ordered) {
                live.allocator->place_workspace_after_next_allocation(false, blas_thread::backward);
                if (summed_first) {
                    live.sub(k.param_grads.bias, summed_blocks[1]);
                    live.sub(k.param_grads.weight, summed_blocks[0]);
                }
            }
            // The gradient of this kernel's output has been consumed.
            if (grad_[n]) {
                grad_[n] = false;
                if (grad_block_[n] != borrowed_gradient) live.sub(k.out, grad_block_[n]);
                grad_block_[n] = no_block;
            }
            release_saved(k, n, live);
        }
        if (reduce.world > 1) {
            for (std::size_t g = 0; g < param_grad_count; ++g) {
                live.sub(param_grads[g], param_blocks[g]);
                live.grads -= live_bytes::signed_size(param_grads[g]);
                const std::uint64_t kept = ceil_div(checked_mul(param_grads[g].count, reduce.keep_size),
                                                    checked_mul(reduce.grad_size, reduce.world));
                (void)live.add_grad(bytes{kept});
            }
        }
        return live;
    }

    // After backward(): the saved inputs only the autograd graph still keeps
    // (kernel::saved_with_graph). end_graph frees them now; hand_over_graph
    // gives each to f(bytes, block), for the caller to free when the graph
    // dies, and counts them live until then.
    template <class F>
    constexpr void hand_over_graph(F&& f) {
        for (std::size_t g = 0; g < graph_kept_count_; ++g) {
            const std::size_t i = graph_kept_[g];
            --saved_[i];
            if (freed_[i] || readers_[i] > 0 || saved_[i] > 0 || kept(i)) continue;
            freed_[i] = true;
            f(size_at(i), blocks_.tensor[i]);
        }
        graph_kept_count_ = 0;
    }
    // Defined after hand_over_graph: clang 14 does not instantiate a member
    // template for constant evaluation from a body that precedes it.
    constexpr void end_graph(live_bytes& live) {
        hand_over_graph([&](bytes size, block_id block) { live.sub(size, block); });
    }

    // Reports every allocation and free of the next forward() or backward().
    constexpr void observe(caching_allocator* allocator) { allocator_ = allocator; }

    // After forward(): whether kernel i's output is still allocated.
    constexpr bool alive(std::size_t i) const { return !kernels_[i].alias && !freed_[i]; }

private:
    // An in-place add's second input `other` gets the gradient of `base`
    // (the root it wrote), the same tensor: the one of the two whose
    // gradient is consumed last (the earlier kernel's) holds the block, the
    // other borrows it. Already holding a gradient, `other` sums the new one
    // in, a transient; a stage input, or a tensor of another size
    // (broadcast), gets its own.
    constexpr void share_gradient(std::size_t base, std::size_t other, live_bytes& live) {
        if (grad_[other]) {
            live.touch(size_at(other));
            return;
        }
        grad_[other] = true;
        const bool shareable = base < max_kernels_per_stage && other < max_kernels_per_stage &&
                               size_at(base) == size_at(other) && grad_block_[base] != borrowed_gradient;
        if (!shareable) {
            grad_block_[other] = live.add(size_at(other));
        } else if (other < base) {
            grad_block_[other] = grad_block_[base];
            grad_block_[base] = borrowed_gradient;
        } else {
            grad_block_[other] = borrowed_gradient;
        }
    }

    // The index of the tensor slot `s` is a view of (itself if none).
    constexpr std::size_t root_of(tensor_slot s) const { return root_[index_of(s)]; }

    // The size of the tensor at index `i`.
    constexpr bytes size_at(std::size_t i) const {
        if (i < max_kernels_per_stage) return kernels_[i].out;
        return i == index_of(input_slot) ? input_.size : encoder_.size;
    }

    // What the checkpoint's pack hook sees: bitsandbytes' ctx.tensors
    // (saved_with_graph) are not saved tensors.
    static constexpr bool saves_something(const kernel& k) {
        return (k.saves_inputs != 0 && !k.saved_with_graph) || k.saves_output || k.saved_extra.count > 0 ||
               k.saves_weight_copy || k.recompute_count > 0;
    }

    // Slot i's state before the walk. Only the stage's slots are set: the
    // arrays are sized for the largest stage, and clearing them whole cost more.
    constexpr void clear(std::size_t i) {
        readers_[i] = saved_[i] = 0;
        freed_[i] = grad_[i] = false;
        grad_block_[i] = no_block;
    }

    // Whether the tensor at index `i` outlives the stage.
    constexpr bool kept(std::size_t i) const {
        if (i == index_of(encoder_slot) || i == root_of(output_)) return true;
        if (i == index_of(input_slot)) return input_held_;
        return kernels_[i].held;
    }

    // Frees the tensor at index `i` if nothing holds it any more. The
    // counts are checked inline: most calls stop there.
    constexpr void release_if_dead(std::size_t i, live_bytes& live) {
        if (readers_[i] == 0 && saved_[i] == 0 && !freed_[i]) release_unless_kept(i, live);
    }
    constexpr void release_unless_kept(std::size_t i, live_bytes& live) {
        if (kept(i)) return;
        freed_[i] = true;
        live.sub(size_at(i), blocks_.tensor[i]);
    }

    // Kernel i's backward has run: what it saved is let go.
    constexpr void release_saved(const kernel& k, std::size_t i, live_bytes& live) {
        if (!k.requires_grad) return;
        for (std::size_t j = 0; j < 3; ++j) {
            if (!(k.saves_inputs >> j & 1u) || k.in[j] == no_slot) continue;
            const std::size_t r = root_of(k.in[j]);
            if (k.saved_with_graph) {
                graph_kept_[graph_kept_count_++] = static_cast<std::uint16_t>(r);
                continue;
            }
            --saved_[r];
            release_if_dead(r, live);
        }
        if (k.saves_output) {
            --saved_[root_[i]];
            release_if_dead(root_[i], live);
        }
        for (std::uint8_t j = 0; j < k.recompute_count; ++j) {
            const std::size_t r = root_of(k.recomputes_from[j]);
            --saved_[r];
            release_if_dead(r, live);
        }
        live.sub(k.saved_extra, blocks_.extra[i]);
        if (saving_ && k.saves_weight_copy) live.sub(k.weight_copy, blocks_.weight[i]);
    }

    const kernel_list& kernels_;
    tensor_slot output_;
    stage_input_info input_;
    stage_input_info encoder_;
    bool input_held_ = false;
    std::uint16_t root_[slot_count];  // by index, the root's index; set for the stage's slots
    // Set for the stage's slots (clear()):
    std::uint16_t readers_[slot_count];
    std::uint16_t saved_[slot_count];
    bool freed_[slot_count];
    bool grad_[slot_count];
    block_id grad_block_[slot_count];  // borrowed_gradient: another slot's block (share_gradient)
    static constexpr block_id borrowed_gradient = no_block - 1;
    bool output_made_ = true;
    walk_blocks blocks_;
    bytes forward_scoped_{};
    bytes base_model_scoped_{};
    caching_allocator* allocator_ = nullptr;
    std::uint16_t graph_kept_[3 * max_kernels_per_stage];  // indices, the first graph_kept_count_
    std::size_t graph_kept_count_ = 0;
    bool saving_ = false;
    bool input_freed_ = false;
    bool input_pinned_only_ = false;
};

}  // namespace detail

}  // namespace anatomy
