// Parameter counts equal PyTorch's sum(p.numel()) for the HF model, head
// included and tied weights counted once.
#include <anatomy/graph.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string_view>

using namespace anatomy;

namespace {
struct expected_count {
    std::string_view preset;
    std::uint64_t params;
};

// Measured (../shared/calibration) or read from the published checkpoints.
constexpr expected_count published[] = {
    {"bert-base", 109483778},     {"bert-large", 335143938},      {"roberta-base", 124647170},
    {"roberta-large", 355361794}, {"distilbert-base", 66955010},  {"tinybert", 14350874},
    {"gpt2", 124439808},          {"gpt2-medium", 354823168},     {"gpt2-large", 774030080},
    {"gpt2-xl", 1557611200},      {"llama-2-7b", 6738415616},     {"llama-2-13b", 13015864320},
    {"llama-2-70b", 68976648192}, {"llama-3-8b", 8030261248},     {"llama-3-70b", 70553706496},
    {"llama-3.2-1b", 1235814400}, {"llama-3.2-3b", 3212749824},   {"tinyllama-1.1b", 1100048384},
    {"mistral-7b", 7241732096},   {"qwen2.5-0.5b", 494032768},    {"qwen2.5-1.5b", 1543714304},
    {"qwen2.5-7b", 7615616512},   {"t5-small", 60506624},         {"t5-base", 222903552},
    {"t5-large", 737668096},      {"t5-3b", 2851598336},          {"t5-11b", 11307321344},
};
}  // namespace

TEST_CASE("every preset has its published parameter count", "[params]") {
    for (const auto& [name, params] : published) {
        INFO(name);
        const auto spec = presets::find(name);
        REQUIRE(spec.has_value());
        CHECK(parameter_count(lower(*spec)) == params);
    }
}

TEST_CASE("every preset is covered by a published count", "[params]") {
    for (const auto& p : presets::all) {
        INFO(p.name);
        bool listed = p.name == "gpt3-175b";  // no public checkpoint; checked below
        for (const auto& e : published) listed = listed || e.preset == p.name;
        CHECK(listed);
    }
}

TEST_CASE("GPT-3 175B in the GPT-2 layout has 174.6 billion parameters", "[params]") {
    // 12 * L * h^2 + 13 * L * h + (V + P) * h + 2 * h, Brown et al. (2020) Table 2.1 shapes.
    constexpr std::uint64_t L = 96, h = 12288, V = 50257, P = 2048;
    CHECK(parameter_count(lower(presets::gpt3_175b)) == 12 * L * h * h + 13 * L * h + (V + P) * h + 2 * h);
}

TEST_CASE("untying the embeddings adds one vocab x hidden matrix", "[params]") {
    model_spec untied = presets::llama_3_2_1b;
    untied.tie_embeddings = false;
    CHECK(parameter_count(lower(untied)) - parameter_count(lower(presets::llama_3_2_1b)) == 128256ULL * 2048);
}

TEST_CASE("seq-cls heads replace the LM head", "[params]") {
    model_spec cls = presets::llama_3_2_1b;
    cls.head = task::seq_cls;
    cls.num_labels = 3;
    // score: Linear(2048, 3, bias=False); the tied lm_head owned no parameters.
    CHECK(parameter_count(lower(cls)) == parameter_count(lower(presets::llama_3_2_1b)) + 2048 * 3);
}

TEST_CASE("the graph is a short list of repeated stages", "[graph]") {
    const op_graph g = lower(presets::llama_2_70b);
    REQUIRE(g.stages.size() == 4);  // embeddings, layers, final norm, head
    CHECK(g.stages[1].name == "model.layers");
    CHECK(g.stages[1].repeat == 80);
    std::size_t attention_ops = 0;
    for (const op& o : g.stages[1].ops) attention_ops += o.kind == op_kind::attention ? 1 : 0;
    CHECK(attention_ops == 1);
    const op& k = g.stages[1].ops[2];
    CHECK(std::string_view(k.module) == "self_attn.k_proj");
    CHECK(k.out_width == 8 * 128);  // GQA: 8 kv heads of 128
}

TEST_CASE("T5 decoders cross-attend to the encoder's rows", "[graph]") {
    const op_graph g = lower(presets::t5_small);
    bool cross = false;
    for_each_op(g, [&](const stage& s, const op& o) {
        if (o.kind == op_kind::attention && s.name == "decoder.block" && o.key_rows == rows_of::source_tokens) {
            cross = true;
            CHECK(o.rows == rows_of::target_tokens);
            CHECK_FALSE(o.causal);
        }
    });
    CHECK(cross);
}

TEST_CASE("invalid specs are rejected with the field to fix", "[graph][errors]") {
    model_spec m = presets::gpt2;
    m.heads = 0;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("heads must be > 0"));
    m = presets::gpt2;
    m.heads = 7;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("multiple of heads"));
    m = presets::llama_3_8b;
    m.kv_heads = 5;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("multiple of kv_heads"));
    m = presets::bert_base;
    m.head = task::causal_lm;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("seq-cls only"));
    m = presets::gpt2;
    m.head = task::seq2seq;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("not seq2seq"));
    m = presets::gpt2;
    m.hidden_dropout = 1.0;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("dropout probabilities"));
}
