// Hugging Face config.json -> anatomy::model_spec.
//
//   auto [spec, name, task_from] = anatomy::cli::load_hf_config("llama/config.json");
//
// Each model_type reads its own keys, with the defaults of its transformers
// 5.17 config class (BertConfig, GPT2Config, LlamaConfig, ...) for the keys
// that may be left out, then calls its family builder (families/) with the
// sizes and sets the remaining parts. The sizes that define the model (hidden
// size, layers, heads, FFN width, vocabulary) are required: filling them from
// the class defaults would silently describe another model.
//
// Every problem is an anatomy::cli::input_error whose message starts with
// "anatomy: <source>: " and names the key to fix.
#pragma once

#include "support.hpp"

#include <anatomy/families/bert.hpp>
#include <anatomy/families/bloom.hpp>
#include <anatomy/families/falcon.hpp>
#include <anatomy/families/gemma.hpp>
#include <anatomy/families/gpt2.hpp>
#include <anatomy/families/llama.hpp>
#include <anatomy/families/modernbert.hpp>
#include <anatomy/families/moe.hpp>
#include <anatomy/families/neox.hpp>
#include <anatomy/families/opt.hpp>
#include <anatomy/families/t5.hpp>
#include <anatomy/families/vit.hpp>
#include <anatomy/model.hpp>
#include <anatomy/names.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace anatomy::cli {

struct hf_model {
    model_spec spec{};
    std::string name;       // "_name_or_path" if the config has one, else the file's name
    std::string task_from;  // where the task came from: "--task", "architectures (LlamaForCausalLM)", ...
    // The dtype from_pretrained loads the weights in (transformers 5: the
    // config's "dtype", older configs' "torch_dtype"), and that key.
    std::optional<dtype> weights;
    std::string weights_key;
};

namespace hf_detail {

using json = nlohmann::json;

// Reads typed keys from one config object; every failure names the key.
class reader {
public:
    reader(const json& config, std::string_view source, std::string_view model_type)
        : config_(config), source_(source), model_type_(model_type) {}

    [[noreturn]] void fail(std::string_view what) const {
        throw input_error(fmt::format("anatomy: {}: {}", source_, what));
    }

    std::string_view model_type() const { return model_type_; }

    // nullptr when the key is absent.
    const json* find(std::string_view key) const {
        const auto it = config_.find(std::string(key));
        return it == config_.end() ? nullptr : &*it;
    }

    // The key of `keys` the config has (the first, when it has none): for
    // sizes transformers takes under two names (hidden_size or n_embed).
    std::string_view first_present(std::initializer_list<std::string_view> keys) const {
        for (std::string_view key : keys)
            if (find(key) != nullptr) return key;
        return *keys.begin();
    }

    // A size the model cannot be described without.
    std::uint64_t required_count(std::string_view key) const {
        const json* value = find(key);
        if (value == nullptr)
            fail(fmt::format("key \"{}\" is missing (model_type {}); add it, as in the model's published config.json",
                             key, model_type_));
        return to_count(key, *value);
    }

    // The same, under any of `keys` (the first present wins).
    std::uint64_t required_count(std::initializer_list<std::string_view> keys) const {
        const std::string_view key = first_present(keys);
        if (find(key) == nullptr) {
            std::string others;
            for (std::string_view k : keys)
                if (k != key) others += fmt::format(" (or \"{}\")", k);
            fail(fmt::format("key \"{}\"{} is missing (model_type {}); add it, as in the model's published config.json",
                             key, others, model_type_));
        }
        return required_count(key);
    }

    // A size with a default; `nullable`: null also means the default (the
    // config class takes None there).
    std::uint64_t count_or(std::string_view key, std::uint64_t fallback, bool nullable = false) const {
        const json* value = find(key);
        if (value == nullptr || (nullable && value->is_null())) return fallback;
        return to_count(key, *value);
    }

    // A whole number >= 0 with a default (a layer index).
    std::uint64_t index_or(std::string_view key, std::uint64_t fallback) const {
        const json* value = find(key);
        if (value == nullptr) return fallback;
        if (value->is_number_integer() && (value->is_number_unsigned() || value->get<std::int64_t>() >= 0))
            return value->get<std::uint64_t>();
        if (value->is_number_integer()) fail(fmt::format("key \"{}\" is {}; it must be >= 0", key, value->dump()));
        wrong_type(key, *value, "a whole number >= 0");
    }

    // A size that may be absent or null (std::nullopt then).
    std::optional<std::uint64_t> optional_count(std::string_view key) const {
        const json* value = find(key);
        if (value == nullptr || value->is_null()) return std::nullopt;
        return to_count(key, *value);
    }

    // `nullable`: null also means the default.
    double probability_or(std::string_view key, double fallback, bool nullable = false) const {
        const json* value = find(key);
        if (value == nullptr || (nullable && value->is_null())) return fallback;
        if (!value->is_number()) wrong_type(key, *value, "a number in [0, 1)");
        const double p = value->get<double>();
        if (!(p >= 0.0 && p < 1.0))
            fail(fmt::format("key \"{}\" is {}; a dropout probability must be in [0, 1)", key, value->dump()));
        return p;
    }

    // A number; null means `if_null` (soft-capping: None is off).
    double number_or(std::string_view key, double fallback, double if_null) const {
        const json* value = find(key);
        if (value == nullptr) return fallback;
        if (value->is_null()) return if_null;
        if (!value->is_number()) wrong_type(key, *value, "a number");
        return value->get<double>();
    }

    bool boolean_or(std::string_view key, bool fallback, bool nullable = false) const {
        const json* value = find(key);
        if (value == nullptr || (nullable && value->is_null())) return fallback;
        if (!value->is_boolean()) wrong_type(key, *value, "true or false");
        return value->get<bool>();
    }

    std::string string_or(std::string_view key, std::string_view fallback) const {
        const json* value = find(key);
        if (value == nullptr) return std::string(fallback);
        if (!value->is_string()) wrong_type(key, *value, "a string");
        return value->get<std::string>();
    }

    // An object-valued key (rope_parameters); nullptr when absent or null.
    const json* object_or_null(std::string_view key) const {
        const json* value = find(key);
        if (value == nullptr || value->is_null()) return nullptr;
        if (!value->is_object()) wrong_type(key, *value, "an object");
        return value;
    }

    [[noreturn]] void wrong_type(std::string_view key, const json& value, std::string_view expected) const {
        if (value.is_null()) fail(fmt::format("key \"{}\" must be {}, not null", key, expected));
        const std::string_view type = value.type_name();  // "string", "number", "array", "object", "boolean"
        const bool vowel = std::string_view("aeiou").find(type.front()) != std::string_view::npos;
        fail(fmt::format("key \"{}\" must be {}, not {} {} {}", key, expected, vowel ? "an" : "a", type,
                         shorten(value.dump())));
    }

    // A value outside what transformers or the estimator takes.
    [[noreturn]] void not_modelled(std::string_view key, const json& value, std::string_view what) const {
        fail(fmt::format("key \"{}\" is {}: {} is not modelled by the estimator (model_type {})", key,
                         shorten(value.dump()), what, model_type_));
    }

    std::uint64_t to_count(std::string_view key, const json& value) const {
        if (value.is_number_unsigned() && value.get<std::uint64_t>() > 0) return value.get<std::uint64_t>();
        if (value.is_number_integer() && !value.is_number_unsigned() && value.get<std::int64_t>() > 0)
            return static_cast<std::uint64_t>(value.get<std::int64_t>());  // built in C++ from a signed int
        if (value.is_number_integer())
            fail(fmt::format("key \"{}\" is {}; it must be > 0", key, value.dump()));
        wrong_type(key, value, "a whole number > 0");
    }

private:
    const json& config_;
    std::string_view source_;
    std::string_view model_type_;
};

// transformers' ACT2FN names, as far as the estimator tells them apart.
// `shown`: the key's value as written, for the message.
inline activation activation_named(const reader& r, std::string_view key, std::string_view name,
                                   std::string_view shown) {
    struct entry {
        std::string_view name;
        activation act;
    };
    constexpr std::array<entry, 10> table{{{"gelu", activation::gelu},
                                           {"gelu_python", activation::gelu},
                                           {"gelu_new", activation::gelu_new},
                                           {"gelu_fast", activation::gelu_new},
                                           {"gelu_accurate", activation::gelu_new},
                                           {"gelu_pytorch_tanh", activation::gelu_tanh},
                                           {"relu", activation::relu},
                                           {"silu", activation::silu},
                                           {"swish", activation::silu},
                                           {"tanh", activation::tanh}}};
    std::string known;
    for (const entry& e : table) {
        if (e.name == name) return e.act;
        known += known.empty() ? "" : ", ";
        known += e.name;
    }
    r.fail(fmt::format("key \"{}\" is \"{}\", an activation the estimator does not model; use one of {}", key,
                       shorten(std::string(shown)), known));
}

inline activation parse_activation(const reader& r, std::string_view key, std::string_view fallback) {
    const std::string name = r.string_or(key, fallback);
    return activation_named(r, key, name, name);
}

inline std::uint64_t four_times(const reader& r, std::string_view key, std::uint64_t hidden) {
    if (hidden > std::numeric_limits<std::uint64_t>::max() / 4)
        r.fail(fmt::format("key \"{}\" ({}) is too large: 4 * {} overflows 64 bits", key, hidden, key));
    return 4 * hidden;
}

inline void check_divisible(const reader& r, std::uint64_t hidden, std::string_view hidden_key, std::uint64_t heads,
                            std::string_view heads_key, bool head_dim_key = false) {
    if (hidden % heads != 0)
        r.fail(fmt::format("key \"{}\" ({}) must be a multiple of \"{}\" ({}){}", hidden_key, hidden, heads_key, heads,
                           head_dim_key ? ", or set \"head_dim\"" : ""));
}

// The BERT-style keys: vocab_size, hidden_size, num_hidden_layers,
// num_attention_heads (dividing hidden_size) and the MLP width under ffn_key.
inline families::sizes read_bert_style_sizes(const reader& r, std::string_view ffn_key) {
    families::sizes s{.vocab = r.required_count("vocab_size"), .hidden = r.required_count("hidden_size"),
                      .layers = r.required_count("num_hidden_layers"),
                      .heads = r.required_count("num_attention_heads"), .ffn = r.required_count(ffn_key)};
    check_divisible(r, s.hidden, "hidden_size", s.heads, "num_attention_heads");
    return s;
}

// The GPT-2-style keys: n_embd, n_layer, n_head, and n_inner (null: 4 * n_embd),
// as GPT2MLP and GPTJBlock size their MLPs.
inline families::sizes read_gpt2_style_sizes(const reader& r) {
    families::sizes s{.vocab = r.required_count("vocab_size"), .hidden = r.required_count("n_embd"),
                      .layers = r.required_count("n_layer"), .heads = r.required_count("n_head")};
    check_divisible(r, s.hidden, "n_embd", s.heads, "n_head");
    s.ffn = r.count_or("n_inner", 0, /*nullable=*/true);
    if (s.ffn == 0) s.ffn = four_times(r, "n_embd", s.hidden);
    return s;
}

// num_key_value_heads: null or absent means as many as the heads.
inline std::uint64_t read_kv_heads(const reader& r, std::uint64_t heads, std::string_view key = "num_key_value_heads",
                                   std::string_view heads_key = "num_attention_heads") {
    const std::uint64_t kv = r.count_or(key, heads, /*nullable=*/true);
    if (kv > heads || heads % kv != 0)
        r.fail(fmt::format("key \"{}\" ({}) must be a multiple of \"{}\" ({})", heads_key, heads, key, kv));
    return kv;
}

// head_dim: given, or `fallback` (0: hidden / heads, which must then divide).
inline std::uint64_t read_head_dim(const reader& r, std::uint64_t hidden, std::uint64_t heads,
                                   std::uint64_t fallback = 0) {
    std::uint64_t head_dim = fallback;
    if (const json* value = r.find("head_dim"); value != nullptr)
        head_dim = value->is_null() ? 0 : r.to_count("head_dim", *value);
    if (head_dim == 0) check_divisible(r, hidden, "hidden_size", heads, "num_attention_heads", true);
    return head_dim;
}

// A rotary share of each head, in (0, 1].
inline double check_rotary_fraction(const reader& r, std::string_view key, double fraction) {
    if (!(fraction > 0.0 && fraction <= 1.0))
        r.fail(fmt::format("key \"{}\" is {}; the rotated share of each head must be in (0, 1]", key, fraction));
    return fraction;
}

// rope_parameters.partial_rotary_factor, else the legacy top-level `legacy` key, else `fallback`.
inline double read_partial_rotary(const reader& r, std::string_view legacy, double fallback) {
    if (const json* rope = r.object_or_null("rope_parameters"); rope != nullptr) {
        if (const auto it = rope->find("partial_rotary_factor"); it != rope->end() && !it->is_null()) {
            if (!it->is_number())
                r.wrong_type("rope_parameters.partial_rotary_factor", *it, "a number in (0, 1]");
            return check_rotary_fraction(r, "rope_parameters.partial_rotary_factor", it->get<double>());
        }
    }
    const json* value = r.find(legacy);
    if (value == nullptr || value->is_null()) return fallback;
    if (!value->is_number()) r.wrong_type(legacy, *value, "a number in (0, 1]");
    return check_rotary_fraction(r, legacy, value->get<double>());
}

// Decoders that could attend bidirectionally (Gemma's use_bidirectional_attention).
inline void reject_bidirectional(const reader& r) {
    if (r.boolean_or("use_bidirectional_attention", false, /*nullable=*/true))
        r.not_modelled("use_bidirectional_attention", true, "a bidirectional decoder");
}

// A cycle of at most 8 layers from an explicit layer_types list.
inline layer_pattern pattern_from_layer_types(const reader& r, const json& list, std::uint64_t layers,
                                              std::uint64_t window) {
    if (!list.is_array()) r.wrong_type("layer_types", list, "an array of \"full_attention\" or \"sliding_attention\"");
    if (list.size() != layers)
        r.fail(fmt::format("key \"layer_types\" has {} entries; it must have one per layer (num_hidden_layers {})",
                           list.size(), layers));
    std::vector<bool> sliding;
    sliding.reserve(list.size());
    for (const json& entry : list) {
        if (!entry.is_string())
            r.wrong_type("layer_types", list, "an array of \"full_attention\" or \"sliding_attention\"");
        const auto name = entry.get<std::string>();
        if (name != "full_attention" && name != "sliding_attention")
            r.fail(fmt::format("key \"layer_types\" names \"{}\"; each entry must be \"full_attention\" or "
                               "\"sliding_attention\"",
                               shorten(name)));
        sliding.push_back(name == "sliding_attention");
    }
    layer_pattern p{};
    for (std::size_t period = 1; period <= p.windows.size(); ++period) {
        bool periodic = true;
        for (std::size_t i = period; i < sliding.size() && periodic; ++i) periodic = sliding[i] == sliding[i % period];
        if (!periodic) continue;
        p.length = period;
        for (std::size_t i = 0; i < period; ++i) p.windows[i] = i < sliding.size() && sliding[i] ? window : 0;
        return p;
    }
    r.fail(fmt::format("key \"layer_types\" does not repeat with a period of at most {} layers; the estimator "
                       "models layer patterns that cycle over 8 layers or fewer",
                       p.windows.size()));
}

// ---- readers, one per model_type ------------------------------------------

inline model_spec read_bert_like(const reader& r) {
    const std::string_view type = r.model_type();
    if (type == "distilbert") {
        families::sizes s{.vocab = r.required_count("vocab_size"), .hidden = r.required_count("dim"),
                          .layers = r.required_count("n_layers"), .heads = r.required_count("n_heads"),
                          .ffn = r.required_count("hidden_dim")};
        check_divisible(r, s.hidden, "dim", s.heads, "n_heads");
        model_spec m = families::distilbert(s, r.probability_or("dropout", 0.1),
                                            r.probability_or("attention_dropout", 0.1),
                                            r.probability_or("seq_classif_dropout", 0.2));
        m.embedding.positions = r.count_or("max_position_embeddings", 512);
        m.mlp.act = parse_activation(r, "activation", "gelu");
        m.head.tied = r.boolean_or("tie_word_embeddings", true);
        return m;
    }
    families::sizes s = read_bert_style_sizes(r, "intermediate_size");
    const double dropout = r.probability_or("hidden_dropout_prob", 0.1);
    const double attention_dropout = r.probability_or("attention_probs_dropout_prob", 0.1);
    model_spec m = type == "roberta" ? families::roberta(s, dropout, attention_dropout)
                                     : families::bert(s, dropout, attention_dropout);
    m.embedding.positions = r.count_or("max_position_embeddings", 512);
    m.embedding.token_types = r.count_or("type_vocab_size", 2);
    m.mlp.act = parse_activation(r, "hidden_act", "gelu");
    // classifier_dropout: None means hidden_dropout_prob.
    m.head.classifier_dropout = r.probability_or("classifier_dropout", dropout, /*nullable=*/true);
    m.head.tied = r.boolean_or("tie_word_embeddings", true);
    // relative_key embeddings add parameters the estimator does not model.
    const std::string positions = r.string_or("position_embedding_type", "absolute");
    if (positions != "absolute")
        r.fail(fmt::format("key \"position_embedding_type\" is \"{}\"; the estimator models \"absolute\" only",
                           shorten(positions)));
    return m;
}

inline model_spec read_modernbert(const reader& r) {
    families::sizes s = read_bert_style_sizes(r, "intermediate_size");
    const std::uint64_t every = r.count_or("global_attn_every_n_layers", 3);
    if (every > 8)
        r.fail(fmt::format("key \"global_attn_every_n_layers\" is {}; the estimator models layer patterns that "
                           "cycle over 8 layers or fewer",
                           every));
    // ModernBertConfig.sliding_window is local_attention // 2.
    const std::uint64_t local = r.count_or("local_attention", 128);
    if (local / 2 == 0)
        r.fail(fmt::format("key \"local_attention\" is {}; its half (the sliding window) must be > 0", local));
    model_spec m = families::modernbert(
        s, every, local / 2, r.boolean_or("attention_bias", false), r.boolean_or("mlp_bias", false),
        r.boolean_or("norm_bias", false), r.probability_or("embedding_dropout", 0.0),
        r.probability_or("attention_dropout", 0.0), r.probability_or("mlp_dropout", 0.0));
    m.mlp.act = parse_activation(r, "hidden_activation", "gelu");
    m.head.tied = r.boolean_or("tie_word_embeddings", true);
    m.head.decoder_bias = r.boolean_or("decoder_bias", true);
    m.head.classifier_dropout = r.probability_or("classifier_dropout", 0.0);
    // The prediction head's dense layer (head.dense) has a bias iff classifier_bias.
    m.head.transform_bias = r.boolean_or("classifier_bias", false);
    return m;
}

// ModernBERT's sequence classifier pools the CLS token or the mean; the
// builder models the mean.
inline void check_modernbert_task(const reader& r, const model_spec& m) {
    if (m.head.kind == task::masked_lm) return;
    const std::string pooling = r.string_or("classifier_pooling", "cls");
    if (pooling != "mean")
        r.fail(fmt::format("key \"classifier_pooling\" is \"{}\": the estimator models ModernBERT's {} head with "
                           "\"mean\" pooling only; set \"classifier_pooling\": \"mean\" or pass --task masked-lm",
                           shorten(pooling), name_of(m.head.kind)));
}

inline model_spec read_gpt2(const reader& r) {
    families::sizes s = read_gpt2_style_sizes(r);
    s.tied = r.boolean_or("tie_word_embeddings", true);
    model_spec m = families::gpt2(s, r.count_or("n_positions", 1024), r.probability_or("resid_pdrop", 0.1),
                                  r.probability_or("attn_pdrop", 0.1), r.probability_or("embd_pdrop", 0.1));
    m.mlp.act = parse_activation(r, "activation_function", "gelu_new");
    return m;
}

// The sizes of Llama-style configs (hidden_size, num_key_value_heads, head_dim, ...).
inline families::sizes read_llama_sizes(const reader& r, bool tied_default, std::uint64_t head_dim_default = 0) {
    families::sizes s{.vocab = r.required_count("vocab_size"), .hidden = r.required_count("hidden_size"),
                      .layers = r.required_count("num_hidden_layers"),
                      .heads = r.required_count("num_attention_heads"), .ffn = r.required_count("intermediate_size")};
    s.kv_heads = read_kv_heads(r, s.heads);
    s.head_dim = read_head_dim(r, s.hidden, s.heads, head_dim_default);
    s.tied = r.boolean_or("tie_word_embeddings", tied_default);
    return s;
}

// Qwen2 and Qwen3: with use_sliding_window, layers >= max_window_layers slide.
inline void read_qwen_sliding(const reader& r, model_spec& m) {
    if (!r.boolean_or("use_sliding_window", false)) return;
    const std::uint64_t window = r.count_or("sliding_window", 4096);
    const std::uint64_t from = r.index_or("max_window_layers", 28);
    if (from >= m.layers) return;  // no layer slides
    if (from == 0) {
        m.pattern.windows[0] = window;  // every layer slides
        return;
    }
    r.fail(fmt::format("keys \"use_sliding_window\" and \"max_window_layers\" ({}) make layers {} to {} slide and "
                       "the first {} attend fully; a split of the depth is not modelled (the estimator repeats one "
                       "cycle of at most 8 layers)",
                       from, from, m.layers - 1, from));
}

inline model_spec read_llama(const reader& r) {
    const families::sizes s = read_llama_sizes(r, false);
    const std::string_view type = r.model_type();
    model_spec m;
    if (type == "mistral") {
        // No biases anywhere, whatever the config says; sliding_window (null: none) on every layer.
        m = families::mistral(s, r.count_or("sliding_window", 0, /*nullable=*/true));
    } else if (type == "qwen2") {
        m = families::qwen2(s);  // q, k, v with a bias, o without; the MLP without
        read_qwen_sliding(r, m);
    } else {
        m = families::llama(s, r.boolean_or("attention_bias", false), r.boolean_or("mlp_bias", false));
    }
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    return m;
}

inline model_spec read_qwen3(const reader& r) {
    model_spec m = families::qwen3(read_llama_sizes(r, false, 128), r.boolean_or("attention_bias", false));
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    read_qwen_sliding(r, m);
    return m;
}

inline model_spec read_phi3(const reader& r) {
    const families::sizes s = read_llama_sizes(r, false);
    model_spec m = families::phi3(s, r.optional_count("sliding_window").value_or(0),
                                  read_partial_rotary(r, "partial_rotary_factor", 1.0),
                                  r.probability_or("resid_pdrop", 0.0));
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    return m;
}

inline model_spec read_olmo2(const reader& r) {
    model_spec m = families::olmo2(read_llama_sizes(r, false), r.boolean_or("attention_bias", false));
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    return m;
}

inline model_spec read_gemma(const reader& r) {
    reject_bidirectional(r);
    model_spec m = families::gemma(read_llama_sizes(r, true, 256), r.boolean_or("attention_bias", false));
    m.mlp.act = parse_activation(r, "hidden_act", "gelu_pytorch_tanh");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    return m;
}

// Gemma 2 and 3: the sliding layers from layer_types, else the config class's default cycle.
inline model_spec read_gemma2_like(const reader& r) {
    reject_bidirectional(r);
    const bool v3 = r.model_type() == "gemma3_text";
    const families::sizes s = read_llama_sizes(r, true, 256);
    const std::uint64_t window = r.count_or("sliding_window", 4096);
    model_spec m;
    if (v3) {
        const std::uint64_t period = r.count_or("sliding_window_pattern", 6);
        if (period > 8)
            r.fail(fmt::format("key \"sliding_window_pattern\" is {}; the estimator models layer patterns that "
                               "cycle over 8 layers or fewer",
                               period));
        m = families::gemma3(s, window, period);
        m.head.logit_softcap = r.number_or("final_logit_softcapping", 0.0, 0.0);
    } else {
        m = families::gemma2(s, window, r.number_or("attn_logit_softcapping", 50.0, 0.0),
                             r.number_or("final_logit_softcapping", 30.0, 0.0));
    }
    if (const json* types = r.find("layer_types"); types != nullptr && !types->is_null())
        m.pattern = pattern_from_layer_types(r, *types, s.layers, window);
    m.attention.qkv_bias = m.attention.out_bias = r.boolean_or("attention_bias", false);
    m.mlp.act = parse_activation(r, "hidden_activation", "gelu_pytorch_tanh");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    return m;
}

inline model_spec read_gpt_neox(const reader& r) {
    families::sizes s = read_bert_style_sizes(r, "intermediate_size");
    s.tied = r.boolean_or("tie_word_embeddings", false);
    model_spec m = families::gpt_neox(s, read_partial_rotary(r, "rotary_pct", 0.25),
                                      r.boolean_or("use_parallel_residual", true),
                                      r.boolean_or("attention_bias", true), r.probability_or("hidden_dropout", 0.0),
                                      r.probability_or("attention_dropout", 0.0));
    m.mlp.act = parse_activation(r, "hidden_act", "gelu");
    return m;
}

inline model_spec read_gptj(const reader& r) {
    families::sizes s = read_gpt2_style_sizes(r);
    s.tied = r.boolean_or("tie_word_embeddings", false);
    const std::uint64_t rotary_dim = r.count_or("rotary_dim", 64);
    if (rotary_dim > s.hidden / s.heads)
        r.fail(fmt::format("key \"rotary_dim\" ({}) must be at most the head size n_embd / n_head ({})", rotary_dim,
                           s.hidden / s.heads));
    model_spec m = families::gptj(s, rotary_dim, r.probability_or("resid_pdrop", 0.0),
                                  r.probability_or("attn_pdrop", 0.0), r.probability_or("embd_pdrop", 0.0));
    m.mlp.act = parse_activation(r, "activation_function", "gelu_new");
    return m;
}

inline model_spec read_opt(const reader& r) {
    families::sizes s = read_bert_style_sizes(r, "ffn_dim");
    s.tied = r.boolean_or("tie_word_embeddings", true);
    if (!r.boolean_or("layer_norm_elementwise_affine", true))
        r.not_modelled("layer_norm_elementwise_affine", false, "a LayerNorm without weight and bias");
    model_spec m = families::opt(s, r.count_or("max_position_embeddings", 2048),
                                 r.count_or("word_embed_proj_dim", s.hidden, /*nullable=*/true),
                                 r.boolean_or("do_layer_norm_before", true),
                                 !r.boolean_or("_remove_final_layer_norm", false), r.boolean_or("enable_bias", true),
                                 r.probability_or("dropout", 0.1), r.probability_or("attention_dropout", 0.0));
    m.mlp.act = parse_activation(r, "activation_function", "relu");
    return m;
}

inline model_spec read_falcon(const reader& r) {
    const std::string_view hidden_key = r.first_present({"hidden_size", "n_embed"});
    families::sizes s{.vocab = r.required_count("vocab_size"), .hidden = r.required_count({"hidden_size", "n_embed"}),
                      .layers = r.required_count("num_hidden_layers"),
                      .heads = r.required_count("num_attention_heads")};
    check_divisible(r, s.hidden, hidden_key, s.heads, "num_attention_heads");
    const bool new_arch = r.boolean_or("new_decoder_architecture", false);
    const bool parallel = r.boolean_or("parallel_attn", true);
    // FalconAttention: num_kv_heads (new architecture), 1 (multi_query), else one per head.
    if (new_arch) s.kv_heads = read_kv_heads(r, s.heads, "num_kv_heads");
    else s.kv_heads = r.boolean_or("multi_query", true) ? 1 : s.heads;
    std::uint64_t norms = 1;  // FalconDecoderLayer: input_layernorm feeds both branches
    if (const json* value = r.find("num_ln_in_parallel_attn"); value != nullptr && !value->is_null()) {
        norms = r.to_count("num_ln_in_parallel_attn", *value);
        if (norms > 2) r.fail(fmt::format("key \"num_ln_in_parallel_attn\" is {}; it must be 1 or 2", norms));
    } else if (new_arch) {
        norms = 2;  // FalconDecoderLayer sets 2 for the new decoder architecture
    }
    if (new_arch && !parallel)
        r.not_modelled("parallel_attn", false, "the new decoder architecture without parallel attention");
    if (!new_arch && parallel && norms == 2)
        r.not_modelled("num_ln_in_parallel_attn", 2, "two parallel norms outside the new decoder architecture");
    s.ffn = r.count_or("ffn_hidden_size", 0, /*nullable=*/true);
    if (s.ffn == 0) s.ffn = four_times(r, hidden_key, s.hidden);
    s.tied = r.boolean_or("tie_word_embeddings", true);
    model_spec m = families::falcon(s, r.boolean_or("bias", false), r.boolean_or("alibi", false), parallel,
                                    parallel ? norms : 1, r.probability_or("hidden_dropout", 0.0),
                                    r.probability_or("attention_dropout", 0.0));
    m.mlp.act = parse_activation(r, "activation", "gelu");
    return m;
}

inline model_spec read_bloom(const reader& r) {
    const std::string_view hidden_key = r.first_present({"hidden_size", "n_embed"});
    families::sizes s{.vocab = r.required_count("vocab_size"), .hidden = r.required_count({"hidden_size", "n_embed"}),
                      .layers = r.required_count({"n_layer", "num_hidden_layers"}),
                      .heads = r.required_count({"n_head", "num_attention_heads"})};
    check_divisible(r, s.hidden, hidden_key, s.heads, r.first_present({"n_head", "num_attention_heads"}));
    s.ffn = four_times(r, hidden_key, s.hidden);  // BloomMLP: always 4 * hidden_size
    s.tied = r.boolean_or("tie_word_embeddings", true);
    if (r.boolean_or("apply_residual_connection_post_layernorm", false))
        r.not_modelled("apply_residual_connection_post_layernorm", true,
                       "a residual taken after the layer norm");
    return families::bloom(s, r.probability_or("hidden_dropout", 0.0), r.probability_or("attention_dropout", 0.0));
}

// image_size and patch_size: an int, or a [height, width] pair of equal sides.
inline std::uint64_t read_side(const reader& r, std::string_view key, std::uint64_t fallback) {
    const json* value = r.find(key);
    if (value == nullptr) return fallback;
    if (!value->is_array()) return r.to_count(key, *value);
    if (value->size() != 2) r.wrong_type(key, *value, "a whole number > 0 or a [height, width] pair");
    const std::uint64_t h = r.to_count(key, (*value)[0]);
    const std::uint64_t w = r.to_count(key, (*value)[1]);
    if (h != w) r.not_modelled(key, *value, "a non-square side");
    return h;
}

// HF: id2label wins over num_labels (PretrainedConfig.__init__); 2 by default.
inline std::uint64_t read_num_labels(const reader& r) {
    if (const json* labels = r.find("id2label"); labels != nullptr && !labels->is_null()) {
        if (!labels->is_object()) r.wrong_type("id2label", *labels, "an object of label names");
        if (labels->empty()) r.fail("key \"id2label\" is empty; a classifier needs at least one label");
        return labels->size();
    }
    return r.count_or("num_labels", 2);
}

inline model_spec read_vit(const reader& r) {
    families::sizes s{.hidden = r.required_count("hidden_size"), .layers = r.required_count("num_hidden_layers"),
                      .heads = r.required_count("num_attention_heads"), .ffn = r.required_count("intermediate_size")};
    check_divisible(r, s.hidden, "hidden_size", s.heads, "num_attention_heads");
    const std::uint64_t image = read_side(r, "image_size", 224);
    const std::uint64_t patch = read_side(r, "patch_size", 16);
    if (image < patch)
        r.fail(fmt::format("key \"image_size\" ({}) must be at least \"patch_size\" ({})", image, patch));
    model_spec m = families::vit(s, image, patch, r.count_or("num_channels", 3), read_num_labels(r),
                                 r.boolean_or("qkv_bias", true), r.probability_or("hidden_dropout_prob", 0.0),
                                 r.probability_or("attention_probs_dropout_prob", 0.0));
    m.mlp.act = parse_activation(r, "hidden_act", "gelu");
    return m;
}

inline model_spec read_t5(const reader& r) {
    families::t5_sizes s{.vocab = r.required_count("vocab_size"), .d_model = r.required_count("d_model"),
                         .d_kv = r.required_count("d_kv"), .d_ff = r.required_count("d_ff"),
                         .layers = r.required_count("num_layers"), .heads = r.required_count("num_heads")};
    s.decoder_layers = r.count_or("num_decoder_layers", s.layers, /*nullable=*/true);
    s.buckets = r.count_or("relative_attention_num_buckets", 32);
    // T5Config: "[gated-]ACT"; "gated-gelu" means gelu_new.
    const std::string proj = r.string_or("feed_forward_proj", "relu");
    std::string_view act = proj;
    bool gated = false;
    if (act.starts_with("gated-")) {
        gated = true;
        act.remove_prefix(6);
    }
    if (act.empty() || act.find('-') != std::string_view::npos)
        r.fail(fmt::format("key \"feed_forward_proj\" is \"{}\"; write ACT or gated-ACT, e.g. \"relu\" or \"gated-gelu\"",
                           shorten(proj)));
    const activation a = proj == "gated-gelu" ? activation::gelu_new : activation_named(r, "feed_forward_proj", act, proj);
    // transformers 5 always ties T5's LM head; tie_word_embeddings: false only
    // turns off the decoder output rescale (scale_decoder_outputs).
    const bool rescale = r.boolean_or("tie_word_embeddings", true, /*nullable=*/true);
    return families::t5(s, gated, a, rescale, r.probability_or("dropout_rate", 0.1));
}


// ---- mixtures of experts ----------------------------------------------------

// The routed experts' count and top-k; top-k must be in [1, count].
inline families::moe_sizes read_moe_counts(const reader& r, std::initializer_list<std::string_view> count_keys,
                                           std::uint64_t count_default, std::uint64_t top_k_default) {
    families::moe_sizes e;
    const std::string_view count_key = r.first_present(count_keys);
    e.experts = count_key.empty() ? count_default : r.count_or(count_key, count_default);
    e.top_k = top_k_default == 0 ? r.required_count("num_experts_per_tok") : r.count_or("num_experts_per_tok", top_k_default);
    if (e.top_k > e.experts)
        r.fail(fmt::format("key \"num_experts_per_tok\" ({}) exceeds the number of experts ({}); a token picks at most "
                           "every expert",
                           e.top_k, e.experts));
    return e;
}

// Qwen-style layer selection: only "every layer is MoE" is modelled.
inline void require_every_layer_moe(const reader& r) {
    if (r.count_or("decoder_sparse_step", 1) != 1)
        r.fail("key \"decoder_sparse_step\" is not 1; MoE on every n-th layer only is not modelled yet");
    if (const json* only = r.find("mlp_only_layers"); only != nullptr && !only->is_null()) {
        if (!only->is_array()) r.wrong_type("mlp_only_layers", *only, "an array of layer indices");
        if (!only->empty()) r.fail("key \"mlp_only_layers\" lists dense layers; dense layers among MoE ones are not modelled yet");
    }
}

// output_router_logits (default false) adds the load-balancing loss.
inline void read_aux_loss(const reader& r, model_spec& m) { m.experts.aux_loss = r.boolean_or("output_router_logits", false); }

inline model_spec read_mixtral(const reader& r) {
    const families::sizes s = read_llama_sizes(r, false);
    families::moe_sizes e = read_moe_counts(r, {"num_local_experts", "num_experts"}, 8, 2);
    e.hidden = s.ffn;  // intermediate_size is each expert's width
    model_spec m = families::mixtral(s, e, r.count_or("sliding_window", 0, /*nullable=*/true));
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    read_aux_loss(r, m);
    return m;
}

inline model_spec read_qwen_moe(const reader& r) {
    const bool qwen3 = r.model_type() == "qwen3_moe";
    const families::sizes s = read_llama_sizes(r, false);
    families::moe_sizes e = read_moe_counts(r, {"num_experts"}, qwen3 ? 128 : 60, qwen3 ? 8 : 4);
    e.hidden = r.count_or("moe_intermediate_size", qwen3 ? 768 : 1408);
    require_every_layer_moe(r);
    model_spec m;
    if (qwen3) {
        m = families::qwen3_moe(s, e, r.boolean_or("attention_bias", false));
    } else {
        e.shared = r.count_or("shared_expert_intermediate_size", 5632);
        m = families::qwen2_moe(s, e);
    }
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    read_qwen_sliding(r, m);
    read_aux_loss(r, m);
    return m;
}

inline model_spec read_olmoe(const reader& r) {
    const families::sizes s = read_llama_sizes(r, false);
    families::moe_sizes e = read_moe_counts(r, {"num_experts", "num_local_experts"}, 64, 8);
    e.hidden = s.ffn;  // intermediate_size is each expert's width; every layer is MoE
    model_spec m = families::olmoe(s, e, r.boolean_or("attention_bias", false));
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    read_aux_loss(r, m);
    return m;
}

inline model_spec read_deepseek(const reader& r) {
    const bool v3 = r.model_type() == "deepseek_v3";
    const families::sizes s = read_llama_sizes(r, false);
    families::moe_sizes e = read_moe_counts(r, {"n_routed_experts", "num_local_experts"}, v3 ? 256 : 64, v3 ? 8 : 0);
    e.hidden = r.count_or("moe_intermediate_size", v3 ? 2048 : 1407);
    e.shared = detail::checked_mul(r.index_or("n_shared_experts", v3 ? 1 : 2), e.hidden);
    e.first_dense = r.index_or("first_k_dense_replace", v3 ? 3 : 0);
    if (e.first_dense > s.layers)
        r.fail(fmt::format("key \"first_k_dense_replace\" ({}) exceeds \"num_hidden_layers\" ({})", e.first_dense, s.layers));
    if (r.count_or("moe_layer_freq", 1) != 1)
        r.fail("key \"moe_layer_freq\" is not 1; MoE on every n-th layer only is not modelled yet");
    families::latent_sizes a;
    // q_lora_rank null: one q_proj (DeepSeek-V2-Lite).
    const json* q_rank = r.find("q_lora_rank");
    a.q_lora_rank = q_rank != nullptr && q_rank->is_null() ? 0 : r.index_or("q_lora_rank", 1536);
    if (const json* rank = r.find("kv_lora_rank"); rank != nullptr && rank->is_number_integer() && rank->get<std::int64_t>() == 0)
        r.fail("key \"kv_lora_rank\" is 0, but the config has latent-attention keys (qk_nope_head_dim, "
               "qk_rope_head_dim); the latent needs a rank > 0");
    a.kv_lora_rank = r.count_or("kv_lora_rank", 512);
    a.nope = r.count_or("qk_nope_head_dim", 128);
    a.rope = r.count_or("qk_rope_head_dim", 64);
    a.v = r.count_or("v_head_dim", 128);
    families::sizes dense = s;
    dense.head_dim = 0;  // MLA's head dims come from the latent keys
    model_spec m = v3 ? families::deepseek_v3(dense, e, a, r.boolean_or("rope_interleave", true))
                      : families::deepseek_v2(dense, e, a);
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    m.attention.qkv_bias = m.attention.out_bias = r.boolean_or("attention_bias", false);
    return m;
}

// gpt-oss: every layer MoE; layer_types (default: even layers slide) with sliding_window 128.
inline model_spec read_gpt_oss(const reader& r) {
    const families::sizes s = read_llama_sizes(r, false, 64);
    families::moe_sizes e = read_moe_counts(r, {"num_local_experts", "num_experts"}, 128, 4);
    e.hidden = s.ffn;  // intermediate_size is each expert's width
    const std::uint64_t window = r.count_or("sliding_window", 128);
    model_spec m = families::gpt_oss(s, e, window);
    if (const json* types = r.find("layer_types"); types != nullptr && !types->is_null())
        m.pattern = pattern_from_layer_types(r, *types, s.layers, window);
    m.attention.qkv_bias = m.attention.out_bias = r.boolean_or("attention_bias", true);
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    read_aux_loss(r, m);
    return m;
}

// The period of a per-layer 0/1 list whose cycle is `on` for the first
// period - 1 layers and off for the last (Llama 4's no_rope_layers, 1 = RoPE),
// 0 when every layer is on.
inline std::uint64_t period_of_last_off(const reader& r, std::string_view key, const json& list, std::uint64_t layers) {
    if (!list.is_array()) r.wrong_type(key, list, "an array of 0 and 1, one per layer");
    if (list.size() != layers)
        r.fail(fmt::format("key \"{}\" has {} entries; it must have one per layer (num_hidden_layers {})", key,
                           list.size(), layers));
    for (std::uint64_t period = 1; period <= 8; ++period) {
        bool fits = true;
        for (std::uint64_t i = 0; i < layers && fits; ++i) {
            const json& v = list[i];
            if (!v.is_number_integer() && !v.is_boolean()) r.wrong_type(key, list, "an array of 0 and 1, one per layer");
            const bool on = v.is_boolean() ? v.get<bool>() : v.get<std::int64_t>() != 0;
            fits = on == (period == 1 ? true : (i + 1) % period != 0);
        }
        if (fits) return period == 1 ? 0 : period;
    }
    r.fail(fmt::format("key \"{}\" does not mark every n-th layer (n <= 8); other patterns are not modelled", key));
}

// Llama 4 (text): intermediate_size is the experts' and the shared expert's
// width, intermediate_size_mlp the dense layers'.
inline model_spec read_llama4(const reader& r) {
    families::sizes s{.vocab = r.required_count("vocab_size"), .hidden = r.required_count("hidden_size"),
                      .layers = r.required_count("num_hidden_layers"), .heads = r.required_count("num_attention_heads"),
                      .ffn = r.count_or("intermediate_size_mlp", 16384)};
    s.kv_heads = read_kv_heads(r, s.heads);
    s.head_dim = read_head_dim(r, s.hidden, s.heads, 128);
    s.tied = r.boolean_or("tie_word_embeddings", false);
    families::moe_sizes e = read_moe_counts(r, {"num_local_experts", "num_experts"}, 16, 1);
    e.hidden = r.count_or("intermediate_size", 8192);
    e.shared = e.hidden;
    std::uint64_t step = r.count_or("interleave_moe_layer_step", 1);
    if (const json* moe = r.find("moe_layers"); moe != nullptr && !moe->is_null()) {
        if (!moe->is_array() || moe->empty()) r.wrong_type("moe_layers", *moe, "a non-empty array of layer indices");
        step = (*moe)[0].is_number_integer() ? (*moe)[0].get<std::uint64_t>() + 1 : 0;
        for (std::size_t i = 0; i < moe->size(); ++i)
            if (!(*moe)[i].is_number_integer() || (*moe)[i].get<std::uint64_t>() != step - 1 + i * step)
                r.fail("key \"moe_layers\" is not every n-th layer from layer n - 1; other placements are not modelled");
    }
    if (step == 0 || step > 8) r.fail(fmt::format("key \"interleave_moe_layer_step\" is {}; it must be in [1, 8]", step));
    std::uint64_t nope_every = r.count_or("no_rope_layer_interval", 4);
    if (const json* rope = r.find("no_rope_layers"); rope != nullptr && !rope->is_null())
        nope_every = period_of_last_off(r, "no_rope_layers", *rope, s.layers);
    const json* chunk_key = r.find("attention_chunk_size");
    const std::uint64_t chunk = chunk_key != nullptr && chunk_key->is_null() ? 0 : r.count_or("attention_chunk_size", 8192);
    model_spec m = families::llama4(s, e, step, nope_every, chunk, r.boolean_or("use_qk_norm", true),
                                    r.boolean_or("attn_temperature_tuning", true));
    m.mlp.act = parse_activation(r, "hidden_act", "silu");
    m.attention.dropout = r.probability_or("attention_dropout", 0.0);
    m.attention.qkv_bias = m.attention.out_bias = r.boolean_or("attention_bias", false);
    return m;
}

struct family_reader {
    std::string_view model_type;
    model_spec (*read)(const reader&);
    void (*check_task)(const reader&, const model_spec&) = nullptr;  // family rules on the resolved task
};

inline constexpr std::array<family_reader, 29> family_readers{{
    {"bert", read_bert_like},
    {"roberta", read_bert_like},
    {"distilbert", read_bert_like},
    {"modernbert", read_modernbert, check_modernbert_task},
    {"gpt2", read_gpt2},
    {"llama", read_llama},
    {"mistral", read_llama},
    {"qwen2", read_llama},
    {"qwen3", read_qwen3},
    {"phi3", read_phi3},
    {"olmo2", read_olmo2},
    {"gemma", read_gemma},
    {"gemma2", read_gemma2_like},
    {"gemma3_text", read_gemma2_like},
    {"gpt_neox", read_gpt_neox},
    {"gptj", read_gptj},
    {"opt", read_opt},
    {"falcon", read_falcon},
    {"bloom", read_bloom},
    {"vit", read_vit},
    {"t5", read_t5},
    {"mixtral", read_mixtral},
    {"qwen2_moe", read_qwen_moe},
    {"qwen3_moe", read_qwen_moe},
    {"olmoe", read_olmoe},
    {"deepseek_v2", read_deepseek},
    {"deepseek_v3", read_deepseek},
    {"gpt_oss", read_gpt_oss},
    {"llama4_text", read_llama4},
}};

inline std::string supported_model_types() {
    std::string out;
    for (const family_reader& f : family_readers) {
        if (!out.empty()) out += ", ";
        out += f.model_type;
    }
    return out;
}

// ---- the task -------------------------------------------------------------

// The task an `architectures` entry trains, if its name says.
inline std::optional<task> task_of_class(std::string_view cls) {
    constexpr std::array<std::pair<std::string_view, task>, 7> suffixes{{
        {"ForConditionalGeneration", task::seq2seq},
        {"WithLMHeadModel", task::seq2seq},  // T5's name before T5ForConditionalGeneration
        {"ForSequenceClassification", task::seq_cls},
        {"ForCausalLM", task::causal_lm},
        {"LMHeadModel", task::causal_lm},
        {"ForMaskedLM", task::masked_lm},
        {"ForImageClassification", task::image_cls},
    }};
    for (const auto& [suffix, t] : suffixes)
        if (cls.ends_with(suffix)) return t;
    return std::nullopt;
}

// A class with a head the estimator does not model (ForTokenClassification,
// ForQuestionAnswering, GPT2DoubleHeadsModel, ...), as opposed to a bare
// model class (BertModel), which names no task.
inline bool names_other_head(std::string_view cls) {
    return cls.find("For") != std::string_view::npos || cls.find("DoubleHeads") != std::string_view::npos;
}

inline std::string_view stack_description(const model_spec& m) {
    switch (m.stack) {
        case stack_kind::encoder: return m.embedding.patches() ? "an image encoder" : "an encoder";
        case stack_kind::decoder: return "a decoder";
        case stack_kind::encoder_decoder: return "an encoder-decoder";
    }
    return "a";
}

inline task resolve_task(const reader& r, const model_spec& m, std::optional<task> override_task,
                         std::string& task_from) {
    const std::string_view type = r.model_type();
    if (override_task) {
        if (!supports_task(m, *override_task))
            throw input_error(fmt::format("anatomy: --task {}: {} is {} model and trains {} only; pass --task {}",
                                          name_of(*override_task), type, stack_description(m), supported_tasks(m),
                                          name_of(default_task(m))));
        task_from = "--task";
        return *override_task;
    }
    std::string unmapped;
    if (const json* list = r.find("architectures"); list != nullptr && !list->is_null()) {
        if (!list->is_array()) r.wrong_type("architectures", *list, "an array of class names");
        for (const json& cls : *list) {
            if (!cls.is_string()) r.wrong_type("architectures", *list, "an array of class names");
            const auto name = cls.get<std::string>();
            const std::optional<task> t = task_of_class(name);
            if (!t) {
                if (names_other_head(name))
                    r.fail(fmt::format("architectures names {}, a head the estimator does not model; pass --task {}",
                                       shorten(name), supported_tasks(m)));
                unmapped = name;
                continue;
            }
            if (!supports_task(m, *t))
                r.fail(fmt::format("architectures names {} (task {}), which the estimator does not model for {}; "
                                   "pass --task {}",
                                   shorten(name), name_of(*t), type, supported_tasks(m)));
            task_from = fmt::format("architectures ({})", name);
            return *t;
        }
    }
    const task t = default_task(m);
    task_from = unmapped.empty() ? fmt::format("the default for {}", type)
                                 : fmt::format("the default for {}; architectures ({}) names no task", type, unmapped);
    return t;
}

// "parse error at line L, column C: <what nlohmann says>", where L:C is the
// last character of the offending token (nlohmann's own line and column
// point past it, often at the next line's column 0).
inline std::string parse_error_text(std::string_view text, const nlohmann::json::parse_error& e) {
    std::size_t at = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size() - 1);
    while (at > 0 && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) --at;
    const std::size_t line_start = text.rfind('\n', at);
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const std::size_t column = line_start == std::string_view::npos ? at + 1 : at - line_start;
    std::string_view what = e.what();
    if (const std::size_t column_at = what.find(", column "); column_at != std::string_view::npos) {
        if (const std::size_t colon = what.find(": ", column_at); colon != std::string_view::npos)
            what.remove_prefix(colon + 2);
    }
    return fmt::format("parse error at line {}, column {}: {}", line, column, one_line(what));
}

// The file's name for tables: "_name_or_path", else DIR for DIR/config.json,
// else the file's stem.
inline std::string display_name(const json& config, const std::filesystem::path& path) {
    if (const auto it = config.find("_name_or_path"); it != config.end() && it->is_string()) {
        std::string name = it->get<std::string>();
        if (!name.empty()) return name;
    }
    if (path.filename() == "config.json" && path.has_parent_path() && !path.parent_path().filename().empty())
        return path.parent_path().filename().string();
    return path.stem().string();
}

}  // namespace hf_detail

// A parsed config.json object -> model spec. `source` names the config in
// messages (a path, or "config.json").
inline hf_model hf_config_from_json(const nlohmann::json& config, std::optional<task> task_override = std::nullopt,
                                    std::string_view source = "config.json") {
    using hf_detail::reader;
    if (!config.is_object())
        throw input_error(fmt::format("anatomy: {}: expected a JSON object (a config.json), got {}", source,
                                      config.is_null() ? std::string("null") : fmt::format("a JSON {}", config.type_name())));
    const reader top(config, source, "unknown");
    const auto type_it = config.find("model_type");
    if (type_it == config.end())
        top.fail(fmt::format("key \"model_type\" is missing; add it, one of {}", hf_detail::supported_model_types()));
    if (!type_it->is_string()) top.wrong_type("model_type", *type_it, "a string");
    const auto model_type = type_it->get<std::string>();
    // A multimodal Llama 4 config: its language model is text_config, trained as a causal LM.
    if (model_type == "llama4") {
        const auto text = config.find("text_config");
        if (text == config.end() || !text->is_object())
            top.fail("model_type \"llama4\" needs a \"text_config\" object (its language model)");
        nlohmann::json language = *text;
        language["model_type"] = "llama4_text";
        language["architectures"] = nlohmann::json::array({"Llama4ForCausalLM"});
        return hf_config_from_json(language, task_override, fmt::format("{} (text_config)", source));
    }
    const auto family = std::find_if(hf_detail::family_readers.begin(), hf_detail::family_readers.end(),
                                     [&](const hf_detail::family_reader& f) { return f.model_type == model_type; });
    if (family == hf_detail::family_readers.end())
        top.fail(fmt::format("model_type \"{}\" is not supported; the estimator knows {}", shorten(model_type),
                             hf_detail::supported_model_types()));

    const reader r(config, source, family->model_type);
    hf_model out;
    model_spec& m = out.spec;
    m = family->read(r);
    m.head.kind = hf_detail::resolve_task(r, m, task_override, out.task_from);
    if (m.head.kind == task::seq_cls || m.head.kind == task::image_cls)
        m.head.num_labels = hf_detail::read_num_labels(r);  // else unused: keep the default
    if (family->check_task != nullptr) family->check_task(r, m);
    for (const char* key : {"dtype", "torch_dtype"}) {
        const nlohmann::json* value = r.find(key);
        if (value == nullptr || value->is_null()) continue;
        if (!value->is_string()) r.wrong_type(key, *value, "a string such as \"bfloat16\"");
        const std::string name = value->get<std::string>();
        if (name == "auto") continue;
        if (name == "float32") out.weights = dtype::fp32;
        else if (name == "bfloat16") out.weights = dtype::bf16;
        else if (name == "float16") out.weights = dtype::fp16;
        else
            r.fail(fmt::format("\"{}\": \"{}\" is not a weight dtype the estimator models; use float32, bfloat16 "
                               "or float16, or pass --weights", key, shorten(name)));
        out.weights_key = key;
        break;
    }
    try {
        validate(m);
    } catch (const anatomy::error& e) {  // anything the readers above did not name
        r.fail(std::string(without_prefix(e.what())));
    }
    out.name = std::string(source);
    return out;
}

// Reads `path` (a config.json, or a directory holding one).
inline hf_model load_hf_config(const std::filesystem::path& path, std::optional<task> task_override = std::nullopt) {
    namespace fs = std::filesystem;
    const std::string shown = path.string();
    auto fail = [&](std::string_view what) -> void {
        throw input_error(fmt::format("anatomy: {}: {}", shown, what));
    };
    std::error_code ec;
    fs::path file = path;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) {
        fail("no such file; pass the path of a config.json");
    }
    if (fs::is_directory(status)) {
        file = path / "config.json";
        if (!fs::is_regular_file(fs::status(file, ec)))
            fail("is a directory and holds no config.json; pass the path of a config.json file");
    } else if (!fs::is_regular_file(status)) {
        fail("is not a regular file; pass the path of a config.json");
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(fmt::format("cannot be read ({}); check its permissions", std::strerror(errno)));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) fail("cannot be read; check the file");
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        fail("is empty; expected a JSON object (a config.json)");

    nlohmann::json config;
    try {
        config = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        fail(fmt::format("is not valid JSON: {}", hf_detail::parse_error_text(text, e)));
    } catch (const nlohmann::json::exception& e) {
        fail(fmt::format("is not valid JSON: {}", one_line(e.what())));
    }
    hf_model out = hf_config_from_json(config, task_override, shown);
    out.name = hf_detail::display_name(config, file);
    return out;
}

}  // namespace anatomy::cli
