// Lowers a model spec to its op graph.
//
// A transformer repeats one block, so the graph is a short list of stages,
// each a list of ops run `repeat` times in a row. This keeps a graph of any
// depth small enough to build and walk in constant evaluation, and lets a walk
// cost O(ops per block) instead of O(layers).
#pragma once

#include <anatomy/detail/static_vector.hpp>
#include <anatomy/model.hpp>
#include <anatomy/op.hpp>

#include <cstdint>
#include <string_view>

namespace anatomy {

struct stage {
    std::string_view name;  // HF module path of the stage, e.g. "model.layers"
    std::uint64_t repeat = 1;
    detail::static_vector<op, 32> ops;
};

struct op_graph {
    detail::static_vector<stage, 12> stages;
};

namespace detail {

// Appends ops to one stage; each call is one HF module or functional op.
class stage_builder {
public:
    constexpr explicit stage_builder(stage& target) : stage_(target) {}

    constexpr void embedding(std::string_view module, rows_of rows, std::uint64_t entries, std::uint64_t width,
                             bool tied = false) {
        op o{.kind = op_kind::embedding, .module = module, .rows = rows, .in_width = 1, .out_width = width};
        o.weight = {entries, width};
        o.tied = tied;
        stage_.ops.push_back(o);
    }
    constexpr void linear(std::string_view module, rows_of rows, std::uint64_t in, std::uint64_t out, bool bias,
                          bool tied = false) {
        op o{.kind = op_kind::linear, .module = module, .rows = rows, .in_width = in, .out_width = out};
        o.weight = {out, in};
        if (bias) o.bias = {out, 0};
        o.tied = tied;
        stage_.ops.push_back(o);
    }
    constexpr void norm(std::string_view module, rows_of rows, std::uint64_t width, norm_kind kind) {
        op o{.kind = op_kind::norm, .module = module, .rows = rows, .in_width = width, .out_width = width};
        o.weight = {width, 0};
        if (kind == norm_kind::layer_norm) o.bias = {width, 0};
        stage_.ops.push_back(o);
    }
    constexpr void attention(std::string_view module, rows_of rows, const model_spec& m, bool causal,
                             rows_of key_rows) {
        op o{.kind = op_kind::attention, .module = module, .rows = rows, .in_width = m.attention_width(),
             .out_width = m.attention_width()};
        o.heads = m.heads;
        o.kv_heads = m.kv_head_count();
        o.head_dim = m.head_width();
        o.causal = causal;
        o.key_rows = key_rows;
        o.dropout = m.attention_dropout;
        stage_.ops.push_back(o);
    }
    constexpr void pointwise(op_kind kind, std::string_view module, rows_of rows, std::uint64_t width) {
        stage_.ops.push_back(op{.kind = kind, .module = module, .rows = rows, .in_width = width, .out_width = width});
    }
    constexpr void activation(std::string_view module, rows_of rows, std::uint64_t width, anatomy::activation act) {
        pointwise(op_kind::activation, module, rows, width);
        stage_.ops.back().act = act;
    }
    constexpr void dropout(std::string_view module, rows_of rows, std::uint64_t width, double p) {
        pointwise(op_kind::dropout, module, rows, width);
        stage_.ops.back().dropout = p;
    }
    constexpr void position_bias(std::string_view module, std::uint64_t buckets, std::uint64_t heads, bool causal,
                                 rows_of rows) {
        op o{.kind = op_kind::position_bias, .module = module, .rows = rows, .in_width = 1, .out_width = heads};
        o.weight = {buckets, heads};
        o.heads = heads;
        o.causal = causal;
        stage_.ops.push_back(o);
    }
    constexpr void pool(std::string_view module, std::uint64_t width) {
        pointwise(op_kind::pool, module, rows_of::sequences, width);
    }
    constexpr void loss(rows_of rows, std::uint64_t classes) { pointwise(op_kind::loss, "loss", rows, classes); }

private:
    stage& stage_;
};

class graph_builder {
public:
    constexpr stage_builder add(std::string_view name, std::uint64_t repeat = 1) {
        graph_.stages.push_back(stage{.name = name, .repeat = repeat, .ops = {}});
        return stage_builder(graph_.stages.back());
    }
    constexpr op_graph result() const { return graph_; }

private:
    op_graph graph_{};
};

// Seq-cls heads of decoders: a bias-free `score` over every token, then the
// last token of each sequence is picked (transformers' *ForSequenceClassification).
constexpr void decoder_classifier(stage_builder head, const model_spec& m) {
    head.linear("score", rows_of::source_tokens, m.hidden, m.num_labels, false);
    head.pool("pooled_logits", m.num_labels);
    head.loss(rows_of::sequences, m.num_labels);
}

constexpr void lower_bert_like(graph_builder& g, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    const bool distil = m.arch == architecture::distilbert;
    const std::uint64_t h = m.hidden;
    const std::uint64_t a = m.attention_width();
    {
        auto e = g.add(distil ? "distilbert.embeddings" : "embeddings");
        e.embedding("word_embeddings", tok, m.vocab, h);
        if (m.token_types > 0) e.embedding("token_type_embeddings", tok, m.token_types, h);
        e.embedding("position_embeddings", tok, m.max_positions, h);
        e.pointwise(op_kind::residual, "embeddings_sum", tok, h);
        e.norm("LayerNorm", tok, h, m.norm);
        e.dropout("dropout", tok, h, m.hidden_dropout);
    }
    if (distil) {
        auto l = g.add("distilbert.transformer.layer", m.layers);
        l.linear("attention.q_lin", tok, h, a, m.qkv_bias);
        l.linear("attention.k_lin", tok, h, a, m.qkv_bias);
        l.linear("attention.v_lin", tok, h, a, m.qkv_bias);
        l.attention("attention", tok, m, false, tok);
        l.linear("attention.out_lin", tok, a, h, m.attn_out_bias);
        l.pointwise(op_kind::residual, "attention_residual", tok, h);
        l.norm("sa_layer_norm", tok, h, m.norm);
        l.linear("ffn.lin1", tok, h, m.ffn_hidden, m.mlp_bias);
        l.activation("ffn.activation", tok, m.ffn_hidden, m.act);
        l.linear("ffn.lin2", tok, m.ffn_hidden, h, m.mlp_bias);
        l.dropout("ffn.dropout", tok, h, m.hidden_dropout);
        l.pointwise(op_kind::residual, "ffn_residual", tok, h);
        l.norm("output_layer_norm", tok, h, m.norm);

        auto head = g.add("head");
        head.pool("first_token", h);
        head.linear("pre_classifier", rows_of::sequences, h, h, true);
        head.activation("pre_classifier_activation", rows_of::sequences, h, activation::relu);
        head.dropout("dropout", rows_of::sequences, h, 0.2);  // DistilBertConfig.seq_classif_dropout
        head.linear("classifier", rows_of::sequences, h, m.num_labels, true);
        head.loss(rows_of::sequences, m.num_labels);
        return;
    }
    auto l = g.add(m.arch == architecture::roberta ? "roberta.encoder.layer" : "bert.encoder.layer", m.layers);
    l.linear("attention.self.query", tok, h, a, m.qkv_bias);
    l.linear("attention.self.key", tok, h, a, m.qkv_bias);
    l.linear("attention.self.value", tok, h, a, m.qkv_bias);
    l.attention("attention.self", tok, m, false, tok);
    l.linear("attention.output.dense", tok, a, h, m.attn_out_bias);
    l.dropout("attention.output.dropout", tok, h, m.hidden_dropout);
    l.pointwise(op_kind::residual, "attention.output.residual", tok, h);
    l.norm("attention.output.LayerNorm", tok, h, m.norm);
    l.linear("intermediate.dense", tok, h, m.ffn_hidden, m.mlp_bias);
    l.activation("intermediate.intermediate_act_fn", tok, m.ffn_hidden, m.act);
    l.linear("output.dense", tok, m.ffn_hidden, h, m.mlp_bias);
    l.dropout("output.dropout", tok, h, m.hidden_dropout);
    l.pointwise(op_kind::residual, "output.residual", tok, h);
    l.norm("output.LayerNorm", tok, h, m.norm);

    auto head = g.add("head");
    constexpr auto seqs = rows_of::sequences;
    head.pool("first_token", h);
    if (m.arch == architecture::roberta) {
        head.dropout("classifier.dropout", seqs, h, m.hidden_dropout);
        head.linear("classifier.dense", seqs, h, h, true);
        head.activation("classifier.tanh", seqs, h, activation::tanh);
        head.dropout("classifier.dropout", seqs, h, m.hidden_dropout);
        head.linear("classifier.out_proj", seqs, h, m.num_labels, true);
    } else {
        head.linear("bert.pooler.dense", seqs, h, h, true);
        head.activation("bert.pooler.activation", seqs, h, activation::tanh);
        head.dropout("dropout", seqs, h, m.hidden_dropout);
        head.linear("classifier", seqs, h, m.num_labels, true);
    }
    head.loss(seqs, m.num_labels);
}

constexpr void lower_gpt2(graph_builder& g, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    const std::uint64_t h = m.hidden;
    {
        auto e = g.add("transformer");
        e.embedding("wte", tok, m.vocab, h);
        e.embedding("wpe", tok, m.max_positions, h);
        e.pointwise(op_kind::residual, "embeddings_sum", tok, h);
        e.dropout("drop", tok, h, m.hidden_dropout);
    }
    {
        auto l = g.add("transformer.h", m.layers);
        l.norm("ln_1", tok, h, m.norm);
        l.linear("attn.c_attn", tok, h, 3 * m.attention_width(), true);
        l.attention("attn", tok, m, true, tok);
        l.linear("attn.c_proj", tok, m.attention_width(), h, true);
        l.dropout("attn.resid_dropout", tok, h, m.hidden_dropout);
        l.pointwise(op_kind::residual, "attention_residual", tok, h);
        l.norm("ln_2", tok, h, m.norm);
        l.linear("mlp.c_fc", tok, h, m.ffn_hidden, true);
        l.activation("mlp.act", tok, m.ffn_hidden, m.act);
        l.linear("mlp.c_proj", tok, m.ffn_hidden, h, true);
        l.dropout("mlp.dropout", tok, h, m.hidden_dropout);
        l.pointwise(op_kind::residual, "mlp_residual", tok, h);
    }
    auto head = g.add("head");
    head.norm("transformer.ln_f", tok, h, m.norm);
    if (m.head == task::seq_cls) return decoder_classifier(head, m);
    head.linear("lm_head", tok, h, m.vocab, false, m.tie_embeddings);
    head.loss(tok, m.vocab);
}

constexpr void lower_llama_like(graph_builder& g, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    const std::uint64_t h = m.hidden;
    g.add("model").embedding("embed_tokens", tok, m.vocab, h);
    {
        auto l = g.add("model.layers", m.layers);
        l.norm("input_layernorm", tok, h, m.norm);
        l.linear("self_attn.q_proj", tok, h, m.attention_width(), m.qkv_bias);
        l.linear("self_attn.k_proj", tok, h, m.kv_width(), m.qkv_bias);
        l.linear("self_attn.v_proj", tok, h, m.kv_width(), m.qkv_bias);
        l.pointwise(op_kind::rotary, "self_attn.rotary", tok, m.attention_width() + m.kv_width());
        l.attention("self_attn", tok, m, true, tok);
        l.linear("self_attn.o_proj", tok, m.attention_width(), h, m.attn_out_bias);
        l.pointwise(op_kind::residual, "attention_residual", tok, h);
        l.norm("post_attention_layernorm", tok, h, m.norm);
        l.linear("mlp.gate_proj", tok, h, m.ffn_hidden, m.mlp_bias);
        l.activation("mlp.act_fn", tok, m.ffn_hidden, m.act);
        l.linear("mlp.up_proj", tok, h, m.ffn_hidden, m.mlp_bias);
        l.pointwise(op_kind::gate, "mlp.gate", tok, m.ffn_hidden);
        l.linear("mlp.down_proj", tok, m.ffn_hidden, h, m.mlp_bias);
        l.pointwise(op_kind::residual, "mlp_residual", tok, h);
    }
    auto head = g.add("head");
    head.norm("model.norm", tok, h, m.norm);
    if (m.head == task::seq_cls) return decoder_classifier(head, m);
    head.linear("lm_head", tok, h, m.vocab, false, m.tie_embeddings);
    head.loss(tok, m.vocab);
}

// One T5 feed-forward sublayer (`layer.N`), plain or gated.
constexpr void t5_feed_forward(stage_builder l, const model_spec& m, rows_of rows, std::string_view norm_module) {
    const std::uint64_t d = m.hidden;
    l.norm(norm_module, rows, d, m.norm);
    if (m.ffn == ffn_kind::gated) {
        l.linear("DenseReluDense.wi_0", rows, d, m.ffn_hidden, false);
        l.activation("DenseReluDense.act", rows, m.ffn_hidden, m.act);
        l.linear("DenseReluDense.wi_1", rows, d, m.ffn_hidden, false);
        l.pointwise(op_kind::gate, "DenseReluDense.gate", rows, m.ffn_hidden);
    } else {
        l.linear("DenseReluDense.wi", rows, d, m.ffn_hidden, false);
        l.activation("DenseReluDense.act", rows, m.ffn_hidden, m.act);
    }
    l.dropout("DenseReluDense.dropout", rows, m.ffn_hidden, m.hidden_dropout);
    l.linear("DenseReluDense.wo", rows, m.ffn_hidden, d, false);
    l.dropout("ff_dropout", rows, d, m.hidden_dropout);
    l.pointwise(op_kind::residual, "ff_residual", rows, d);
}

constexpr void t5_attention(stage_builder l, const model_spec& m, rows_of rows, rows_of key_rows, bool causal,
                            std::string_view norm, std::string_view q, std::string_view k, std::string_view v,
                            std::string_view core, std::string_view o) {
    const std::uint64_t d = m.hidden;
    const std::uint64_t a = m.attention_width();
    l.norm(norm, rows, d, m.norm);
    l.linear(q, rows, d, a, false);
    l.linear(k, key_rows, d, a, false);
    l.linear(v, key_rows, d, a, false);
    l.attention(core, rows, m, causal, key_rows);
    l.linear(o, rows, a, d, false);
    l.dropout("attention_dropout", rows, d, m.hidden_dropout);
    l.pointwise(op_kind::residual, "attention_residual", rows, d);
}

constexpr void lower_t5(graph_builder& g, const model_spec& m) {
    constexpr auto src = rows_of::source_tokens;
    constexpr auto tgt = rows_of::target_tokens;
    const std::uint64_t d = m.hidden;
    {
        auto e = g.add("encoder");
        e.embedding("shared", src, m.vocab, d);
        e.dropout("dropout", src, d, m.hidden_dropout);
        e.position_bias("block.0.layer.0.SelfAttention.relative_attention_bias", m.relative_buckets, m.heads, false,
                        src);
    }
    {
        auto l = g.add("encoder.block", m.layers);
        t5_attention(l, m, src, src, false, "layer.0.layer_norm", "layer.0.SelfAttention.q", "layer.0.SelfAttention.k",
                     "layer.0.SelfAttention.v", "layer.0.SelfAttention", "layer.0.SelfAttention.o");
        t5_feed_forward(l, m, src, "layer.1.layer_norm");
    }
    {
        auto f = g.add("encoder");
        f.norm("final_layer_norm", src, d, m.norm);
        f.dropout("dropout", src, d, m.hidden_dropout);
    }
    {
        auto e = g.add("decoder");
        e.embedding("embed_tokens", tgt, m.vocab, d, true);
        e.dropout("dropout", tgt, d, m.hidden_dropout);
        e.position_bias("block.0.layer.0.SelfAttention.relative_attention_bias", m.relative_buckets, m.heads, true,
                        tgt);
    }
    {
        auto l = g.add("decoder.block", m.decoder_layers);
        t5_attention(l, m, tgt, tgt, true, "layer.0.layer_norm", "layer.0.SelfAttention.q", "layer.0.SelfAttention.k",
                     "layer.0.SelfAttention.v", "layer.0.SelfAttention", "layer.0.SelfAttention.o");
        t5_attention(l, m, tgt, src, false, "layer.1.layer_norm", "layer.1.EncDecAttention.q",
                     "layer.1.EncDecAttention.k", "layer.1.EncDecAttention.v", "layer.1.EncDecAttention",
                     "layer.1.EncDecAttention.o");
        t5_feed_forward(l, m, tgt, "layer.2.layer_norm");
    }
    auto head = g.add("decoder");
    head.norm("final_layer_norm", tgt, d, m.norm);
    head.dropout("dropout", tgt, d, m.hidden_dropout);
    head.linear("lm_head", tgt, d, m.vocab, false, m.tie_embeddings);
    head.loss(tgt, m.vocab);
}

}  // namespace detail

constexpr op_graph lower(const model_spec& m) {
    validate(m);
    detail::graph_builder g;
    switch (family_of(m.arch)) {
        case family::encoder: detail::lower_bert_like(g, m); break;
        case family::decoder:
            if (m.arch == architecture::gpt2) detail::lower_gpt2(g, m);
            else detail::lower_llama_like(g, m);
            break;
        case family::encoder_decoder: detail::lower_t5(g, m); break;
    }
    return g.result();
}

// Calls f(stage, op) for every op, once per stage (not per repeat).
template <class F>
constexpr void for_each_op(const op_graph& graph, F&& f) {
    for (const stage& s : graph.stages)
        for (const op& o : s.ops) f(s, o);
}

constexpr std::uint64_t parameter_count(const op_graph& graph) {
    std::uint64_t total = 0;
    for_each_op(graph, [&](const stage& s, const op& o) {
        total = detail::checked_add(total, detail::checked_mul(s.repeat, o.params()));
    });
    return total;
}

}  // namespace anatomy
