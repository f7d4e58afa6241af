// One op of the lowered model: what it computes on, and the parameters it owns.
//
// The activation model attaches what each op allocates, saves for backward and
// frees to these same ops, so an op records its output width, which rows it
// runs over and, for attention, its head layout.
#pragma once

#include <anatomy/detail/checked.hpp>
#include <anatomy/model.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace anatomy {

enum class op_kind {
    embedding,      // table lookup
    linear,         // dense projection (nn.Linear or GPT-2's Conv1D)
    norm,           // LayerNorm or RMSNorm
    attention,      // scores, softmax, dropout and context of one attention call
    position_bias,  // T5 relative attention bias, computed once per stack
    rotary,         // RoPE applied to q or k
    activation,     // pointwise nonlinearity
    gate,           // elementwise product of a gated FFN
    dropout,
    residual,       // residual add (or embedding sum)
    scale,          // multiplication by a Python scalar
    pool,           // picks one row per sequence (first or last token)
    loss,           // cross-entropy over the head's logits
};

// What one row of an op's output is.
enum class rows_of { source_tokens, target_tokens, sequences };

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
    const char* module;  // HF module path inside its stage, e.g. "self_attn.q_proj" (a literal)
    rows_of rows;
    std::uint64_t in_width;   // features per input row
    std::uint64_t out_width;  // features per output row
    param_tensor weight;
    param_tensor bias;
    bool tied;                 // weight is an earlier op's (tied embeddings): counted once
    bool weight_shared_later;  // a later op is tied to this op's weight
    std::array<op_input, 3> inputs;  // no_input where unused

    activation act;  // for op_kind::activation
    double dropout;  // for op_kind::dropout and attention's probabilities

    // op_kind::attention
    std::uint64_t heads;
    std::uint64_t kv_heads;
    std::uint64_t head_dim;
    bool causal;
    rows_of key_rows;  // cross-attention reads keys from the encoder

    constexpr std::uint64_t params() const {
        return detail::checked_add(tied ? 0 : weight.numel(), bias.numel());
    }
};

}  // namespace anatomy
