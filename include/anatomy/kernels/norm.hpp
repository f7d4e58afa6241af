// Norm kernels: LayerNorm (one aten kernel) and the RMSNorms transformers
// writes in Python, each line a kernel. A norm over heads (q/k norms)
// normalizes each head's features: its statistics are per row and head.
#pragma once

#include <anatomy/kernels/builder.hpp>

namespace anatomy::detail {

// Attaches an op's parameter gradients to the kernel that produces them.
constexpr tensor_slot with_params(kernel_builder& b, tensor_slot y, const op& o) {
    kernel& k = b.at(y);
    if (b.trainable(o)) {
        k.requires_grad = true;
        k.param_grads = b.param_grad_bytes(o);
        if (k.saves_inputs == 0 && k.grad_inputs == 0) k.saves_inputs = 1;
    }
    return y;
}

constexpr tensor_slot expand_layer_norm(kernel_builder& b, const op& o) {
    const std::uint64_t n = b.rows(o.rows);
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const dtype t = b.fp32_list_type(b.type_of(x));
    const tensor_slot x_c = b.cast(x, detail::checked_mul(n, o.in_width), t);
    // native_layer_norm keeps its input and the fp32 mean and rstd of each row.
    const bytes stats = b.tensor(detail::checked_mul(2, n), dtype::fp32);
    const tensor_slot y = b.compute("native_layer_norm", b.tensor(detail::checked_mul(n, o.out_width), t), t,
                                    {x_c, no_slot, no_slot}, 1, false, stats);
    return with_params(b, y, o);
}

constexpr tensor_slot expand_rms_norm(kernel_builder& b, const op& o) {
    const std::uint64_t elements = b.elements(o.rows, o.out_width);
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const dtype in_type = b.type_of(x);
    const bytes row_stat = b.tensor(o.heads == 0 ? b.rows(o.rows) : b.elements(o.rows, o.heads), dtype::fp32);
    const rms_style style = b.m.norm.style;
    // variance = x.float().pow(2).mean(-1); rsqrt(variance + eps)
    const tensor_slot x32 = b.cast(x, elements, dtype::fp32);
    const bytes x32_size = b.tensor(elements, dtype::fp32);
    const tensor_slot sq = b.compute("pow", x32_size, dtype::fp32, {x32, no_slot, no_slot}, 1);
    // pow_backward is grad * (2 * x.pow(1)): two more tensors of x's size
    // before the gradient itself (traced: PowBackward0's three allocations).
    b.at(sq).backward_workspace.add(x32_size);
    b.at(sq).backward_workspace.add(x32_size);
    const tensor_slot var = b.compute("mean", row_stat, dtype::fp32, {sq, no_slot, no_slot}, 0);
    const tensor_slot inv = b.compute("rsqrt", row_stat, dtype::fp32, {var, no_slot, no_slot}, 0, true);
    // x * rsqrt(...): T5 scales x in its own dtype, the others x.float().
    const tensor_slot product = style == rms_style::t5
                                    ? b.binary("mul", x, inv, elements, 0b11)
                                    : b.compute("mul", x32_size, dtype::fp32, {x32, inv, no_slot}, 0b11);
    // The gradient of the broadcast rsqrt is (grad * x) summed over the
    // features: the product is a tensor of the output's size, freed by the sum.
    if (b.grad_of(inv)) b.at(product).backward_workspace.add(b.at(product).out);
    // transformers' RMSNorms keep `variance` in a local until they return,
    // and Llama's code (Qwen's, Mistral's, OLMo 2's) its fp32 product too,
    // freed after the cast and the weight's multiply (the norm trace above).
    b.keep_until_op_returns(var);
    if (style == rms_style::cast_then_scale || style == rms_style::scale_then_cast) b.keep_until_op_returns(product);
    tensor_slot normed = product;
    dtype weight_mul_type = promote(b.param_type(), in_type);
    switch (style) {
        case rms_style::t5:  // then casts to a half weight dtype
            if (is_half(b.param_type())) normed = b.cast(product, elements, b.param_type());
            weight_mul_type = promote(b.param_type(), b.type_of(normed));
            break;
        case rms_style::cast_then_scale:
            normed = b.cast(product, elements, in_type);
            weight_mul_type = promote(b.param_type(), in_type);
            break;
        case rms_style::scale_then_cast:  // OLMo 2: (weight * x.float()).to(dtype)
        case rms_style::unit_offset:      // Gemma: x.float() * (1 + weight.float()), then type_as(x)
            weight_mul_type = dtype::fp32;
            break;
    }
    // A norm without a weight (Llama 4's L2 q/k norm) ends here, in its input's dtype.
    if (o.weight.empty()) return b.cast(normed, elements, in_type);
    // weight * normed: keeps `normed` for the weight's gradient.
    kernel k = b.make("mul", b.tensor(elements, weight_mul_type), weight_mul_type, {normed, no_slot, no_slot});
    const bool weight_grad = b.trainable(o);
    k.requires_grad = weight_grad || b.grad_of(normed);
    k.grad_inputs = b.grad_of(normed) ? 1 : 0;
    k.saves_inputs = weight_grad ? 1 : 0;
    k.param_grads = b.param_grad_bytes(o);
    // grad_weight = (grad_out * normed).sum over rows
    if (weight_grad) {
        k.backward_workspace.add(b.tensor(elements, weight_mul_type));
        k.backward_workspace.add(
            b.reduction_staging(o.heads == 0 ? b.rows(o.rows) : b.elements(o.rows, o.heads), o.weight.numel()));
    }
    tensor_slot y = b.push(k);
    if (style == rms_style::scale_then_cast || style == rms_style::unit_offset) y = b.cast(y, elements, in_type);
    return y;
}

constexpr tensor_slot expand_norm(kernel_builder& b, const op& o) {
    return b.m.norm.kind == norm_kind::layer_norm ? expand_layer_norm(b, o) : expand_rms_norm(b, o);
}

}  // namespace anatomy::detail
