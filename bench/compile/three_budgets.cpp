// Compile-time cost of the library's headline use: three memory budgets
// checked by static_assert. Compared against std_only.cpp by compile_time.sh.
#include <anatomy/anatomy.hpp>

namespace {

using namespace anatomy;

constexpr recipe fp32_adamw{.weights = dtype::fp32, .optimizer = optimizer_kind::adamw};
constexpr recipe bf16_adamw{.weights = dtype::bf16, .optimizer = optimizer_kind::adamw};

// The shapes leave headroom below each budget, so that refinements of the
// memory model do not break this benchmark (the cost measured is per op, not
// per byte: the shape does not change it).

// llama-3-8b, bf16 weights + AdamW, one 2048-token sequence, on an 80 GiB card.
constexpr memory_estimate llama = estimate(presets::llama_3_8b, bf16_adamw, shape{.batch = 1, .seq = 2048});
static_assert(fits_budget<llama.peak, 80 * GiB>());

// bert-large, fp32 + AdamW, batch 4 x 512 tokens, on a 16 GiB card.
constexpr memory_estimate bert = estimate(presets::bert_large, fp32_adamw, shape{.batch = 4, .seq = 512});
static_assert(fits_budget<bert.peak, 16 * GiB>());

// gpt2 (124M), fp32 + AdamW, batch 2 x 1024 tokens, on an 8 GiB card.
constexpr memory_estimate gpt = estimate(presets::gpt2, fp32_adamw, shape{.batch = 2, .seq = 1024});
static_assert(fits_budget<gpt.peak, 8 * GiB>());

}  // namespace
