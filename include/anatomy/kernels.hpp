// Expands each op of a stage into the kernels PyTorch runs for it under a
// recipe and shape: what each kernel allocates, which tensors it keeps for
// backward, what backward allocates, and what it frees.
//
// Everything the activation model knows is stated kernel by kernel, one file
// per part (kernels/): eager vs SDPA attention, dropout masks, autocast
// casts, the logits upcast and the cross-entropy's saved log-probabilities
// all come from the same rules (a kernel's output dtype, which inputs
// autograd saves, which inputs need a gradient), never from a per-model factor.
// Under torch.compile one pass over the same kernels (kernels/compiled.hpp)
// decides which outputs exist and what backward keeps.
#pragma once

#include <anatomy/kernels/attention.hpp>
#include <anatomy/kernels/builder.hpp>
#include <anatomy/kernels/compiled.hpp>
#include <anatomy/kernels/experts.hpp>
#include <anatomy/kernels/head.hpp>
#include <anatomy/kernels/kernel.hpp>
#include <anatomy/kernels/linear.hpp>
#include <anatomy/kernels/norm.hpp>
#include <anatomy/kernels/pointwise.hpp>
#include <anatomy/kernels/python_references.hpp>
#include <anatomy/kernels/rotary.hpp>

namespace anatomy {

namespace detail {

constexpr tensor_slot expand_op(kernel_builder& b, const op& o) {
    switch (o.kind) {
        case op_kind::embedding: return expand_embedding(b, o);
        case op_kind::patch_embed: return expand_patch_embed(b, o);
        case op_kind::cls_concat: return expand_cls_concat(b, o);
        case op_kind::position_add: return expand_position_add(b, o);
        case op_kind::linear: return expand_linear(b, o);
        case op_kind::norm: return expand_norm(b, o);
        case op_kind::attention: return expand_attention(b, o);
        case op_kind::position_bias: return expand_position_bias(b, o);
        case op_kind::alibi: return expand_alibi(b, o);
        case op_kind::mask: return expand_mask(b, o);
        case op_kind::rotary: return expand_rotary(b, o);
        case op_kind::rotary_table: return expand_rotary_table(b, o);
        case op_kind::rotary_cast: return expand_rotary_cast(b, o);
        case op_kind::split: return expand_split(b, o);
        case op_kind::activation: return expand_activation(b, o);
        case op_kind::gate: return expand_binary(b, o, "mul", 0b11);
        case op_kind::dropout: return expand_dropout(b, o);
        case op_kind::residual: return expand_binary(b, o, "add", 0);
        case op_kind::add_in_place: return expand_add_in_place(b, o);
        case op_kind::scale: return expand_scale(b, o);
        case op_kind::softcap: return expand_softcap(b, o);
        case op_kind::pool: return expand_pool(b, o);
        case op_kind::mean_pool: return expand_mean_pool(b, o);
        case op_kind::loss: return expand_loss(b, o);
        case op_kind::concat: return expand_binary(b, o, "cat", 0);
        case op_kind::cache_append: return expand_cache_append(b, o);
        case op_kind::router: return expand_router(b, o);
        case op_kind::experts_up: return expand_experts_up(b, o);
        case op_kind::experts_down: return expand_experts_down(b, o);
        case op_kind::experts_combine: return expand_experts_combine(b, o);
        case op_kind::shared_experts_sum: return expand_shared_experts_sum(b, o);
        case op_kind::clamped_swiglu: return expand_clamped_swiglu(b, o);
    }
    return no_slot;
}

}  // namespace detail

// Expands into `result`, which must be empty: a caller that keeps many
// expansions builds each in place, since moving one copies its kernels.
constexpr void expand_into(expansion& result, const stage& st, const model_spec& m, const recipe& r, const shape& s,
                           const device_profile& device, stage_input_info input, stage_input_info encoder = {}) {
    detail::require(result.kernels.empty(), "anatomy::expand_into: the expansion is not empty");
    detail::kernel_builder b(m, r, s, device, input, encoder, result);
    for (std::size_t i = 0; i < st.ops.size(); ++i) {
        b.begin_op(i);
        result.op_output[i] = detail::expand_op(b, st.ops[i]);
        b.end_op();
    }
    // Latent attention caches its latent (cache_append), not the key and value.
    detail::hold_python_names(result, st, [&](const op& o) { return detail::kv_cached(b, o) && !m.attention.latent(); });
    if (r.compile) detail::stage_compiler(result.kernels, result.op_output[st.output_op()], input.size).run();
}

constexpr expansion expand(const stage& st, const model_spec& m, const recipe& r, const shape& s,
                           const device_profile& device, stage_input_info input, stage_input_info encoder = {}) {
    expansion result;
    expand_into(result, st, m, r, s, device, input, encoder);
    return result;
}

}  // namespace anatomy
