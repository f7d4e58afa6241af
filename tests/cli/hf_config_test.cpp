// config.json ingestion: parameter counts against measured models, presets
// against their configs, and one named error per bad key.
#include "hf_config.hpp"

#include <anatomy/graph.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using anatomy::cli::hf_config_from_json;
using anatomy::cli::input_error;
using anatomy::cli::load_hf_config;
using nlohmann::json;

const std::string data_dir = ANATOMY_CLI_DATA;

std::uint64_t params_of(const anatomy::model_spec& m) { return anatomy::parameter_count(anatomy::lower(m)); }

std::uint64_t params_of_file(const std::string& path) { return params_of(load_hf_config(path).spec); }

// The fields of two specs that differ, by name. model_spec is not reflectable,
// so the fields are listed here.
std::vector<std::string> differing_fields(const anatomy::model_spec& a, const anatomy::model_spec& b) {
    std::vector<std::string> out;
#define ANATOMY_CLI_FIELD(f) \
    if (!(a.f == b.f)) out.push_back(#f)
    ANATOMY_CLI_FIELD(arch);
    ANATOMY_CLI_FIELD(hidden);
    ANATOMY_CLI_FIELD(layers);
    ANATOMY_CLI_FIELD(decoder_layers);
    ANATOMY_CLI_FIELD(heads);
    ANATOMY_CLI_FIELD(kv_heads);
    ANATOMY_CLI_FIELD(head_dim);
    ANATOMY_CLI_FIELD(ffn);
    ANATOMY_CLI_FIELD(ffn_hidden);
    ANATOMY_CLI_FIELD(act);
    ANATOMY_CLI_FIELD(vocab);
    ANATOMY_CLI_FIELD(max_positions);
    ANATOMY_CLI_FIELD(token_types);
    ANATOMY_CLI_FIELD(relative_buckets);
    ANATOMY_CLI_FIELD(tie_embeddings);
    ANATOMY_CLI_FIELD(norm);
    ANATOMY_CLI_FIELD(qkv_bias);
    ANATOMY_CLI_FIELD(attn_out_bias);
    ANATOMY_CLI_FIELD(mlp_bias);
    ANATOMY_CLI_FIELD(hidden_dropout);
    ANATOMY_CLI_FIELD(attention_dropout);
    ANATOMY_CLI_FIELD(head);
    ANATOMY_CLI_FIELD(num_labels);
#undef ANATOMY_CLI_FIELD
    return out;
}

// The message of the input_error that `config` raises.
std::string error_of(const json& config, std::optional<anatomy::task> task = std::nullopt) {
    try {
        (void)hf_config_from_json(config, task);
    } catch (const input_error& e) {
        return e.what();
    }
    FAIL("no input_error for " << config.dump());
    return {};
}

std::string file_error_of(const std::string& path) {
    try {
        (void)load_hf_config(path);
    } catch (const input_error& e) {
        return e.what();
    }
    FAIL("no input_error for " << path);
    return {};
}

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

json bert_base() { return read_json(data_dir + "/hf_configs/bert-base.json"); }

}  // namespace

TEST_CASE("calibration configs: parameter counts match the measured models") {
    // `params` of /work/shared/calibration/h200-torch2.11-transformers5.17.jsonl
    const auto [file, params] = GENERATE(table<std::string, std::uint64_t>({
        {"bert-base", 109483778},
        {"bert-large", 335143938},
        {"roberta-base", 124647170},
        {"distilbert-base", 66955010},
        {"gpt2", 124439808},
        {"gpt2-medium", 354823168},
        {"tinyllama-1.1b", 1100048384},
        {"llama3.2-1b", 1235814400},
        {"qwen2.5-0.5b", 494032768},
        {"t5-small", 60506624},
    }));
    CAPTURE(file);
    CHECK(params_of_file(data_dir + "/hf_configs/" + file + ".json") == params);
}

TEST_CASE("unseen configs: parameter counts match transformers") {
    const auto [file, params] = GENERATE(table<std::string, std::uint64_t>({
        {"mistral-7b", 7241732096},
        {"qwen2.5-7b", 7615616512},     // untied lm_head
        {"t5-v1_1-small", 76961152},    // gated-gelu, untied
        {"llama-2-7b", 6738415616},
        {"roberta-large", 355361794},   // RobertaForMaskedLM: the default task, seq-cls, 2 labels
        {"gpt2-n-inner", 105553152},    // n_inner 2048 instead of 4 * 768
        {"bert-3-labels", 109484547},   // bert-base + one more label: 768 + 1
    }));
    CAPTURE(file);
    CHECK(params_of_file(data_dir + "/unseen/" + file + ".json") == params);
}

TEST_CASE("each preset and its published config give the same spec") {
    const auto [preset, file] = GENERATE(table<std::string, std::string>({
        {"bert-base", "hf_configs/bert-base.json"},
        {"bert-large", "hf_configs/bert-large.json"},
        {"roberta-base", "hf_configs/roberta-base.json"},
        {"roberta-large", "unseen/roberta-large.json"},
        {"distilbert-base", "hf_configs/distilbert-base.json"},
        {"gpt2", "hf_configs/gpt2.json"},
        {"gpt2-medium", "hf_configs/gpt2-medium.json"},
        {"llama-2-7b", "unseen/llama-2-7b.json"},
        {"llama-3.2-1b", "hf_configs/llama3.2-1b.json"},
        {"tinyllama-1.1b", "hf_configs/tinyllama-1.1b.json"},
        {"mistral-7b", "unseen/mistral-7b.json"},
        {"qwen2.5-0.5b", "hf_configs/qwen2.5-0.5b.json"},
        {"qwen2.5-7b", "unseen/qwen2.5-7b.json"},
        {"t5-small", "hf_configs/t5-small.json"},
    }));
    CAPTURE(preset, file);
    const std::optional<anatomy::model_spec> expected = anatomy::presets::find(preset);
    REQUIRE(expected);
    const anatomy::model_spec loaded = load_hf_config(data_dir + "/" + file).spec;
    std::vector<std::string> diff = differing_fields(*expected, loaded);
    // T5Attention drops attention weights with dropout_rate; the T5 presets
    // leave attention_dropout at 0 (reported to the library's owner).
    if (expected->arch == anatomy::architecture::t5 && expected->attention_dropout == 0.0 &&
        loaded.attention_dropout == loaded.hidden_dropout)
        std::erase(diff, "attention_dropout");
    CHECK(diff == std::vector<std::string>{});
    CHECK(params_of(loaded) == params_of(*expected));
}

TEST_CASE("the task comes from --task, else architectures, else the family") {
    SECTION("architectures") {
        const auto loaded = load_hf_config(data_dir + "/hf_configs/llama3.2-1b.json");
        CHECK(loaded.spec.head == anatomy::task::causal_lm);
        CHECK(loaded.task_from == "architectures (LlamaForCausalLM)");
    }
    SECTION("an override for a decoder: seq-cls adds a score head, drops lm_head") {
        const auto loaded = load_hf_config(data_dir + "/hf_configs/gpt2.json", anatomy::task::seq_cls);
        CHECK(loaded.spec.head == anatomy::task::seq_cls);
        CHECK(loaded.task_from == "--task");
        CHECK(params_of(loaded.spec) == 124439808 + 2 * 768);  // tied lm_head: only `score` is new
    }
    SECTION("no architectures: the family's default") {
        json c = read_json(data_dir + "/hf_configs/t5-small.json");
        c.erase("architectures");
        const auto loaded = hf_config_from_json(c);
        CHECK(loaded.spec.head == anatomy::task::seq2seq);
        CHECK(loaded.task_from == "the default for t5");
    }
    SECTION("T5's old class name") {
        json c = read_json(data_dir + "/hf_configs/t5-small.json");
        c["architectures"] = {"T5WithLMHeadModel"};
        CHECK(hf_config_from_json(c).spec.head == anatomy::task::seq2seq);
    }
    SECTION("a class that names no task: the default") {
        json c = bert_base();
        c["architectures"] = {"BertForMaskedLM"};
        const auto loaded = hf_config_from_json(c);
        CHECK(loaded.spec.head == anatomy::task::seq_cls);
        CHECK(loaded.task_from == "the default for bert; architectures (BertForMaskedLM) names no task");
    }
    SECTION("a decoder classifier from architectures") {
        json c = read_json(data_dir + "/hf_configs/qwen2.5-0.5b.json");
        c["architectures"] = {"Qwen2ForSequenceClassification"};
        c["num_labels"] = 5;
        const auto loaded = hf_config_from_json(c);
        CHECK(loaded.spec.head == anatomy::task::seq_cls);
        CHECK(loaded.spec.num_labels == 5);
    }
}

TEST_CASE("labels: id2label wins over num_labels, 2 by default") {
    json c = bert_base();
    CHECK(hf_config_from_json(c).spec.num_labels == 2);
    c["num_labels"] = 7;
    CHECK(hf_config_from_json(c).spec.num_labels == 7);
    c["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
    CHECK(hf_config_from_json(c).spec.num_labels == 3);
    CHECK(load_hf_config(data_dir + "/unseen/bert-3-labels.json").spec.num_labels == 3);
    // Labels of a causal LM are not read: they do not change its head.
    json g = read_json(data_dir + "/hf_configs/gpt2.json");
    g["id2label"] = json::object();
    CHECK(hf_config_from_json(g).spec.num_labels == 2);
    CHECK_THROWS_AS(hf_config_from_json(g, anatomy::task::seq_cls), input_error);
}

TEST_CASE("family-specific keys and defaults") {
    SECTION("gpt2: n_inner null is 4 * n_embd; tie_word_embeddings defaults to true") {
        const auto m = load_hf_config(data_dir + "/hf_configs/gpt2.json").spec;
        CHECK(m.ffn_hidden == 4 * 768);
        CHECK(m.tie_embeddings);
        CHECK(m.act == anatomy::activation::gelu_tanh);
        CHECK(load_hf_config(data_dir + "/unseen/gpt2-n-inner.json").spec.ffn_hidden == 2048);
    }
    SECTION("llama: num_key_value_heads and head_dim default from the heads; attention_bias and mlp_bias") {
        json c = read_json(data_dir + "/hf_configs/tinyllama-1.1b.json");
        c.erase("num_key_value_heads");
        c["head_dim"] = nullptr;
        auto m = hf_config_from_json(c).spec;
        CHECK(m.kv_heads == 32);
        CHECK(m.head_dim == 0);
        CHECK(m.head_width() == 64);
        CHECK(!m.qkv_bias);
        c["attention_bias"] = true;
        c["mlp_bias"] = true;
        m = hf_config_from_json(c).spec;
        CHECK(m.qkv_bias);
        CHECK(m.attn_out_bias);
        CHECK(m.mlp_bias);
    }
    SECTION("mistral has no biases, whatever the config says") {
        json c = read_json(data_dir + "/unseen/mistral-7b.json");
        c["attention_bias"] = true;
        const auto m = hf_config_from_json(c).spec;
        CHECK(!m.qkv_bias);
        CHECK(!m.attn_out_bias);
        CHECK(!m.mlp_bias);
    }
    SECTION("qwen2: bias on q, k, v only") {
        const auto m = load_hf_config(data_dir + "/hf_configs/qwen2.5-0.5b.json").spec;
        CHECK(m.qkv_bias);
        CHECK(!m.attn_out_bias);
        CHECK(!m.mlp_bias);
        CHECK(m.tie_embeddings);
        json c = read_json(data_dir + "/hf_configs/qwen2.5-0.5b.json");
        c.erase("tie_word_embeddings");
        CHECK(!hf_config_from_json(c).spec.tie_embeddings);  // Qwen2Config's default
    }
    SECTION("t5: feed_forward_proj, num_decoder_layers, dropout") {
        const auto m = load_hf_config(data_dir + "/unseen/t5-v1_1-small.json").spec;
        CHECK(m.ffn == anatomy::ffn_kind::gated);
        CHECK(m.act == anatomy::activation::gelu_tanh);
        CHECK(!m.tie_embeddings);
        CHECK(m.decoder_layers == 8);
        json c = read_json(data_dir + "/hf_configs/t5-small.json");
        c.erase("num_decoder_layers");
        c["num_layers"] = 3;
        c["feed_forward_proj"] = "gated-silu";
        c["dropout_rate"] = 0.2;
        const auto t = hf_config_from_json(c).spec;
        CHECK(t.decoder_layers == 3);
        CHECK(t.ffn == anatomy::ffn_kind::gated);
        CHECK(t.act == anatomy::activation::silu);
        CHECK(t.hidden_dropout == 0.2);
        CHECK(t.attention_dropout == 0.2);
    }
    SECTION("distilbert keys") {
        const auto m = load_hf_config(data_dir + "/hf_configs/distilbert-base.json").spec;
        CHECK(m.hidden == 768);
        CHECK(m.layers == 6);
        CHECK(m.token_types == 0);
        CHECK(m.hidden_dropout == 0.1);
    }
    SECTION("bert: optional keys take BertConfig's defaults") {
        json c = bert_base();
        for (const char* key : {"max_position_embeddings", "type_vocab_size", "hidden_act", "hidden_dropout_prob",
                                "attention_probs_dropout_prob"})
            c.erase(key);
        CHECK(params_of(hf_config_from_json(c).spec) == 109483778);
    }
}

TEST_CASE("names: _name_or_path, the directory of a config.json, or the file's stem") {
    CHECK(load_hf_config(data_dir + "/unseen/llama-2-7b.json").name == "meta-llama/Llama-2-7b-hf");
    CHECK(load_hf_config(data_dir + "/unseen/llama-dir").name == "llama-dir");
    CHECK(load_hf_config(data_dir + "/unseen/llama-dir/config.json").name == "llama-dir");
    CHECK(load_hf_config(data_dir + "/hf_configs/gpt2.json").name == "gpt2");
}

TEST_CASE("bad keys: one message naming the key") {
    using Catch::Matchers::Contains;
    using Catch::Matchers::StartsWith;
    json c = bert_base();
    SECTION("missing, per family") {
        const auto [file, key] = GENERATE(table<std::string, std::string>({
            {"hf_configs/bert-base.json", "hidden_size"},
            {"hf_configs/distilbert-base.json", "dim"},
            {"hf_configs/gpt2.json", "n_embd"},
            {"hf_configs/tinyllama-1.1b.json", "intermediate_size"},
            {"hf_configs/qwen2.5-0.5b.json", "num_attention_heads"},
            {"hf_configs/t5-small.json", "d_kv"},
        }));
        json f = read_json(data_dir + "/" + file);
        f.erase(key);
        CHECK_THAT(error_of(f), StartsWith("anatomy: config.json: key \"" + key + "\" is missing (model_type " +
                                           f["model_type"].get<std::string>() + ")"));
    }
    SECTION("wrong types") {
        c["hidden_size"] = "768";
        CHECK(error_of(c) ==
              "anatomy: config.json: key \"hidden_size\" must be a whole number > 0, not a string \"768\"");
        c = bert_base();
        c["num_hidden_layers"] = 12.5;
        CHECK_THAT(error_of(c), Contains("key \"num_hidden_layers\" must be a whole number > 0, not a number 12.5"));
        c = bert_base();
        c["hidden_size"] = nullptr;
        CHECK(error_of(c) == "anatomy: config.json: key \"hidden_size\" must be a whole number > 0, not null");
        c = bert_base();
        c["hidden_dropout_prob"] = "0.1";
        CHECK_THAT(error_of(c), Contains("key \"hidden_dropout_prob\" must be a number in [0, 1)"));
        c = bert_base();
        c["hidden_act"] = 3;
        CHECK_THAT(error_of(c), Contains("key \"hidden_act\" must be a string"));
        c = bert_base();
        c["architectures"] = "BertModel";
        CHECK_THAT(error_of(c), Contains("key \"architectures\" must be an array of class names, not a string"));
        c = bert_base();
        c["id2label"] = {1, 2};
        CHECK_THAT(error_of(c), Contains("key \"id2label\" must be an object of label names, not an array"));
        c = bert_base();
        c["model_type"] = 7;
        CHECK_THAT(error_of(c), Contains("key \"model_type\" must be a string"));
        json g = read_json(data_dir + "/hf_configs/gpt2.json");
        g["tie_word_embeddings"] = "yes";
        CHECK_THAT(error_of(g), Contains("key \"tie_word_embeddings\" must be true or false, not a string \"yes\""));
    }
    SECTION("sizes <= 0") {
        c["num_hidden_layers"] = 0;
        CHECK(error_of(c) == "anatomy: config.json: key \"num_hidden_layers\" is 0; it must be > 0");
        c["num_hidden_layers"] = -3;
        CHECK(error_of(c) == "anatomy: config.json: key \"num_hidden_layers\" is -3; it must be > 0");
        c = bert_base();
        c["num_labels"] = 0;
        CHECK_THAT(error_of(c), Contains("key \"num_labels\" is 0"));
        c = bert_base();
        c["id2label"] = json::object();
        CHECK_THAT(error_of(c), Contains("key \"id2label\" is empty"));
    }
    SECTION("values out of range or unknown") {
        c["hidden_dropout_prob"] = 1.0;
        CHECK_THAT(error_of(c), Contains("key \"hidden_dropout_prob\" is 1.0; a dropout probability must be in [0, 1)"));
        c = bert_base();
        c["hidden_act"] = "quick_gelu";
        CHECK_THAT(error_of(c), Contains("key \"hidden_act\" is \"quick_gelu\", an activation the estimator does not "
                                         "model; use one of gelu, "));
        c = bert_base();
        c["num_attention_heads"] = 10;
        CHECK_THAT(error_of(c), Contains("key \"hidden_size\" (768) must be a multiple of \"num_attention_heads\" (10)"));
        c = bert_base();
        c["position_embedding_type"] = "relative_key";
        CHECK_THAT(error_of(c), Contains("key \"position_embedding_type\" is \"relative_key\""));
        json l = read_json(data_dir + "/hf_configs/tinyllama-1.1b.json");
        l["num_key_value_heads"] = 5;
        CHECK_THAT(error_of(l),
                   Contains("key \"num_attention_heads\" (32) must be a multiple of \"num_key_value_heads\" (5)"));
        json t = read_json(data_dir + "/hf_configs/t5-small.json");
        t["feed_forward_proj"] = "gated-gelu-relu";
        CHECK_THAT(error_of(t), Contains("key \"feed_forward_proj\" is \"gated-gelu-relu\"; write ACT or gated-ACT"));
        t["feed_forward_proj"] = "gated-mish";
        CHECK_THAT(error_of(t), Contains("key \"feed_forward_proj\" is \"gated-mish\", an activation"));
    }
    SECTION("model_type") {
        c.erase("model_type");
        CHECK_THAT(error_of(c), Contains("key \"model_type\" is missing; add it, one of bert, roberta"));
        c["model_type"] = "gemma";
        CHECK(error_of(c) == "anatomy: config.json: model_type \"gemma\" is not supported; the estimator knows bert, "
                             "roberta, distilbert, gpt2, llama, mistral, qwen2, t5");
    }
    SECTION("tasks the family does not train") {
        CHECK(error_of(c, anatomy::task::causal_lm) ==
              "anatomy: --task causal-lm: bert is an encoder model and trains seq-cls only; pass --task seq-cls");
        json t = read_json(data_dir + "/hf_configs/t5-small.json");
        CHECK_THAT(error_of(t, anatomy::task::seq_cls), Contains("t5 is an encoder-decoder model and trains seq2seq only"));
        json g = read_json(data_dir + "/hf_configs/gpt2.json");
        CHECK_THAT(error_of(g, anatomy::task::seq2seq), Contains("trains causal-lm or seq-cls only"));
        c["architectures"] = {"BertLMHeadModel"};
        CHECK_THAT(error_of(c), Contains("architectures names BertLMHeadModel (task causal-lm), which the estimator "
                                         "does not model for bert; pass --task seq-cls"));
    }
    SECTION("not an object") {
        CHECK(error_of(json::array({1, 2})) ==
              "anatomy: config.json: expected a JSON object (a config.json), got a JSON array");
        CHECK(error_of(json(nullptr)) == "anatomy: config.json: expected a JSON object (a config.json), got null");
    }
    SECTION("sizes whose parameter count overflows 64 bits") {
        json g = read_json(data_dir + "/bad/overflow.json");
        const auto m = hf_config_from_json(g).spec;  // each size fits; their product does not
        CHECK_THROWS_AS(params_of(m), anatomy::overflow_error);
    }
}

TEST_CASE("bad files: one message naming the file") {
    using Catch::Matchers::EndsWith;
    const std::string bad = data_dir + "/bad";
    CHECK(file_error_of(bad + "/nope.json") == "anatomy: " + bad + "/nope.json: no such file; pass the path of a config.json");
    CHECK(file_error_of(bad) ==
          "anatomy: " + bad + ": is a directory and holds no config.json; pass the path of a config.json file");
    CHECK(file_error_of(bad + "/empty.json") == "anatomy: " + bad + "/empty.json: is empty; expected a JSON object (a config.json)");
    CHECK(file_error_of(bad + "/malformed.json") ==
          "anatomy: " + bad +
              "/malformed.json: is not valid JSON: parse error at line 4, column 24: syntax error while parsing "
              "object separator - unexpected number literal; expected ':'");
    CHECK(file_error_of(bad + "/array.json") ==
          "anatomy: " + bad + "/array.json: expected a JSON object (a config.json), got a JSON array");
    CHECK_THAT(file_error_of(bad + "/missing_hidden_size.json"),
               EndsWith("missing_hidden_size.json: key \"hidden_size\" is missing (model_type bert); add it, as in "
                        "the model's published config.json"));
}
