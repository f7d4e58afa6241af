// The kernel builder: the bookkeeping every part's kernels share. It knows the
// tensors made so far (their dtype, whether they need a gradient), the dtype
// rules (autocast's lists, promotion) and the parameter rules (which weights
// train, in which dtype their gradients are). Each part's file (linear.hpp,
// norm.hpp, attention.hpp, ...) adds its kernels through it.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/detail/checked.hpp>
#include <anatomy/device.hpp>
#include <anatomy/kernels/kernel.hpp>
#include <anatomy/kernels/python_references.hpp>
#include <anatomy/model.hpp>
#include <anatomy/op.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/shape.hpp>

#include <array>
#include <cstdint>

namespace anatomy::detail {

constexpr dtype promote(dtype a, dtype b) {
    if (a == b) return a;
    return dtype::fp32;  // mixing fp32 with a half type, or bf16 with fp16
}

// Python frames that span several ops, whose locals outlive the op that
// makes them: a sparse MoE block's forward (its router's logits, top-k
// indices and weights) and, inside it, transformers' grouped_mm_experts_forward
// (the routed rows and their bookkeeping).
enum class python_frame : std::uint8_t { moe_block, experts_function };
inline constexpr std::size_t python_frame_count = 2;

class kernel_builder {
public:
    constexpr kernel_builder(const model_spec& model, const recipe& training, const shape& size,
                             const device_profile& device, stage_input_info input, stage_input_info encoder,
                             expansion& result)
        : m(model), r(training), s(size), d(device), input_(input), encoder_(encoder), result_(result) {}

    const model_spec& m;
    const recipe& r;
    const shape& s;
    const device_profile& d;

    // Names of grouped_mm_experts_forward that its later ops read, set by
    // the experts' first projection: the sort's permutation, the gathered
    // routing weights, the grouped_mm offsets and the sentinel-row mask.
    struct routed_rows_names {
        tensor_slot perm;
        tensor_slot sample_weights;
        tensor_slot offsets;
        tensor_slot sentinel_mask;
    };
    routed_rows_names routed_rows{no_slot, no_slot, no_slot, no_slot};

    constexpr void begin_op(std::size_t index) {
        op_ = static_cast<std::uint8_t>(index);
        local_count_ = 0;
    }
    // A local of the op's module: alive until the module returns.
    constexpr void keep_until_op_returns(tensor_slot local) {
        if (local_count_ == max_op_locals)
            throw error("anatomy::expand: internal error, an op keeps more locals than it can hold");
        locals_[local_count_++] = local;
    }
    // A local of a Python frame that runs over several ops: alive until the
    // op that ends the frame returns.
    constexpr void keep_until_frame_returns(python_frame f, tensor_slot local) {
        std::size_t& count = frame_local_count_[static_cast<std::size_t>(f)];
        if (count == max_op_locals)
            throw error("anatomy::expand: internal error, a Python frame keeps more locals than it can hold");
        frame_locals_[static_cast<std::size_t>(f)][count++] = local;
    }
    // The current op ends frame `f`: its locals die with the op's.
    constexpr void frame_returns_with_op(python_frame f) {
        std::size_t& count = frame_local_count_[static_cast<std::size_t>(f)];
        for (std::size_t i = 0; i < count; ++i) keep_until_op_returns(frame_locals_[static_cast<std::size_t>(f)][i]);
        count = 0;
    }
    // The op's module returns after its last kernel: its locals die there.
    // A kernel ends at most max_references names, some left for the callers'
    // names (hold_python_names); views of the op's output, made right after
    // it, end the rest (they cost no memory).
    constexpr void end_op() {
        if (local_count_ == 0) return;
        if (result_.kernels.size() == 0 || result_.kernels[result_.kernels.size() - 1].op != op_)
            throw error("anatomy::expand: internal error, an op with locals made no kernel");
        const tensor_slot last = static_cast<tensor_slot>(result_.kernels.size() - 1);
        tensor_slot ending = last;
        for (std::size_t i = 0; i < local_count_; ++i) {
            if (at(ending).reference_count + references_left_for_callers >= max_references) ending = view(last);
            reference_until(at(ending), locals_[i]);
        }
    }

    // ---- sizes: every product is checked ----------------------------------
    constexpr std::uint64_t rows(rows_of which) const {
        switch (which) {
            case rows_of::source_tokens: return checked_mul(s.batch, s.seq);
            case rows_of::target_tokens: return checked_mul(s.batch, target_length(s));
            case rows_of::sequences: return s.batch;
            case rows_of::routed_tokens:
                return checked_mul(checked_mul(s.batch, s.seq), m.experts.rows_per_token());
        }
        return 0;
    }
    constexpr std::uint64_t elements(rows_of which, std::uint64_t width) const { return checked_mul(rows(which), width); }
    constexpr std::uint64_t seq_of(rows_of which) const {
        return which == rows_of::target_tokens ? target_length(s) : s.seq;
    }
    // The allocator hands out blocks of 512 bytes: a tensor takes a whole number of them.
    constexpr bytes tensor(std::uint64_t count, dtype t) const { return block_size(count * size_of(t)); }

    // ---- tensors made so far ----------------------------------------------
    constexpr kernel& at(tensor_slot slot) { return result_.kernels[static_cast<std::size_t>(slot)]; }
    constexpr dtype type_of(tensor_slot slot) const {
        if (slot == input_slot) return input_.type;
        if (slot == encoder_slot) return encoder_.type;
        return result_.kernels[static_cast<std::size_t>(slot)].type;
    }
    constexpr bool grad_of(tensor_slot slot) const {
        if (!grad_enabled()) return false;
        if (slot == input_slot) return input_.requires_grad;
        if (slot == encoder_slot) return encoder_.requires_grad;
        return result_.kernels[static_cast<std::size_t>(slot)].requires_grad;
    }
    constexpr tensor_slot slot_of(op_input i) const {
        if (i == stage_input) return input_slot;
        if (i == encoder_output) return encoder_slot;
        return result_.op_output[static_cast<std::size_t>(i)];
    }

    // ---- the recipe's rules -------------------------------------------------
    // A recipe's inference runs model.eval() under torch.no_grad(): autograd
    // records nothing and dropout is off. Training is the opposite of both.
    constexpr bool grad_enabled() const { return !r.inference; }
    constexpr bool training_mode() const { return !r.inference; }
    constexpr bool autocast() const { return r.autocast != autocast_mode::off; }
    constexpr dtype autocast_type() const { return r.autocast == autocast_mode::fp16 ? dtype::fp16 : dtype::bf16; }
    // Ops on autocast's lower-precision list (matmuls, SDPA) run in this dtype.
    constexpr dtype matmul_type(dtype input) const { return autocast() ? autocast_type() : input; }
    // Ops on autocast's fp32 list (norms, softmax, pow, losses) run in fp32.
    constexpr dtype fp32_list_type(dtype input) const { return autocast() ? dtype::fp32 : input; }
    constexpr dtype param_type() const { return r.weights; }
    // Eager attention when the recipe asks, or when the family has no SDPA.
    constexpr bool eager_attention() const { return r.attention == attention_kernel::eager || !m.attention.sdpa; }

    constexpr bool trainable(const op& o) const { return grad_enabled() && !r.lora.enabled() && !o.weight.empty(); }
    // Parameters keep requires_grad=True under torch.no_grad(); peft freezes the base.
    constexpr bool param_requires_grad() const { return !r.lora.enabled(); }
    // A master copy takes fp32 gradients, except under ZeRO, which keeps them
    // in the parameters' dtype and converts only its partition at the step.
    constexpr dtype grad_type() const {
        return r.master == master_weights::fp32 && !is_zero(r.parallel) ? dtype::fp32 : r.weights;
    }
    constexpr parameter_gradients param_grad_bytes(const op& o) const {
        if (!trainable(o)) return {};
        return {o.weight.numel() * size_of(grad_type()), o.bias.numel() * size_of(grad_type())};
    }
    // A sum over tokens (a bias or norm-weight gradient) stages two fp32
    // partial values per output and token, in at most one 1 MiB block per SM
    // of the GPU: measured on the H200 (132 SMs), 64 MiB for bert-large's
    // intermediate bias at 2048 tokens, capped at 132 MiB for gpt2's c_fc.
    constexpr bytes reduction_staging(std::uint64_t tokens, std::uint64_t outputs) const {
        const bytes partials = tensor(checked_mul(checked_mul(2, tokens), outputs), dtype::fp32);
        const bytes cap = d.reduction_staging_cap();
        return partials < cap ? partials : cap;
    }

    // ---- making kernels -------------------------------------------------------
    constexpr kernel make(const char* what, bytes out, dtype t, std::array<tensor_slot, 3> in) const {
        kernel k{};
        k.op = op_;
        k.what = what;
        k.out = out;
        k.type = t;
        for (std::size_t j = 0; j < 3; ++j) k.in[j] = in[j];
        return k;
    }
    constexpr tensor_slot push(const kernel& k) {
        result_.kernels.push_back(k);
        return static_cast<tensor_slot>(result_.kernels.size() - 1);
    }

    // A kernel computing a new tensor from `in`; the gradient flows to every
    // input that requires one. `extra`: tensors it makes beside its output
    // (a dropout mask, norm statistics), kept for backward when autograd
    // records the kernel and freed at once otherwise.
    constexpr tensor_slot compute(const char* what, bytes out, dtype t, std::array<tensor_slot, 3> in,
                                  std::uint8_t saves, bool saves_output = false, bytes extra = {}) {
        kernel k = make(what, out, t, in);
        for (std::size_t i = 0; i < 3; ++i) {
            if (in[i] == no_slot) continue;
            if (grad_of(in[i])) {
                k.requires_grad = true;
                k.grad_inputs |= static_cast<std::uint8_t>(1u << i);
            }
        }
        if (k.requires_grad) {
            k.saves_inputs = saves;
            k.saves_output = saves_output;
            k.saved_extra = extra;
        } else {
            k.workspace = extra;
        }
        return push(k);
    }
    // A product of two tensors (bmm, matmul, baddbmm), both kept for
    // backward, whose backward multiplies through cuBLAS.
    constexpr tensor_slot batched_matmul(const char* what, bytes out, dtype t, tensor_slot a, tensor_slot b) {
        const tensor_slot product = compute(what, out, t, {a, b, no_slot}, 0b11);
        at(product).cublas_backward = true;
        return product;
    }
    // softmax (or _safe_softmax) over `x`, its output kept for backward.
    // CUDA's softmax backward first multiplies the gradient by the output
    // into a temporary (SoftMax.cu: tmp = grad * output), alive beside the
    // input gradient (traced: two score-sized tensors under
    // SafeSoftmaxBackward0 and SoftmaxBackward0). log_softmax has none.
    constexpr tensor_slot softmax(const char* what, bytes out, dtype t, tensor_slot x) {
        const tensor_slot y = compute(what, out, t, {x, no_slot, no_slot}, 0, true);
        if (at(y).requires_grad) at(y).backward_workspace.add(out);
        return y;
    }
    // An elementwise kernel over `count` elements of `x`'s dtype.
    constexpr tensor_slot pointwise(const char* what, tensor_slot x, std::uint64_t count, std::uint8_t saves = 0,
                                    bool saves_output = false) {
        return compute(what, tensor(count, type_of(x)), type_of(x), {x, no_slot, no_slot}, saves, saves_output);
    }
    // A binary elementwise kernel; the output takes the promoted dtype.
    constexpr tensor_slot binary(const char* what, tensor_slot a, tensor_slot b, std::uint64_t count, std::uint8_t saves) {
        const dtype t = promote(type_of(a), type_of(b));
        return compute(what, tensor(count, t), t, {a, b, no_slot}, saves);
    }

    // `x.to(t)`: a copy when the dtype changes, the same tensor otherwise.
    constexpr tensor_slot cast(tensor_slot x, std::uint64_t count, dtype t) {
        if (type_of(x) == t) return x;
        return compute("_to_copy", tensor(count, t), t, {x, no_slot, no_slot}, 0);
    }
    constexpr tensor_slot view(tensor_slot x) {
        kernel k = make("view", bytes{}, type_of(x), {x, no_slot, no_slot});
        k.requires_grad = grad_of(x);
        k.alias = true;
        if (k.requires_grad) k.grad_inputs = 1;
        return push(k);
    }
    // A tensor the base model builds once per forward without autograd (a
    // mask): alive until the base model returns.
    constexpr tensor_slot base_model_scoped(const char* what, bytes out, dtype t) {
        kernel k = make(what, out, t, {no_slot, no_slot, no_slot});
        k.base_model_scoped = true;
        return push(k);
    }

private:
    static constexpr std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) { return detail::checked_mul(a, b); }
    static constexpr std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) { return detail::checked_add(a, b); }

    stage_input_info input_;
    stage_input_info encoder_;
    expansion& result_;
    std::uint8_t op_ = 0;
    static constexpr std::size_t max_op_locals = 16;
    static constexpr std::size_t references_left_for_callers = 2;
    tensor_slot locals_[max_op_locals]{};
    std::size_t local_count_ = 0;
    tensor_slot frame_locals_[python_frame_count][max_op_locals]{};
    std::size_t frame_local_count_[python_frame_count]{};
};

}  // namespace anatomy::detail
