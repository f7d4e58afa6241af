// One op of the lowered model: what it computes on, and the parameters it owns.
//
// The activation model attaches what each op allocates, saves for backward and
// frees to these same ops, so an op records its output width, which rows it
// runs over and, for attention, its head layout.
#pragma once

#include <anatomy/detail/checked.hpp>
#include <anatomy/model.hpp>

#include <cstdint>
#include <string_view>

namespace anatomy {

enum class op_kind {
    embedding,      // table lookup
    linear,         // dense projection (nn.Linear or GPT-2's Conv1D)
    norm,           // LayerNorm or RMSNorm
    attention,      // scores, softmax, dropout and context of one attention call
    position_bias,  // T5 relative attention bias, computed once per stack
    rotary,         // RoPE applied to q and k
    activation,     // pointwise nonlinearity
    gate,           // elementwise product of a gated FFN
    dropout,
    residual,       // residual add (or embedding sum)
    pool,           // picks one row per sequence (first or last token)
    loss,           // cross-entropy over the head's logits
};

// What one row of an op's output is.
enum class rows_of { source_tokens, target_tokens, sequences };

// A parameter tensor: a matrix [rows, cols] or a vector [rows] (cols == 0).
struct param_tensor {
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;

    constexpr std::uint64_t numel() const { return cols == 0 ? rows : detail::checked_mul(rows, cols); }
    constexpr bool empty() const { return rows == 0; }
    constexpr bool is_matrix() const { return cols != 0; }
};

struct op {
    op_kind kind = op_kind::linear;
    std::string_view module;  // HF module path inside its stage, e.g. "self_attn.q_proj"
    rows_of rows = rows_of::source_tokens;
    std::uint64_t in_width = 0;   // features per input row
    std::uint64_t out_width = 0;  // features per output row
    param_tensor weight{};
    param_tensor bias{};
    bool tied = false;  // weight is an earlier op's (tied embeddings): counted once

    activation act = activation::gelu;  // for op_kind::activation
    double dropout = 0.0;               // for op_kind::dropout and attention's probabilities

    // op_kind::attention
    std::uint64_t heads = 0;
    std::uint64_t kv_heads = 0;
    std::uint64_t head_dim = 0;
    bool causal = false;
    rows_of key_rows = rows_of::source_tokens;  // cross-attention reads keys from the encoder

    constexpr std::uint64_t params() const {
        return detail::checked_add(tied ? 0 : weight.numel(), bias.numel());
    }
};

}  // namespace anatomy
