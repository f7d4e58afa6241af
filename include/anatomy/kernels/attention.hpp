// Attention kernels: the KV cache transformers fills, the masks it builds,
// and the attention call itself, SDPA (cuDNN or memory-efficient for the
// fused kernels, math otherwise) or eager, with what each saves for backward.
//
// Measured on an H200 with PyTorch 2.11 (bench/torch_reference/results/
// families): half types run cuDNN attention, which takes grouped K/V natively
// and saves q, k, v, the output, an fp32 log-sum-exp per row and head and,
// when a mask is passed, the additive mask it builds from it, per layer; fp32
// runs the memory-efficient kernel, which takes no grouped K/V.
#pragma once

#include <anatomy/kernels/builder.hpp>
#include <anatomy/kernels/pointwise.hpp>

namespace anatomy::detail {

struct attention_shape {
    std::uint64_t batch, heads, kv_heads, head_dim, v_head_dim, q_seq, k_seq;
    rows_of rows, key_rows;
};

constexpr attention_shape shape_of(const kernel_builder& b, const op& o) {
    return {b.s.batch, o.heads, o.kv_heads, o.head_dim, o.v_head_dim, b.seq_of(o.rows), b.seq_of(o.key_rows), o.rows,
            o.key_rows};
}
constexpr std::uint64_t score_elements(const attention_shape& a) {
    return checked_mul(checked_mul(a.batch, a.heads), checked_mul(a.q_seq, a.k_seq));
}
constexpr std::uint64_t mask_elements(const attention_shape& a) {
    return checked_mul(a.batch, checked_mul(a.q_seq, a.k_seq));
}
constexpr bytes heads_bytes(const kernel_builder& b, rows_of r, std::uint64_t heads, std::uint64_t dim, dtype t) {
    return b.tensor(checked_mul(b.rows(r), checked_mul(heads, dim)), t);
}

// transformers creates a DynamicCache whenever config.use_cache holds, in
// training too (gradient checkpointing turns it off, and so does the
// Trainer, which sets config.use_cache = TrainingArguments.use_cache, False
// by default); T5 caches in its decoder only. Its update is torch.cat, so
// keys and values are copies.
constexpr bool kv_cached(const kernel_builder& b, const op& o) {
    const bool has_cache = b.m.stack == stack_kind::decoder || o.rows == rows_of::target_tokens;
    if (b.r.inference) return has_cache && b.r.kv_cache;
    return has_cache && !b.r.grad_checkpointing && b.r.loop != training_loop::hf_trainer;
}

// A cache update of something other than per-head keys and values (MLA's
// latent): a copy the step's output keeps, returned in place of its input.
constexpr tensor_slot expand_cache_append(kernel_builder& b, const op& o) {
    const tensor_slot x = b.slot_of(o.inputs[0]);
    if (!kv_cached(b, o)) return x;
    const tensor_slot copy = b.pointwise("cat", x, b.elements(o.rows, o.out_width));
    b.at(copy).held = keeps_outputs(b.r);
    b.at(copy).returned = true;
    return copy;
}

// T5's relative bias has a gradient in its self-attention (and, under
// gradient checkpointing, transformers marks the cross-attention's too).
constexpr bool bias_needs_grad(const kernel_builder& b, const op& o) {
    if (b.m.attention.positions != position_kind::relative_bias || !b.grad_enabled()) return false;
    return (o.key_rows == o.rows && !b.r.lora.enabled()) || b.r.grad_checkpointing;
}

// SDPA gets a mask tensor on sliding-window layers once the sequence reaches
// the window, and always from Falcon; full layers run is_causal without one.
constexpr bool sdpa_masked(const kernel_builder& b, const op& o) {
    return b.m.attention.always_masked || (o.window > 0 && b.seq_of(o.rows) >= o.window);
}
// Traced under torch.compile, transformers builds the causal mask as a
// tensor (it skips it only when not tracing) and passes it to every causal
// SDPA call: the memory-efficient kernel, K/V repeated, the one mask shared.
constexpr bool compiled_mask(const kernel_builder& b, bool causal) { return b.r.compile && causal; }
// An encoder's SDPA call, traced, gets the padding mask transformers builds,
// and runs as the math decomposition in fp32 (traced: bert-base).
constexpr bool compiled_encoder(const kernel_builder& b, const op& o) { return b.r.compile && !o.causal; }

// aten's _scaled_dot_product_attention_math: scaled copies of q and k,
// explicit scores, softmax, dropout, and a bmm with v. Half inputs are
// computed in fp32 (PyTorch >= 2.5), the output cast back: measured for
// Falcon and for T5 in bf16 (tests/data/t5-bf16-h100.jsonl, 30 % over what
// the half kernel holds). A compiled encoder's decomposition keeps the
// dtypes its trace showed (bert-base).
constexpr tensor_slot math_attention(kernel_builder& b, const op& o, tensor_slot q, tensor_slot k, tensor_slot v,
                                     bool cached) {
    const attention_shape a = shape_of(b, o);
    const dtype in_t = b.matmul_type(b.type_of(q));
    const dtype t = is_half(in_t) && !compiled_encoder(b, o) ? dtype::fp32 : in_t;
    // Compiled, the decomposition runs its softmax on autocast's fp32 list.
    const dtype sm = compiled_encoder(b, o) ? b.fp32_list_type(t) : t;
    const bool grouped = a.kv_heads != a.heads;
    const std::uint64_t scores = score_elements(a);
    const tensor_slot q_s = b.compute("mul", heads_bytes(b, a.rows, a.heads, a.head_dim, t), t, {q, no_slot, no_slot}, 0);
    // Grouped keys and values are repeated to every head first. A single
    // K/V head that reaches SDPA as it is (Falcon's multi-query) is broadcast
    // by the bmm instead: at batch 1, (1, heads) folds into one dimension of
    // stride 0, a view; otherwise the bmm copies it to every head, and saves
    // the copy (traced: falcon-7b's saved key is one head's 131 KB at batch
    // 1, 18.6 MB at 2).
    const std::uint64_t kv_heads_here =
        b.m.attention.sdpa_broadcasts_kv && a.kv_heads == 1 && a.batch == 1 ? 1 : a.heads;
    const tensor_slot k_s = b.compute("mul", heads_bytes(b, a.key_rows, kv_heads_here, a.head_dim, t), t, {k, no_slot, no_slot}, 0);
    const tensor_slot v_c = cached && !grouped && b.type_of(v) == t
                                ? v
                                : b.compute("clone", heads_bytes(b, a.key_rows, kv_heads_here, a.v_head_dim, t), t,
                                            {v, no_slot, no_slot}, 0);
    tensor_slot w = b.batched_matmul("bmm", b.tensor(scores, t), t, q_s, k_s);
    // Broadcast, the head's gradient is made at every head, then summed.
    const bool broadcast = kv_heads_here != a.heads;
    if (broadcast && b.at(w).requires_grad) b.at(w).backward_workspace.add(heads_bytes(b, a.key_rows, a.heads, a.head_dim, t));
    if (b.m.attention.positions == position_kind::relative_bias || o.causal || sdpa_masked(b, o))
        w = b.compute("add", b.tensor(scores, t), t, {w, no_slot, no_slot}, 0);
    const tensor_slot softmax = b.softmax("_safe_softmax", b.tensor(scores, sm), sm, w);
    const tensor_slot probs = b.cast(dropout_kernel(b, softmax, scores, o.dropout), scores, t);
    tensor_slot ctx = b.batched_matmul("bmm", heads_bytes(b, a.rows, a.heads, a.v_head_dim, t), t, probs, v_c);
    if (broadcast && b.at(ctx).requires_grad)
        b.at(ctx).backward_workspace.add(heads_bytes(b, a.key_rows, a.heads, a.v_head_dim, t));
    if (compiled_encoder(b, o) && b.at(ctx).requires_grad) {
        // Traced (bert-base): backward recomputes the probabilities from the
        // kept softmax output and dropout mask.
        kernel& bmm = b.at(ctx);
        bmm.saves_inputs &= 0b10;
        bmm.recomputes_from[bmm.recompute_count++] = softmax;
    }
    ctx = b.cast(ctx, b.elements(a.rows, checked_mul(a.heads, a.v_head_dim)), in_t);
    // transpose(1, 2).contiguous() for the output projection
    return b.compute("clone", heads_bytes(b, a.rows, a.heads, a.v_head_dim, in_t), in_t, {ctx, no_slot, no_slot}, 0);
}

// `k_heads`: the heads K and V have here (repeated to every head, or grouped).
constexpr const char* kernel_name(sdpa_backend backend) {
    switch (backend) {
        case sdpa_backend::cudnn: return "cudnn_attention";
        case sdpa_backend::flash: return "flash_attention";
        case sdpa_backend::efficient: return "efficient_attention";
    }
    return "efficient_attention";
}

// cuDNN, flash and memory-efficient attention save and allocate the same
// here: the output, one fp32 log-sum-exp per row and head, and in backward
// an fp32 dQ accumulator. Traced for cuDNN and memory-efficient on the H200;
// flash (A100, L4, RTX cards) is not measured and taken to match.
constexpr tensor_slot fused_attention(kernel_builder& b, const op& o, tensor_slot q, tensor_slot k, tensor_slot v,
                                      bool masked, std::uint64_t k_heads, sdpa_backend backend) {
    const attention_shape a = shape_of(b, o);
    const dtype t = b.matmul_type(b.type_of(q));
    q = b.cast(q, b.elements(a.rows, checked_mul(a.heads, a.head_dim)), t);
    k = b.cast(k, b.elements(a.key_rows, checked_mul(k_heads, a.head_dim)), t);
    v = b.cast(v, b.elements(a.key_rows, checked_mul(k_heads, a.v_head_dim)), t);
    // One fp32 log-sum-exp per query row and head, which cuDNN and the
    // memory-efficient kernel make only for a backward (compute_log_sumexp:
    // no block of it in a traced llama-3.2-1b forward under no_grad) and
    // flash always; with a mask, the additive mask SDPA builds from it in
    // q's dtype before the kernel allocates its output (traced: gemma-3-1b
    // serving). Both are kept for backward.
    const bool needs_backward = b.grad_of(q) || b.grad_of(k) || b.grad_of(v);
    bytes saved = needs_backward || backend == sdpa_backend::flash ? b.tensor(b.elements(a.rows, a.heads), dtype::fp32)
                                                                    : bytes{};
    if (masked) saved += b.tensor(mask_elements(a), t);
    const tensor_slot y = b.compute(kernel_name(backend), heads_bytes(b, a.rows, a.heads, a.v_head_dim, t), t, {q, k, v},
                                    0b111, true, saved);
    kernel& kn = b.at(y);
    kn.extra_before_output = masked;
    // Backward: an fp32 dQ accumulator and the row sums of dO * O; with
    // grouped K/V, dK and dV at full head count before they are summed. One
    // allocation (cuDNN on the H200, llama-3-8b by bench/torch_reference/segment_trace.py:
    // one 128.5 MiB block per layer).
    bytes scratch = heads_bytes(b, a.rows, a.heads, a.head_dim, dtype::fp32) +
                    b.tensor(b.elements(a.rows, a.heads), dtype::fp32);
    if (k_heads != a.heads && is_half(t))
        scratch += heads_bytes(b, a.key_rows, a.heads, a.head_dim, t) + heads_bytes(b, a.key_rows, a.heads, a.v_head_dim, t);
    kn.backward_workspace.add(scratch);
    return y;
}

// transformers' eager attention: the model's own code for BERT, GPT-2, T5,
// GPT-J and BLOOM, eager_attention_forward for the others.
constexpr tensor_slot eager_attention(kernel_builder& b, const op& o, tensor_slot q, tensor_slot k, tensor_slot v,
                                      bool cached) {
    const attention_part& part = b.m.attention;
    const attention_shape a = shape_of(b, o);
    const bool t5 = part.positions == position_kind::relative_bias;
    dtype t = b.matmul_type(b.type_of(q));
    const std::uint64_t scores = score_elements(a);
    // matmul on (b, heads, s, d) views needs contiguous operands: copies,
    // except the cache's own contiguous copies. Grouped K/V are repeated.
    tensor_slot q_c = b.compute("clone", heads_bytes(b, a.rows, a.heads, a.head_dim, t), t, {q, no_slot, no_slot}, 0);
    tensor_slot k_c = cached && a.kv_heads == a.heads
                          ? b.cast(k, b.elements(a.key_rows, checked_mul(a.kv_heads, a.head_dim)), t)
                          : b.compute("clone", heads_bytes(b, a.key_rows, a.heads, a.head_dim, t), t, {k, no_slot, no_slot}, 0);
    const tensor_slot v_c = cached && a.kv_heads == a.heads
                                ? b.cast(v, b.elements(a.key_rows, checked_mul(a.kv_heads, a.v_head_dim)), t)
                                : b.compute("clone", heads_bytes(b, a.key_rows, a.heads, a.v_head_dim, t), t,
                                            {v, no_slot, no_slot}, 0);
    if (part.eager_upcast_qk) {
        // GPT-J: query.to(float32), key.to(float32); the matmul runs in fp32
        // (autocast takes it back to half).
        q_c = b.cast(q_c, b.elements(a.rows, checked_mul(a.heads, a.head_dim)), dtype::fp32);
        k_c = b.cast(k_c, b.elements(a.key_rows, checked_mul(a.heads, a.head_dim)), dtype::fp32);
        t = b.matmul_type(dtype::fp32);
    }
    // The scores: matmul then * scaling, or BLOOM's one baddbmm with alibi.
    tensor_slot w = b.batched_matmul(part.eager_baddbmm ? "baddbmm" : "matmul", b.tensor(scores, t), t, q_c, k_c);
    if (!t5 && !part.eager_baddbmm) w = b.pointwise("mul", w, scores);  // * scaling
    if (part.logit_softcap > 0.0) {
        w = b.pointwise("div", w, scores);
        w = b.pointwise("tanh", w, scores, 0, true);
        w = b.pointwise("mul", w, scores);
    }
    // + the causal mask, which the model built in the embeddings' dtype.
    if (!t5 && o.causal) {
        const dtype mt = promote(t, b.autocast() ? dtype::fp32 : b.param_type());
        w = b.compute("add", b.tensor(scores, mt), mt, {w, no_slot, no_slot}, 0);
    }
    if (part.sinks) {
        // gpt-oss: cat a sink column per head, subtract the row max, softmax in
        // the scores' dtype; the probabilities without the sink are a view.
        const std::uint64_t with_sink = checked_mul(checked_mul(a.batch, a.heads), checked_mul(a.q_seq, a.k_seq + 1));
        const dtype st = b.type_of(w);
        kernel cat = b.make("cat", b.tensor(with_sink, st), st, {w, no_slot, no_slot});
        cat.requires_grad = b.grad_of(w) || b.trainable(o);
        cat.grad_inputs = b.grad_of(w) ? 1 : 0;
        cat.param_grads = b.param_grad_bytes(o);
        w = b.push(cat);
        w = b.compute("sub", b.tensor(with_sink, st), st, {w, no_slot, no_slot}, 0, false,
                      b.tensor(checked_mul(checked_mul(a.batch, a.heads), a.q_seq), dtype::int64));
        tensor_slot probs = b.softmax("softmax", b.tensor(with_sink, st), st, w);
        probs = dropout_kernel(b, probs, scores, o.dropout);
        const tensor_slot ctx = b.batched_matmul("matmul", heads_bytes(b, a.rows, a.heads, a.v_head_dim, st), st,
                                                 probs, v_c);
        return b.compute("clone", heads_bytes(b, a.rows, a.heads, a.v_head_dim, st), st, {ctx, no_slot, no_slot}, 0);
    }
    // Llama-style code and T5 take the softmax in fp32; BERT and GPT-2 get
    // fp32 only from autocast.
    const dtype sm = part.eager_softmax_fp32 ? dtype::fp32 : b.fp32_list_type(b.type_of(w));
    tensor_slot probs = b.softmax("softmax", b.tensor(scores, sm), sm, b.cast(w, scores, sm));
    const dtype pt = part.eager_upcast_qk ? b.type_of(v_c) : b.matmul_type(b.type_of(q));
    probs = b.cast(probs, scores, b.matmul_type(pt));
    probs = dropout_kernel(b, probs, scores, o.dropout);
    const dtype ct = b.type_of(probs);
    const tensor_slot ctx = b.batched_matmul("matmul", heads_bytes(b, a.rows, a.heads, a.v_head_dim, ct), ct, probs, v_c);
    return b.compute("clone", heads_bytes(b, a.rows, a.heads, a.v_head_dim, ct), ct, {ctx, no_slot, no_slot}, 0);
}

constexpr tensor_slot expand_attention(kernel_builder& b, const op& o) {
    const tensor_slot q = b.slot_of(o.inputs[0]);
    tensor_slot k = b.slot_of(o.inputs[1]);
    tensor_slot v = b.slot_of(o.inputs[2]);
    const attention_shape a = shape_of(b, o);
    // Latent attention caches its latent (cache_append), not k and v.
    const bool cached = kv_cached(b, o) && !b.m.attention.latent();
    if (cached) {
        // The cache's empty tensors take the key dtype, and cat promotes
        // the values to it. The cache lives in the model output: all step.
        const dtype kt = b.type_of(k);
        const dtype vt = promote(kt, b.type_of(v));
        const tensor_slot key_states = k;
        const tensor_slot value_states = v;
        k = b.compute("cat", heads_bytes(b, a.key_rows, a.kv_heads, a.head_dim, kt), kt, {k, no_slot, no_slot}, 0);
        v = b.compute("cat", heads_bytes(b, a.key_rows, a.kv_heads, a.v_head_dim, vt), vt, {v, no_slot, no_slot}, 0);
        // update() returns both copies, and rebinding the names lets go of
        // both originals only then (traced: llama-3.2-1b serving).
        for (const tensor_slot named : {key_states, value_states})
            if (named >= 0) reference_until(b.at(v), named);
        // The cache lives in the model output: held by a plain loop.
        b.at(k).held = keeps_outputs(b.r);
        b.at(v).held = keeps_outputs(b.r);
        b.at(k).returned = true;
        b.at(v).returned = true;
    }
    if (b.eager_attention()) return eager_attention(b, o, q, k, v, cached);
    const dtype t = b.matmul_type(b.type_of(q));
    const bool grouped = a.kv_heads != a.heads;
    const bool shared_mask = compiled_mask(b, o.causal);
    const bool masked = sdpa_masked(b, o) || shared_mask;
    // transformers' SDPA path repeats grouped K/V (expand + reshape: a copy,
    // in their dtype before autocast casts them) when it passes a mask or the
    // heads are wider than 256; a single K/V head expands without a copy.
    std::uint64_t k_heads = a.kv_heads;
    if (grouped && (masked || a.head_dim > 256) && !b.m.attention.always_masked) {
        if (a.kv_heads > 1) {
            k = b.compute("clone", heads_bytes(b, a.key_rows, a.heads, a.head_dim, b.type_of(k)), b.type_of(k),
                          {k, no_slot, no_slot}, 0);
            v = b.compute("clone", heads_bytes(b, a.key_rows, a.heads, a.v_head_dim, b.type_of(v)), b.type_of(v),
                          {v, no_slot, no_slot}, 0);
        }
        k_heads = a.heads;
    }
    // The device's kernel: compiled, the shared mask goes to the memory-efficient one.
    const sdpa_backend backend =
        shared_mask ? sdpa_backend::efficient : b.d.fused_attention(t, a.head_dim, masked);
    // The math fallback: T5's bias that needs a gradient, grouped K/V for the
    // memory-efficient kernel (it takes none: fp32, or half before sm80), and
    // Falcon's unequal heads.
    if (bias_needs_grad(b, o) || (k_heads != a.heads && (backend == sdpa_backend::efficient || b.m.attention.always_masked)) ||
        compiled_encoder(b, o))
        return math_attention(b, o, q, k, v, cached);
    const tensor_slot y = fused_attention(b, o, q, k, v, masked && !shared_mask, k_heads, backend);
    // RoPE that ends in a cat (partial rotary, Phi-3) leaves q contiguous as
    // (batch, heads, seq, dim); cuDNN's output follows q's layout (flash's
    // too: empty_like(q)), so transformers' transpose(1, 2).contiguous() is a
    // copy, which the output projection keeps (traced: gpt_neox, phi3). The
    // memory-efficient kernel writes (batch, seq, heads, dim) whatever q is:
    // no copy (measured: pythia-410m fp32).
    if (backend != sdpa_backend::efficient && b.m.attention.positions == position_kind::rotary &&
        (b.m.rotary_width() < b.m.head_width() || b.m.attention.rotary_concat))
        return b.pointwise("clone", y, b.elements(a.rows, checked_mul(a.heads, a.v_head_dim)));
    return y;
}

// SDPA layers of a sliding window get a boolean (1, 1, seq, seq) mask once
// the sequence reaches the window (sdpa_masked), which transformers builds
// as and_masks(causal, sliding) does: the causal bools, their & with True,
// the window's bools, then the & of both, kept for the forward (traced:
// gemma-3-1b, four 16 MiB blocks at 4096 tokens, the last one kept). SDPA
// makes each layer's additive mask from it (fused_attention). Compiled, the
// mask is traced otherwise (not modelled).
constexpr tensor_slot sliding_window_mask(kernel_builder& b, const op& o) {
    if (o.window == 0 || !sdpa_masked(b, o) || b.r.compile) return no_slot;
    const std::uint64_t seq = b.seq_of(o.rows);
    const bytes square = b.tensor(checked_mul(seq, seq), dtype::boolean);
    const tensor_slot causal = b.push(b.make("le", square, dtype::boolean, {no_slot, no_slot, no_slot}));
    const tensor_slot so_far = b.compute("bitwise_and", square, dtype::boolean, {causal, no_slot, no_slot}, 0);
    const tensor_slot window = b.push(b.make("gt", square, dtype::boolean, {no_slot, no_slot, no_slot}));
    const tensor_slot mask = b.compute("bitwise_and", square, dtype::boolean, {so_far, window, no_slot}, 0);
    b.at(mask).base_model_scoped = true;
    return mask;
}

// A mask the model builds once per forward and shares across layers. SDPA
// needs none without padding below a sliding window (a masked call builds
// its additive mask, counted there, from sliding_window_mask's); eager adds a
// float [batch, 1, seq, seq] in the embeddings' dtype to every layer's scores.
constexpr tensor_slot expand_mask(kernel_builder& b, const op& o) {
    const std::uint64_t seq = b.seq_of(o.rows);
    if (compiled_mask(b, b.m.stack == stack_kind::decoder && o.window == 0) && !b.eager_attention()) {
        // Compiled SDPA keeps the mask, in its compute dtype, for every
        // layer's backward: it lives through the step.
        const dtype t = b.matmul_type(b.param_type());
        kernel mask = b.make("where", b.tensor(checked_mul(b.s.batch, checked_mul(seq, seq)), t), t,
                             {no_slot, no_slot, no_slot});
        mask.held = true;
        return b.push(mask);
    }
    if (!b.eager_attention()) return sliding_window_mask(b, o);
    const dtype t = b.autocast() ? dtype::fp32 : b.param_type();
    return b.base_model_scoped("where", b.tensor(checked_mul(b.s.batch, checked_mul(seq, seq)), t), t);
}

// BLOOM's alibi: (batch * heads, 1, seq) in the hidden dtype, once per forward.
constexpr tensor_slot expand_alibi(kernel_builder& b, const op& o) {
    const dtype t = b.autocast() ? dtype::fp32 : b.param_type();
    return b.base_model_scoped("alibi", b.tensor(checked_mul(checked_mul(b.s.batch, o.heads), b.seq_of(o.rows)), t), t);
}

// T5's relative position bias: (1, heads, q, k), computed once per stack and
// added to every layer's scores.
constexpr tensor_slot expand_position_bias(kernel_builder& b, const op& o) {
    const std::uint64_t q = b.seq_of(o.rows);
    kernel k = b.make("embedding", b.tensor(checked_mul(checked_mul(q, q), o.heads), b.param_type()), b.param_type(),
                      {no_slot, no_slot, no_slot});
    k.requires_grad = b.trainable(o);
    k.param_grads = b.param_grad_bytes(o);
    k.held = true;
    return b.push(k);
}

}  // namespace anatomy::detail
