// BERT, RoBERTa and DistilBERT: post-norm encoders with learned positions.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec bert(const sizes& s, double dropout = 0.1, double attention_dropout = 0.1) {
    model_spec m{};
    m.model_type = "bert";
    m.stack = stack_kind::encoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .qkv_bias = true, .out_bias = true, .positions = position_kind::none,
                   .dropout = attention_dropout, .eager_softmax_fp32 = false};
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::gelu, .bias = true};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.placement = norm_placement::post_residual, .dropout = dropout, .final_norm = false};
    m.embedding = {.vocab = s.vocab, .positions = 512, .token_types = 2, .norm = true, .dropout = dropout};
    m.head = {.kind = task::seq_cls, .tied = true, .classifier = classifier_kind::pooler_tanh,
              .classifier_dropout = dropout, .loss_upcast = false};
    m.names = {.embeddings = "bert.embeddings", .token_table = "word_embeddings", .position_table = "position_embeddings",
               .embedding_norm = "LayerNorm", .layers = "bert.encoder.layer", .attention = "attention",
               .q = "self.query", .k = "self.key", .v = "self.value", .o = "output.dense", .mlp = "",
               .up = "intermediate.dense", .down = "output.dense",
               .attention_out_norm = "attention.output.LayerNorm", .mlp_out_norm = "output.LayerNorm",
               .final_stage = "bert", .lm_head = "cls.predictions.decoder"};
    return m;
}

// RoBERTa numbers positions from padding_idx + 1: two rows are never used.
constexpr model_spec roberta(const sizes& s, double dropout = 0.1, double attention_dropout = 0.1) {
    model_spec m = bert(s, dropout, attention_dropout);
    m.model_type = "roberta";
    m.embedding.positions = 514;
    m.embedding.reserved_positions = 2;
    m.embedding.token_types = 1;
    m.head.classifier = classifier_kind::dense_tanh;
    m.names.embeddings = "roberta.embeddings";
    m.names.layers = "roberta.encoder.layer";
    m.names.final_stage = "roberta";
    m.names.lm_head = "lm_head.decoder";
    return m;
}

// DistilBERT: no token types, and no dropout on the attention output.
constexpr model_spec distilbert(const sizes& s, double dropout = 0.1, double attention_dropout = 0.1,
                                double classifier_dropout = 0.2) {
    model_spec m = bert(s, dropout, attention_dropout);
    m.model_type = "distilbert";
    m.embedding.token_types = 0;
    m.block.attention_branch_dropout = false;
    m.head.classifier = classifier_kind::pre_classifier_relu;
    m.head.classifier_dropout = classifier_dropout;  // DistilBertConfig.seq_classif_dropout
    m.names = {.embeddings = "distilbert.embeddings", .token_table = "word_embeddings",
               .position_table = "position_embeddings", .embedding_norm = "LayerNorm",
               .layers = "distilbert.transformer.layer", .attention = "attention", .q = "q_lin", .k = "k_lin",
               .v = "v_lin", .o = "out_lin", .mlp = "ffn", .up = "lin1", .down = "lin2",
               .attention_out_norm = "sa_layer_norm", .mlp_out_norm = "output_layer_norm",
               .final_stage = "distilbert", .lm_head = "vocab_projector"};
    return m;
}

}  // namespace anatomy::families
