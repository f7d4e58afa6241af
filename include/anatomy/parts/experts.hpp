// The experts part: a mixture of experts in place of the MLP. A router picks
// top_k of `count` experts per token; transformers 5.17 runs them with
// grouped_mm over the tokens sorted by expert (integrations/moe.py), so one
// layer's routed rows are tokens x top_k, however they split between experts.
#pragma once

#include <cstdint>

namespace anatomy {

// softmax or sigmoid over every expert's logit (kept in fp32 for backward),
// or gpt-oss's softmax over the top-k logits only, in their dtype.
enum class router_scoring { softmax, sigmoid, softmax_of_top_k };

struct experts_part {
    std::uint64_t count = 0;   // routed experts; 0: every layer has a dense MLP
    std::uint64_t top_k = 0;   // experts per token
    std::uint64_t hidden = 0;  // each expert's intermediate width (moe_intermediate_size)
    router_scoring scoring = router_scoring::softmax;
    // DeepSeek's router runs on fp32 copies of its input and weight.
    bool router_fp32 = false;
    // The routing weights reach the combine in fp32 (Mixtral, DeepSeek), which
    // makes the weighted expert outputs fp32; Qwen and OLMoE cast them back.
    bool fp32_combine = false;
    // Shared experts every token passes through: one gated MLP of this width
    // (DeepSeek: n_shared_experts x moe_intermediate_size); 0: none.
    std::uint64_t shared_hidden = 0;
    bool shared_gate = false;  // Qwen2-MoE: sigmoid(shared_expert_gate(x)) scales the shared expert
    // Layers before this one keep a dense MLP (DeepSeek's first_k_dense_replace).
    std::uint64_t first_dense = 0;
    // gpt-oss: biases on the router and on both expert projections, and its
    // clamped SwiGLU over interleaved gate/up halves: (up + 1) * gate * sigmoid(1.702 gate).
    bool biases = false;
    bool clamped_swiglu = false;
    // output_router_logits: the load-balancing loss. The model output keeps
    // each MoE layer's router logits, and the loss a softmax of them for
    // backward (Mixtral, Qwen-MoE, OLMoE, gpt-oss; DeepSeek and Llama 4 have none).
    bool aux_loss = false;
    // Llama 4: every token passes through every expert (bmm over [experts,
    // tokens, hidden]), its input scaled by the router's sigmoid score, which
    // is 0 for the experts it did not pick.
    bool dense_dispatch = false;

    // Rows the experts compute per token: top_k, or every expert.
    constexpr std::uint64_t rows_per_token() const { return dense_dispatch ? count : top_k; }

    constexpr bool enabled() const { return count > 0; }
};

}  // namespace anatomy
