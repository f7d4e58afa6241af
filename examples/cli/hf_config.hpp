// Hugging Face config.json -> anatomy::model_spec.
//
//   auto [spec, name, task_from] = anatomy::cli::load_hf_config("llama/config.json");
//
// Each model_type reads its own keys, with the defaults of its transformers
// config class (BertConfig, GPT2Config, LlamaConfig, ...) for the keys that
// may be left out. The sizes that define the model (hidden size, layers,
// heads, FFN width, vocabulary) are required: filling them from the class
// defaults would silently describe another model.
//
// Every problem is an anatomy::cli::input_error whose message starts with
// "anatomy: <source>: " and names the key to fix.
#pragma once

#include "support.hpp"

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
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace anatomy::cli {

struct hf_model {
    model_spec spec{};
    std::string name;       // "_name_or_path" if the config has one, else the file's name
    std::string task_from;  // where the task came from: "--task", "architectures (LlamaForCausalLM)", ...
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

    // nullptr when the key is absent.
    const json* find(std::string_view key) const {
        const auto it = config_.find(std::string(key));
        return it == config_.end() ? nullptr : &*it;
    }

    // A size the model cannot be described without.
    std::uint64_t required_count(std::string_view key) const {
        const json* value = find(key);
        if (value == nullptr)
            fail(fmt::format("key \"{}\" is missing (model_type {}); add it, as in the model's published config.json",
                             key, model_type_));
        return to_count(key, *value);
    }

    // A size with a default; `nullable`: null also means the default (the
    // config class takes None there).
    std::uint64_t count_or(std::string_view key, std::uint64_t fallback, bool nullable = false) const {
        const json* value = find(key);
        if (value == nullptr || (nullable && value->is_null())) return fallback;
        return to_count(key, *value);
    }

    double probability_or(std::string_view key, double fallback) const {
        const json* value = find(key);
        if (value == nullptr) return fallback;
        if (!value->is_number()) wrong_type(key, *value, "a number in [0, 1)");
        const double p = value->get<double>();
        if (!(p >= 0.0 && p < 1.0))
            fail(fmt::format("key \"{}\" is {}; a dropout probability must be in [0, 1)", key, value->dump()));
        return p;
    }

    bool boolean_or(std::string_view key, bool fallback) const {
        const json* value = find(key);
        if (value == nullptr) return fallback;
        if (!value->is_boolean()) wrong_type(key, *value, "true or false");
        return value->get<bool>();
    }

    std::string string_or(std::string_view key, std::string_view fallback) const {
        const json* value = find(key);
        if (value == nullptr) return std::string(fallback);
        if (!value->is_string()) wrong_type(key, *value, "a string");
        return value->get<std::string>();
    }

    [[noreturn]] void wrong_type(std::string_view key, const json& value, std::string_view expected) const {
        if (value.is_null()) fail(fmt::format("key \"{}\" must be {}, not null", key, expected));
        const std::string_view type = value.type_name();  // "string", "number", "array", "object", "boolean"
        const bool vowel = std::string_view("aeiou").find(type.front()) != std::string_view::npos;
        fail(fmt::format("key \"{}\" must be {}, not {} {} {}", key, expected, vowel ? "an" : "a", type,
                         shorten(value.dump())));
    }

private:
    std::uint64_t to_count(std::string_view key, const json& value) const {
        if (value.is_number_unsigned() && value.get<std::uint64_t>() > 0) return value.get<std::uint64_t>();
        if (value.is_number_integer() && !value.is_number_unsigned() && value.get<std::int64_t>() > 0)
            return static_cast<std::uint64_t>(value.get<std::int64_t>());  // built in C++ from a signed int
        if (value.is_number_integer())
            fail(fmt::format("key \"{}\" is {}; it must be > 0", key, value.dump()));
        wrong_type(key, value, "a whole number > 0");
    }

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
                                           {"gelu_new", activation::gelu_tanh},
                                           {"gelu_pytorch_tanh", activation::gelu_tanh},
                                           {"gelu_fast", activation::gelu_tanh},
                                           {"gelu_accurate", activation::gelu_tanh},
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

// The task an `architectures` entry trains, if its name says.
inline std::optional<task> task_of_class(std::string_view cls) {
    constexpr std::array<std::pair<std::string_view, task>, 5> suffixes{{
        {"ForConditionalGeneration", task::seq2seq},
        {"WithLMHeadModel", task::seq2seq},  // T5's name before T5ForConditionalGeneration
        {"ForSequenceClassification", task::seq_cls},
        {"ForCausalLM", task::causal_lm},
        {"LMHeadModel", task::causal_lm},
    }};
    for (const auto& [suffix, t] : suffixes)
        if (cls.ends_with(suffix)) return t;
    return std::nullopt;
}

inline task resolve_task(const reader& r, architecture arch, std::optional<task> override_task,
                         std::string& task_from) {
    const std::string_view type = name_of(arch);
    if (override_task) {
        if (!supports_task(arch, *override_task))
            throw input_error(fmt::format("anatomy: --task {}: {} is {} model and trains {} only; pass --task {}",
                                          name_of(*override_task), type, family_name(family_of(arch)),
                                          supported_tasks(arch), name_of(default_task(arch))));
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
                unmapped = name;
                continue;
            }
            if (!supports_task(arch, *t))
                r.fail(fmt::format("architectures names {} (task {}), which the estimator does not model for {}; "
                                   "pass --task {}",
                                   shorten(name), name_of(*t), type, supported_tasks(arch)));
            task_from = fmt::format("architectures ({})", name);
            return *t;
        }
    }
    const task t = default_task(arch);
    task_from = unmapped.empty() ? fmt::format("the default for {}", type)
                                 : fmt::format("the default for {}; architectures ({}) names no task", type, unmapped);
    return t;
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

inline void check_divisible(const reader& r, std::uint64_t hidden, std::string_view hidden_key, std::uint64_t heads,
                            std::string_view heads_key) {
    if (hidden % heads != 0)
        r.fail(fmt::format("key \"{}\" ({}) must be a multiple of \"{}\" ({})", hidden_key, hidden, heads_key, heads));
}

inline void read_bert_like(const reader& r, model_spec& m) {
    m.norm = norm_kind::layer_norm;
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
    if (m.arch == architecture::distilbert) {
        m.hidden = r.required_count("dim");
        m.layers = r.required_count("n_layers");
        m.heads = r.required_count("n_heads");
        m.ffn_hidden = r.required_count("hidden_dim");
        m.vocab = r.required_count("vocab_size");
        m.max_positions = r.count_or("max_position_embeddings", 512);
        m.token_types = 0;
        m.act = parse_activation(r, "activation", "gelu");
        m.hidden_dropout = r.probability_or("dropout", 0.1);
        m.attention_dropout = r.probability_or("attention_dropout", 0.1);
        check_divisible(r, m.hidden, "dim", m.heads, "n_heads");
        return;
    }
    m.hidden = r.required_count("hidden_size");
    m.layers = r.required_count("num_hidden_layers");
    m.heads = r.required_count("num_attention_heads");
    m.ffn_hidden = r.required_count("intermediate_size");
    m.vocab = r.required_count("vocab_size");
    m.max_positions = r.count_or("max_position_embeddings", 512);
    m.token_types = r.count_or("type_vocab_size", 2);
    m.act = parse_activation(r, "hidden_act", "gelu");
    m.hidden_dropout = r.probability_or("hidden_dropout_prob", 0.1);
    m.attention_dropout = r.probability_or("attention_probs_dropout_prob", 0.1);
    check_divisible(r, m.hidden, "hidden_size", m.heads, "num_attention_heads");
    // relative_key embeddings add parameters the estimator does not model.
    const std::string positions = r.string_or("position_embedding_type", "absolute");
    if (positions != "absolute")
        r.fail(fmt::format("key \"position_embedding_type\" is \"{}\"; the estimator models \"absolute\" only",
                           shorten(positions)));
}

inline void read_gpt2(const reader& r, model_spec& m) {
    m.hidden = r.required_count("n_embd");
    m.layers = r.required_count("n_layer");
    m.heads = r.required_count("n_head");
    m.vocab = r.required_count("vocab_size");
    m.ffn_hidden = r.count_or("n_inner", 0, /*nullable=*/true);
    if (m.ffn_hidden == 0) {  // GPT2MLP: n_inner or 4 * n_embd
        if (m.hidden > std::numeric_limits<std::uint64_t>::max() / 4)
            r.fail(fmt::format("key \"n_embd\" ({}) is too large: 4 * n_embd overflows 64 bits", m.hidden));
        m.ffn_hidden = 4 * m.hidden;
    }
    m.max_positions = r.count_or("n_positions", 1024);
    m.act = parse_activation(r, "activation_function", "gelu_new");
    m.hidden_dropout = r.probability_or("resid_pdrop", 0.1);
    m.attention_dropout = r.probability_or("attn_pdrop", 0.1);
    m.tie_embeddings = r.boolean_or("tie_word_embeddings", true);
    m.norm = norm_kind::layer_norm;
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
    check_divisible(r, m.hidden, "n_embd", m.heads, "n_head");
}

inline void read_llama_like(const reader& r, model_spec& m) {
    m.hidden = r.required_count("hidden_size");
    m.layers = r.required_count("num_hidden_layers");
    m.heads = r.required_count("num_attention_heads");
    m.ffn_hidden = r.required_count("intermediate_size");
    m.vocab = r.required_count("vocab_size");
    m.kv_heads = r.count_or("num_key_value_heads", m.heads, /*nullable=*/true);
    if (m.heads % m.kv_heads != 0)
        r.fail(fmt::format("key \"num_attention_heads\" ({}) must be a multiple of \"num_key_value_heads\" ({})",
                           m.heads, m.kv_heads));
    // head_dim: given, or hidden_size // num_attention_heads (0 keeps the
    // presets' convention for the divisible case).
    m.head_dim = r.count_or("head_dim", 0, /*nullable=*/true);
    if (m.head_dim == 0 && m.hidden % m.heads != 0) m.head_dim = m.hidden / m.heads;
    if (m.head_dim == 0 && m.hidden / m.heads == 0)
        r.fail(fmt::format("key \"hidden_size\" ({}) must be at least \"num_attention_heads\" ({})", m.hidden,
                           m.heads));
    m.ffn = ffn_kind::gated;
    m.act = parse_activation(r, "hidden_act", "silu");
    m.norm = norm_kind::rms_norm;
    m.max_positions = 0;  // rotary: no position table
    m.tie_embeddings = r.boolean_or("tie_word_embeddings", false);
    m.attention_dropout = r.probability_or("attention_dropout", 0.0);
    switch (m.arch) {
        case architecture::llama:
            m.qkv_bias = m.attn_out_bias = r.boolean_or("attention_bias", false);
            m.mlp_bias = r.boolean_or("mlp_bias", false);
            break;
        case architecture::qwen2:  // Qwen2Attention: q, k, v with bias, o without; MLP without
            m.qkv_bias = true;
            break;
        default:  // mistral: no biases anywhere
            break;
    }
}

inline void read_t5(const reader& r, model_spec& m) {
    m.hidden = r.required_count("d_model");
    m.head_dim = r.required_count("d_kv");
    m.ffn_hidden = r.required_count("d_ff");
    m.layers = r.required_count("num_layers");
    m.decoder_layers = r.count_or("num_decoder_layers", m.layers, /*nullable=*/true);
    m.heads = r.required_count("num_heads");
    m.vocab = r.required_count("vocab_size");
    m.relative_buckets = r.count_or("relative_attention_num_buckets", 32);
    m.hidden_dropout = r.probability_or("dropout_rate", 0.1);
    m.attention_dropout = m.hidden_dropout;  // T5Attention drops attention weights with dropout_rate too
    m.tie_embeddings = r.boolean_or("tie_word_embeddings", true);
    m.norm = norm_kind::rms_norm;
    m.max_positions = 0;  // relative position bias: no table
    // T5Config: "[gated-]ACT"; "gated-gelu" means gelu_new.
    const std::string proj = r.string_or("feed_forward_proj", "relu");
    std::string_view act = proj;
    m.ffn = ffn_kind::mlp;
    if (act.starts_with("gated-")) {
        m.ffn = ffn_kind::gated;
        act.remove_prefix(6);
    }
    if (act.empty() || act.find('-') != std::string_view::npos)
        r.fail(fmt::format("key \"feed_forward_proj\" is \"{}\"; write ACT or gated-ACT, e.g. \"relu\" or \"gated-gelu\"",
                           shorten(proj)));
    m.act = proj == "gated-gelu" ? activation::gelu_tanh : activation_named(r, "feed_forward_proj", act, proj);
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
        top.fail(fmt::format("key \"model_type\" is missing; add it, one of {}", choices<architecture>()));
    if (!type_it->is_string()) top.wrong_type("model_type", *type_it, "a string");
    const auto model_type = type_it->get<std::string>();
    const std::optional<architecture> arch = parse_name<architecture>(model_type);
    if (!arch)
        top.fail(fmt::format("model_type \"{}\" is not supported; the estimator knows {}", shorten(model_type),
                             choices<architecture>()));

    const reader r(config, source, model_type);
    hf_model out;
    model_spec& m = out.spec;
    m.arch = *arch;
    switch (family_of(*arch)) {
        case family::encoder: hf_detail::read_bert_like(r, m); break;
        case family::decoder:
            if (*arch == architecture::gpt2) hf_detail::read_gpt2(r, m);
            else hf_detail::read_llama_like(r, m);
            break;
        case family::encoder_decoder: hf_detail::read_t5(r, m); break;
    }
    m.head = hf_detail::resolve_task(r, *arch, task_override, out.task_from);
    if (m.head == task::seq_cls) m.num_labels = hf_detail::read_num_labels(r);  // else unused: keep the default
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
