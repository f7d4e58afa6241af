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
    bool block = false;          // a transformer layer: the unit gradient checkpointing recomputes
    bool encoder_output = false;  // its output feeds every cross-attention, so it lives until their backward
};

struct op_graph {
    detail::static_vector<stage, 12> stages;
};

namespace detail {

constexpr op make_op(op_kind kind, std::string_view module, rows_of rows, std::uint64_t in_width,
                     std::uint64_t out_width) {
    op o{};
    o.kind = kind;
    o.module = module.data();  // every module name is a string literal
    o.rows = rows;
    o.in_width = in_width;
    o.out_width = out_width;
    o.inputs = {no_input, no_input, no_input};
    return o;
}

// Appends ops to one stage; each call is one HF module or functional op and
// returns the op's index, which later ops name as their input.
class stage_builder {
public:
    constexpr explicit stage_builder(stage& target) : stage_(target) {}

    constexpr op_input embedding(std::string_view module, rows_of rows, std::uint64_t entries, std::uint64_t width,
                                 bool tied = false) {
        op o = make_op(op_kind::embedding, module, rows, 1, width);
        o.weight = {entries, width};
        o.tied = tied;
        return add(o);
    }
    constexpr op_input linear(std::string_view module, rows_of rows, std::uint64_t in, std::uint64_t out, bool bias,
                              op_input x, bool tied = false) {
        op o = make_op(op_kind::linear, module, rows, in, out);
        o.weight = {out, in};
        if (bias) o.bias = {out, 0};
        o.tied = tied;
        return add(o, {x, no_input, no_input});
    }
    constexpr op_input norm(std::string_view module, rows_of rows, std::uint64_t width, norm_kind kind, op_input x) {
        op o = make_op(op_kind::norm, module, rows, width, width);
        o.weight = {width, 0};
        if (kind == norm_kind::layer_norm) o.bias = {width, 0};
        return add(o, {x, no_input, no_input});
    }
    constexpr op_input attention(std::string_view module, rows_of rows, const model_spec& m, bool causal,
                                 rows_of key_rows, op_input q, op_input k, op_input v) {
        op o = make_op(op_kind::attention, module, rows, m.attention_width(), m.attention_width());
        o.heads = m.heads;
        o.kv_heads = m.kv_head_count();
        o.head_dim = m.head_width();
        o.causal = causal;
        o.key_rows = key_rows;
        o.dropout = m.attention_dropout;
        return add(o, {q, k, v});
    }
    constexpr op_input pointwise(op_kind kind, std::string_view module, rows_of rows, std::uint64_t width,
                                 std::array<op_input, 3> inputs) {
        return add(make_op(kind, module, rows, width, width), inputs);
    }
    constexpr op_input residual(std::string_view module, rows_of rows, std::uint64_t width, op_input branch,
                                op_input skip) {
        return pointwise(op_kind::residual, module, rows, width, {branch, skip, no_input});
    }
    constexpr op_input activation(std::string_view module, rows_of rows, std::uint64_t width, anatomy::activation act,
                                  op_input x) {
        const op_input i = pointwise(op_kind::activation, module, rows, width, {x, no_input, no_input});
        stage_.ops[static_cast<std::size_t>(i)].act = act;
        return i;
    }
    constexpr op_input dropout(std::string_view module, rows_of rows, std::uint64_t width, double p, op_input x) {
        const op_input i = pointwise(op_kind::dropout, module, rows, width, {x, no_input, no_input});
        stage_.ops[static_cast<std::size_t>(i)].dropout = p;
        return i;
    }
    constexpr op_input position_bias(std::string_view module, std::uint64_t buckets, std::uint64_t heads, bool causal,
                                     rows_of rows) {
        op o = make_op(op_kind::position_bias, module, rows, 1, heads);
        o.weight = {buckets, heads};
        o.heads = heads;
        o.causal = causal;
        return add(o);
    }
    constexpr void mark_weight_shared_later(op_input i) { stage_.ops[static_cast<std::size_t>(i)].weight_shared_later = true; }
    constexpr op_input pool(std::string_view module, std::uint64_t width, op_input x) {
        return pointwise(op_kind::pool, module, rows_of::sequences, width, {x, no_input, no_input});
    }
    constexpr op_input loss(rows_of rows, std::uint64_t classes, op_input logits) {
        return pointwise(op_kind::loss, "loss", rows, classes, {logits, no_input, no_input});
    }

private:
    constexpr op_input add(op o, std::array<op_input, 3> inputs = {no_input, no_input, no_input}) {
        o.inputs = inputs;
        stage_.ops.push_back(o);
        return static_cast<op_input>(stage_.ops.size() - 1);
    }

    stage& stage_;
};

class graph_builder {
public:
    constexpr stage_builder add(std::string_view name) {
        graph_.stages.push_back(stage{.name = name, .repeat = 1, .ops = {}});
        return stage_builder(graph_.stages.back());
    }
    constexpr stage_builder add_block(std::string_view name, std::uint64_t layers) {
        graph_.stages.push_back(stage{.name = name, .repeat = layers, .ops = {}, .block = true});
        return stage_builder(graph_.stages.back());
    }
    constexpr void mark_encoder_output() { graph_.stages.back().encoder_output = true; }
    // A tied LM head reuses the input embedding table, the first op of the
    // first stage; that table's gradient then arrives last and is added to the head's.
    constexpr void tie_first_embedding() { graph_.stages[0].ops[0].weight_shared_later = true; }
    constexpr op_graph result() const { return graph_; }

private:
    op_graph graph_{};
};

// Seq-cls heads of decoders: a bias-free `score` over every token, then the
// last token of each sequence is picked (transformers' *ForSequenceClassification).
constexpr void decoder_classifier(stage_builder head, const model_spec& m, op_input hidden) {
    const op_input logits = head.linear("score", rows_of::source_tokens, m.hidden, m.num_labels, false, hidden);
    head.loss(rows_of::sequences, m.num_labels, head.pool("pooled_logits", m.num_labels, logits));
}

constexpr void lower_bert_like(graph_builder& g, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    constexpr auto seqs = rows_of::sequences;
    const bool distil = m.arch == architecture::distilbert;
    const std::uint64_t h = m.hidden;
    const std::uint64_t a = m.attention_width();
    {
        auto e = g.add(distil ? "distilbert.embeddings" : "embeddings");
        op_input sum = e.embedding("word_embeddings", tok, m.vocab, h);
        if (m.token_types > 0)
            sum = e.residual("embeddings_sum", tok, h, sum, e.embedding("token_type_embeddings", tok, m.token_types, h));
        sum = e.residual("embeddings_sum", tok, h, sum, e.embedding("position_embeddings", tok, m.max_positions, h));
        e.dropout("dropout", tok, h, m.hidden_dropout, e.norm("LayerNorm", tok, h, m.norm, sum));
    }
    if (distil) {
        auto l = g.add_block("distilbert.transformer.layer", m.layers);
        const op_input q = l.linear("attention.q_lin", tok, h, a, m.qkv_bias, stage_input);
        const op_input k = l.linear("attention.k_lin", tok, h, a, m.qkv_bias, stage_input);
        const op_input v = l.linear("attention.v_lin", tok, h, a, m.qkv_bias, stage_input);
        const op_input ctx = l.attention("attention", tok, m, false, tok, q, k, v);
        const op_input out = l.linear("attention.out_lin", tok, a, h, m.attn_out_bias, ctx);
        const op_input sa = l.norm("sa_layer_norm", tok, h, m.norm, l.residual("attention_residual", tok, h, out, stage_input));
        const op_input up = l.linear("ffn.lin1", tok, h, m.ffn_hidden, m.mlp_bias, sa);
        const op_input act = l.activation("ffn.activation", tok, m.ffn_hidden, m.act, up);
        const op_input down = l.linear("ffn.lin2", tok, m.ffn_hidden, h, m.mlp_bias, act);
        const op_input drop = l.dropout("ffn.dropout", tok, h, m.hidden_dropout, down);
        l.norm("output_layer_norm", tok, h, m.norm, l.residual("ffn_residual", tok, h, drop, sa));

        auto head = g.add("head");
        op_input x = head.pool("first_token", h, stage_input);
        x = head.linear("pre_classifier", seqs, h, h, true, x);
        x = head.activation("pre_classifier_activation", seqs, h, activation::relu, x);
        x = head.dropout("dropout", seqs, h, 0.2, x);  // DistilBertConfig.seq_classif_dropout
        head.loss(seqs, m.num_labels, head.linear("classifier", seqs, h, m.num_labels, true, x));
        return;
    }
    auto l = g.add_block(m.arch == architecture::roberta ? "roberta.encoder.layer" : "bert.encoder.layer", m.layers);
    const op_input q = l.linear("attention.self.query", tok, h, a, m.qkv_bias, stage_input);
    const op_input k = l.linear("attention.self.key", tok, h, a, m.qkv_bias, stage_input);
    const op_input v = l.linear("attention.self.value", tok, h, a, m.qkv_bias, stage_input);
    const op_input ctx = l.attention("attention.self", tok, m, false, tok, q, k, v);
    op_input x = l.linear("attention.output.dense", tok, a, h, m.attn_out_bias, ctx);
    x = l.dropout("attention.output.dropout", tok, h, m.hidden_dropout, x);
    const op_input attn =
        l.norm("attention.output.LayerNorm", tok, h, m.norm, l.residual("attention.output.residual", tok, h, x, stage_input));
    x = l.linear("intermediate.dense", tok, h, m.ffn_hidden, m.mlp_bias, attn);
    x = l.activation("intermediate.intermediate_act_fn", tok, m.ffn_hidden, m.act, x);
    x = l.linear("output.dense", tok, m.ffn_hidden, h, m.mlp_bias, x);
    x = l.dropout("output.dropout", tok, h, m.hidden_dropout, x);
    l.norm("output.LayerNorm", tok, h, m.norm, l.residual("output.residual", tok, h, x, attn));

    auto head = g.add("head");
    x = head.pool("first_token", h, stage_input);
    if (m.arch == architecture::roberta) {
        x = head.dropout("classifier.dropout", seqs, h, m.hidden_dropout, x);
        x = head.linear("classifier.dense", seqs, h, h, true, x);
        x = head.activation("classifier.tanh", seqs, h, activation::tanh, x);
        x = head.dropout("classifier.dropout", seqs, h, m.hidden_dropout, x);
        x = head.linear("classifier.out_proj", seqs, h, m.num_labels, true, x);
    } else {
        x = head.linear("bert.pooler.dense", seqs, h, h, true, x);
        x = head.activation("bert.pooler.activation", seqs, h, activation::tanh, x);
        x = head.dropout("dropout", seqs, h, m.hidden_dropout, x);
        x = head.linear("classifier", seqs, h, m.num_labels, true, x);
    }
    head.loss(seqs, m.num_labels, x);
}

constexpr void lower_gpt2(graph_builder& g, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    const std::uint64_t h = m.hidden;
    const std::uint64_t a = m.attention_width();
    {
        auto e = g.add("transformer");
        const op_input sum = e.residual("embeddings_sum", tok, h, e.embedding("wte", tok, m.vocab, h),
                                        e.embedding("wpe", tok, m.max_positions, h));
        e.dropout("drop", tok, h, m.hidden_dropout, sum);
    }
    {
        auto l = g.add_block("transformer.h", m.layers);
        const op_input qkv = l.linear("attn.c_attn", tok, h, 3 * a, true, l.norm("ln_1", tok, h, m.norm, stage_input));
        // q, k and v are views of the one c_attn output.
        const op_input ctx = l.attention("attn", tok, m, true, tok, qkv, qkv, qkv);
        op_input x = l.linear("attn.c_proj", tok, a, h, true, ctx);
        x = l.dropout("attn.resid_dropout", tok, h, m.hidden_dropout, x);
        const op_input mid = l.residual("attention_residual", tok, h, x, stage_input);
        x = l.linear("mlp.c_fc", tok, h, m.ffn_hidden, true, l.norm("ln_2", tok, h, m.norm, mid));
        x = l.activation("mlp.act", tok, m.ffn_hidden, m.act, x);
        x = l.linear("mlp.c_proj", tok, m.ffn_hidden, h, true, x);
        x = l.dropout("mlp.dropout", tok, h, m.hidden_dropout, x);
        l.residual("mlp_residual", tok, h, x, mid);
    }
    // The final norm runs inside GPT2Model; the head gets its output.
    g.add("transformer").norm("ln_f", tok, h, m.norm, stage_input);
    auto head = g.add("head");
    if (m.head == task::seq_cls) return decoder_classifier(head, m, stage_input);
    head.loss(tok, m.vocab, head.linear("lm_head", tok, h, m.vocab, false, stage_input, m.tie_embeddings));
    if (m.tie_embeddings) g.tie_first_embedding();
}

constexpr void lower_llama_like(graph_builder& g, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    const std::uint64_t h = m.hidden;
    g.add("model").embedding("embed_tokens", tok, m.vocab, h);
    {
        auto l = g.add_block("model.layers", m.layers);
        const op_input n1 = l.norm("input_layernorm", tok, h, m.norm, stage_input);
        const op_input q = l.linear("self_attn.q_proj", tok, h, m.attention_width(), m.qkv_bias, n1);
        const op_input k = l.linear("self_attn.k_proj", tok, h, m.kv_width(), m.qkv_bias, n1);
        const op_input v = l.linear("self_attn.v_proj", tok, h, m.kv_width(), m.qkv_bias, n1);
        const op_input q_rot = l.pointwise(op_kind::rotary, "self_attn.rotary_q", tok, m.attention_width(), {q, no_input, no_input});
        const op_input k_rot = l.pointwise(op_kind::rotary, "self_attn.rotary_k", tok, m.kv_width(), {k, no_input, no_input});
        const op_input ctx = l.attention("self_attn", tok, m, true, tok, q_rot, k_rot, v);
        const op_input o = l.linear("self_attn.o_proj", tok, m.attention_width(), h, m.attn_out_bias, ctx);
        const op_input mid = l.residual("attention_residual", tok, h, o, stage_input);
        const op_input n2 = l.norm("post_attention_layernorm", tok, h, m.norm, mid);
        const op_input gate = l.linear("mlp.gate_proj", tok, h, m.ffn_hidden, m.mlp_bias, n2);
        const op_input act = l.activation("mlp.act_fn", tok, m.ffn_hidden, m.act, gate);
        const op_input up = l.linear("mlp.up_proj", tok, h, m.ffn_hidden, m.mlp_bias, n2);
        const op_input prod = l.pointwise(op_kind::gate, "mlp.gate", tok, m.ffn_hidden, {act, up, no_input});
        const op_input down = l.linear("mlp.down_proj", tok, m.ffn_hidden, h, m.mlp_bias, prod);
        l.residual("mlp_residual", tok, h, down, mid);
    }
    g.add("model").norm("norm", tok, h, m.norm, stage_input);
    auto head = g.add("head");
    if (m.head == task::seq_cls) return decoder_classifier(head, m, stage_input);
    head.loss(tok, m.vocab, head.linear("lm_head", tok, h, m.vocab, false, stage_input, m.tie_embeddings));
    if (m.tie_embeddings) g.tie_first_embedding();
}

// One T5 feed-forward sublayer (`layer.N`), plain or gated.
constexpr op_input t5_feed_forward(stage_builder l, const model_spec& m, rows_of rows, std::string_view norm_module,
                                   op_input x) {
    const std::uint64_t d = m.hidden;
    const op_input n = l.norm(norm_module, rows, d, m.norm, x);
    op_input hidden = no_input;
    if (m.ffn == ffn_kind::gated) {
        const op_input act = l.activation("DenseReluDense.act", rows, m.ffn_hidden, m.act,
                                          l.linear("DenseReluDense.wi_0", rows, d, m.ffn_hidden, false, n));
        const op_input lin = l.linear("DenseReluDense.wi_1", rows, d, m.ffn_hidden, false, n);
        hidden = l.pointwise(op_kind::gate, "DenseReluDense.gate", rows, m.ffn_hidden, {act, lin, no_input});
    } else {
        hidden = l.activation("DenseReluDense.act", rows, m.ffn_hidden, m.act,
                              l.linear("DenseReluDense.wi", rows, d, m.ffn_hidden, false, n));
    }
    hidden = l.dropout("DenseReluDense.dropout", rows, m.ffn_hidden, m.hidden_dropout, hidden);
    const op_input out = l.linear("DenseReluDense.wo", rows, m.ffn_hidden, d, false, hidden);
    return l.residual("ff_residual", rows, d, l.dropout("ff_dropout", rows, d, m.hidden_dropout, out), x);
}

struct t5_attention_names {
    std::string_view norm, q, k, v, core, o;
};

// One T5 attention sublayer: pre-norm, attention, dropout, residual. Keys and
// values come from `kv_source` (the normed input, or the encoder's output).
constexpr op_input t5_attention(stage_builder l, const model_spec& m, rows_of rows, rows_of key_rows, bool causal,
                                t5_attention_names names, op_input x, bool cross) {
    const std::uint64_t d = m.hidden;
    const std::uint64_t a = m.attention_width();
    const op_input n = l.norm(names.norm, rows, d, m.norm, x);
    const op_input kv_source = cross ? encoder_output : n;
    const op_input q = l.linear(names.q, rows, d, a, false, n);
    const op_input k = l.linear(names.k, key_rows, d, a, false, kv_source);
    const op_input v = l.linear(names.v, key_rows, d, a, false, kv_source);
    const op_input o = l.linear(names.o, rows, a, d, false, l.attention(names.core, rows, m, causal, key_rows, q, k, v));
    return l.residual("attention_residual", rows, d, l.dropout("attention_dropout", rows, d, m.hidden_dropout, o), x);
}

constexpr void lower_t5(graph_builder& g, const model_spec& m) {
    constexpr auto src = rows_of::source_tokens;
    constexpr auto tgt = rows_of::target_tokens;
    const std::uint64_t d = m.hidden;
    constexpr std::string_view bias_module = "block.0.layer.0.SelfAttention.relative_attention_bias";
    constexpr t5_attention_names self{"layer.0.layer_norm", "layer.0.SelfAttention.q", "layer.0.SelfAttention.k",
                                      "layer.0.SelfAttention.v", "layer.0.SelfAttention", "layer.0.SelfAttention.o"};
    constexpr t5_attention_names cross{"layer.1.layer_norm", "layer.1.EncDecAttention.q",
                                       "layer.1.EncDecAttention.k", "layer.1.EncDecAttention.v",
                                       "layer.1.EncDecAttention", "layer.1.EncDecAttention.o"};
    {
        auto e = g.add("encoder");
        const op_input embedded = e.embedding("shared", src, m.vocab, d);
        e.position_bias(bias_module, m.relative_buckets, m.heads, false, src);
        e.dropout("dropout", src, d, m.hidden_dropout, embedded);
    }
    {
        auto l = g.add_block("encoder.block", m.layers);
        t5_feed_forward(l, m, src, "layer.1.layer_norm", t5_attention(l, m, src, src, false, self, stage_input, false));
    }
    {
        auto f = g.add("encoder");
        f.dropout("dropout", src, d, m.hidden_dropout, f.norm("final_layer_norm", src, d, m.norm, stage_input));
        g.mark_encoder_output();
    }
    {
        auto e = g.add("decoder");
        const op_input embedded = e.embedding("embed_tokens", tgt, m.vocab, d, true);
        if (m.tie_embeddings) e.mark_weight_shared_later(embedded);
        e.position_bias(bias_module, m.relative_buckets, m.heads, true, tgt);
        e.dropout("dropout", tgt, d, m.hidden_dropout, embedded);
    }
    {
        auto l = g.add_block("decoder.block", m.decoder_layers);
        op_input x = t5_attention(l, m, tgt, tgt, true, self, stage_input, false);
        x = t5_attention(l, m, tgt, src, false, cross, x, true);
        t5_feed_forward(l, m, tgt, "layer.2.layer_norm", x);
    }
    {
        auto f = g.add("decoder");
        f.dropout("dropout", tgt, d, m.hidden_dropout, f.norm("final_layer_norm", tgt, d, m.norm, stage_input));
    }
    auto head = g.add("head");
    // A tied T5 head rescales the decoder output by d_model^-0.5 first.
    const op_input x = m.tie_embeddings ? head.pointwise(op_kind::scale, "rescale", tgt, d, {stage_input, no_input, no_input})
                                        : stage_input;
    head.loss(tgt, m.vocab, head.linear("lm_head", tgt, d, m.vocab, false, x, m.tie_embeddings));
    g.tie_first_embedding();  // the decoder's embed_tokens is always T5's `shared`
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
