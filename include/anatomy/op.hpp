// One op of the lowered model: what it computes on, and the parameters it owns.
//
// The activation model attaches what each op allocates, saves for backward and
// frees to these same ops, so an op records its output width, which rows it
// runs over and, for attention, its head layout and window.
#pragma once

#include <anatomy/detail/checked.hpp>
#include <anatomy/model.hpp>

#include <array>
#include <cstdint>

namespace anatomy {

enum class op_kind {
    embedding,      // table lookup
    patch_embed,    // ViT's patch convolution over pixels, flattened to tokens
    cls_concat,     // ViT: cat(cls_token, patches)
    position_add,   // a learned position table added to every sequence (ViT)
    linear,         // dense projection (nn.Linear or GPT-2's Conv1D)
    norm,           // LayerNorm or RMSNorm
    attention,      // scores, softmax, dropout and context of one attention call
    position_bias,  // T5 relative attention bias, computed once per stack
    alibi,          // ALiBi slopes times positions, built once per forward
    mask,           // an attention mask, built once per forward
    concat,         // torch.cat of two tensors along features (MLA's q and k)
    cache_append,   // a DynamicCache update: a copy the step's output keeps (MLA's latent)
    router,         // a mixture of experts' router: logits, scores, top-k weights
    experts_up,     // tokens gathered by expert, then grouped_mm with the experts' gate_up_proj
    experts_down,   // grouped_mm with the experts' down_proj
    experts_combine,  // routing weights times expert outputs, back in token order, summed over top_k
    shared_experts_sum,  // the routed and the shared experts' outputs added: the MoE block returns
    clamped_swiglu,   // gpt-oss's gate: clamps, sigmoid, and the (up + 1) * glu product
    rotary,         // RoPE applied to q or k
    rotary_table,   // the cos and sin a rotary embedding module computes once per forward
    rotary_cast,    // RoPE's fp32 result cast back to q's or k's dtype, once both are rotated
    split,          // a view of part of a fused projection (q, k, v of a fused qkv; gate/up halves)
    activation,     // pointwise nonlinearity
    gate,           // elementwise product of a gated FFN
    dropout,
    residual,       // residual add (or embedding sum)
    add_in_place,   // x += y: x itself, now the sum (Falcon's mlp_output += attention_output)
    scale,          // multiplication by a Python scalar or a 0-d tensor
    softcap,        // tanh(x / cap) * cap
    pool,           // picks one row per sequence (first or last token)
    mean_pool,      // masked mean over each sequence's tokens
    loss,           // cross-entropy over the head's logits
};

// What one row of an op's output is: a token, a sequence, or one of the
// tokens x top_k (token, expert) pairs a mixture of experts routes.
enum class rows_of { source_tokens, target_tokens, sequences, routed_tokens };

// Where an op's input comes from: an earlier op of the same stage (its index),
// the stage's input (the previous stage's output), or the encoder's output
// (cross-attention keys and values).
using op_input = std::int16_t;
inline constexpr op_input stage_input = -1;
inline constexpr op_input encoder_output = -2;
inline constexpr op_input no_input = -3;

// A parameter tensor: a matrix [rows, cols] or a vector [rows] (cols == 0).
// Like op, it has no default member initializers (see static_vector); build it
// with braces, which zero what is left out.
struct param_tensor {
    std::uint64_t rows;
    std::uint64_t cols;  // 0 for a vector

    constexpr std::uint64_t numel() const { return cols == 0 ? rows : detail::checked_mul(rows, cols); }
    constexpr bool empty() const { return rows == 0; }
    constexpr bool is_matrix() const { return cols != 0; }
};

struct op {
    op_kind kind;
    module_path module;  // where it sits in its stage, e.g. {"self_attn", "q_proj"}
    rows_of rows;
    std::uint64_t in_width;   // features per input row
    std::uint64_t out_width;  // features per output row
    param_tensor weight;
    param_tensor bias;
    bool tied;                 // weight is an earlier op's (tied embeddings): counted once
    bool full_precision;       // never quantized: transformers keeps the head's linears (lm_head) as they are
    bool weight_shared_later;  // a later op is tied to this op's weight
    bool own_table_replaced;   // its stack also builds a table of this shape, which tying frees (T5's encoder embed_tokens)
    std::array<op_input, 3> inputs;  // no_input where unused

    activation act;   // op_kind::activation
    double dropout;   // op_kind::dropout and attention's probabilities
    double factor;    // op_kind::softcap: the cap
    std::uint64_t offset;  // op_kind::split: first feature of the view

    // op_kind::attention (and rotary: heads and head_dim). The rest of the
    // attention part is the model's (model_spec::attention).
    std::uint64_t heads;
    std::uint64_t kv_heads;
    std::uint64_t head_dim;
    std::uint64_t v_head_dim;
    std::uint64_t window;  // sliding window in tokens; 0: full
    bool causal;
    rows_of key_rows;  // cross-attention reads keys from the encoder

    constexpr std::uint64_t params() const {
        return detail::checked_add(tied ? 0 : weight.numel(), bias.numel());
    }
};

}  // namespace anatomy
