// RoPE kernels: q * cos + rotate_half(q) * sin on the rotated features, then
// (partial rotary, or Phi-3 always) cat with the features that pass through.
// cos and sin take the hidden states' dtype (fp32 under autocast, which
// promotes q and k to fp32), except where the family computes in fp32 and
// casts back (OLMo 2, ModernBERT) or casts them to the projection's dtype (GPT-J).
// DeepSeek-V2 multiplies complex views of fp32 copies by a complex table
// (traced on an H100: deepseek-v2-lite serving under a cap).
#pragma once

#include <anatomy/kernels/builder.hpp>

namespace anatomy::detail {

constexpr tensor_slot expand_rotary(kernel_builder& b, const op& o) {
    const attention_part& a = b.m.attention;
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const dtype t = b.type_of(x);
    const std::uint64_t all = b.elements(o.rows, o.out_width);
    const std::uint64_t rotated = b.elements(o.rows, detail::checked_mul(o.heads, b.m.rotary_width()));
    const bool partial = rotated != all;
    tensor_slot src = x;  // the rotated features (a view of x when partial)
    dtype rt = promote(t, b.param_type());
    switch (a.rotation) {
        // DeepSeek-V2: the .float() copy alone; its product and cast are the rotary_cast op's.
        case rotary_style::complex_fp32: return b.cast(x, rotated, dtype::fp32);
        case rotary_style::halves: break;
        case rotary_style::halves_fp32: rt = dtype::fp32; break;
        case rotary_style::interleaved: rt = t; break;
        case rotary_style::halves_float_copies:
            rt = dtype::fp32;
            src = b.cast(x, rotated, dtype::fp32);  // q.float(), for q * cos
            break;
    }
    const tensor_slot first = b.compute("mul", b.tensor(rotated, rt), rt, {src, no_slot, no_slot}, 0);
    // The second .float() copy feeds rotate_half.
    const tensor_slot rot_src = a.rotation == rotary_style::halves_float_copies ? b.cast(x, rotated, dtype::fp32) : src;
    const dtype rot_t = b.type_of(rot_src);
    const tensor_slot neg = b.compute("neg", b.tensor(rotated / 2, rot_t), rot_t, {rot_src, no_slot, no_slot}, 0);
    const tensor_slot turned = b.compute(a.rotation == rotary_style::interleaved ? "stack" : "cat",
                                         b.tensor(rotated, rot_t), rot_t, {neg, rot_src, no_slot}, 0);
    const tensor_slot second = b.compute("mul", b.tensor(rotated, promote(rot_t, rt)), promote(rot_t, rt),
                                         {turned, no_slot, no_slot}, 0);
    tensor_slot y = b.binary("add", first, second, rotated, 0);
    if (partial || a.rotary_concat) {
        const dtype ct = promote(b.type_of(y), t);
        y = b.compute("cat", b.tensor(all, ct), ct, {y, x, no_slot}, 0);
    }
    return y;  // the fp32 styles' cast back is its own op (rotary_cast), after both rotations
}

// A rotary embedding module's forward (LlamaRotaryEmbedding, autocast off),
// once per forward: freqs = inv_freq @ position_ids in fp32, emb =
// cat(freqs, freqs), emb.cos() and emb.sin() each times attention_scaling,
// then both cast to the hidden states' dtype. position_ids is (1, seq): the
// tables do not grow with the batch. Traced (gemma-3-1b, 4096 tokens, bf16):
// 2 MiB, 4, 4 + 4 and 4 + 4 MiB, two 2 MiB tables; freqs, emb and the
// scaled pair die when the module returns, the tables when the forward does.
constexpr tensor_slot expand_rotary_table(kernel_builder& b, const op& o) {
    const std::uint64_t width = b.m.rotary_width();
    const std::uint64_t full = checked_mul(b.seq_of(o.rows), width);
    kernel product = b.make("bmm", b.tensor(full / 2, dtype::fp32), dtype::fp32, {no_slot, no_slot, no_slot});
    product.cublas_forward = true;
    const tensor_slot freqs = b.push(product);
    b.keep_until_op_returns(freqs);
    if (b.m.attention.rotation == rotary_style::complex_fp32) {
        // DeepSeek-V2: torch.polar(torch.ones_like(freqs), freqs) * attention_scaling,
        // complex64 (fp32's bytes twice over); the table stays complex.
        const tensor_slot ones =
            b.compute("ones_like", b.tensor(full / 2, dtype::fp32), dtype::fp32, {no_slot, no_slot, no_slot}, 0);
        const tensor_slot polar =
            b.compute("polar", b.tensor(full, dtype::fp32), dtype::fp32, {ones, freqs, no_slot}, 0);
        const tensor_slot table = b.pointwise("mul", polar, full);
        b.at(table).base_model_scoped = true;
        return table;
    }
    const tensor_slot emb = b.compute("cat", b.tensor(full, dtype::fp32), dtype::fp32, {freqs, no_slot, no_slot}, 0);
    b.keep_until_op_returns(emb);
    tensor_slot scaled[2];
    for (std::size_t i = 0; i < 2; ++i) {
        const tensor_slot raw = b.compute(i == 0 ? "cos" : "sin", b.tensor(full, dtype::fp32), dtype::fp32,
                                          {emb, no_slot, no_slot}, 0);
        scaled[i] = b.pointwise("mul", raw, full);
        b.keep_until_op_returns(scaled[i]);
    }
    tensor_slot table = no_slot;
    for (const tensor_slot fp32_table : scaled) {
        table = b.cast(fp32_table, full, b.param_type());  // the same tensor in fp32
        b.at(table).base_model_scoped = true;
    }
    return table;
}

constexpr tensor_slot expand_rotary_cast(kernel_builder& b, const op& o) {
    const std::uint64_t n = b.elements(o.rows, o.out_width);
    tensor_slot rotated = b.slot_of(o.inputs[0]);
    // DeepSeek-V2: x_ * freqs_cis, a complex64 product (fp32's bytes), then type_as.
    if (b.m.attention.rotation == rotary_style::complex_fp32)
        rotated = b.compute("mul", b.tensor(n, dtype::fp32), dtype::fp32, {rotated, no_slot, no_slot}, 0);
    return b.cast(rotated, n, b.type_of(b.slot_of(o.inputs[1])));
}

}  // namespace anatomy::detail
