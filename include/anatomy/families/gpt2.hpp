// GPT-2: a pre-norm decoder with learned positions and a fused c_attn.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec gpt2(const sizes& s, std::uint64_t positions = 1024, double dropout = 0.1,
                          double attention_dropout = 0.1, double embedding_dropout = 0.1) {
    model_spec m{};
    m.model_type = "gpt2";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .layout = qkv_layout::fused, .qkv_bias = true, .out_bias = true,
                   .positions = position_kind::none, .dropout = attention_dropout, .eager_softmax_fp32 = false};
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::gelu_new, .bias = true};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.placement = norm_placement::pre, .dropout = dropout};
    m.embedding = {.vocab = s.vocab, .positions = positions, .dropout = embedding_dropout};
    // GPT2LMHeadModel: its loss is a graph of its own under torch.compile.
    m.head = {.kind = task::causal_lm, .tied = s.tied, .loss_graph_break = true};
    m.names = {.embeddings = "transformer", .token_table = "wte", .position_table = "wpe", .layers = "transformer.h",
               .attention = "attn", .qkv = "c_attn", .o = "c_proj", .mlp = "mlp", .up = "c_fc", .down = "c_proj",
               .attention_norm = "ln_1", .mlp_norm = "ln_2", .final_stage = "transformer", .final_norm = "ln_f"};
    return m;
}

}  // namespace anatomy::families
