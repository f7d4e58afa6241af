// Module names: where each part sits in the transformers module tree. LoRA
// targets are matched against them as peft matches them, and --explain
// prints them.
#pragma once

#include <string_view>

namespace anatomy {

// A module's path: its scope inside the stage ("self_attn", "mlp") and its
// own name ("q_proj"). Names are string literals.
struct module_path {
    std::string_view scope;
    std::string_view name;

    // peft adapts a module when a target equals its full name or a suffix of
    // it after a dot: "q_proj", "self_attn.q_proj", "dense" for "output.dense".
    constexpr bool matches(std::string_view target) const {
        if (target.empty()) return false;
        if (target.size() <= name.size()) return ends_at_dot(name, target);
        if (!ends_at_dot(target, name)) return false;
        const std::string_view prefix = target.substr(0, target.size() - name.size() - 1);
        return ends_at_dot(scope, prefix);
    }

private:
    // `whole` is `tail`, or ends with "." + tail.
    static constexpr bool ends_at_dot(std::string_view whole, std::string_view tail) {
        return whole == tail || (whole.size() > tail.size() && whole.ends_with(tail) &&
                                 whole[whole.size() - tail.size() - 1] == '.');
    }
};

// The defaults are ""sv literals: a string_view built from a plain literal
// counts its characters one by one in constant evaluation, which made every
// model_spec's default initialization 9,400 operations of g++'s instead of 900.
using std::string_view_literals::operator""sv;

struct module_names {
    std::string_view embeddings = "model"sv;  // the stage holding the embeddings
    std::string_view token_table = "embed_tokens"sv;
    std::string_view position_table = "embed_positions"sv;
    std::string_view token_type_table = "token_type_embeddings"sv;
    std::string_view embedding_norm = "norm"sv;
    std::string_view layers = "model.layers"sv;
    std::string_view attention = "self_attn"sv;
    std::string_view q = "q_proj"sv;
    std::string_view k = "k_proj"sv;
    std::string_view v = "v_proj"sv;
    std::string_view qkv = "qkv_proj"sv;
    std::string_view o = "o_proj"sv;
    std::string_view q_norm = "q_norm"sv;
    std::string_view k_norm = "k_norm"sv;
    std::string_view mlp = "mlp"sv;
    std::string_view gate = "gate_proj"sv;
    std::string_view up = "up_proj"sv;  // the first projection of a plain MLP, or a gated MLP's up
    std::string_view down = "down_proj"sv;
    std::string_view gate_up = "gate_up_proj"sv;
    std::string_view attention_norm = "input_layernorm"sv;
    std::string_view mlp_norm = "post_attention_layernorm"sv;  // before the MLP (pre placement)
    std::string_view attention_out_norm = "post_attention_layernorm"sv;  // after attention (sandwich, post)
    std::string_view mlp_out_norm = "post_feedforward_layernorm"sv;      // after the MLP (sandwich, post)
    std::string_view final_stage = "model"sv;
    std::string_view final_norm = "norm"sv;
    std::string_view lm_head = "lm_head"sv;
};

}  // namespace anatomy
