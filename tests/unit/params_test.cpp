// Parameter counts equal PyTorch's sum(p.numel()) for the HF model, head
// included and tied weights counted once.
#include <anatomy/graph.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string_view>

using namespace anatomy;

// Every preset's count against transformers' is in tests/calibration/param_counts_test.cpp.

TEST_CASE("GPT-3 175B in the GPT-2 layout has 174.6 billion parameters", "[params]") {
    // 12 * L * h^2 + 13 * L * h + (V + P) * h + 2 * h, Brown et al. (2020) Table 2.1 shapes.
    constexpr std::uint64_t L = 96, h = 12288, V = 50257, P = 2048;
    CHECK(parameter_count(lower(presets::gpt3_175b)) == 12 * L * h * h + 13 * L * h + (V + P) * h + 2 * h);
}

TEST_CASE("untying the embeddings adds one vocab x hidden matrix", "[params]") {
    model_spec untied = presets::llama_3_2_1b;
    untied.head.tied = false;
    CHECK(parameter_count(lower(untied)) - parameter_count(lower(presets::llama_3_2_1b)) == 128256ULL * 2048);
}

TEST_CASE("seq-cls heads replace the LM head", "[params]") {
    model_spec cls = presets::llama_3_2_1b;
    cls.head.kind = task::seq_cls;
    cls.head.num_labels = 3;
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
    CHECK(k.module.scope == "self_attn");
    CHECK(k.module.name == "k_proj");
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
    m.attention.heads = 0;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("heads must be > 0"));
    m = presets::gpt2;
    m.attention.heads = 7;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("multiple of heads"));
    m = presets::llama_3_8b;
    m.attention.kv_heads = 5;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("multiple of kv_heads"));
    m = presets::bert_base;
    m.head.kind = task::causal_lm;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("seq-cls or masked-lm"));
    m = presets::gpt2;
    m.head.kind = task::seq2seq;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("not seq2seq"));
    m = presets::gpt2;
    m.block.dropout = 1.0;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("dropout probabilities"));
    m = presets::pythia_160m;
    m.attention.rotary_fraction = 1.5;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("rotary_fraction"));
    m = presets::vit_base;
    m.head.kind = task::seq_cls;
    CHECK_THROWS_WITH(lower(m), Catch::Contains("image-cls only"));
}

TEST_CASE("a preset without a builder is an error that names the fix, not a crash", "[params][errors]") {
    const presets::preset empty{};
    CHECK_THROWS_WITH(model_spec(empty), Catch::Contains("anatomy::presets::preset") && Catch::Contains("presets::llama_3_8b"));
    CHECK(presets::preset{presets::make::gpt2}().layers == 12);
}
