// ViT: a pre-norm encoder over image patches plus a CLS token.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec vit(const sizes& s, std::uint64_t image_size = 224, std::uint64_t patch_size = 16,
                         std::uint64_t channels = 3, std::uint64_t num_labels = 2, bool qkv_bias = true,
                         double dropout = 0.0, double attention_dropout = 0.0) {
    model_spec m{};
    m.model_type = "vit";
    m.stack = stack_kind::encoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .qkv_bias = qkv_bias, .out_bias = true, .positions = position_kind::none,
                   .dropout = attention_dropout, .eager_softmax_fp32 = false};
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::gelu, .bias = true};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.dropout = dropout};
    m.embedding = {.dropout = dropout, .image_size = image_size, .patch_size = patch_size, .channels = channels};
    m.head = {.kind = task::image_cls, .num_labels = num_labels, .tied = false,
              .classifier = classifier_kind::first_token};
    m.names = {.embeddings = "vit.embeddings", .layers = "vit.encoder.layer", .attention = "attention",
               .q = "attention.query", .k = "attention.key", .v = "attention.value", .o = "output.dense",
               .mlp = "", .up = "intermediate.dense", .down = "output.dense", .attention_norm = "layernorm_before",
               .mlp_norm = "layernorm_after", .final_stage = "vit", .final_norm = "layernorm"};
    return m;
}

}  // namespace anatomy::families
