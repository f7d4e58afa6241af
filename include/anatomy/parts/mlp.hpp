// The MLP part: plain (up, activation, down) or gated (act(gate) * up, down).
#pragma once

#include <cstdint>

namespace anatomy {

// How transformers computes each activation matters, not only which it is:
// `gelu_tanh` is one kernel (gelu_pytorch_tanh), `gelu_new` a Python
// expression of eight (GPT-2's and GPT-J's NewGELUActivation), `bloom_gelu`
// one autograd function that saves only its input (BLOOM's GeLUFunction).
enum class activation { gelu, gelu_tanh, gelu_new, bloom_gelu, relu, silu, tanh, sigmoid };

enum class mlp_kind { plain, gated };

struct mlp_part {
    mlp_kind kind = mlp_kind::plain;
    std::uint64_t hidden = 0;  // the intermediate width
    activation act = activation::gelu;
    bool bias = false;
    // One projection computes gate and up side by side, then chunk(2) views
    // them (Phi-3's gate_up_proj, ModernBERT's Wi).
    bool fused_gate_up = false;
    double dropout = 0.0;  // inside the MLP, after the activation (T5, ModernBERT)
};

}  // namespace anatomy
