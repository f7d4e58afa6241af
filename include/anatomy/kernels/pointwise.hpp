// Pointwise kernels: activations, the gate product, dropout, residual adds,
// scaling, soft-capping, and the views a fused projection is split into.
#pragma once

#include <anatomy/kernels/builder.hpp>

namespace anatomy::detail {

constexpr tensor_slot dropout_kernel(kernel_builder& b, tensor_slot x, std::uint64_t count, double p) {
    if (p <= 0.0 || !b.training_mode()) return x;
    // native_dropout returns the output and a bool mask, which it keeps.
    const bytes mask = b.tensor(count, dtype::boolean);
    return b.compute("native_dropout", b.tensor(count, b.type_of(x)), b.type_of(x), {x, no_slot, no_slot}, 0, false,
                     mask);
}

// transformers' NewGELUActivation, GPT-2's "gelu_new", is Python:
// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x.pow(3)))).
constexpr tensor_slot gelu_new(kernel_builder& b, tensor_slot x, std::uint64_t n) {
    const dtype t = b.type_of(x);
    const dtype p = b.fp32_list_type(t);  // pow is on autocast's fp32 list
    const tensor_slot half_x = b.pointwise("mul", x, n);
    const tensor_slot x_p = b.cast(x, n, p);
    const tensor_slot cube = b.compute("pow", b.tensor(n, p), p, {x_p, no_slot, no_slot}, 1);
    const tensor_slot scaled = b.pointwise("mul", cube, n);
    const tensor_slot inner = b.binary("add", x, scaled, n, 0);
    const tensor_slot arg = b.pointwise("mul", inner, n);
    const tensor_slot th = b.pointwise("tanh", arg, n, 0, true);
    const tensor_slot one_plus = b.pointwise("add", th, n);
    return b.binary("mul", half_x, one_plus, n, 0b11);
}

constexpr tensor_slot expand_activation(kernel_builder& b, const op& o) {
    const std::uint64_t n = b.elements(o.rows, o.out_width);
    const tensor_slot x = b.slot_of(o.inputs[0]);
    switch (o.act) {
        case activation::gelu: return b.pointwise("gelu", x, n, 1);
        case activation::silu: return b.pointwise("silu", x, n, 1);
        case activation::relu: return b.pointwise("relu", x, n, 0, true);
        case activation::tanh: return b.pointwise("tanh", x, n, 0, true);
        case activation::sigmoid: return b.pointwise("sigmoid", x, n, 0, true);
        case activation::gelu_tanh: return b.pointwise("gelu", x, n, 1);
        case activation::bloom_gelu: return b.pointwise("GeLUFunction", x, n, 1);
        case activation::gelu_new: return gelu_new(b, x, n);
    }
    return x;
}

constexpr tensor_slot expand_dropout(kernel_builder& b, const op& o) {
    return dropout_kernel(b, b.slot_of(o.inputs[0]), b.elements(o.rows, o.out_width), o.dropout);
}

// x * a Python scalar, or Gemma's 0-d normalizer: a new tensor.
constexpr tensor_slot expand_scale(kernel_builder& b, const op& o) {
    return b.pointwise("mul", b.slot_of(o.inputs[0]), b.elements(o.rows, o.out_width));
}

// tanh(x / cap) * cap: three new tensors; autograd keeps the tanh.
constexpr tensor_slot expand_softcap(kernel_builder& b, const op& o) {
    const std::uint64_t n = b.elements(o.rows, o.out_width);
    tensor_slot x = b.pointwise("div", b.slot_of(o.inputs[0]), n);
    x = b.pointwise("tanh", x, n, 0, true);
    return b.pointwise("mul", x, n);
}

// Part of a fused projection: a view, or (Falcon's q, k and v) a copy.
constexpr tensor_slot expand_split(kernel_builder& b, const op& o) {
    const tensor_slot x = b.slot_of(o.inputs[0]);
    if (o.heads > 0 && b.m.attention.split_copies) return b.pointwise("clone", x, b.elements(o.rows, o.out_width));
    return b.view(x);
}

constexpr tensor_slot expand_binary(kernel_builder& b, const op& o, const char* what, std::uint8_t saves) {
    return b.binary(what, b.slot_of(o.inputs[0]), b.slot_of(o.inputs[1]), b.elements(o.rows, o.out_width), saves);
}

// x.add_(y): a view of x that reads y, saving nothing. Its backward hands
// the output's gradient to both, one tensor (AddBackward0 with alpha 1).
constexpr tensor_slot expand_add_in_place(kernel_builder& b, const op& o) {
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const tensor_slot y = b.slot_of(o.inputs[1]);
    kernel k = b.make("add_", bytes{}, b.type_of(x), {x, y, no_slot});
    k.alias = true;
    k.grad_inputs = static_cast<std::uint8_t>((b.grad_of(x) ? 1 : 0) | (b.grad_of(y) ? 2 : 0));
    k.requires_grad = k.grad_inputs != 0;
    return b.push(k);
}

}  // namespace anatomy::detail
