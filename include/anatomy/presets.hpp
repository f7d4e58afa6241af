// Built-in model specs, as constexpr values, with the head each is usually
// trained with. The values are those of the models' published config.json.
#pragma once

#include <anatomy/model.hpp>

#include <array>
#include <optional>
#include <string_view>

namespace anatomy::presets {

namespace detail {

constexpr model_spec bert(std::uint64_t hidden, std::uint64_t layers, std::uint64_t heads, std::uint64_t ffn) {
    return {.arch = architecture::bert, .hidden = hidden, .layers = layers, .heads = heads, .ffn_hidden = ffn,
            .act = activation::gelu, .vocab = 30522, .max_positions = 512, .token_types = 2,
            .norm = norm_kind::layer_norm, .qkv_bias = true, .attn_out_bias = true, .mlp_bias = true,
            .hidden_dropout = 0.1, .attention_dropout = 0.1, .head = task::seq_cls};
}

constexpr model_spec roberta(std::uint64_t hidden, std::uint64_t layers, std::uint64_t heads, std::uint64_t ffn) {
    model_spec m = bert(hidden, layers, heads, ffn);
    m.arch = architecture::roberta;
    m.vocab = 50265;
    m.max_positions = 514;  // two rows reserved by RoBERTa's padding offset
    m.token_types = 1;
    return m;
}

constexpr model_spec gpt2(std::uint64_t hidden, std::uint64_t layers, std::uint64_t heads,
                          std::uint64_t positions = 1024) {
    return {.arch = architecture::gpt2, .hidden = hidden, .layers = layers, .heads = heads, .ffn_hidden = 4 * hidden,
            .act = activation::gelu_tanh, .vocab = 50257, .max_positions = positions, .tie_embeddings = true,
            .norm = norm_kind::layer_norm, .qkv_bias = true, .attn_out_bias = true, .mlp_bias = true,
            .hidden_dropout = 0.1, .attention_dropout = 0.1, .head = task::causal_lm};
}

struct llama_shape {
    std::uint64_t vocab, hidden, layers, heads, kv_heads, ffn;
    bool tied = false;
    std::uint64_t head_dim = 0;
};

constexpr model_spec llama(llama_shape s, architecture arch = architecture::llama) {
    return {.arch = arch, .hidden = s.hidden, .layers = s.layers, .heads = s.heads, .kv_heads = s.kv_heads,
            .head_dim = s.head_dim, .ffn = ffn_kind::gated, .ffn_hidden = s.ffn, .act = activation::silu,
            .vocab = s.vocab, .tie_embeddings = s.tied, .norm = norm_kind::rms_norm, .head = task::causal_lm};
}

constexpr model_spec qwen2(llama_shape s) {
    model_spec m = llama(s, architecture::qwen2);
    m.qkv_bias = true;
    return m;
}

constexpr model_spec t5(std::uint64_t d_model, std::uint64_t d_kv, std::uint64_t d_ff, std::uint64_t layers,
                        std::uint64_t heads) {
    return {.arch = architecture::t5, .hidden = d_model, .layers = layers, .decoder_layers = layers, .heads = heads,
            .head_dim = d_kv, .ffn = ffn_kind::mlp, .ffn_hidden = d_ff, .act = activation::relu, .vocab = 32128,
            .relative_buckets = 32, .tie_embeddings = true, .norm = norm_kind::rms_norm, .hidden_dropout = 0.1,
            .attention_dropout = 0.1, .head = task::seq2seq};  // T5's dropout_rate applies to both
}

}  // namespace detail

inline constexpr model_spec bert_base = detail::bert(768, 12, 12, 3072);
inline constexpr model_spec bert_large = detail::bert(1024, 24, 16, 4096);
inline constexpr model_spec roberta_base = detail::roberta(768, 12, 12, 3072);
inline constexpr model_spec roberta_large = detail::roberta(1024, 24, 16, 4096);
inline constexpr model_spec distilbert_base = [] {
    model_spec m = detail::bert(768, 6, 12, 3072);
    m.arch = architecture::distilbert;
    m.token_types = 0;
    return m;
}();
// huawei-noah/TinyBERT_General_4L_312D
inline constexpr model_spec tinybert = detail::bert(312, 4, 12, 1200);

inline constexpr model_spec gpt2 = detail::gpt2(768, 12, 12);
inline constexpr model_spec gpt2_medium = detail::gpt2(1024, 24, 16);
inline constexpr model_spec gpt2_large = detail::gpt2(1280, 36, 20);
inline constexpr model_spec gpt2_xl = detail::gpt2(1600, 48, 25);
// GPT-3 175B (Brown et al., 2020, Table 2.1) in the GPT-2 layout.
inline constexpr model_spec gpt3_175b = detail::gpt2(12288, 96, 96, 2048);

inline constexpr model_spec llama_2_7b = detail::llama({32000, 4096, 32, 32, 32, 11008});
inline constexpr model_spec llama_2_13b = detail::llama({32000, 5120, 40, 40, 40, 13824});
inline constexpr model_spec llama_2_70b = detail::llama({32000, 8192, 80, 64, 8, 28672});
inline constexpr model_spec llama_3_8b = detail::llama({128256, 4096, 32, 32, 8, 14336});
inline constexpr model_spec llama_3_70b = detail::llama({128256, 8192, 80, 64, 8, 28672});
inline constexpr model_spec llama_3_2_1b = detail::llama({128256, 2048, 16, 32, 8, 8192, true, 64});
inline constexpr model_spec llama_3_2_3b = detail::llama({128256, 3072, 28, 24, 8, 8192, true, 128});
inline constexpr model_spec tinyllama_1_1b = detail::llama({32000, 2048, 22, 32, 4, 5632});
inline constexpr model_spec mistral_7b = detail::llama({32000, 4096, 32, 32, 8, 14336}, architecture::mistral);
inline constexpr model_spec qwen2_5_0_5b = detail::qwen2({151936, 896, 24, 14, 2, 4864, true});
inline constexpr model_spec qwen2_5_1_5b = detail::qwen2({151936, 1536, 28, 12, 2, 8960, true});
inline constexpr model_spec qwen2_5_7b = detail::qwen2({152064, 3584, 28, 28, 4, 18944});

inline constexpr model_spec t5_small = detail::t5(512, 64, 2048, 6, 8);
inline constexpr model_spec t5_base = detail::t5(768, 64, 3072, 12, 12);
inline constexpr model_spec t5_large = detail::t5(1024, 64, 4096, 24, 16);
inline constexpr model_spec t5_3b = detail::t5(1024, 128, 16384, 24, 32);
inline constexpr model_spec t5_11b = detail::t5(1024, 128, 65536, 24, 128);

struct named_preset {
    std::string_view name;
    model_spec spec;
};

inline constexpr std::array all = {
    named_preset{"bert-base", bert_base},         named_preset{"bert-large", bert_large},
    named_preset{"roberta-base", roberta_base},   named_preset{"roberta-large", roberta_large},
    named_preset{"distilbert-base", distilbert_base}, named_preset{"tinybert", tinybert},
    named_preset{"gpt2", gpt2},                   named_preset{"gpt2-medium", gpt2_medium},
    named_preset{"gpt2-large", gpt2_large},       named_preset{"gpt2-xl", gpt2_xl},
    named_preset{"gpt3-175b", gpt3_175b},         named_preset{"llama-2-7b", llama_2_7b},
    named_preset{"llama-2-13b", llama_2_13b},     named_preset{"llama-2-70b", llama_2_70b},
    named_preset{"llama-3-8b", llama_3_8b},       named_preset{"llama-3-70b", llama_3_70b},
    named_preset{"llama-3.2-1b", llama_3_2_1b},   named_preset{"llama-3.2-3b", llama_3_2_3b},
    named_preset{"tinyllama-1.1b", tinyllama_1_1b}, named_preset{"mistral-7b", mistral_7b},
    named_preset{"qwen2.5-0.5b", qwen2_5_0_5b},   named_preset{"qwen2.5-1.5b", qwen2_5_1_5b},
    named_preset{"qwen2.5-7b", qwen2_5_7b},       named_preset{"t5-small", t5_small},
    named_preset{"t5-base", t5_base},             named_preset{"t5-large", t5_large},
    named_preset{"t5-3b", t5_3b},                 named_preset{"t5-11b", t5_11b},
};

constexpr std::optional<model_spec> find(std::string_view name) {
    for (const auto& p : all)
        if (p.name == name) return p.spec;
    return std::nullopt;
}

}  // namespace anatomy::presets
