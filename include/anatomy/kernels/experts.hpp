// Mixture-of-experts kernels, as transformers 5.17 runs them by default
// (integrations/moe.py, grouped_mm): the router's scores and top-k weights;
// the tokens gathered in expert order; grouped_mm through the experts'
// gate_up_proj and down_proj, each output masked (masked_fill, a copy); the
// outputs weighted, put back in token order and summed over top_k. Traced on
// an H200: grouped_mm keeps its inputs, silu and the gate product their
// operands, the weighting the masked down output (bench/torch_reference/results/families).
//
// Each layer routes tokens x top_k rows whatever the router picks: grouped_mm
// sizes none of its tensors by the split between experts, so the balanced
// split random inputs give and the worst split cost the same.
#pragma once

#include <anatomy/kernels/builder.hpp>
#include <anatomy/kernels/linear.hpp>

namespace anatomy::detail {

constexpr tensor_slot expand_router(kernel_builder& b, const op& o) {
    const experts_part& e = b.m.experts;
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const std::uint64_t tokens = b.rows(o.rows);
    const std::uint64_t scores = checked_mul(tokens, e.count);
    const std::uint64_t picked = checked_mul(tokens, e.top_k);
    // DeepSeek: F.linear(x.float(), weight.float()); the copies are what it keeps.
    const tensor_slot x_r = e.router_fp32 ? b.cast(x, checked_mul(tokens, o.in_width), dtype::fp32) : x;
    const dtype t = e.router_fp32 ? dtype::fp32 : b.matmul_type(b.type_of(x));
    kernel k = b.make("router_linear", b.tensor(scores, t), t, {x_r, no_slot, no_slot});
    k.requires_grad = b.grad_of(x_r) || b.trainable(o);
    k.grad_inputs = b.grad_of(x_r) ? 1 : 0;
    k.saves_inputs = b.trainable(o) ? 1 : 0;
    if (e.router_fp32 && b.grad_enabled()) k.saved_extra = b.tensor(o.weight.numel(), dtype::fp32);
    k.param_grads = b.param_grad_bytes(o);
    const tensor_slot logits = b.push(k);
    if (e.aux_loss && b.grad_enabled()) {
        // load_balancing_loss_func: softmax(router_logits) in their dtype, kept
        // for its backward; the output keeps the logits (a plain loop).
        b.at(logits).held = keeps_outputs(b.r);
        (void)b.softmax("softmax", b.tensor(scores, t), t, logits);
    }
    if (e.dense_dispatch) {
        // Llama 4: top-k logits scattered into a -inf [tokens, experts], then
        // sigmoid(.float()).to(dtype): 0 for the experts not picked.
        const tensor_slot top = b.compute("topk", b.tensor(picked, t), t, {logits, no_slot, no_slot}, 0, false,
                                          b.tensor(picked, dtype::int64));
        const tensor_slot full = b.compute("scatter", b.tensor(scores, t), t, {top, no_slot, no_slot}, 0);
        const tensor_slot sig = b.compute("sigmoid", b.tensor(scores, dtype::fp32), dtype::fp32,
                                          {b.cast(full, scores, dtype::fp32), no_slot, no_slot}, 0, true);
        return b.cast(sig, scores, t);
    }
    if (e.scoring == router_scoring::softmax_of_top_k) {
        // gpt-oss: top-k of the logits, then a softmax over those k, in their dtype.
        const tensor_slot top = b.compute("topk", b.tensor(picked, t), t, {logits, no_slot, no_slot}, 0, false,
                                          b.tensor(picked, dtype::int64));
        return b.softmax("softmax", b.tensor(picked, t), t, top);
    }
    // softmax (or sigmoid) in fp32, kept for backward; top-k values and indices.
    const tensor_slot probs =
        e.scoring == router_scoring::softmax
            ? b.softmax("softmax", b.tensor(scores, dtype::fp32), dtype::fp32, logits)
            : b.compute("sigmoid", b.tensor(scores, dtype::fp32), dtype::fp32, {logits, no_slot, no_slot}, 0, true);
    const tensor_slot top = b.compute("topk", b.tensor(picked, dtype::fp32), dtype::fp32, {probs, no_slot, no_slot}, 0,
                                      false, b.tensor(picked, dtype::int64));
    const tensor_slot normed = b.pointwise("div", top, picked);
    return e.fp32_combine ? normed : b.cast(normed, picked, b.matmul_type(b.type_of(x)));
}

// One grouped_mm over the routed rows, then masked_fill (a copy). `gathers`:
// the first projection gathers the tokens in expert order first.
constexpr tensor_slot grouped_projection(kernel_builder& b, const op& o, tensor_slot x, bool gathers) {
    const std::uint64_t rows = b.rows(o.rows);
    const dtype t = b.matmul_type(b.type_of(x));
    tensor_slot in = b.cast(x, checked_mul(gathers ? b.rows(rows_of::source_tokens) : rows, o.in_width), t);
    const bool dense = b.m.experts.dense_dispatch;
    if (gathers && dense) {
        // hidden_states.repeat(experts, 1) * scores: every expert sees every token.
        in = b.pointwise("repeat", in, checked_mul(rows, o.in_width));
        in = b.binary("mul", in, b.slot_of(o.inputs[1]), checked_mul(rows, o.in_width), 0b11);
    } else if (gathers) {
        // hidden_states[perm // top_k], with the sort's int64 permutations kept for backward.
        in = b.compute("index", b.tensor(checked_mul(rows, o.in_width), t), t, {in, no_slot, no_slot}, 0, false,
                       b.tensor(checked_mul(3, rows), dtype::int64));
    }
    const bool weight_cast = t != b.param_type();
    kernel k = b.make("grouped_mm", b.tensor(checked_mul(rows, o.out_width), t), t, {in, no_slot, no_slot});
    k.requires_grad = b.grad_of(in) || b.trainable(o);
    k.grad_inputs = b.grad_of(in) ? 1 : 0;
    k.saves_inputs = b.trainable(o) ? 1 : 0;
    k.weight_copy = weight_cast ? b.tensor(o.weight.numel(), t) : bytes{};
    k.saves_weight_copy = b.grad_of(in);
    k.caches_weight_copy = weight_cast && b.param_requires_grad();
    k.param_grads = b.param_grad_bytes(o);
    if (b.trainable(o) && weight_cast) k.backward_workspace.add(k.weight_copy);
    // gpt-oss: out.add_(bias[expert_ids]), the gathered bias a transient.
    if (!o.bias.empty()) k.workspace = b.tensor(checked_mul(rows, o.out_width), t);
    const tensor_slot y = b.push(k);
    if (dense) return y;  // bmm over all experts: nothing to mask
    return b.compute("masked_fill", b.tensor(checked_mul(rows, o.out_width), t), t, {y, no_slot, no_slot}, 0, false,
                     b.tensor(rows, dtype::boolean));
}

constexpr tensor_slot expand_experts_up(kernel_builder& b, const op& o) {
    return grouped_projection(b, o, b.slot_of(o.inputs[0]), true);
}
constexpr tensor_slot expand_experts_down(kernel_builder& b, const op& o) {
    return grouped_projection(b, o, b.slot_of(o.inputs[0]), false);
}

// gpt-oss's gate over the gate and up halves: gate.clamp(max=7), up.clamp(-7, 7),
// glu = gate * sigmoid(1.702 gate), (up + 1) * glu; each a new tensor, the
// clamps' inputs, the sigmoid, glu and up + 1 kept for backward.
constexpr tensor_slot expand_clamped_swiglu(kernel_builder& b, const op& o) {
    const std::uint64_t n = b.elements(o.rows, o.out_width);
    const tensor_slot gate = b.pointwise("clamp", b.slot_of(o.inputs[0]), n, 1);
    const tensor_slot up = b.pointwise("clamp", b.slot_of(o.inputs[1]), n, 1);
    const tensor_slot sig = b.pointwise("sigmoid", b.pointwise("mul", gate, n), n, 0, true);
    const tensor_slot glu = b.binary("mul", gate, sig, n, 0b11);
    const tensor_slot up1 = b.pointwise("add", up, n);
    return b.binary("mul", up1, glu, n, 0b11);
}

// proj_out * weights[perm] (in the weights' dtype: fp32 for Mixtral and
// DeepSeek), [inv_perm] back to token order, .view(tokens, top_k, h).sum(1).
constexpr tensor_slot expand_experts_combine(kernel_builder& b, const op& o) {
    const tensor_slot down = b.slot_of(o.inputs[0]);
    const tensor_slot weights = b.slot_of(o.inputs[1]);
    const std::uint64_t routed = checked_mul(b.rows(rows_of::routed_tokens), o.out_width);
    // Llama 4 weighted the inputs: its outputs are only summed over the experts.
    if (b.m.experts.dense_dispatch) return b.pointwise("sum", down, b.elements(o.rows, o.out_width));
    const tensor_slot weighted = b.binary("mul", down, weights, routed, 0b11);
    const tensor_slot ordered = b.pointwise("index", weighted, routed);
    const tensor_slot sum = b.pointwise("sum", ordered, b.elements(o.rows, o.out_width));
    return b.cast(sum, b.elements(o.rows, o.out_width), b.type_of(down));
}

}  // namespace anatomy::detail
