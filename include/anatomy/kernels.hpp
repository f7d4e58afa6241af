// Expands each op of a stage into the kernels PyTorch runs for it under a
// recipe and shape: what each kernel allocates, which tensors it keeps for
// backward, what backward allocates, and what it frees.
//
// Everything the activation model knows is stated here, kernel by kernel:
// eager vs SDPA attention, dropout masks, autocast casts, the logits upcast
// and the cross-entropy's saved log-probabilities all come from the same
// rules (a kernel's output dtype, which inputs autograd saves, which inputs
// need a gradient), never from a per-model factor.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/detail/static_vector.hpp>
#include <anatomy/dtype.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/model.hpp>
#include <anatomy/op.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/shape.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace anatomy {

// A tensor a kernel reads: another kernel's output (its index in the list),
// or one of the stage's external inputs.
using tensor_slot = std::int16_t;
inline constexpr tensor_slot input_slot = -1;    // the stage's input
inline constexpr tensor_slot encoder_slot = -2;  // the encoder's output (cross-attention)
inline constexpr tensor_slot no_slot = -3;

// No default member initializers (see static_vector): build with braces,
// which zero what is left out, and always give `in`.
struct kernel {
    std::uint8_t op;  // index of the op it belongs to, in its stage
    const char* what;  // the aten kernel, e.g. "addmm", "native_dropout"
    bytes out;         // its output; 0 for views, which alias in[0]
    dtype type;
    bool requires_grad;
    std::array<tensor_slot, 3> in;  // no_slot where unused
    std::uint8_t saves_inputs;  // bit i: autograd keeps in[i] for backward
    bool saves_output;
    bytes saved_extra;         // new tensors kept only for backward: masks, statistics
    bytes workspace;           // freed before the kernel returns
    std::uint8_t grad_inputs;  // bit i: backward allocates a gradient for in[i]
    bytes param_grads;         // parameter gradients its backward creates; they persist
    bytes backward_workspace;  // freed before its backward returns
    bool held;                 // lives until the step ends: model outputs, the KV cache
    bool alias;                // a view of in[0]: no memory of its own
    bytes weight_copy;         // autocast's half copy of the weight it multiplies by
    bool saves_weight_copy;    // kept for backward (the input gradient needs it)
    bool caches_weight_copy;   // autocast's cast cache keeps it until the forward ends
};

inline constexpr std::size_t max_kernels_per_stage = 192;
using kernel_list = detail::static_vector<kernel, max_kernels_per_stage>;

// The dtype and gradient status of a stage's external input.
struct stage_input_info {
    bytes size{};
    dtype type{};
    bool requires_grad{};
};

struct expansion {
    kernel_list kernels;
    std::array<tensor_slot, 32> op_output{};  // the slot holding each op's result
};

namespace detail {

constexpr dtype promote(dtype a, dtype b) {
    if (a == b) return a;
    return dtype::fp32;  // mixing fp32 with a half type, or bf16 with fp16
}

class kernel_expander {
public:
    constexpr kernel_expander(const model_spec& m, const recipe& r, const shape& s, stage_input_info input,
                              stage_input_info encoder, expansion& result)
        : m_(m), r_(r), s_(s), input_(input), encoder_(encoder), result_(result) {}

    constexpr void expand(const stage& st) {
        for (std::size_t i = 0; i < st.ops.size(); ++i) {
            op_ = static_cast<std::uint8_t>(i);
            result_.op_output[i] = expand_op(st.ops[i]);
        }
    }

private:
    // ---- tensors -----------------------------------------------------------
    constexpr std::uint64_t rows(rows_of r) const {
        switch (r) {
            case rows_of::source_tokens: return checked_mul(s_.batch, s_.seq);
            case rows_of::target_tokens: return checked_mul(s_.batch, target_length(s_));
            case rows_of::sequences: return s_.batch;
        }
        return 0;
    }
    constexpr std::uint64_t seq_of(rows_of r) const {
        return r == rows_of::target_tokens ? target_length(s_) : s_.seq;
    }
    static constexpr std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) { return detail::checked_mul(a, b); }

    // The allocator hands out blocks of 512 bytes: a tensor takes a whole number of them.
    constexpr bytes tensor(std::uint64_t elements, dtype t) const { return block_size(elements * size_of(t)); }

    constexpr dtype type_of(tensor_slot s) const {
        if (s == input_slot) return input_.type;
        if (s == encoder_slot) return encoder_.type;
        return result_.kernels[static_cast<std::size_t>(s)].type;
    }
    constexpr bool grad_of(tensor_slot s) const {
        if (!grad_enabled()) return false;
        if (s == input_slot) return input_.requires_grad;
        if (s == encoder_slot) return encoder_.requires_grad;
        return result_.kernels[static_cast<std::size_t>(s)].requires_grad;
    }
    constexpr tensor_slot slot_of(op_input i) const {
        if (i == stage_input) return input_slot;
        if (i == encoder_output) return encoder_slot;
        return result_.op_output[static_cast<std::size_t>(i)];
    }

    // A recipe's inference runs model.eval() under torch.no_grad(): autograd
    // records nothing and dropout is off. Training is the opposite of both.
    constexpr bool grad_enabled() const { return !r_.inference; }
    constexpr bool training_mode() const { return !r_.inference; }
    constexpr bool autocast() const { return r_.autocast != autocast_mode::off; }
    constexpr dtype autocast_type() const { return r_.autocast == autocast_mode::fp16 ? dtype::fp16 : dtype::bf16; }
    // Ops on autocast's lower-precision list (matmuls, SDPA) run in this dtype.
    constexpr dtype matmul_type(dtype input) const { return autocast() ? autocast_type() : input; }
    // Ops on autocast's fp32 list (norms, softmax, pow, losses) run in fp32.
    constexpr dtype fp32_list_type(dtype input) const { return autocast() ? dtype::fp32 : input; }

    constexpr bool trainable(const op& o) const { return grad_enabled() && !r_.lora.enabled() && !o.weight.empty(); }
    // Parameters keep requires_grad=True under torch.no_grad(); peft freezes the base.
    constexpr bool param_requires_grad() const { return !r_.lora.enabled(); }

    // A sum over tokens (a bias or norm-weight gradient) stages two fp32
    // partial values per output and token, in at most one 1 MiB block per SM
    // of the GPU (132 on H100 and H200): measured 64 MiB for bert-large's
    // intermediate bias at 2048 tokens, capped at 132 MiB for gpt2's c_fc.
    constexpr bytes reduction_staging(std::uint64_t tokens, std::uint64_t outputs) const {
        const bytes partials = tensor(checked_mul(2 * tokens, outputs), dtype::fp32);
        const bytes cap = 132 * MiB;
        return partials < cap ? partials : cap;
    }
    constexpr dtype param_type() const { return r_.weights; }
    // A master copy takes fp32 gradients, except under ZeRO, which keeps them
    // in the parameters' dtype and converts only its partition at the step.
    constexpr dtype grad_type() const {
        return r_.master == master_weights::fp32 && !is_zero(r_.parallel) ? dtype::fp32 : r_.weights;
    }
    constexpr bytes param_grad_bytes(const op& o) const {
        if (!trainable(o)) return bytes{};
        return detail::checked_add(o.weight.numel(), o.bias.numel()) * size_of(grad_type());
    }

    constexpr kernel make(const char* what, bytes out, dtype t, std::array<tensor_slot, 3> in) const {
        kernel k{};
        k.op = op_;
        k.what = what;
        k.out = out;
        k.type = t;
        k.in = in;
        return k;
    }

    constexpr tensor_slot push(kernel k) {
        result_.kernels.push_back(k);
        return static_cast<tensor_slot>(result_.kernels.size() - 1);
    }

    // A kernel computing a new tensor from `in`; the gradient flows to every
    // input that requires one. `extra`: tensors it makes beside its output
    // (a dropout mask, norm statistics), kept for backward when autograd
    // records the kernel and freed at once otherwise.
    constexpr tensor_slot compute(const char* what, bytes out, dtype t,
                                  std::array<tensor_slot, 3> in, std::uint8_t saves, bool saves_output = false,
                                  bytes extra = {}) {
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

    // `x.to(t)`: a copy when the dtype changes, the same tensor otherwise.
    constexpr tensor_slot cast(tensor_slot x, std::uint64_t elements, dtype t) {
        if (type_of(x) == t) return x;
        return compute("_to_copy", tensor(elements, t), t, {x, no_slot, no_slot}, 0);
    }

    constexpr tensor_slot view(tensor_slot x) {
        kernel k = make("view", bytes{}, type_of(x), {x, no_slot, no_slot});
        k.requires_grad = grad_of(x);
        k.alias = true;
        if (k.requires_grad) k.grad_inputs = 1;
        return push(k);
    }

    // ---- ops ---------------------------------------------------------------
    constexpr tensor_slot expand_op(const op& o) {
        switch (o.kind) {
            case op_kind::embedding: return embedding(o);
            case op_kind::linear: return linear(o, slot_of(o.inputs[0]));
            case op_kind::norm: return m_.norm == norm_kind::layer_norm ? layer_norm(o) : rms_norm(o);
            case op_kind::attention: return attention(o);
            case op_kind::position_bias: return position_bias(o);
            case op_kind::rotary: return rotary(o);
            case op_kind::activation: return activation(o);
            case op_kind::gate: return binary(o, "mul", 0b11);
            case op_kind::dropout: return dropout(slot_of(o.inputs[0]), rows(o.rows) * o.out_width, o.dropout);
            case op_kind::residual: return binary(o, "add", 0);
            case op_kind::scale: {
                const tensor_slot x = slot_of(o.inputs[0]);
                return compute("mul", tensor(rows(o.rows) * o.out_width, type_of(x)), type_of(x), {x, no_slot, no_slot}, 0);
            }
            case op_kind::pool: return pool(o);
            case op_kind::loss: return loss(o);
        }
        return no_slot;
    }

    constexpr tensor_slot embedding(const op& o) {
        const std::uint64_t n = rows(o.rows);
        kernel k = make("embedding", tensor(n * o.out_width, param_type()), param_type(), {no_slot, no_slot, no_slot});
        k.requires_grad = trainable(o);
        if (k.requires_grad) {
            // embedding_dense_backward builds a dense table gradient. When a
            // later op shares the table, its gradient exists already and this
            // one is added to it, then freed.
            const bytes table = o.weight.numel() * size_of(grad_type());
            if (o.tied || o.weight_shared_later) k.backward_workspace = table;
            else k.param_grads = table;
        }
        return push(k);
    }

    constexpr tensor_slot linear(const op& o, tensor_slot x) {
        const std::uint64_t n = rows(o.rows);
        const bool weight_grad = trainable(o);
        const dtype compute_type = matmul_type(type_of(x));
        const tensor_slot x_c = cast(x, n * o.in_width, compute_type);
        // Autocast casts the weight once per forward (its cast cache); the copy
        // is kept when backward needs it for the input gradient.
        const bool weight_cast = compute_type != param_type();
        const bytes weight_copy = weight_cast ? tensor(o.weight.numel(), compute_type) + tensor(o.bias.numel(), compute_type)
                                              : bytes{};
        kernel k = make("addmm", tensor(n * o.out_width, compute_type), compute_type, {x_c, no_slot, no_slot});
        const bool input_grad = grad_of(x_c);
        k.requires_grad = input_grad || weight_grad;
        if (input_grad) k.grad_inputs = 1;
        if (weight_grad) k.saves_inputs = 1;  // grad_W = x^T grad_out
        k.weight_copy = weight_copy;
        k.saves_weight_copy = input_grad;  // grad_x = grad_out W
        // The cast cache holds casts of weights that require grad.
        k.caches_weight_copy = weight_cast && param_requires_grad();
        k.param_grads = param_grad_bytes(o);
        // The weight gradient is computed in the compute dtype, then cast;
        // the bias gradient is a reduction over tokens (reduction_staging).
        if (weight_grad && weight_cast) k.backward_workspace += weight_copy;
        if (weight_grad && !o.bias.empty()) k.backward_workspace += reduction_staging(n, o.out_width);
        const tensor_slot y = push(k);
        return r_.lora.enabled() && r_.lora.targets_module(o.module) ? lora(o, x, y) : y;
    }

    // peft's LoRA branch: y + B(A(dropout(x))) * scaling, adapters in fp32
    // (peft casts x to the adapter dtype first).
    constexpr tensor_slot lora(const op& o, tensor_slot x, tensor_slot base) {
        const std::uint64_t n = rows(o.rows);
        const dtype t = lora_adapter_dtype;
        tensor_slot in = cast(x, n * o.in_width, t);
        in = dropout(in, n * o.in_width, r_.lora.dropout);
        const bool adapters_train = grad_enabled();
        kernel a = make("lora_A", tensor(n * r_.lora.rank, t), t, {in, no_slot, no_slot});
        a.requires_grad = adapters_train || grad_of(in);
        a.saves_inputs = adapters_train ? 1 : 0;
        a.grad_inputs = grad_of(in) ? 1 : 0;
        a.param_grads = adapters_train ? tensor(r_.lora.rank * o.in_width, t) : bytes{};
        const tensor_slot a_out = push(a);
        kernel b = make("lora_B", tensor(n * o.out_width, t), t, {a_out, no_slot, no_slot});
        b.requires_grad = a.requires_grad;
        b.saves_inputs = adapters_train ? 1 : 0;
        b.grad_inputs = a.requires_grad ? 1 : 0;
        b.param_grads = adapters_train ? tensor(o.out_width * r_.lora.rank, t) : bytes{};
        const tensor_slot b_out = push(b);
        const tensor_slot scaled = compute("mul", tensor(n * o.out_width, t), t, {b_out, no_slot, no_slot}, 0);
        const dtype sum_type = promote(type_of(base), t);
        const tensor_slot sum = compute("add", tensor(n * o.out_width, sum_type), sum_type, {base, scaled, no_slot}, 0);
        return cast(sum, n * o.out_width, type_of(base));  // peft returns the base layer's dtype
    }

    constexpr tensor_slot layer_norm(const op& o) {
        const std::uint64_t n = rows(o.rows);
        const tensor_slot x = slot_of(o.inputs[0]);
        const dtype t = fp32_list_type(type_of(x));
        const tensor_slot x_c = cast(x, n * o.in_width, t);
        // native_layer_norm keeps its input and the fp32 mean and rstd of each row.
        const bytes stats = tensor(2 * n, dtype::fp32);
        const tensor_slot y = compute("native_layer_norm", tensor(n * o.out_width, t), t,
                                      {x_c, no_slot, no_slot}, 1, false, stats);
        return with_params(y, o);
    }

    // Llama's and T5's RMSNorm are Python: each line is a kernel.
    constexpr tensor_slot rms_norm(const op& o) {
        const std::uint64_t n = rows(o.rows);
        const std::uint64_t elements = n * o.out_width;
        const tensor_slot x = slot_of(o.inputs[0]);
        const dtype in_type = type_of(x);
        const bytes row_stat = tensor(n, dtype::fp32);
        tensor_slot normed = no_slot;
        if (m_.arch == architecture::t5) {
            // variance = x.to(fp32).pow(2).mean(-1); x * rsqrt(variance + eps)
            const tensor_slot x32 = cast(x, elements, dtype::fp32);
            const tensor_slot sq = compute("pow", tensor(elements, dtype::fp32), dtype::fp32, {x32, no_slot, no_slot}, 1);
            const tensor_slot var = compute("mean", row_stat, dtype::fp32, {sq, no_slot, no_slot}, 0);
            const tensor_slot inv = compute("rsqrt", row_stat, dtype::fp32, {var, no_slot, no_slot}, 0, true);
            const dtype t = promote(in_type, dtype::fp32);
            normed = compute("mul", tensor(elements, t), t, {x, inv, no_slot}, 0b11);
            if (is_half(param_type())) normed = cast(normed, elements, param_type());
        } else {
            // x = x.to(fp32); x * rsqrt(x.pow(2).mean(-1) + eps); .to(input dtype)
            const tensor_slot x32 = cast(x, elements, dtype::fp32);
            const tensor_slot sq = compute("pow", tensor(elements, dtype::fp32), dtype::fp32, {x32, no_slot, no_slot}, 1);
            const tensor_slot var = compute("mean", row_stat, dtype::fp32, {sq, no_slot, no_slot}, 0);
            const tensor_slot inv = compute("rsqrt", row_stat, dtype::fp32, {var, no_slot, no_slot}, 0, true);
            normed = compute("mul", tensor(elements, dtype::fp32), dtype::fp32, {x32, inv, no_slot}, 0b11);
            normed = cast(normed, elements, in_type);
        }
        // weight * normed: keeps `normed` for the weight's gradient.
        const dtype t = promote(param_type(), type_of(normed));
        kernel k = make("mul", tensor(elements, t), t, {normed, no_slot, no_slot});
        const bool weight_grad = trainable(o);
        k.requires_grad = weight_grad || grad_of(normed);
        k.grad_inputs = grad_of(normed) ? 1 : 0;
        k.saves_inputs = weight_grad ? 1 : 0;
        k.param_grads = param_grad_bytes(o);
        // grad_weight = (grad_out * normed).sum over tokens
        if (weight_grad) k.backward_workspace = tensor(elements, t) + reduction_staging(n, o.out_width);
        return push(k);
    }

    // Attaches an op's parameter gradients to the kernel that produces them.
    constexpr tensor_slot with_params(tensor_slot y, const op& o) {
        kernel& k = result_.kernels[static_cast<std::size_t>(y)];
        const bool weight_grad = trainable(o);
        if (weight_grad) {
            k.requires_grad = true;
            k.param_grads = param_grad_bytes(o);
            if (k.saves_inputs == 0 && k.grad_inputs == 0) k.saves_inputs = 1;
        }
        return y;
    }

    constexpr tensor_slot binary(const op& o, const char* what, std::uint8_t saves) {
        const tensor_slot a = slot_of(o.inputs[0]);
        const tensor_slot b = slot_of(o.inputs[1]);
        const dtype t = promote(type_of(a), type_of(b));
        return compute(what, tensor(rows(o.rows) * o.out_width, t), t, {a, b, no_slot}, saves);
    }

    constexpr tensor_slot dropout(tensor_slot x, std::uint64_t elements, double p) {
        if (p <= 0.0 || !training_mode()) return x;
        // native_dropout returns the output and a bool mask, which it keeps.
        const bytes mask = tensor(elements, dtype::boolean);
        return compute("native_dropout", tensor(elements, type_of(x)), type_of(x), {x, no_slot, no_slot}, 0,
                       false, mask);
    }

    constexpr tensor_slot activation(const op& o) {
        const std::uint64_t elements = rows(o.rows) * o.out_width;
        const tensor_slot x = slot_of(o.inputs[0]);
        const dtype t = type_of(x);
        switch (o.act) {
            case anatomy::activation::gelu:
            case anatomy::activation::silu:
                return compute(o.act == anatomy::activation::gelu ? "gelu" : "silu", tensor(elements, t), t,
                               {x, no_slot, no_slot}, 1);
            case anatomy::activation::relu:
            case anatomy::activation::tanh:
                return compute(o.act == anatomy::activation::relu ? "relu" : "tanh", tensor(elements, t), t,
                               {x, no_slot, no_slot}, 0, true);
            case anatomy::activation::gelu_tanh: return gelu_new(x, elements);
        }
        return x;
    }

    // transformers' NewGELUActivation, GPT-2's "gelu_new", is Python:
    // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x.pow(3)))).
    constexpr tensor_slot gelu_new(tensor_slot x, std::uint64_t elements) {
        const dtype t = type_of(x);
        const dtype p = fp32_list_type(t);  // pow is on autocast's fp32 list
        const tensor_slot half_x = compute("mul", tensor(elements, t), t, {x, no_slot, no_slot}, 0);
        const tensor_slot x_p = cast(x, elements, p);
        const tensor_slot cube = compute("pow", tensor(elements, p), p, {x_p, no_slot, no_slot}, 1);
        const tensor_slot scaled = compute("mul", tensor(elements, p), p, {cube, no_slot, no_slot}, 0);
        const dtype sum_t = promote(t, p);
        const tensor_slot inner = compute("add", tensor(elements, sum_t), sum_t, {x, scaled, no_slot}, 0);
        const tensor_slot arg = compute("mul", tensor(elements, sum_t), sum_t, {inner, no_slot, no_slot}, 0);
        const tensor_slot th = compute("tanh", tensor(elements, sum_t), sum_t, {arg, no_slot, no_slot}, 0, true);
        const tensor_slot one_plus = compute("add", tensor(elements, sum_t), sum_t, {th, no_slot, no_slot}, 0);
        const dtype out_t = promote(t, sum_t);
        return compute("mul", tensor(elements, out_t), out_t, {half_x, one_plus, no_slot}, 0b11);
    }

    // RoPE: q * cos + rotate_half(q) * sin, with rotate_half = cat(-x2, x1).
    // cos and sin take the embedding output's dtype, so under autocast the
    // half projections come out in fp32.
    constexpr tensor_slot rotary(const op& o) {
        const std::uint64_t elements = rows(o.rows) * o.out_width;
        const tensor_slot x = slot_of(o.inputs[0]);
        const dtype t = type_of(x);
        const dtype rt = promote(t, param_type());
        const tensor_slot a = compute("mul", tensor(elements, rt), rt, {x, no_slot, no_slot}, 0);
        const tensor_slot neg = compute("neg", tensor(elements / 2, t), t, {x, no_slot, no_slot}, 0);
        const tensor_slot rot = compute("cat", tensor(elements, t), t, {neg, x, no_slot}, 0);
        const tensor_slot b = compute("mul", tensor(elements, rt), rt, {rot, no_slot, no_slot}, 0);
        return compute("add", tensor(elements, rt), rt, {a, b, no_slot}, 0);
    }

    // transformers creates a DynamicCache whenever config.use_cache holds, in
    // training too (gradient checkpointing turns it off); T5 caches in its
    // decoder only. Its update is torch.cat, so keys and values are copies.
    constexpr bool kv_cached(const op& o) const {
        const bool has_cache = family_of(m_.arch) == family::decoder || o.rows == rows_of::target_tokens;
        return has_cache && (r_.inference ? r_.kv_cache : !r_.grad_checkpointing);
    }
    constexpr bytes head_bytes(rows_of r, std::uint64_t heads, const op& o, dtype t) const {
        return tensor(checked_mul(rows(r), heads * o.head_dim), t);
    }
    // T5's relative bias has a gradient in its self-attention (and, under
    // gradient checkpointing, transformers marks the cross-attention's too).
    constexpr bool bias_needs_grad(const op& o) const {
        if (m_.arch != architecture::t5 || !grad_enabled()) return false;
        return (o.key_rows == o.rows && !r_.lora.enabled()) || r_.grad_checkpointing;
    }

    constexpr tensor_slot attention(const op& o) {
        const tensor_slot q = slot_of(o.inputs[0]);
        tensor_slot k = slot_of(o.inputs[1]);
        tensor_slot v = slot_of(o.inputs[2]);
        const bool cached = kv_cached(o);
        if (cached) {
            // The cache's empty tensors take the key dtype, and cat promotes
            // the values to it. The cache lives in the model output: all step.
            const dtype kt = type_of(k);
            const dtype vt = promote(kt, type_of(v));
            k = compute("cat", head_bytes(o.key_rows, o.kv_heads, o, kt), kt, {k, no_slot, no_slot}, 0);
            v = compute("cat", head_bytes(o.key_rows, o.kv_heads, o, vt), vt, {v, no_slot, no_slot}, 0);
            result_.kernels[static_cast<std::size_t>(k)].held = true;
            result_.kernels[static_cast<std::size_t>(v)].held = true;
        }
        if (r_.attention == attention_kernel::eager) return eager_attention(o, q, k, v, cached);
        const dtype t = matmul_type(type_of(q));
        // SDPA's fused kernels: cuDNN for half types (grouped K/V natively),
        // memory-efficient for fp32 (no grouped K/V). Otherwise, and when a
        // broadcast bias needs a gradient (T5), the math fallback runs.
        const bool grouped = o.kv_heads != o.heads;
        if (bias_needs_grad(o) || (!is_half(t) && grouped)) return math_attention(o, q, k, v, cached);
        return fused_attention(o, q, k, v);
    }

    constexpr tensor_slot fused_attention(const op& o, tensor_slot q, tensor_slot k, tensor_slot v) {
        const dtype t = matmul_type(type_of(q));
        const std::uint64_t n = rows(o.rows);
        q = cast(q, n * o.heads * o.head_dim, t);
        k = cast(k, rows(o.key_rows) * o.kv_heads * o.head_dim, t);
        v = cast(v, rows(o.key_rows) * o.kv_heads * o.head_dim, t);
        // One fp32 log-sum-exp per query row and head, kept for backward.
        const bytes lse = tensor(checked_mul(n, o.heads), dtype::fp32);
        const tensor_slot y = compute(is_half(t) ? "cudnn_attention" : "efficient_attention",
                                      head_bytes(o.rows, o.heads, o, t), t, {q, k, v}, 0b111, true, lse);
        kernel& k_ = result_.kernels[static_cast<std::size_t>(y)];
        // Backward: an fp32 dQ accumulator and the row sums of dO * O; with
        // grouped K/V, dK and dV at full head count before they are summed.
        k_.backward_workspace = head_bytes(o.rows, o.heads, o, dtype::fp32) + lse;
        if (o.kv_heads != o.heads && is_half(t)) k_.backward_workspace += 2 * head_bytes(o.key_rows, o.heads, o, t);
        return y;
    }

    // aten's _scaled_dot_product_attention_math: scaled copies of q and k,
    // explicit scores, softmax, dropout, and a bmm with v.
    constexpr tensor_slot math_attention(const op& o, tensor_slot q, tensor_slot k, tensor_slot v, bool cached) {
        const dtype t = matmul_type(type_of(q));
        const bool grouped = o.kv_heads != o.heads;
        const std::uint64_t scores = score_elements(o);
        const tensor_slot q_s = compute("mul", head_bytes(o.rows, o.heads, o, t), t, {q, no_slot, no_slot}, 0);
        // Grouped keys and values are repeated to every head first.
        const tensor_slot k_s = compute("mul", head_bytes(o.key_rows, o.heads, o, t), t, {k, no_slot, no_slot}, 0);
        const tensor_slot v_c = cached && !grouped && type_of(v) == t
                                    ? v
                                    : compute("clone", head_bytes(o.key_rows, o.heads, o, t), t, {v, no_slot, no_slot}, 0);
        tensor_slot w = compute("bmm", tensor(scores, t), t, {q_s, k_s, no_slot}, 0b11);
        if (m_.arch == architecture::t5 || o.causal) w = compute("add", tensor(scores, t), t, {w, no_slot, no_slot}, 0);
        tensor_slot probs = compute("_safe_softmax", tensor(scores, t), t, {w, no_slot, no_slot}, 0, true);
        probs = dropout(probs, scores, o.dropout);
        const tensor_slot ctx =
            compute("bmm", head_bytes(o.rows, o.heads, o, t), t, {probs, v_c, no_slot}, 0b11);
        // transpose(1, 2).contiguous() for the output projection
        return compute("clone", head_bytes(o.rows, o.heads, o, t), t, {ctx, no_slot, no_slot}, 0);
    }

    constexpr std::uint64_t score_elements(const op& o) const {
        return checked_mul(checked_mul(s_.batch, o.heads), checked_mul(seq_of(o.rows), seq_of(o.key_rows)));
    }

    // transformers' eager_attention_forward (and T5's own attention code).
    constexpr tensor_slot eager_attention(const op& o, tensor_slot q, tensor_slot k, tensor_slot v, bool cached) {
        const dtype t = matmul_type(type_of(q));
        const std::uint64_t scores = score_elements(o);
        const bool t5 = m_.arch == architecture::t5;
        // matmul on (b, heads, s, d) views needs contiguous operands: copies,
        // except the cache's own contiguous copies.
        const tensor_slot q_c = compute("clone", head_bytes(o.rows, o.heads, o, t), t, {q, no_slot, no_slot}, 0);
        const tensor_slot k_c =
            cached ? cast(k, rows(o.key_rows) * o.kv_heads * o.head_dim, t)
                   : compute("clone", head_bytes(o.key_rows, o.heads, o, t), t, {k, no_slot, no_slot}, 0);
        const tensor_slot v_c =
            cached ? cast(v, rows(o.key_rows) * o.kv_heads * o.head_dim, t)
                   : compute("clone", head_bytes(o.key_rows, o.heads, o, t), t, {v, no_slot, no_slot}, 0);
        tensor_slot w = compute("matmul", tensor(scores, t), t, {q_c, k_c, no_slot}, 0b11);
        if (!t5) w = compute("mul", tensor(scores, t), t, {w, no_slot, no_slot}, 0);  // * scaling
        if (!t5 && o.causal) w = compute("add", tensor(scores, t), t, {w, no_slot, no_slot}, 0);  // + mask
        // Llama-style code and T5 take the softmax in fp32; BERT and GPT-2
        // get fp32 only from autocast.
        const bool fp32_softmax = t5 || (family_of(m_.arch) == family::decoder && m_.arch != architecture::gpt2);
        const dtype sm = fp32_softmax ? dtype::fp32 : fp32_list_type(t);
        tensor_slot probs = compute("softmax", tensor(scores, sm), sm, {cast(w, scores, sm), no_slot, no_slot}, 0, true);
        probs = cast(probs, scores, t);
        probs = dropout(probs, scores, o.dropout);
        const tensor_slot ctx = compute("matmul", head_bytes(o.rows, o.heads, o, t), t, {probs, v_c, no_slot}, 0b11);
        return compute("clone", head_bytes(o.rows, o.heads, o, t), t, {ctx, no_slot, no_slot}, 0);
    }

    constexpr tensor_slot position_bias(const op& o) {
        const std::uint64_t q = seq_of(o.rows);
        kernel k = make("embedding", tensor(checked_mul(q * q, o.heads), param_type()), param_type(),
                        {no_slot, no_slot, no_slot});
        k.requires_grad = trainable(o);
        k.param_grads = param_grad_bytes(o);
        k.held = true;  // every layer of the stack adds it to its scores
        return push(k);
    }

    constexpr tensor_slot pool(const op& o) {
        const tensor_slot x = slot_of(o.inputs[0]);
        if (o.out_width == m_.hidden) return view(x);  // hidden[:, 0]: a view
        // logits[arange(batch), last]: advanced indexing copies the rows.
        return compute("index", tensor(s_.batch * o.out_width, type_of(x)), type_of(x), {x, no_slot, no_slot}, 0);
    }

    constexpr tensor_slot loss(const op& o) {
        const tensor_slot logits = slot_of(o.inputs[0]);
        result_.kernels[static_cast<std::size_t>(logits)].held = true;  // the model's output keeps its logits
        const std::uint64_t elements = rows(o.rows) * o.out_width;
        if (!grad_enabled()) return logits;  // inference: no labels, no loss
        // transformers upcasts the logits to fp32 before cross-entropy.
        const tensor_slot l32 = cast(logits, elements, dtype::fp32);
        const tensor_slot logp = compute("log_softmax", tensor(elements, dtype::fp32), dtype::fp32,
                                         {l32, no_slot, no_slot}, 0, true);
        return compute("nll_loss", tensor(1, dtype::fp32), dtype::fp32, {logp, no_slot, no_slot}, 0);
    }

    const model_spec& m_;
    const recipe& r_;
    const shape& s_;
    stage_input_info input_;
    stage_input_info encoder_;
    expansion& result_;
    std::uint8_t op_ = 0;
};

}  // namespace detail

constexpr expansion expand(const stage& st, const model_spec& m, const recipe& r, const shape& s,
                           stage_input_info input, stage_input_info encoder = {}) {
    expansion result;
    detail::kernel_expander(m, r, s, input, encoder, result).expand(st);
    return result;
}

}  // namespace anatomy
