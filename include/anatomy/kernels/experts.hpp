// Mixture-of-experts kernels, as transformers 5.17 runs them by default
// (integrations/moe.py, grouped_mm): the router's scores and top-k weights;
// the tokens gathered in expert order; grouped_mm through the experts'
// gate_up_proj and down_proj, each output masked (masked_fill, a copy); the
// outputs weighted, put back in token order and summed over top_k. Traced on
// an H200: grouped_mm keeps its inputs, silu and the gate product their
// operands, the weighting the masked down output (bench/torch_reference/results/families).
// grouped_mm_experts_forward's names hold the gathered tokens
// (selected_hidden_states_g) and the masked down output (proj_out) until it
// returns, after the sum: under no_grad too, where nothing saves them
// (traced on an H100: olmoe-1b-7b serving at 8 x 4096 peaks at the index
// back to token order with both alive, 4 GiB of routed rows).
//
// Each layer routes tokens x top_k rows whatever the router picks: grouped_mm
// sizes none of its tensors by the split between experts, so the balanced
// split random inputs give and the worst split cost the same.
#pragma once

#include <anatomy/kernels/builder.hpp>
#include <anatomy/kernels/linear.hpp>
#include <anatomy/kernels/pointwise.hpp>

namespace anatomy::detail {

// torch.topk over `scores`: its values, then its int64 indices, which
// TopkBackward keeps for backward and the MoE block names (top_k_index)
// until it returns: as a tensor of its own where nothing records the kernel.
constexpr tensor_slot top_k(kernel_builder& b, tensor_slot scores, std::uint64_t picked, dtype t) {
    const bytes indices = b.tensor(picked, dtype::int64);
    const bool recorded = b.grad_of(scores);
    const tensor_slot top =
        b.compute("topk", b.tensor(picked, t), t, {scores, no_slot, no_slot}, 0, false, recorded ? indices : bytes{});
    if (!recorded)
        b.keep_until_frame_returns(python_frame::moe_block,
                                   b.compute("topk", indices, dtype::int64, {scores, no_slot, no_slot}, 0));
    return top;
}

constexpr tensor_slot expand_router(kernel_builder& b, const op& o) {
    const experts_part& e = b.m.experts;
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const std::uint64_t tokens = b.rows(o.rows);
    const std::uint64_t scores = checked_mul(tokens, e.count);
    const std::uint64_t picked = checked_mul(tokens, e.top_k);
    // DeepSeek: F.linear(x.float(), weight.float()); the copies are what it
    // keeps, made before the logits (without autograd, freed after them).
    const tensor_slot x_r = e.router_fp32 ? b.cast(x, checked_mul(tokens, o.in_width), dtype::fp32) : x;
    const dtype t = e.router_fp32 ? dtype::fp32 : b.matmul_type(b.type_of(x));
    kernel k = b.make("router_linear", b.tensor(scores, t), t, {x_r, no_slot, no_slot});
    k.requires_grad = b.grad_of(x_r) || b.trainable(o);
    k.grad_inputs = b.grad_of(x_r) ? 1 : 0;
    k.saves_inputs = b.trainable(o) ? 1 : 0;
    if (e.router_fp32) {
        (b.grad_enabled() ? k.saved_extra : k.workspace) = b.tensor(o.weight.numel(), dtype::fp32);
        k.extra_before_output = true;
    }
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
        const tensor_slot scores_of_top = b.softmax("softmax", b.tensor(picked, t), t, top_k(b, logits, picked, t));
        b.keep_until_frame_returns(python_frame::moe_block, scores_of_top);
        return scores_of_top;
    }
    // The block's forward names the logits until it returns (`_, top_k_weights,
    // top_k_index = self.gate(...)`; DeepSeek's router_logits).
    b.keep_until_frame_returns(python_frame::moe_block, logits);
    // softmax(dtype=float) (or sigmoid) over an fp32 copy, kept for backward;
    // top-k values and indices.
    const tensor_slot probs =
        e.scoring == router_scoring::softmax
            ? b.softmax("softmax", b.tensor(scores, dtype::fp32), dtype::fp32, b.cast(logits, scores, dtype::fp32))
            : b.compute("sigmoid", b.tensor(scores, dtype::fp32), dtype::fp32, {logits, no_slot, no_slot}, 0, true);
    const tensor_slot top = top_k(b, probs, picked, dtype::fp32);
    const tensor_slot normed = b.pointwise("div", top, picked);
    const tensor_slot weights = e.fp32_combine ? normed : b.cast(normed, picked, b.matmul_type(b.type_of(x)));
    b.keep_until_frame_returns(python_frame::moe_block, weights);
    return weights;
}

// grouped_mm_experts_forward's bookkeeping before its first grouped_mm:
// expert_ids_g, perm = sort(top_k_index), the tokens gathered by perm //
// top_k, the routing weights by perm, histc over an int32 copy of the sorted
// ids, their cumsum (the offsets), and the mask of sentinel rows. Autograd
// keeps the gathers' indices, the offsets and the mask; the function names
// the rest until it returns (traced on the H200: deepseek-v2-s serving, whose
// locals sum to what its return frees, to the byte).
constexpr tensor_slot gather_routed_rows(kernel_builder& b, const op& o, tensor_slot x, std::uint64_t rows, dtype t) {
    const bytes int64_rows = b.tensor(rows, dtype::int64);
    const auto made_from = [&](const char* what, bytes out, dtype type, tensor_slot from) {
        return b.compute(what, out, type, {from, no_slot, no_slot}, 0);
    };
    const tensor_slot expert_ids_g = made_from("sort", int64_rows, dtype::int64, no_slot);
    const tensor_slot perm = made_from("sort", int64_rows, dtype::int64, no_slot);
    // sort's scratch, freed before it returns: an int64 iota of the rows to
    // permute, and cub's alternate key and value buffers.
    kernel scratch = b.make("sort", int64_rows, dtype::int64, {no_slot, no_slot, no_slot});
    scratch.workspace = b.tensor(checked_mul(rows, 2), dtype::int64);
    (void)b.push(scratch);
    const tensor_slot token_of_row = made_from("floor_divide", int64_rows, dtype::int64, perm);
    const tensor_slot gathered =
        b.compute("index", b.tensor(checked_mul(rows, o.in_width), t), t, {x, token_of_row, no_slot}, 0b10);
    const tensor_slot weights = b.slot_of(o.inputs[1]);
    const dtype weights_type = b.type_of(weights);
    const tensor_slot sample_weights =
        b.compute("index", b.tensor(rows, weights_type), weights_type, {weights, perm, no_slot}, 0b10);
    const tensor_slot counted = b.cast(expert_ids_g, rows, dtype::int32);
    const bytes per_expert = b.tensor(b.m.experts.count, dtype::int32);
    const tensor_slot counts = made_from("histc", per_expert, dtype::int32, counted);
    const tensor_slot offsets = made_from("cumsum", per_expert, dtype::int32, counts);
    const tensor_slot sentinel_mask = made_from("ge", b.tensor(rows, dtype::boolean), dtype::boolean, expert_ids_g);
    for (const tensor_slot local :
         {gathered, expert_ids_g, perm, sample_weights, counted, counts, offsets, sentinel_mask})
        b.keep_until_frame_returns(python_frame::experts_function, local);
    b.routed_rows = {perm, sample_weights, offsets, sentinel_mask};
    return gathered;
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
        in = gather_routed_rows(b, o, in, rows, t);
    }
    const bool weight_cast = t != b.param_type();
    const tensor_slot offsets = dense ? no_slot : b.routed_rows.offsets;
    kernel k = b.make("grouped_mm", b.tensor(checked_mul(rows, o.out_width), t), t, {in, offsets, no_slot});
    k.requires_grad = b.grad_of(in) || b.trainable(o);
    k.grad_inputs = b.grad_of(in) ? 1 : 0;
    // It keeps its input for the weight's gradient, and the offsets for either.
    k.saves_inputs = static_cast<std::uint8_t>((b.trainable(o) ? 1 : 0) | (k.requires_grad && !dense ? 2 : 0));
    k.weight_copy = weight_cast ? b.tensor(o.weight.numel(), t) : bytes{};
    k.saves_weight_copy = b.grad_of(in);
    k.caches_weight_copy = weight_cast && b.param_requires_grad();
    k.param_grads = b.param_grad_bytes(o);
    if (b.trainable(o) && weight_cast) k.backward_workspace.add(k.weight_copy);
    // gpt-oss: out.add_(bias[expert_ids]), the gathered bias a transient.
    if (!o.bias.empty()) k.workspace = b.tensor(checked_mul(rows, o.out_width), t);
    const tensor_slot y = b.push(k);
    if (dense) return y;  // bmm over all experts: nothing to mask
    return b.compute("masked_fill", b.tensor(checked_mul(rows, o.out_width), t), t,
                     {y, b.routed_rows.sentinel_mask, no_slot}, 0b10);
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
// DeepSeek), [inv_perm] back to token order, .view(tokens, top_k, h).sum(1),
// cast back; then grouped_mm_experts_forward returns, and with it its names
// (and, without shared experts, the MoE block's forward).
constexpr tensor_slot expand_experts_combine(kernel_builder& b, const op& o) {
    const tensor_slot down = b.slot_of(o.inputs[0]);
    const std::uint64_t routed_rows = b.rows(rows_of::routed_tokens);
    const std::uint64_t routed = checked_mul(routed_rows, o.out_width);
    if (b.m.experts.shared_hidden == 0) b.frame_returns_with_op(python_frame::moe_block);
    // Llama 4 weighted the inputs: its outputs are only summed over the experts.
    if (b.m.experts.dense_dispatch) return b.pointwise("sum", down, b.elements(o.rows, o.out_width));
    b.frame_returns_with_op(python_frame::experts_function);
    b.keep_until_op_returns(down);
    const tensor_slot weighted = b.binary("mul", down, b.routed_rows.sample_weights, routed, 0b11);
    // inv_perm = empty_like(perm); inv_perm[perm] = arange(...), the arange a transient.
    kernel inverse =
        b.make("index_put_", b.tensor(routed_rows, dtype::int64), dtype::int64, {b.routed_rows.perm, no_slot, no_slot});
    inverse.workspace = b.tensor(routed_rows, dtype::int64);
    const tensor_slot inv_perm = b.push(inverse);
    b.keep_until_op_returns(inv_perm);
    const dtype weighted_type = b.type_of(weighted);
    const tensor_slot ordered =
        b.compute("index", b.tensor(routed, weighted_type), weighted_type, {weighted, inv_perm, no_slot}, 0b10);
    b.keep_until_op_returns(ordered);  // weighted_out, rebound to it, until the function returns
    const tensor_slot sum = b.pointwise("sum", ordered, b.elements(o.rows, o.out_width));
    return b.cast(sum, b.elements(o.rows, o.out_width), b.type_of(down));
}

// The routed and the shared experts' outputs summed: the MoE block's forward returns.
constexpr tensor_slot expand_shared_experts_sum(kernel_builder& b, const op& o) {
    b.frame_returns_with_op(python_frame::moe_block);
    return expand_binary(b, o, "add", 0);
}

}  // namespace anatomy::detail
