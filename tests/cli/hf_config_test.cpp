// config.json ingestion: parameter counts against measured models, presets
// against their configs, and one named error per bad key.
#include "hf_config.hpp"

#include <anatomy/graph.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
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
// tests/data: the published configs the presets come from, and transformers' counts for them.
const std::string configs_dir = data_dir + "/../../data/configs";

std::uint64_t params_of(const anatomy::model_spec& m) { return anatomy::parameter_count(anatomy::lower(m)); }

std::uint64_t params_of_file(const std::string& path) { return params_of(load_hf_config(path).spec); }

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

json config(const std::string& stem) { return read_json(configs_dir + "/" + stem + ".json"); }

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
    const auto [file, params, task] = GENERATE(table<std::string, std::uint64_t, std::optional<anatomy::task>>({
        {"mistral-7b", 7241732096, std::nullopt},
        {"qwen2.5-7b", 7615616512, std::nullopt},  // untied lm_head
        // gated-gelu; transformers 5 ties T5's lm_head whatever tie_word_embeddings says
        {"t5-v1_1-small", 76961152 - 32128 * 512, std::nullopt},
        {"llama-2-7b", 6738415616, std::nullopt},
        {"roberta-large", 355361794, anatomy::task::seq_cls},  // RobertaForMaskedLM, forced to 2 labels
        {"roberta-large", 355412057, std::nullopt},            // RobertaForMaskedLM
        {"gpt2-n-inner", 105553152, std::nullopt},             // n_inner 2048 instead of 4 * 768
        {"bert-3-labels", 109484547, std::nullopt},            // bert-base + one more label: 768 + 1
    }));
    CAPTURE(file, task);
    CHECK(params_of(load_hf_config(data_dir + "/unseen/" + file + ".json", task).spec) == params);
}

TEST_CASE("each preset and its published config give the same parameter count") {
    // Every tests/data/configs/<preset>.json; the BERT family's files say
    // ForMaskedLM and their presets are classifiers: seq-cls is forced.
    std::size_t compared = 0;
    for (const auto& entry : std::filesystem::directory_iterator(configs_dir)) {
        if (entry.path().extension() != ".json") continue;
        const std::string stem = entry.path().stem().string();
        const std::optional<anatomy::model_spec> expected = anatomy::presets::find(stem);
        if (!expected) continue;
        CAPTURE(stem);
        const std::string type = read_json(entry.path().string())["model_type"].get<std::string>();
        std::optional<anatomy::task> task;
        if (type == "bert" || type == "roberta" || type == "distilbert") task = anatomy::task::seq_cls;
        const anatomy::model_spec loaded = load_hf_config(entry.path(), task).spec;
        CHECK(loaded.model_type == expected->model_type);
        CHECK(loaded.head.kind == expected->head.kind);
        CHECK(params_of(loaded) == params_of(*expected));
        ++compared;
    }
    CHECK(compared >= 74);
}

// Every committed config's count against transformers' (heads included) is in
// tests/calibration/param_counts_test.cpp.

TEST_CASE("the task comes from --task, else architectures, else the model") {
    SECTION("architectures") {
        const auto loaded = load_hf_config(data_dir + "/hf_configs/llama3.2-1b.json");
        CHECK(loaded.spec.head.kind == anatomy::task::causal_lm);
        CHECK(loaded.task_from == "architectures (LlamaForCausalLM)");
    }
    SECTION("an override for a decoder: seq-cls adds a score head, drops lm_head") {
        const auto loaded = load_hf_config(data_dir + "/hf_configs/gpt2.json", anatomy::task::seq_cls);
        CHECK(loaded.spec.head.kind == anatomy::task::seq_cls);
        CHECK(loaded.task_from == "--task");
        CHECK(params_of(loaded.spec) == 124439808 + 2 * 768);  // tied lm_head: only `score` is new
    }
    SECTION("no architectures: the model's default") {
        json c = read_json(data_dir + "/hf_configs/t5-small.json");
        c.erase("architectures");
        const auto loaded = hf_config_from_json(c);
        CHECK(loaded.spec.head.kind == anatomy::task::seq2seq);
        CHECK(loaded.task_from == "the default for t5");
        json v = config("vit-base");
        v.erase("architectures");
        CHECK(hf_config_from_json(v).spec.head.kind == anatomy::task::image_cls);
    }
    SECTION("T5's old class name") {
        json c = read_json(data_dir + "/hf_configs/t5-small.json");
        c["architectures"] = {"T5WithLMHeadModel"};
        CHECK(hf_config_from_json(c).spec.head.kind == anatomy::task::seq2seq);
    }
    SECTION("masked-lm and image-cls from architectures") {
        const auto bert = load_hf_config(configs_dir + "/bert-base.json");
        CHECK(bert.spec.head.kind == anatomy::task::masked_lm);
        CHECK(bert.task_from == "architectures (BertForMaskedLM)");
        CHECK(load_hf_config(configs_dir + "/vit-base.json").spec.head.kind == anatomy::task::image_cls);
        CHECK(load_hf_config(configs_dir + "/modernbert-base.json").spec.head.kind == anatomy::task::masked_lm);
    }
    SECTION("a bare model class names no task: the default") {
        json c = bert_base();
        c["architectures"] = {"BertModel"};
        const auto loaded = hf_config_from_json(c);
        CHECK(loaded.spec.head.kind == anatomy::task::seq_cls);
        CHECK(loaded.task_from == "the default for bert; architectures (BertModel) names no task");
    }
    SECTION("a decoder classifier from architectures") {
        json c = read_json(data_dir + "/hf_configs/qwen2.5-0.5b.json");
        c["architectures"] = {"Qwen2ForSequenceClassification"};
        c["num_labels"] = 5;
        const auto loaded = hf_config_from_json(c);
        CHECK(loaded.spec.head.kind == anatomy::task::seq_cls);
        CHECK(loaded.spec.head.num_labels == 5);
    }
}

TEST_CASE("labels: id2label wins over num_labels, 2 by default") {
    json c = bert_base();
    CHECK(hf_config_from_json(c).spec.head.num_labels == 2);
    c["num_labels"] = 7;
    CHECK(hf_config_from_json(c).spec.head.num_labels == 7);
    c["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
    CHECK(hf_config_from_json(c).spec.head.num_labels == 3);
    CHECK(load_hf_config(data_dir + "/unseen/bert-3-labels.json").spec.head.num_labels == 3);
    CHECK(load_hf_config(configs_dir + "/vit-base.json").spec.head.num_labels == 1000);
    // Labels of a causal LM are not read: they do not change its head.
    json g = read_json(data_dir + "/hf_configs/gpt2.json");
    g["id2label"] = json::object();
    CHECK(hf_config_from_json(g).spec.head.num_labels == 2);
    CHECK_THROWS_AS(hf_config_from_json(g, anatomy::task::seq_cls), input_error);
}

TEST_CASE("family-specific keys and defaults") {
    using anatomy::activation;
    SECTION("gpt2: n_inner null is 4 * n_embd; tie_word_embeddings defaults to true") {
        const auto m = load_hf_config(data_dir + "/hf_configs/gpt2.json").spec;
        CHECK(m.mlp.hidden == 4 * 768);
        CHECK(m.head.tied);
        CHECK(m.mlp.act == activation::gelu_new);
        CHECK(m.embedding.positions == 1024);
        CHECK(load_hf_config(data_dir + "/unseen/gpt2-n-inner.json").spec.mlp.hidden == 2048);
    }
    SECTION("llama: num_key_value_heads and head_dim default from the heads; attention_bias and mlp_bias") {
        json c = read_json(data_dir + "/hf_configs/tinyllama-1.1b.json");
        c.erase("num_key_value_heads");
        c["head_dim"] = nullptr;
        auto m = hf_config_from_json(c).spec;
        CHECK(m.kv_head_count() == 32);
        CHECK(m.attention.head_dim == 0);
        CHECK(m.head_width() == 64);
        CHECK(!m.attention.qkv_bias);
        c["attention_bias"] = true;
        c["mlp_bias"] = true;
        m = hf_config_from_json(c).spec;
        CHECK(m.attention.qkv_bias);
        CHECK(m.attention.out_bias);
        CHECK(m.mlp.bias);
    }
    SECTION("mistral has no biases, whatever the config says") {
        json c = read_json(data_dir + "/unseen/mistral-7b.json");
        c["attention_bias"] = true;
        const auto m = hf_config_from_json(c).spec;
        CHECK(!m.attention.qkv_bias);
        CHECK(!m.attention.out_bias);
        CHECK(!m.mlp.bias);
    }
    SECTION("qwen2: bias on q, k, v only") {
        const auto m = load_hf_config(data_dir + "/hf_configs/qwen2.5-0.5b.json").spec;
        CHECK(m.attention.qkv_bias);
        CHECK(!m.attention.out_bias);
        CHECK(!m.mlp.bias);
        CHECK(m.head.tied);
        json c = read_json(data_dir + "/hf_configs/qwen2.5-0.5b.json");
        c.erase("tie_word_embeddings");
        CHECK(!hf_config_from_json(c).spec.head.tied);  // Qwen2Config's default
    }
    SECTION("qwen3: head_dim 128 by default; sliding only with use_sliding_window") {
        json c = config("qwen3-0.6b");
        c.erase("head_dim");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.attention.head_dim == 128);
        CHECK(m.attention.qk_norm == anatomy::qk_norm_kind::per_head);
        CHECK(m.pattern.uniform());
        CHECK(m.pattern.windows[0] == 0);
        c["sliding_window"] = 4096;
        CHECK(hf_config_from_json(c).spec.pattern.windows[0] == 0);  // use_sliding_window false
        c["use_sliding_window"] = true;
        c["max_window_layers"] = 28;  // = num_hidden_layers: no layer slides
        CHECK(hf_config_from_json(c).spec.pattern.windows[0] == 0);
        c["max_window_layers"] = 0;  // every layer slides
        m = hf_config_from_json(c).spec;
        CHECK(m.pattern.windows[0] == 4096);
        CHECK(m.pattern.uniform());
    }
    SECTION("phi3: sliding_window on every layer, partial rotary") {
        auto m = load_hf_config(configs_dir + "/phi-3-mini.json").spec;
        CHECK(m.pattern.length == 1);
        CHECK(m.pattern.windows[0] == 2047);
        CHECK(m.attention.rotary_fraction == 1.0);
        CHECK(m.attention.layout == anatomy::qkv_layout::fused);
        CHECK(load_hf_config(configs_dir + "/phi-4.json").spec.pattern.windows[0] == 0);
        json c = config("phi-3-mini");
        c["partial_rotary_factor"] = 0.5;
        CHECK(hf_config_from_json(c).spec.attention.rotary_fraction == 0.5);
        c["rope_parameters"] = {{"rope_type", "default"}, {"partial_rotary_factor", 0.75}};
        CHECK(hf_config_from_json(c).spec.attention.rotary_fraction == 0.75);  // rope_parameters wins
        c["resid_pdrop"] = 0.1;
        CHECK(hf_config_from_json(c).spec.block.dropout == 0.1);
    }
    SECTION("olmo2: norms after each branch, full-width q/k norms") {
        const auto m = load_hf_config(configs_dir + "/olmo-2-7b.json").spec;
        CHECK(m.block.placement == anatomy::norm_placement::post_sublayer);
        CHECK(m.attention.qk_norm == anatomy::qk_norm_kind::full_width);
    }
    SECTION("gemma: head_dim 256 by default; gemma reads hidden_act, gemma2/3 hidden_activation") {
        json g = config("gemma-2-2b");
        g["model_type"] = "gemma";
        g.erase("head_dim");
        g["hidden_act"] = "gelu";
        auto m = hf_config_from_json(g).spec;
        CHECK(m.model_type == "gemma");
        CHECK(m.attention.head_dim == 256);
        CHECK(m.mlp.act == activation::gelu);
        CHECK(m.embedding.scaled);
        json c = config("gemma-2-2b");
        c["hidden_activation"] = "gelu";
        CHECK(hf_config_from_json(c).spec.mlp.act == activation::gelu);
        c.erase("hidden_activation");
        CHECK(hf_config_from_json(c).spec.mlp.act == activation::gelu_tanh);
    }
    SECTION("gemma2: even layers slide; soft-capping; an explicit layer_types") {
        json c = config("gemma-2-2b");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.pattern.length == 2);
        CHECK(m.pattern.windows[0] == 4096);
        CHECK(m.pattern.windows[1] == 0);
        CHECK(m.attention.logit_softcap == 50.0);
        CHECK(m.head.logit_softcap == 30.0);
        c["final_logit_softcapping"] = nullptr;
        CHECK(hf_config_from_json(c).spec.head.logit_softcap == 0.0);
        json types = json::array();
        for (int i = 0; i < 26; ++i) types.push_back(i % 3 == 2 ? "full_attention" : "sliding_attention");
        c["layer_types"] = types;
        m = hf_config_from_json(c).spec;
        CHECK(m.pattern.length == 3);
        CHECK(m.pattern.windows[0] == 4096);
        CHECK(m.pattern.windows[1] == 4096);
        CHECK(m.pattern.windows[2] == 0);
        c["layer_types"] = json::array();
        for (int i = 0; i < 26; ++i) c["layer_types"].push_back("full_attention");
        CHECK(hf_config_from_json(c).spec.pattern.uniform());
    }
    SECTION("gemma3: sliding_window_pattern, default 6") {
        json c = config("gemma-3-1b");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.model_type == "gemma3_text");
        CHECK(m.pattern.length == 6);
        CHECK(m.pattern.windows[0] == 512);
        CHECK(m.pattern.windows[4] == 512);
        CHECK(m.pattern.windows[5] == 0);
        CHECK(m.head.logit_softcap == 0.0);
        c.erase("sliding_window_pattern");
        CHECK(hf_config_from_json(c).spec.pattern.length == 6);
        c["sliding_window_pattern"] = 4;
        m = hf_config_from_json(c).spec;
        CHECK(m.pattern.length == 4);
        CHECK(m.pattern.windows[3] == 0);
    }
    SECTION("gpt_neox: rotary_pct, parallel residual, biases, dropouts") {
        json c = config("pythia-160m");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.attention.rotary_fraction == 0.25);
        CHECK(m.block.residual == anatomy::residual_kind::parallel);
        CHECK(m.attention.qkv_bias);
        c.erase("rotary_pct");
        CHECK(hf_config_from_json(c).spec.attention.rotary_fraction == 0.25);
        c["rope_parameters"] = {{"rope_theta", 10000}, {"partial_rotary_factor", 0.5}};
        c["use_parallel_residual"] = false;
        c["attention_bias"] = false;
        c["hidden_dropout"] = 0.1;
        c["attention_dropout"] = 0.2;
        m = hf_config_from_json(c).spec;
        CHECK(m.attention.rotary_fraction == 0.5);
        CHECK(m.block.residual == anatomy::residual_kind::sequential);
        CHECK(!m.attention.qkv_bias);
        CHECK(m.block.dropout == 0.1);
        CHECK(m.attention.dropout == 0.2);
    }
    SECTION("gptj: rotary_dim, n_inner, dropouts") {
        json c = config("gpt-j-6b");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.rotary_width() == 64);
        CHECK(m.mlp.hidden == 4 * 4096);
        CHECK(m.head.lm_head_bias);
        c.erase("rotary_dim");
        c["n_inner"] = 1000;
        c["resid_pdrop"] = 0.1;
        c["embd_pdrop"] = 0.2;
        c["attn_pdrop"] = 0.3;
        m = hf_config_from_json(c).spec;
        CHECK(m.rotary_width() == 64);
        CHECK(m.mlp.hidden == 1000);
        CHECK(m.block.dropout == 0.1);
        CHECK(m.embedding.dropout == 0.2);
        CHECK(m.attention.dropout == 0.3);
    }
    SECTION("opt: projection, post-norm, final norm, bias, dropout") {
        auto m = load_hf_config(configs_dir + "/opt-350m.json").spec;
        CHECK(m.embedding.projection == 512);
        CHECK(m.block.placement == anatomy::norm_placement::post_residual);
        CHECK(!m.block.final_norm);
        m = load_hf_config(configs_dir + "/opt-125m.json").spec;
        CHECK(m.embedding.projection == 0);
        CHECK(m.block.final_norm);
        CHECK(m.block.dropout == 0.1);
        json c = config("opt-125m");
        c["word_embed_proj_dim"] = nullptr;
        c["_remove_final_layer_norm"] = true;
        c["enable_bias"] = false;
        c.erase("dropout");
        m = hf_config_from_json(c).spec;
        CHECK(m.embedding.projection == 0);
        CHECK(!m.block.final_norm);
        CHECK(!m.attention.qkv_bias);
        CHECK(!m.mlp.bias);
        CHECK(m.block.dropout == 0.1);  // OPTConfig's default
    }
    SECTION("falcon: multi-query, new decoder architecture, n_embed") {
        auto m = load_hf_config(configs_dir + "/falcon-7b.json").spec;
        CHECK(m.kv_head_count() == 1);
        CHECK(m.block.shared_parallel_norm);
        CHECK(m.mlp.hidden == 4 * 4544);
        m = load_hf_config(configs_dir + "/falcon-40b.json").spec;
        CHECK(m.kv_head_count() == 8);
        CHECK(!m.block.shared_parallel_norm);
        json c = config("falcon-7b");
        c["n_embed"] = c["hidden_size"];
        c.erase("hidden_size");
        c["multi_query"] = false;
        c["parallel_attn"] = false;
        c["alibi"] = true;
        c["bias"] = true;
        c["ffn_hidden_size"] = 1000;
        m = hf_config_from_json(c).spec;
        CHECK(m.hidden == 4544);
        CHECK(m.kv_head_count() == 71);
        CHECK(m.block.residual == anatomy::residual_kind::sequential);
        CHECK(m.attention.positions == anatomy::position_kind::alibi);
        CHECK(m.attention.qkv_bias);
        CHECK(m.mlp.hidden == 1000);
    }
    SECTION("bloom: n_embed or hidden_size; the MLP is 4 * hidden") {
        json c = config("bloom-560m");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.hidden == 1024);
        CHECK(m.mlp.hidden == 4096);
        c["hidden_size"] = c["n_embed"];
        c.erase("n_embed");
        CHECK(params_of(hf_config_from_json(c).spec) == params_of(m));
    }
    SECTION("modernbert: global every n layers, local_attention / 2, biases, dropouts") {
        json c = config("modernbert-base");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.pattern.length == 3);
        CHECK(m.pattern.windows[0] == 0);
        CHECK(m.pattern.windows[1] == 64);
        CHECK(!m.norm.bias);
        c["global_attn_every_n_layers"] = 2;
        c["local_attention"] = 256;
        c["norm_bias"] = true;
        c["mlp_bias"] = true;
        c["attention_bias"] = true;
        c["embedding_dropout"] = 0.1;
        c["mlp_dropout"] = 0.2;
        c["attention_dropout"] = 0.3;
        m = hf_config_from_json(c).spec;
        CHECK(m.pattern.length == 2);
        CHECK(m.pattern.windows[1] == 128);
        CHECK(m.norm.bias);
        CHECK(m.mlp.bias);
        CHECK(m.attention.qkv_bias);
        CHECK(m.embedding.dropout == 0.1);
        CHECK(m.mlp.dropout == 0.2);
        CHECK(m.attention.dropout == 0.3);
        // "mean" pooling: a classifier is modelled.
        CHECK(hf_config_from_json(config("modernbert-base"), anatomy::task::seq_cls).spec.head.classifier ==
              anatomy::classifier_kind::mean_pool_head);
    }
    SECTION("vit: image and patch sizes, channels, qkv_bias, dropouts") {
        json c = config("vit-base");
        auto m = hf_config_from_json(c).spec;
        CHECK(m.embedding.patch_count() == 196);
        c["image_size"] = {384, 384};
        c["patch_size"] = 32;
        c["num_channels"] = 1;
        c["qkv_bias"] = false;
        c["hidden_dropout_prob"] = 0.1;
        c["attention_probs_dropout_prob"] = 0.2;
        m = hf_config_from_json(c).spec;
        CHECK(m.embedding.patch_count() == 144);
        CHECK(m.embedding.channels == 1);
        CHECK(!m.attention.qkv_bias);
        CHECK(m.block.dropout == 0.1);
        CHECK(m.attention.dropout == 0.2);
    }
    SECTION("t5: feed_forward_proj, num_decoder_layers, dropout; the head is always tied") {
        const auto m = load_hf_config(data_dir + "/unseen/t5-v1_1-small.json").spec;
        CHECK(m.mlp.kind == anatomy::mlp_kind::gated);
        CHECK(m.mlp.act == activation::gelu_new);
        CHECK(m.head.tied);
        CHECK(!m.head.rescale_before_head);  // tie_word_embeddings: false
        CHECK(m.decoder_layers == 8);
        json c = read_json(data_dir + "/hf_configs/t5-small.json");
        CHECK(hf_config_from_json(c).spec.head.rescale_before_head);
        c.erase("num_decoder_layers");
        c["num_layers"] = 3;
        c["feed_forward_proj"] = "gated-silu";
        c["dropout_rate"] = 0.2;
        const auto t = hf_config_from_json(c).spec;
        CHECK(t.decoder_layers == 3);
        CHECK(t.mlp.kind == anatomy::mlp_kind::gated);
        CHECK(t.mlp.act == activation::silu);
        CHECK(t.block.dropout == 0.2);
        CHECK(t.attention.dropout == 0.2);
    }
    SECTION("distilbert keys") {
        const auto m = load_hf_config(data_dir + "/hf_configs/distilbert-base.json").spec;
        CHECK(m.hidden == 768);
        CHECK(m.layers == 6);
        CHECK(m.embedding.token_types == 0);
        CHECK(m.block.dropout == 0.1);
        CHECK(m.head.classifier_dropout == 0.2);
    }
    SECTION("bert: optional keys take BertConfig's defaults") {
        json c = bert_base();
        for (const char* key : {"max_position_embeddings", "type_vocab_size", "hidden_act", "hidden_dropout_prob",
                                "attention_probs_dropout_prob"})
            c.erase(key);
        CHECK(params_of(hf_config_from_json(c).spec) == 109483778);
    }
    SECTION("activation names") {
        const auto [name, act] = GENERATE(table<std::string, activation>({
            {"gelu", activation::gelu},
            {"gelu_python", activation::gelu},
            {"gelu_new", activation::gelu_new},
            {"gelu_fast", activation::gelu_new},
            {"gelu_accurate", activation::gelu_new},
            {"gelu_pytorch_tanh", activation::gelu_tanh},
            {"relu", activation::relu},
            {"silu", activation::silu},
            {"swish", activation::silu},
            {"tanh", activation::tanh},
        }));
        json c = bert_base();
        c["hidden_act"] = name;
        CHECK(hf_config_from_json(c).spec.mlp.act == act);
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
        c["model_type"] = "mt5";
        CHECK(error_of(c) == "anatomy: config.json: model_type \"mt5\" is not supported; the estimator knows bert, "
                             "roberta, distilbert, modernbert, gpt2, llama, mistral, qwen2, qwen3, phi3, olmo2, gemma, "
                             "gemma2, gemma3_text, gpt_neox, gptj, opt, falcon, bloom, vit, t5, mixtral, qwen2_moe, qwen3_moe, olmoe, "
          "deepseek_v2, deepseek_v3, gpt_oss, llama4_text");
    }
    SECTION("tasks the model does not train") {
        CHECK(error_of(c, anatomy::task::causal_lm) ==
              "anatomy: --task causal-lm: bert is an encoder model and trains seq-cls or masked-lm only; pass --task "
              "seq-cls");
        json t = read_json(data_dir + "/hf_configs/t5-small.json");
        CHECK_THAT(error_of(t, anatomy::task::seq_cls), Contains("t5 is an encoder-decoder model and trains seq2seq only"));
        json g = read_json(data_dir + "/hf_configs/gpt2.json");
        CHECK_THAT(error_of(g, anatomy::task::seq2seq), Contains("trains causal-lm or seq-cls only"));
        CHECK_THAT(error_of(g, anatomy::task::masked_lm), Contains("trains causal-lm or seq-cls only"));
        CHECK_THAT(error_of(config("vit-base"), anatomy::task::seq_cls), Contains("trains image-cls only"));
        c["architectures"] = {"BertLMHeadModel"};
        CHECK_THAT(error_of(c), Contains("architectures names BertLMHeadModel (task causal-lm), which the estimator "
                                         "does not model for bert; pass --task seq-cls or masked-lm"));
        c["architectures"] = {"BertForTokenClassification"};
        CHECK_THAT(error_of(c), Contains("architectures names BertForTokenClassification, a head the estimator does "
                                         "not model; pass --task seq-cls or masked-lm"));
        g["architectures"] = {"GPT2ForQuestionAnswering"};
        CHECK_THAT(error_of(g), Contains("architectures names GPT2ForQuestionAnswering, a head the estimator does not "
                                         "model; pass --task causal-lm or seq-cls"));
        CHECK(hf_config_from_json(g, anatomy::task::causal_lm).spec.head.kind == anatomy::task::causal_lm);
    }
    SECTION("sizes and values each family rejects, by key") {
        json l = read_json(data_dir + "/hf_configs/tinyllama-1.1b.json");
        l["num_attention_heads"] = 30;  // 2048 / 30 is no whole head
        l.erase("num_key_value_heads");
        CHECK_THAT(error_of(l), Contains("key \"hidden_size\" (2048) must be a multiple of \"num_attention_heads\" "
                                         "(30), or set \"head_dim\""));
        l["head_dim"] = 64;
        CHECK(hf_config_from_json(l).spec.q_width() == 30 * 64);
        l["num_key_value_heads"] = 4;
        CHECK_THAT(error_of(l), Contains("key \"num_attention_heads\" (30) must be a multiple of \"num_key_value_heads\" (4)"));
        json f = config("falcon-40b");
        f["num_kv_heads"] = 5;
        CHECK_THAT(error_of(f), Contains("key \"num_attention_heads\" (128) must be a multiple of \"num_kv_heads\" (5)"));
        json o = config("opt-125m");
        o["num_attention_heads"] = 10;
        CHECK_THAT(error_of(o), Contains("key \"hidden_size\" (768) must be a multiple of \"num_attention_heads\" (10)"));
        json b = config("bloom-560m");
        b["n_head"] = 10;
        CHECK_THAT(error_of(b), Contains("key \"n_embed\" (1024) must be a multiple of \"n_head\" (10)"));
        b = config("bloom-560m");
        b["apply_residual_connection_post_layernorm"] = true;
        CHECK_THAT(error_of(b), Contains("key \"apply_residual_connection_post_layernorm\" is true"));
        CHECK_THAT(error_of(b), Contains("not modelled"));
        b = config("bloom-560m");
        b.erase("n_embed");
        CHECK_THAT(error_of(b), Contains("key \"hidden_size\" (or \"n_embed\") is missing (model_type bloom)"));
    }
    SECTION("layer_types") {
        json c2 = config("gemma-2-2b");
        c2["layer_types"] = json::array({"sliding_attention", "full_attention"});
        CHECK_THAT(error_of(c2), Contains("key \"layer_types\" has 2 entries; it must have one per layer "
                                          "(num_hidden_layers 26)"));
        json types = json::array();
        for (int i = 0; i < 26; ++i) types.push_back(i < 13 ? "sliding_attention" : "full_attention");
        c2["layer_types"] = types;
        CHECK_THAT(error_of(c2), Contains("key \"layer_types\" does not repeat with a period of at most 8 layers"));
        types[0] = "chunked_attention";
        c2["layer_types"] = types;
        CHECK_THAT(error_of(c2), Contains("key \"layer_types\" names \"chunked_attention\""));
        json c3 = config("gemma-3-1b");
        c3["sliding_window_pattern"] = 9;
        CHECK_THAT(error_of(c3), Contains("key \"sliding_window_pattern\" is 9"));
        c3 = config("gemma-3-1b");
        c3["use_bidirectional_attention"] = true;
        CHECK_THAT(error_of(c3), Contains("key \"use_bidirectional_attention\" is true"));
        json q = config("qwen3-0.6b");
        q["use_sliding_window"] = true;
        q["sliding_window"] = 4096;
        q["max_window_layers"] = 14;
        CHECK_THAT(error_of(q), Contains("\"max_window_layers\" (14)"));
        CHECK_THAT(error_of(q), Contains("not modelled"));
        json m = config("modernbert-base");
        m["global_attn_every_n_layers"] = 9;
        CHECK_THAT(error_of(m), Contains("key \"global_attn_every_n_layers\" is 9"));
    }
    SECTION("rotary shares outside (0, 1]") {
        json n = config("pythia-160m");
        n["rotary_pct"] = 1.5;
        CHECK_THAT(error_of(n), Contains("key \"rotary_pct\" is 1.5; the rotated share of each head must be in (0, 1]"));
        n["rotary_pct"] = 0;
        CHECK_THAT(error_of(n), Contains("key \"rotary_pct\" is 0"));
        n.erase("rotary_pct");
        n["rope_parameters"] = {{"partial_rotary_factor", -0.5}};
        CHECK_THAT(error_of(n), Contains("key \"rope_parameters.partial_rotary_factor\" is -0.5"));
        json p = config("phi-3-mini");
        p["partial_rotary_factor"] = 2.0;
        CHECK_THAT(error_of(p), Contains("key \"partial_rotary_factor\" is 2"));
        json j = config("gpt-j-6b");
        j["rotary_dim"] = 512;
        CHECK_THAT(error_of(j), Contains("key \"rotary_dim\" (512) must be at most the head size"));
    }
    SECTION("sliding windows <= 0") {
        json p = config("phi-3-mini");
        p["sliding_window"] = 0;
        CHECK_THAT(error_of(p), Contains("key \"sliding_window\" is 0; it must be > 0"));
        p["sliding_window"] = -1;
        CHECK_THAT(error_of(p), Contains("key \"sliding_window\" is -1; it must be > 0"));
        json g2 = config("gemma-2-2b");
        g2["sliding_window"] = 0;
        CHECK_THAT(error_of(g2), Contains("key \"sliding_window\" is 0"));
        json q = config("qwen3-0.6b");
        q["use_sliding_window"] = true;
        q["sliding_window"] = 0;
        CHECK_THAT(error_of(q), Contains("key \"sliding_window\" is 0"));
        json m = config("modernbert-base");
        m["local_attention"] = 1;
        CHECK_THAT(error_of(m), Contains("key \"local_attention\" is 1"));
    }
    SECTION("images smaller than a patch") {
        json v = config("vit-base");
        v["image_size"] = 8;
        CHECK_THAT(error_of(v), Contains("key \"image_size\" (8) must be at least \"patch_size\" (16)"));
        v["image_size"] = {224, 192};
        CHECK_THAT(error_of(v), Contains("key \"image_size\" is [224,192]"));
    }
    SECTION("family keys the estimator does not model") {
        json m = config("modernbert-base");
        m["classifier_pooling"] = "cls";
        CHECK_THAT(error_of(m, anatomy::task::seq_cls), Contains("key \"classifier_pooling\" is \"cls\""));
        CHECK(hf_config_from_json(m).spec.head.kind == anatomy::task::masked_lm);  // masked-lm: not read
        json f = config("falcon-40b");
        f["parallel_attn"] = false;
        CHECK_THAT(error_of(f), Contains("key \"parallel_attn\" is false"));
        json o = config("opt-125m");
        o["layer_norm_elementwise_affine"] = false;
        CHECK_THAT(error_of(o), Contains("key \"layer_norm_elementwise_affine\" is false"));
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
