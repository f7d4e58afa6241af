// Lowers a model spec to its op graph.
//
// A transformer repeats its blocks, so the graph is a short list of stages,
// each a list of ops run `repeat` times in a row. Layers that differ (sliding
// and full attention) are stages of their own; a pattern that repeats over
// the depth is one cycle of stages walked `times` times. This keeps a graph of
// any depth small enough to build and walk in constant evaluation, and lets a
// walk cost O(ops per block) instead of O(layers).
//
// The block is assembled from the model's parts (attention, MLP, norms and
// their placement, residual style): no family has a branch of its own here.
#pragma once

#include <anatomy/detail/static_vector.hpp>
#include <anatomy/model.hpp>
#include <anatomy/op.hpp>

#include <cstdint>
#include <string_view>

namespace anatomy {

inline constexpr std::size_t max_ops_per_stage = 48;
inline constexpr std::size_t max_stages = 24;

struct stage {
    std::string_view name;  // HF module path of the stage, e.g. "model.layers"
    std::uint64_t repeat = 1;
    detail::static_vector<op, max_ops_per_stage> ops;
    bool block = false;           // a transformer layer: the unit gradient checkpointing recomputes
    bool encoder_output = false;  // its output feeds every cross-attention, so it lives until their backward
    // A stack's final norm (and projection), run while the model's forward
    // still holds its embedding output: Llama-style code names it
    // inputs_embeds and starts the hidden states as it, and it dies when the
    // forward returns (traced: gemma-3-1b serving). Where the hidden states
    // start as a sum or a norm of it (GPT-2, BERT, BLOOM) the layers hold
    // what the embeddings stage hands on only until they are done. (GPT-2's
    // forward holds its two lookups to its end instead, which is not
    // walked: docs/accuracy.md, "What is not modelled".)
    bool closes_stack = false;
    // The task head: the base model (its masks and rotary tables) has
    // returned before it runs.
    bool head = false;
    // The op whose result leaves the stage; -1: its last. The embeddings
    // build masks and rotary tables after the hidden states they hand on.
    op_input output = -1;

    constexpr std::size_t output_op() const { return output < 0 ? ops.size() - 1 : static_cast<std::size_t>(output); }
};

// Stages [first, first + count) run in order, `times` times over (a layer
// pattern); times == 1 when the graph has no cycle.
struct layer_cycle {
    std::size_t first = 0;
    std::size_t count = 0;
    std::uint64_t times = 1;

    constexpr bool contains(std::size_t stage_index) const {
        return times > 1 && stage_index >= first && stage_index < first + count;
    }
};

struct op_graph {
    detail::static_vector<stage, max_stages> stages;
    layer_cycle cycle{};

    // How many times stage i runs in one forward: its repeat, times the cycle's.
    constexpr std::uint64_t copies(std::size_t i) const {
        return detail::checked_mul(stages[i].repeat, cycle.contains(i) ? cycle.times : 1);
    }
};

namespace detail {

constexpr op make_op(op_kind kind, module_path module, rows_of rows, std::uint64_t in_width, std::uint64_t out_width) {
    op o{};
    o.kind = kind;
    o.module = module;
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

    constexpr op_input embedding(module_path module, rows_of rows, std::uint64_t entries, std::uint64_t width,
                                 bool tied = false) {
        op o = make_op(op_kind::embedding, module, rows, 1, width);
        o.weight = {entries, width};
        o.tied = tied;
        return add(o);
    }
    constexpr op_input linear(module_path module, rows_of rows, std::uint64_t in, std::uint64_t out, bool bias,
                              op_input x, bool tied = false) {
        op o = make_op(op_kind::linear, module, rows, in, out);
        o.weight = {out, in};
        if (bias) o.bias = {out, 0};
        o.tied = tied;
        return add(o, {x, no_input, no_input});
    }
    // A norm over `width` features; `per_head` > 0 normalizes each of that
    // many heads of width / per_head features on its own (q/k norms).
    // `weighted`: false for a norm without parameters (Llama 4's L2 q/k norm).
    constexpr op_input norm(module_path module, rows_of rows, std::uint64_t width, const norm_part& part, op_input x,
                            std::uint64_t per_head = 0, bool weighted = true) {
        op o = make_op(op_kind::norm, module, rows, width, width);
        const std::uint64_t features = per_head == 0 ? width : width / per_head;
        if (weighted) o.weight = {features, 0};
        if (weighted && part.kind == norm_kind::layer_norm && part.bias) o.bias = {features, 0};
        o.heads = per_head;
        return add(o, {x, no_input, no_input});
    }
    constexpr op_input attention(module_path module, rows_of rows, const model_spec& m, bool causal,
                                 std::uint64_t window, rows_of key_rows, op_input q, op_input k, op_input v) {
        op o = make_op(op_kind::attention, module, rows, m.q_width(), m.attention_out_width());
        if (m.attention.sinks) o.weight = {m.heads(), 0};  // gpt-oss's sinks [heads]
        o.heads = m.heads();
        o.kv_heads = m.kv_head_count();
        o.head_dim = m.head_width();
        o.v_head_dim = m.v_head_width();
        o.causal = causal;
        o.window = window;
        o.key_rows = key_rows;
        o.dropout = m.attention.dropout;
        return add(o, {q, k, v});
    }
    // RoPE on `heads` heads of `head_dim` features (0: the model's head width).
    constexpr op_input rotary(module_path module, rows_of rows, std::uint64_t heads, const model_spec& m, op_input x,
                              std::uint64_t head_dim = 0) {
        const std::uint64_t width = detail::checked_mul(heads, head_dim == 0 ? m.head_width() : head_dim);
        op o = make_op(op_kind::rotary, module, rows, width, width);
        o.heads = heads;
        o.head_dim = head_dim == 0 ? m.head_width() : head_dim;
        return add(o, {x, no_input, no_input});
    }
    // A rotated tensor cast back to the dtype of `original`, the rotation's input.
    constexpr op_input rotary_cast(module_path module, rows_of rows, std::uint64_t width, op_input rotated,
                                   op_input original) {
        op o = make_op(op_kind::rotary_cast, module, rows, width, width);
        return add(o, {rotated, original, no_input});
    }
    constexpr op_input concat(module_path module, rows_of rows, std::uint64_t width, op_input a, op_input b) {
        return add(make_op(op_kind::concat, module, rows, width, width), {a, b, no_input});
    }
    constexpr op_input cache_append(module_path module, rows_of rows, std::uint64_t width, op_input x) {
        return add(make_op(op_kind::cache_append, module, rows, width, width), {x, no_input, no_input});
    }
    // The router: logits over `experts.count`, scores, top-k weights per token.
    constexpr op_input router(module_path module, const model_spec& m, op_input x) {
        op o = make_op(op_kind::router, module, rows_of::source_tokens, m.hidden, m.experts.count);
        o.weight = {m.experts.count, m.hidden};
        if (m.experts.biases) o.bias = {m.experts.count, 0};
        return add(o, {x, no_input, no_input});
    }
    // The experts' 3-D gate_up_proj [count, 2 x hidden, model hidden] and
    // down_proj [count, model hidden, hidden], held here as matrices of the same size.
    constexpr op_input experts_up(module_path module, const model_spec& m, op_input x, op_input scores) {
        const std::uint64_t width = detail::checked_mul(2, m.experts.hidden);
        op o = make_op(op_kind::experts_up, module, rows_of::routed_tokens, m.hidden, width);
        o.weight = {detail::checked_mul(m.experts.count, width), m.hidden};
        if (m.experts.biases) o.bias = {detail::checked_mul(m.experts.count, width), 0};
        return add(o, {x, scores, no_input});
    }
    constexpr op_input experts_down(module_path module, const model_spec& m, op_input x) {
        op o = make_op(op_kind::experts_down, module, rows_of::routed_tokens, m.experts.hidden, m.hidden);
        o.weight = {detail::checked_mul(m.experts.count, m.hidden), m.experts.hidden};
        if (m.experts.biases) o.bias = {detail::checked_mul(m.experts.count, m.hidden), 0};
        return add(o, {x, no_input, no_input});
    }
    // The experts' outputs weighted by the routing weights experts_up gathered.
    constexpr op_input experts_combine(module_path module, const model_spec& m, op_input down) {
        return add(make_op(op_kind::experts_combine, module, rows_of::source_tokens, m.hidden, m.hidden),
                   {down, no_input, no_input});
    }
    // A view of features [offset, offset + width) of a fused projection's
    // output; `heads` > 0 marks q, k or v of a fused qkv.
    constexpr op_input split(module_path module, rows_of rows, std::uint64_t offset, std::uint64_t width, op_input x,
                             std::uint64_t heads = 0) {
        op o = make_op(op_kind::split, module, rows, width, width);
        o.offset = offset;
        o.heads = heads;
        return add(o, {x, no_input, no_input});
    }
    // The attention mask a model builds once per forward for layers of one
    // window (0: causal over the whole sequence).
    constexpr op_input mask(module_path module, std::uint64_t window) {
        op o = make_op(op_kind::mask, module, rows_of::source_tokens, 1, 1);
        o.window = window;
        return add(o);
    }
    constexpr op_input pointwise(op_kind kind, module_path module, rows_of rows, std::uint64_t width,
                                 std::array<op_input, 3> inputs) {
        return add(make_op(kind, module, rows, width, width), inputs);
    }
    constexpr op_input shared_experts_sum(module_path module, const model_spec& m, op_input routed, op_input shared) {
        return pointwise(op_kind::shared_experts_sum, module, rows_of::source_tokens, m.hidden, {routed, shared, no_input});
    }
    constexpr op_input residual(module_path module, rows_of rows, std::uint64_t width, op_input branch, op_input skip) {
        return pointwise(op_kind::residual, module, rows, width, {branch, skip, no_input});
    }
    constexpr op_input add_in_place(module_path module, rows_of rows, std::uint64_t width, op_input x, op_input y) {
        return pointwise(op_kind::add_in_place, module, rows, width, {x, y, no_input});
    }
    constexpr op_input activation(module_path module, rows_of rows, std::uint64_t width, anatomy::activation act,
                                  op_input x) {
        const op_input i = pointwise(op_kind::activation, module, rows, width, {x, no_input, no_input});
        at(i).act = act;
        return i;
    }
    constexpr op_input dropout(module_path module, rows_of rows, std::uint64_t width, double p, op_input x) {
        if (p <= 0.0) return x;  // nn.Dropout(0) returns its input
        const op_input i = pointwise(op_kind::dropout, module, rows, width, {x, no_input, no_input});
        at(i).dropout = p;
        return i;
    }
    constexpr op_input softcap(module_path module, rows_of rows, std::uint64_t width, double cap, op_input x) {
        const op_input i = pointwise(op_kind::softcap, module, rows, width, {x, no_input, no_input});
        at(i).factor = cap;
        return i;
    }
    constexpr op_input position_bias(module_path module, std::uint64_t buckets, std::uint64_t heads, bool causal,
                                     rows_of rows) {
        op o = make_op(op_kind::position_bias, module, rows, 1, heads);
        o.weight = {buckets, heads};
        o.heads = heads;
        o.causal = causal;
        return add(o);
    }
    // The cos and sin tables of a rotary embedding module, for every layer it serves.
    constexpr op_input rotary_table(module_path module) {
        return add(make_op(op_kind::rotary_table, module, rows_of::source_tokens, 1, 1));
    }
    // The stage hands on op `i`'s result, not its last op's.
    constexpr void set_output(op_input i) { stage_.output = i; }
    constexpr op_input alibi(module_path module, std::uint64_t heads) {
        op o = make_op(op_kind::alibi, module, rows_of::source_tokens, 1, heads);
        o.heads = heads;
        return add(o);
    }
    // ViT: Conv2d(channels, hidden, patch, stride=patch) over the pixels.
    constexpr op_input patch_embed(module_path module, const embedding_part& e, std::uint64_t hidden) {
        op o = make_op(op_kind::patch_embed, module, rows_of::source_tokens, e.channels * e.patch_size * e.patch_size,
                       hidden);
        o.weight = {hidden, e.channels * e.patch_size * e.patch_size};
        o.bias = {hidden, 0};
        return add(o);
    }
    constexpr op_input cls_concat(module_path module, std::uint64_t hidden, op_input patches) {
        op o = make_op(op_kind::cls_concat, module, rows_of::source_tokens, hidden, hidden);
        o.weight = {hidden, 0};  // cls_token [1, 1, hidden]
        return add(o, {patches, no_input, no_input});
    }
    constexpr op_input position_add(module_path module, std::uint64_t positions, std::uint64_t hidden, op_input x) {
        op o = make_op(op_kind::position_add, module, rows_of::source_tokens, hidden, hidden);
        o.weight = {positions, hidden};
        return add(o, {x, no_input, no_input});
    }
    constexpr void mark_weight_shared_later(op_input i) { at(i).weight_shared_later = true; }
    constexpr void mark_own_table_replaced(op_input i) { at(i).own_table_replaced = true; }
    constexpr op_input pool(module_path module, std::uint64_t width, op_input x) {
        return pointwise(op_kind::pool, module, rows_of::sequences, width, {x, no_input, no_input});
    }
    constexpr op_input mean_pool(module_path module, std::uint64_t width, op_input x) {
        return pointwise(op_kind::mean_pool, module, rows_of::sequences, width, {x, no_input, no_input});
    }
    constexpr op_input loss(rows_of rows, std::uint64_t classes, op_input logits) {
        return pointwise(op_kind::loss, {"", "loss"}, rows, classes, {logits, no_input, no_input});
    }

private:
    constexpr op& at(op_input i) { return stage_.ops[static_cast<std::size_t>(i)]; }
    constexpr op_input add(op o, std::array<op_input, 3> inputs = {no_input, no_input, no_input}) {
        o.inputs = inputs;
        stage_.ops.push_back(o);
        return static_cast<op_input>(stage_.ops.size() - 1);
    }

    stage& stage_;
};

// Builds into a graph its caller owns, so that lower() returns that graph
// itself, not a copy of every stage and op.
class graph_builder {
public:
    constexpr explicit graph_builder(op_graph& graph) : graph_(graph) {}

    constexpr stage_builder add(std::string_view name) {
        graph_.stages.push_back(stage{.name = name, .repeat = 1, .ops = {}});
        return stage_builder(graph_.stages.back());
    }
    constexpr stage_builder add_head() {
        graph_.stages.push_back(stage{.name = "head", .repeat = 1, .ops = {}, .head = true});
        return stage_builder(graph_.stages.back());
    }
    constexpr stage_builder add_block(std::string_view name, std::uint64_t layers) {
        graph_.stages.push_back(stage{.name = name, .repeat = layers, .ops = {}, .block = true});
        return stage_builder(graph_.stages.back());
    }
    constexpr std::size_t size() const { return graph_.stages.size(); }
    constexpr void set_cycle(layer_cycle c) { graph_.cycle = c; }
    constexpr void mark_encoder_output() { graph_.stages.back().encoder_output = true; }
    constexpr void mark_closes_stack() { graph_.stages.back().closes_stack = true; }
    // bitsandbytes' integration converts every nn.Linear but the output head.
    constexpr void keep_last_stage_precision() {
        for (op& o : graph_.stages.back().ops) o.full_precision = true;
    }
    // A tied LM head reuses the input embedding table, the first embedding of
    // the first stage; that table's gradient then arrives last and is added to the head's.
    constexpr void tie_first_embedding() {
        for (op& o : graph_.stages[0].ops) {
            if (o.kind != op_kind::embedding) continue;
            o.weight_shared_later = true;
            return;
        }
    }

private:
    op_graph& graph_;
};

constexpr module_path in(std::string_view scope, std::string_view name) { return {scope, name}; }

// ---- parts -------------------------------------------------------------------

// Self-attention from the normed input `x`: projections, q/k norms, rotary,
// the attention call and the output projection.
// DeepSeek's multi-head latent attention: q (through a low-rank bottleneck or
// not), a latent of kv_lora_rank plus rope_head_dim shared rotary features,
// keys and values expanded from the latent by kv_b_proj.
constexpr op_input latent_attention(stage_builder& l, const model_spec& m, std::uint64_t window, op_input x) {
    constexpr auto tok = rows_of::source_tokens;
    const module_names& n = m.names;
    const attention_part& a = m.attention;
    const std::uint64_t heads = m.heads();
    const std::uint64_t rope = a.rope_head_dim;
    const std::uint64_t nope = m.head_width() - rope;
    const std::uint64_t v = m.v_head_width();
    const std::uint64_t qk = m.q_width();
    op_input q = no_input;
    if (a.q_lora_rank > 0) {
        q = l.linear(in(n.attention, "q_a_proj"), tok, m.hidden, a.q_lora_rank, a.qkv_bias, x);
        q = l.norm(in(n.attention, "q_a_layernorm"), tok, a.q_lora_rank, m.norm, q);
        q = l.linear(in(n.attention, "q_b_proj"), tok, a.q_lora_rank, qk, false, q);
    } else {
        q = l.linear(in(n.attention, n.q), tok, m.hidden, qk, a.qkv_bias, x);
    }
    const op_input compressed = l.linear(in(n.attention, "kv_a_proj_with_mqa"), tok, m.hidden, a.kv_lora_rank + rope,
                                         a.qkv_bias, x);
    op_input latent = l.split(in(n.attention, "kv_latent"), tok, 0, a.kv_lora_rank, compressed);
    op_input k_pe = l.split(in(n.attention, "k_pe"), tok, a.kv_lora_rank, rope, compressed);
    latent = l.norm(in(n.attention, "kv_a_layernorm"), tok, a.kv_lora_rank, m.norm, latent);
    const op_input q_rope = l.split(in(n.attention, "q_pe"), tok, detail::checked_mul(heads, nope),
                                    detail::checked_mul(heads, rope), q);
    op_input q_pe = l.rotary(in(n.attention, "rotary_q"), tok, heads, m, q_rope, rope);
    const op_input k_rope = k_pe;
    k_pe = l.rotary(in(n.attention, "rotary_k"), tok, 1, m, k_pe, rope);
    if (rotates_in_fp32(a.rotation)) {
        q_pe = l.rotary_cast(in(n.attention, "rotary_q"), tok, detail::checked_mul(heads, rope), q_pe, q_rope);
        k_pe = l.rotary_cast(in(n.attention, "rotary_k"), tok, rope, k_pe, k_rope);
    }
    // The cache keeps the latent and the rotary part, not per-head keys and values.
    if (m.stack == stack_kind::decoder) {
        latent = l.cache_append(in(n.attention, "cache_latent"), tok, a.kv_lora_rank, latent);
        k_pe = l.cache_append(in(n.attention, "cache_k_pe"), tok, rope, k_pe);
    }
    const op_input query = l.concat(in(n.attention, "query_states"), tok, qk, q, q_pe);
    const op_input kv = l.linear(in(n.attention, "kv_b_proj"), tok, a.kv_lora_rank,
                                 detail::checked_mul(heads, nope + v), false, latent);
    const op_input k_nope = l.split(in(n.attention, "k_nope"), tok, 0, detail::checked_mul(heads, nope), kv);
    const op_input value = l.split(in(n.attention, "value_states"), tok, detail::checked_mul(heads, nope),
                                   detail::checked_mul(heads, v), kv);
    const op_input key = l.concat(in(n.attention, "key_states"), tok, qk, k_nope, k_pe);
    const op_input ctx = l.attention(in(n.attention, "attention"), tok, m, true, window, tok, query, key, value);
    return l.linear(in(n.attention, n.o), tok, m.attention_out_width(), m.hidden, a.out_bias, ctx);
}

constexpr op_input self_attention(stage_builder& l, const model_spec& m, std::uint64_t window, op_input x,
                                  bool rope = true) {
    if (m.attention.latent()) return latent_attention(l, m, window, x);
    constexpr auto tok = rows_of::source_tokens;
    const module_names& n = m.names;
    const attention_part& a = m.attention;
    const std::uint64_t qw = m.q_width();
    const std::uint64_t kw = m.kv_width();
    const std::uint64_t vw = m.v_width();
    op_input q = no_input, k = no_input, v = no_input;
    if (a.layout == qkv_layout::fused) {
        const op_input qkv = l.linear(in(n.attention, n.qkv), tok, m.hidden, qw + kw + vw, a.qkv_bias, x);
        q = l.split(in(n.attention, "q"), tok, 0, qw, qkv, m.heads());
        k = l.split(in(n.attention, "k"), tok, qw, kw, qkv, m.kv_head_count());
        v = l.split(in(n.attention, "v"), tok, qw + kw, vw, qkv, m.kv_head_count());
    }
    const bool per_head = a.qk_norm == qk_norm_kind::per_head;
    const auto q_norm = [&](op_input y) {
        return l.norm(in(n.attention, n.q_norm), tok, qw, m.norm, y, per_head ? m.heads() : 0);
    };
    const auto k_norm = [&](op_input y) {
        return l.norm(in(n.attention, n.k_norm), tok, kw, m.norm, y, per_head ? m.kv_head_count() : 0);
    };
    const bool norms_last =
        a.qk_norm != qk_norm_kind::none && (a.layout == qkv_layout::fused || a.qk_norm_after_all_projections);
    if (a.layout == qkv_layout::separate) {
        const bool norm_each = a.qk_norm != qk_norm_kind::none && !norms_last;
        q = l.linear(in(n.attention, n.q), tok, m.hidden, qw, a.qkv_bias, x);
        if (norm_each) q = q_norm(q);
        k = l.linear(in(n.attention, n.k), tok, m.hidden, kw, a.qkv_bias, x);
        if (norm_each) k = k_norm(k);
        v = l.linear(in(n.attention, n.v), tok, m.hidden, vw, a.qkv_bias, x);
    }
    if (norms_last) {
        q = q_norm(q);
        k = k_norm(k);
    }
    if (a.positions == position_kind::rotary && rope) {
        const op_input q_in = q, k_in = k;
        q = l.rotary(in(n.attention, "rotary_q"), tok, m.heads(), m, q);
        k = l.rotary(in(n.attention, "rotary_k"), tok, m.kv_head_count(), m, k);
        if (rotates_in_fp32(a.rotation)) {
            q = l.rotary_cast(in(n.attention, "rotary_q"), tok, qw, q, q_in);
            k = l.rotary_cast(in(n.attention, "rotary_k"), tok, kw, k, k_in);
        }
        if (a.qk_l2_norm) {
            q = l.norm(in(n.attention, "qk_norm"), tok, qw, m.norm, q, m.heads(), false);
            k = l.norm(in(n.attention, "qk_norm"), tok, kw, m.norm, k, m.kv_head_count(), false);
        }
    }
    if (!rope && a.temperature_tuning) q = l.pointwise(op_kind::scale, in(n.attention, "attn_scales"), tok, qw, {q, no_input, no_input});
    const bool causal = m.stack == stack_kind::decoder;
    const op_input ctx = l.attention(in(n.attention, "attention"), tok, m, causal, window, tok, q, k, v);
    return l.linear(in(n.attention, n.o), tok, m.attention_out_width(), m.hidden, a.out_bias, ctx);
}

constexpr op_input mlp(stage_builder& l, const model_spec& m, op_input x) {
    constexpr auto tok = rows_of::source_tokens;
    const module_names& n = m.names;
    const mlp_part& p = m.mlp;
    const std::uint64_t f = p.hidden;
    op_input hidden = no_input;
    if (p.kind == mlp_kind::gated) {
        op_input gate = no_input, up = no_input;
        if (p.fused_gate_up) {
            const op_input both = l.linear(in(n.mlp, n.gate_up), tok, m.hidden, 2 * f, p.bias, x);
            gate = l.split(in(n.mlp, "gate"), tok, 0, f, both);
            up = l.split(in(n.mlp, "up"), tok, f, f, both);
        } else {
            gate = l.linear(in(n.mlp, n.gate), tok, m.hidden, f, p.bias, x);
        }
        const op_input act = l.activation(in(n.mlp, "act"), tok, f, p.act, gate);
        if (!p.fused_gate_up) up = l.linear(in(n.mlp, n.up), tok, m.hidden, f, p.bias, x);
        hidden = l.pointwise(op_kind::gate, in(n.mlp, "gate_mul"), tok, f, {act, up, no_input});
    } else {
        hidden = l.activation(in(n.mlp, "act"), tok, f, p.act, l.linear(in(n.mlp, n.up), tok, m.hidden, f, p.bias, x));
    }
    hidden = l.dropout(in(n.mlp, "dropout"), tok, f, p.dropout, hidden);
    return l.linear(in(n.mlp, n.down), tok, f, m.hidden, p.bias, hidden);
}

// A mixture of experts: the router's top-k weights, the routed rows through
// the experts' gate_up and down projections, their weighted sum per token,
// plus the shared experts.
constexpr op_input experts(stage_builder& l, const model_spec& m, op_input x) {
    constexpr auto tok = rows_of::source_tokens;
    constexpr auto routed = rows_of::routed_tokens;
    const module_names& n = m.names;
    const experts_part& e = m.experts;
    const std::uint64_t f = e.hidden;
    const auto shared_expert = [&] {
        const std::string_view scope = e.shared_gate || e.dense_dispatch ? "shared_expert" : "shared_experts";
        const op_input gate = l.linear(in(scope, n.gate), tok, m.hidden, e.shared_hidden, false, x);
        const op_input gate_act = l.activation(in(scope, "act"), tok, e.shared_hidden, m.mlp.act, gate);
        const op_input shared_up = l.linear(in(scope, n.up), tok, m.hidden, e.shared_hidden, false, x);
        const op_input shared_prod = l.pointwise(op_kind::gate, in(scope, "gate_mul"), tok, e.shared_hidden,
                                                 {gate_act, shared_up, no_input});
        return l.linear(in(scope, n.down), tok, e.shared_hidden, m.hidden, false, shared_prod);
    };
    // Qwen2-MoE runs its gated shared expert before the router (traced:
    // qwen1.5-moe-a2.7b serving), the others theirs after the routed experts.
    op_input shared = e.shared_hidden > 0 && e.shared_gate ? shared_expert() : no_input;
    const op_input weights = l.router(in(n.mlp, e.biases || e.dense_dispatch ? "router" : "gate"), m, x);
    // Llama 4 scales the experts' input by the router's scores; the others
    // gather the weights by expert and weight the outputs.
    const op_input up = l.experts_up(in(n.mlp, "experts.gate_up_proj"), m, x, weights);
    const op_input gate_half = l.split(in(n.mlp, "experts.gate"), routed, 0, f, up);
    const op_input up_half = l.split(in(n.mlp, "experts.up"), routed, f, f, up);
    const op_input prod =
        e.clamped_swiglu
            ? l.pointwise(op_kind::clamped_swiglu, in(n.mlp, "experts.glu"), routed, f, {gate_half, up_half, no_input})
            : l.pointwise(op_kind::gate, in(n.mlp, "experts.gate_mul"), routed, f,
                          {l.activation(in(n.mlp, "experts.act_fn"), routed, f, m.mlp.act, gate_half), up_half,
                           no_input});
    const op_input down = l.experts_down(in(n.mlp, "experts.down_proj"), m, prod);
    op_input y = l.experts_combine(in(n.mlp, "experts.combine"), m, down);
    if (e.shared_hidden == 0) return y;
    if (shared == no_input) shared = shared_expert();
    if (e.shared_gate) {
        const op_input g = l.activation(in(n.mlp, "shared_expert_gate.sigmoid"), tok, 1, activation::sigmoid,
                                        l.linear(in(n.mlp, "shared_expert_gate"), tok, m.hidden, 1, false, x));
        shared = l.pointwise(op_kind::gate, in(n.mlp, "shared_expert_gate.mul"), tok, m.hidden, {g, shared, no_input});
    }
    return l.shared_experts_sum(in(n.mlp, "shared_sum"), m, y, shared);
}

// One layer of an encoder or decoder stack, its parts arranged as
// block_part says; `moe`: experts in place of the MLP.
constexpr void layer(stage_builder l, const model_spec& m, std::uint64_t window, bool attention_norm, bool moe = false,
                     bool rope = true) {
    const auto feed_forward = [&](op_input x) { return moe ? experts(l, m, x) : mlp(l, m, x); };
    constexpr auto tok = rows_of::source_tokens;
    const module_names& n = m.names;
    const block_part& b = m.block;
    const std::uint64_t h = m.hidden;
    const double attn_drop = b.attention_branch_dropout ? b.dropout : 0.0;
    auto norm = [&](std::string_view name, op_input x) { return l.norm(in("", name), tok, h, m.norm, x); };
    if (b.residual == residual_kind::parallel) {
        const op_input n1 = norm(n.attention_norm, stage_input);
        const op_input n2 = b.shared_parallel_norm ? n1 : norm(n.mlp_norm, stage_input);
        const op_input a = l.dropout(in(n.attention, "resid_dropout"), tok, h, attn_drop, self_attention(l, m, window, n1));
        const op_input f = l.dropout(in(n.mlp, "dropout"), tok, h, b.dropout, mlp(l, m, n2));
        // Falcon: mlp_output += attention_output (in place), then the residual.
        const op_input both = b.parallel_add_in_place ? l.add_in_place(in("", "branch_sum"), tok, h, f, a)
                                                      : l.residual(in("", "branch_sum"), tok, h, a, f);
        l.residual(in("", "residual"), tok, h, both, stage_input);
        return;
    }
    switch (b.placement) {
        case norm_placement::pre:
        case norm_placement::sandwich: {
            const op_input x0 = attention_norm ? norm(n.attention_norm, stage_input) : stage_input;
            op_input a = self_attention(l, m, window, x0, rope);
            if (b.placement == norm_placement::sandwich) a = norm(n.attention_out_norm, a);
            a = l.dropout(in(n.attention, "resid_dropout"), tok, h, attn_drop, a);
            const op_input mid = l.residual(in("", "attention_residual"), tok, h, a, stage_input);
            op_input f = feed_forward(norm(n.mlp_norm, mid));
            if (b.placement == norm_placement::sandwich) f = norm(n.mlp_out_norm, f);
            f = l.dropout(in(n.mlp, "dropout"), tok, h, b.dropout, f);
            l.residual(in("", "mlp_residual"), tok, h, f, mid);
            return;
        }
        case norm_placement::post_sublayer: {
            const op_input a = norm(n.attention_out_norm, self_attention(l, m, window, stage_input));
            const op_input mid = l.residual(in("", "attention_residual"), tok, h, a, stage_input);
            const op_input f = norm(n.mlp_out_norm, mlp(l, m, mid));
            l.residual(in("", "mlp_residual"), tok, h, f, mid);
            return;
        }
        case norm_placement::post_residual: {
            const op_input a = l.dropout(in(n.attention, "output_dropout"), tok, h, attn_drop,
                                         self_attention(l, m, window, stage_input));
            const op_input mid = norm(n.attention_out_norm, l.residual(in("", "attention_residual"), tok, h, a, stage_input));
            const op_input f = l.dropout(in(n.mlp, "dropout"), tok, h, b.dropout, mlp(l, m, mid));
            norm(n.mlp_out_norm, l.residual(in("", "mlp_residual"), tok, h, f, mid));
            return;
        }
    }
}

constexpr void embeddings(stage_builder e, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    const module_names& n = m.names;
    const embedding_part& p = m.embedding;
    const std::uint64_t h = m.hidden;
    op_input x = no_input;
    if (p.patches()) {
        x = e.patch_embed(in("patch_embeddings", "projection"), p, h);
        x = e.cls_concat(in("", "cls_token"), h, x);
        x = e.position_add(in("", "position_embeddings"), p.patch_count() + 1, h, x);
    } else {
        const std::uint64_t width = p.projection == 0 ? h : p.projection;
        x = e.embedding(in("", n.token_table), tok, p.vocab, width);
        if (p.projection != 0) x = e.linear(in("", "project_in"), tok, width, h, false, x);
        if (p.token_types > 0)
            x = e.residual(in("", "embeddings_sum"), tok, h, x,
                           e.embedding(in("", n.token_type_table), tok, p.token_types, h));
        if (p.positions > 0)
            x = e.residual(in("", "embeddings_sum"), tok, h, x, e.embedding(in("", n.position_table), tok, p.positions, h));
        if (p.scaled) x = e.pointwise(op_kind::scale, in("", "normalizer"), tok, h, {x, no_input, no_input});
    }
    if (p.norm) x = e.norm(in("", n.embedding_norm), tok, h, m.norm, x);
    x = e.dropout(in("", "dropout"), tok, h, p.dropout, x);
    // What the model builds once per forward for every layer, after the
    // embeddings (transformers computes inputs_embeds first; traced:
    // gemma-3-1b): BLOOM's ALiBi, a decoder's causal masks, one per window
    // of its layers, and the rotary embeddings' tables.
    if (m.attention.positions == position_kind::alibi) e.alibi(in("", "alibi"), m.heads());
    if (m.stack == stack_kind::decoder) {
        std::array<std::uint64_t, 8> seen{};
        std::size_t count = 0;
        for (std::uint64_t i = 0; i < m.pattern.length; ++i) {
            const std::uint64_t window = m.pattern.windows[i];
            bool known = false;
            for (std::size_t j = 0; j < count; ++j) known = known || seen[j] == window;
            if (known) continue;
            seen[count++] = window;
            e.mask(in("", window == 0 ? "causal_mask" : "sliding_window_mask"), window);
        }
    }
    for (std::uint64_t table = 0; table < m.attention.rotary_tables(); ++table) e.rotary_table(in("", "rotary_emb"));
    e.set_output(x);
}

// The layers: a stage per run of identical layers, and the pattern's cycle.
constexpr void layer_stages(graph_builder& g, const model_spec& m) {
    std::uint64_t first = 0;
    if (!m.block.first_layer_attention_norm) {
        layer(g.add_block(m.names.layers, 1), m, m.pattern.window_of(0), false);
        first = 1;
    }
    // Appends stages for `n` layers from layer `from` on, one per run of equal windows.
    bool moe = false;
    auto runs = [&](std::uint64_t from, std::uint64_t n) {
        std::uint64_t i = 0;
        while (i < n) {
            const std::uint64_t at = from + i;
            std::uint64_t same = 1;
            while (i + same < n && m.pattern.same_kind(at + same, at)) ++same;
            layer(g.add_block(m.names.layers, same), m, m.pattern.window_of(at), true, moe && !m.pattern.dense_of(at),
                  !m.pattern.no_rope_of(at));
            i += same;
        }
    };
    // A mixture of experts' first layers keep a dense MLP (DeepSeek).
    if (m.experts.enabled()) {
        if (m.experts.first_dense > first) {
            runs(first, m.experts.first_dense - first);
            first = m.experts.first_dense;
        }
        moe = true;
    }
    const std::uint64_t count = m.layers - first;
    if (count == 0) return;
    const std::uint64_t period = m.pattern.uniform() ? 1 : m.pattern.length;
    const std::uint64_t times = count / period;
    if (period == 1 || times < 2) {
        runs(first, count);
        return;
    }
    const std::size_t cycle_first = g.size();
    runs(first, period);
    g.set_cycle({cycle_first, g.size() - cycle_first, times});
    runs(first + times * period, count % period);
}

constexpr void lm_head(graph_builder& g, stage_builder head, const model_spec& m, op_input x, std::uint64_t width) {
    constexpr auto tok = rows_of::source_tokens;
    const head_part& hp = m.head;
    op_input logits = head.linear(in("", m.names.lm_head), tok, width, m.embedding.vocab, hp.lm_head_bias, x, hp.tied);
    if (hp.logit_softcap > 0.0) logits = head.softcap(in("", "final_logit_softcapping"), tok, m.embedding.vocab,
                                                      hp.logit_softcap, logits);
    head.loss(tok, m.embedding.vocab, logits);
    if (hp.tied) g.tie_first_embedding();
}

// `width`: features of the last hidden states (OPT's word_embed_proj_dim after project_out).
constexpr void classifier(stage_builder head, const model_spec& m, op_input x, std::uint64_t width) {
    constexpr auto tok = rows_of::source_tokens;
    constexpr auto seqs = rows_of::sequences;
    const head_part& hp = m.head;
    const std::uint64_t h = m.hidden;
    const std::uint64_t labels = hp.num_labels;
    const double drop = hp.classifier_dropout;
    switch (hp.classifier) {
        case classifier_kind::last_token_score: {
            const op_input logits = head.linear(in("", "score"), tok, width, labels, false, x);
            head.loss(seqs, labels, head.pool(in("", "pooled_logits"), labels, logits));
            return;
        }
        case classifier_kind::pooler_tanh:
            x = head.pool(in("", "first_token"), h, x);
            x = head.linear(in("pooler", "dense"), seqs, h, h, true, x);
            x = head.activation(in("pooler", "activation"), seqs, h, activation::tanh, x);
            x = head.dropout(in("", "dropout"), seqs, h, drop, x);
            break;
        case classifier_kind::dense_tanh:
            x = head.pool(in("", "first_token"), h, x);
            x = head.dropout(in("classifier", "dropout"), seqs, h, drop, x);
            x = head.linear(in("classifier", "dense"), seqs, h, h, true, x);
            x = head.activation(in("classifier", "tanh"), seqs, h, activation::tanh, x);
            x = head.dropout(in("classifier", "dropout"), seqs, h, drop, x);
            head.loss(seqs, labels, head.linear(in("classifier", "out_proj"), seqs, h, labels, true, x));
            return;
        case classifier_kind::pre_classifier_relu:
            x = head.pool(in("", "first_token"), h, x);
            x = head.linear(in("", "pre_classifier"), seqs, h, h, true, x);
            x = head.activation(in("", "pre_classifier_activation"), seqs, h, activation::relu, x);
            x = head.dropout(in("", "dropout"), seqs, h, drop, x);
            break;
        case classifier_kind::mean_pool_head:
            x = head.mean_pool(in("", "mean_pool"), h, x);
            x = head.linear(in("head", "dense"), seqs, h, h, hp.transform_bias, x);
            x = head.activation(in("head", "act"), seqs, h, m.mlp.act, x);
            x = head.norm(in("head", "norm"), seqs, h, m.norm, x);
            x = head.dropout(in("", "drop"), seqs, h, drop, x);
            break;
        case classifier_kind::first_token:
            x = head.pool(in("", "first_token"), h, x);
            break;
    }
    head.loss(seqs, labels, head.linear(in("", "classifier"), seqs, h, labels, true, x));
}

// BERT-style masked-LM head: transform (dense, activation, norm), then the
// decoder tied to the token table, with a bias.
constexpr void masked_lm_head(graph_builder& g, stage_builder head, const model_spec& m, op_input x) {
    constexpr auto tok = rows_of::source_tokens;
    const std::uint64_t h = m.hidden;
    x = head.linear(in("transform", "dense"), tok, h, h, m.head.transform_bias, x);
    x = head.activation(in("transform", "act"), tok, h, m.mlp.act, x);
    x = head.norm(in("transform", "norm"), tok, h, m.norm, x);
    head.loss(tok, m.embedding.vocab,
              head.linear(in("", "decoder"), tok, h, m.embedding.vocab, m.head.decoder_bias, x, m.head.tied));
    if (m.head.tied) g.tie_first_embedding();
}

constexpr void lower_stack(graph_builder& g, const model_spec& m) {
    constexpr auto tok = rows_of::source_tokens;
    const std::uint64_t h = m.hidden;
    embeddings(g.add(m.names.embeddings), m);
    layer_stages(g, m);
    op_input x = stage_input;
    std::uint64_t width = h;
    const bool final_stage = m.block.final_norm || m.embedding.projection != 0;
    if (final_stage) {
        auto f = g.add(m.names.final_stage);
        const embedding_part& p = m.embedding;
        if (!p.patches() && p.positions == 0 && p.token_types == 0 && !p.norm && p.projection == 0 && p.dropout <= 0.0)
            g.mark_closes_stack();
        if (m.block.final_norm) x = f.norm(in("", m.names.final_norm), tok, h, m.norm, x);
        if (m.embedding.projection != 0) {
            width = m.embedding.projection;
            x = f.linear(in("", "project_out"), tok, h, width, false, x);
        }
        x = stage_input;
    }
    auto head = g.add_head();
    switch (m.head.kind) {
        case task::causal_lm: lm_head(g, head, m, x, width); break;
        case task::masked_lm: masked_lm_head(g, head, m, x); break;
        case task::seq_cls:
        case task::image_cls: classifier(head, m, x, width); break;
        case task::seq2seq: throw error("anatomy::lower: an encoder or decoder stack has no seq2seq head");
    }
    g.keep_last_stage_precision();
}

// ---- T5: an encoder and a decoder with cross-attention -----------------------

// One T5 feed-forward sublayer (`layer.N`), plain or gated.
constexpr op_input t5_feed_forward(stage_builder l, const model_spec& m, rows_of rows, std::string_view norm_module,
                                   op_input x) {
    const std::uint64_t d = m.hidden;
    const std::uint64_t f = m.mlp.hidden;
    constexpr std::string_view dense = "DenseReluDense";
    const op_input n = l.norm(in("", norm_module), rows, d, m.norm, x);
    op_input hidden = no_input;
    if (m.mlp.kind == mlp_kind::gated) {
        const op_input act = l.activation(in(dense, "act"), rows, f, m.mlp.act, l.linear(in(dense, "wi_0"), rows, d, f, false, n));
        const op_input lin = l.linear(in(dense, "wi_1"), rows, d, f, false, n);
        hidden = l.pointwise(op_kind::gate, in(dense, "gate"), rows, f, {act, lin, no_input});
    } else {
        hidden = l.activation(in(dense, "act"), rows, f, m.mlp.act, l.linear(in(dense, "wi"), rows, d, f, false, n));
    }
    hidden = l.dropout(in(dense, "dropout"), rows, f, m.mlp.dropout, hidden);
    const op_input out = l.linear(in(dense, "wo"), rows, f, d, false, hidden);
    return l.residual(in("", "ff_residual"), rows, d, l.dropout(in("", "ff_dropout"), rows, d, m.block.dropout, out), x);
}

struct t5_attention_names {
    std::string_view norm, scope;
};

// One T5 attention sublayer: pre-norm, attention, dropout, residual. Keys and
// values come from the normed input, or from the encoder's output.
constexpr op_input t5_attention(stage_builder l, const model_spec& m, rows_of rows, rows_of key_rows, bool causal,
                                t5_attention_names names, op_input x, bool cross) {
    const std::uint64_t d = m.hidden;
    const std::uint64_t a = m.q_width();
    const op_input n = l.norm(in("", names.norm), rows, d, m.norm, x);
    const op_input kv_source = cross ? encoder_output : n;
    const op_input q = l.linear(in(names.scope, "q"), rows, d, a, false, n);
    const op_input k = l.linear(in(names.scope, "k"), key_rows, d, a, false, kv_source);
    const op_input v = l.linear(in(names.scope, "v"), key_rows, d, a, false, kv_source);
    const op_input ctx = l.attention(in(names.scope, "attention"), rows, m, causal, 0, key_rows, q, k, v);
    const op_input o = l.linear(in(names.scope, "o"), rows, a, d, false, ctx);
    return l.residual(in("", "attention_residual"), rows, d, l.dropout(in("", "attention_dropout"), rows, d, m.block.dropout, o), x);
}

constexpr void lower_t5(graph_builder& g, const model_spec& m) {
    constexpr auto src = rows_of::source_tokens;
    constexpr auto tgt = rows_of::target_tokens;
    const std::uint64_t d = m.hidden;
    constexpr module_path bias_module{"block.0.layer.0.SelfAttention", "relative_attention_bias"};
    constexpr t5_attention_names self{"layer.0.layer_norm", "layer.0.SelfAttention"};
    constexpr t5_attention_names cross{"layer.1.layer_norm", "layer.1.EncDecAttention"};
    const std::uint64_t buckets = m.attention.relative_buckets;
    {
        auto e = g.add("encoder");
        e.position_bias(bias_module, buckets, m.heads(), false, src);
        const op_input embedded = e.embedding(in("", "shared"), src, m.embedding.vocab, d);
        // The encoder's T5Stack builds its own embed_tokens, which tying
        // replaces with `shared` (the decoder's is the tied op below).
        e.mark_own_table_replaced(embedded);
        e.dropout(in("", "dropout"), src, d, m.embedding.dropout, embedded);
    }
    {
        auto l = g.add_block("encoder.block", m.layers);
        t5_feed_forward(l, m, src, "layer.1.layer_norm", t5_attention(l, m, src, src, false, self, stage_input, false));
    }
    {
        auto f = g.add("encoder");
        f.dropout(in("", "dropout"), src, d, m.embedding.dropout, f.norm(in("", "final_layer_norm"), src, d, m.norm, stage_input));
        g.mark_encoder_output();
    }
    {
        auto e = g.add("decoder");
        e.position_bias(bias_module, buckets, m.heads(), true, tgt);
        const op_input embedded = e.embedding(in("", "embed_tokens"), tgt, m.embedding.vocab, d, true);
        if (m.head.tied) e.mark_weight_shared_later(embedded);
        e.dropout(in("", "dropout"), tgt, d, m.embedding.dropout, embedded);
    }
    {
        auto l = g.add_block("decoder.block", m.decoder_layers);
        op_input x = t5_attention(l, m, tgt, tgt, true, self, stage_input, false);
        x = t5_attention(l, m, tgt, src, false, cross, x, true);
        t5_feed_forward(l, m, tgt, "layer.2.layer_norm", x);
    }
    {
        auto f = g.add("decoder");
        f.dropout(in("", "dropout"), tgt, d, m.embedding.dropout, f.norm(in("", "final_layer_norm"), tgt, d, m.norm, stage_input));
    }
    auto head = g.add_head();
    // T5 rescales the decoder output by d_model^-0.5 first unless its config untied the head.
    const op_input x = m.head.rescale_before_head ? head.pointwise(op_kind::scale, in("", "rescale"), tgt, d, {stage_input, no_input, no_input})
                                   : stage_input;
    head.loss(tgt, m.embedding.vocab, head.linear(in("", "lm_head"), tgt, d, m.embedding.vocab, false, x, m.head.tied));
    g.tie_first_embedding();  // the decoder's embed_tokens is always T5's `shared`
    g.keep_last_stage_precision();
}

}  // namespace detail

constexpr op_graph lower(const model_spec& m) {
    validate(m);
    op_graph graph;  // not graph{}: value-initializing zero-fills all 213 KB first
    detail::graph_builder g(graph);
    if (m.stack == stack_kind::encoder_decoder) detail::lower_t5(g, m);
    else detail::lower_stack(g, m);
    return graph;
}

// Calls f(stage, op) for every op, once per stage (not per repeat).
template <class F>
constexpr void for_each_op(const op_graph& graph, F&& f) {
    for (const stage& s : graph.stages)
        for (const op& o : s.ops) f(s, o);
}

constexpr std::uint64_t parameter_count(const op_graph& graph) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < graph.stages.size(); ++i)
        for (const op& o : graph.stages[i].ops)
            total = detail::checked_add(total, detail::checked_mul(graph.copies(i), o.params()));
    return total;
}

// The parameters one token passes through: everything but the routed
// experts, plus top_k of them. Memory follows parameter_count (every expert's
// weights, gradients and optimizer state are held); compute follows this.
constexpr std::uint64_t active_parameter_count(const op_graph& graph, const model_spec& m) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < graph.stages.size(); ++i)
        for (const op& o : graph.stages[i].ops) {
            const bool routed = o.kind == op_kind::experts_up || o.kind == op_kind::experts_down;
            const std::uint64_t p = routed ? detail::checked_mul(o.params() / m.experts.count, m.experts.top_k) : o.params();
            total = detail::checked_add(total, detail::checked_mul(graph.copies(i), p));
        }
    return total;
}

}  // namespace anatomy
