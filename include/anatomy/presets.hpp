// Built-in model specs, as constexpr values, with the head each is usually
// trained with. The values are those of the models' published config.json
// (tests/data/configs/<name>.json), and each preset's parameter count equals
// what transformers 5.17 builds from that file (tests/unit/params_test.cpp).
#pragma once

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

#include <array>
#include <optional>
#include <string_view>

namespace anatomy::presets {

inline constexpr model_spec bert_base = families::bert({.vocab = 30522, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072});
inline constexpr model_spec bert_large = families::bert({.vocab = 30522, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096});
inline constexpr model_spec roberta_base = families::roberta({.vocab = 50265, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072});
inline constexpr model_spec roberta_large = families::roberta({.vocab = 50265, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096});
inline constexpr model_spec distilbert_base = families::distilbert({.vocab = 30522, .hidden = 768, .layers = 6, .heads = 12, .ffn = 3072});
inline constexpr model_spec tinybert = families::bert({.vocab = 30522, .hidden = 312, .layers = 4, .heads = 12, .ffn = 1200});
inline constexpr model_spec modernbert_base = families::modernbert({.vocab = 50368, .hidden = 768, .layers = 22, .heads = 12, .ffn = 1152}, 3, 64);
inline constexpr model_spec modernbert_large = families::modernbert({.vocab = 50368, .hidden = 1024, .layers = 28, .heads = 16, .ffn = 2624}, 3, 64);
inline constexpr model_spec gpt2 = families::gpt2({.vocab = 50257, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072, .tied = true}, 1024);
inline constexpr model_spec gpt2_medium = families::gpt2({.vocab = 50257, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = true}, 1024);
inline constexpr model_spec gpt2_large = families::gpt2({.vocab = 50257, .hidden = 1280, .layers = 36, .heads = 20, .ffn = 5120, .tied = true}, 1024);
inline constexpr model_spec gpt2_xl = families::gpt2({.vocab = 50257, .hidden = 1600, .layers = 48, .heads = 25, .ffn = 6400, .tied = true}, 1024);
inline constexpr model_spec llama_2_7b = families::llama({.vocab = 32000, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 32, .head_dim = 0, .ffn = 11008, .tied = false});
inline constexpr model_spec llama_2_13b = families::llama({.vocab = 32000, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 40, .head_dim = 0, .ffn = 13824, .tied = false});
inline constexpr model_spec llama_2_70b = families::llama({.vocab = 32000, .hidden = 8192, .layers = 80, .heads = 64, .kv_heads = 8, .head_dim = 0, .ffn = 28672, .tied = false});
inline constexpr model_spec llama_3_8b = families::llama({.vocab = 128256, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 0, .ffn = 14336, .tied = false});
inline constexpr model_spec llama_3_70b = families::llama({.vocab = 128256, .hidden = 8192, .layers = 80, .heads = 64, .kv_heads = 8, .head_dim = 0, .ffn = 28672, .tied = false});
inline constexpr model_spec llama_3_2_1b = families::llama({.vocab = 128256, .hidden = 2048, .layers = 16, .heads = 32, .kv_heads = 8, .head_dim = 0, .ffn = 8192, .tied = true});
inline constexpr model_spec llama_3_2_3b = families::llama({.vocab = 128256, .hidden = 3072, .layers = 28, .heads = 24, .kv_heads = 8, .head_dim = 0, .ffn = 8192, .tied = true});
inline constexpr model_spec tinyllama_1_1b = families::llama({.vocab = 32000, .hidden = 2048, .layers = 22, .heads = 32, .kv_heads = 4, .head_dim = 0, .ffn = 5632, .tied = false});
inline constexpr model_spec mistral_7b = families::mistral({.vocab = 32000, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 0, .ffn = 14336, .tied = false}, 4096);
inline constexpr model_spec qwen2_5_0_5b = families::qwen2({.vocab = 151936, .hidden = 896, .layers = 24, .heads = 14, .kv_heads = 2, .head_dim = 0, .ffn = 4864, .tied = true});
inline constexpr model_spec qwen2_5_1_5b = families::qwen2({.vocab = 151936, .hidden = 1536, .layers = 28, .heads = 12, .kv_heads = 2, .head_dim = 0, .ffn = 8960, .tied = true});
inline constexpr model_spec qwen2_5_7b = families::qwen2({.vocab = 152064, .hidden = 3584, .layers = 28, .heads = 28, .kv_heads = 4, .head_dim = 0, .ffn = 18944, .tied = false});
inline constexpr model_spec qwen3_0_6b = families::qwen3({.vocab = 151936, .hidden = 1024, .layers = 28, .heads = 16, .kv_heads = 8, .head_dim = 128, .ffn = 3072, .tied = true});
inline constexpr model_spec qwen3_1_7b = families::qwen3({.vocab = 151936, .hidden = 2048, .layers = 28, .heads = 16, .kv_heads = 8, .head_dim = 128, .ffn = 6144, .tied = true});
inline constexpr model_spec qwen3_4b = families::qwen3({.vocab = 151936, .hidden = 2560, .layers = 36, .heads = 32, .kv_heads = 8, .head_dim = 128, .ffn = 9728, .tied = true});
inline constexpr model_spec qwen3_8b = families::qwen3({.vocab = 151936, .hidden = 4096, .layers = 36, .heads = 32, .kv_heads = 8, .head_dim = 128, .ffn = 12288, .tied = false});
inline constexpr model_spec qwen3_14b = families::qwen3({.vocab = 151936, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 8, .head_dim = 128, .ffn = 17408, .tied = false});
inline constexpr model_spec qwen3_32b = families::qwen3({.vocab = 151936, .hidden = 5120, .layers = 64, .heads = 64, .kv_heads = 8, .head_dim = 128, .ffn = 25600, .tied = false});
inline constexpr model_spec gemma_2_2b = families::gemma2({.vocab = 256000, .hidden = 2304, .layers = 26, .heads = 8, .kv_heads = 4, .head_dim = 256, .ffn = 9216, .tied = true}, 4096);
inline constexpr model_spec gemma_2_9b = families::gemma2({.vocab = 256000, .hidden = 3584, .layers = 42, .heads = 16, .kv_heads = 8, .head_dim = 256, .ffn = 14336, .tied = true}, 4096);
inline constexpr model_spec gemma_2_27b = families::gemma2({.vocab = 256000, .hidden = 4608, .layers = 46, .heads = 32, .kv_heads = 16, .head_dim = 128, .ffn = 36864, .tied = true}, 4096);
inline constexpr model_spec gemma_3_1b = families::gemma3({.vocab = 262144, .hidden = 1152, .layers = 26, .heads = 4, .kv_heads = 1, .head_dim = 256, .ffn = 6912, .tied = true}, 512, 6);
inline constexpr model_spec gemma_3_4b = families::gemma3({.vocab = 262208, .hidden = 2560, .layers = 34, .heads = 8, .kv_heads = 4, .head_dim = 256, .ffn = 10240, .tied = true}, 1024, 6);
inline constexpr model_spec gemma_3_12b = families::gemma3({.vocab = 262208, .hidden = 3840, .layers = 48, .heads = 16, .kv_heads = 8, .head_dim = 256, .ffn = 15360, .tied = true}, 1024, 6);
inline constexpr model_spec gemma_3_27b = families::gemma3({.vocab = 262208, .hidden = 5376, .layers = 62, .heads = 32, .kv_heads = 16, .head_dim = 128, .ffn = 21504, .tied = true}, 1024, 6);
inline constexpr model_spec phi_3_mini = families::phi3({.vocab = 32064, .hidden = 3072, .layers = 32, .heads = 32, .kv_heads = 32, .head_dim = 0, .ffn = 8192, .tied = false}, 2047);
inline constexpr model_spec phi_3_medium = families::phi3({.vocab = 32064, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 10, .head_dim = 0, .ffn = 17920, .tied = false}, 2047);
inline constexpr model_spec phi_4 = families::phi3({.vocab = 100352, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 10, .head_dim = 0, .ffn = 17920, .tied = false});
inline constexpr model_spec olmo_2_7b = families::olmo2({.vocab = 100352, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 32, .head_dim = 0, .ffn = 11008, .tied = false});
inline constexpr model_spec olmo_2_13b = families::olmo2({.vocab = 100352, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 40, .head_dim = 0, .ffn = 13824, .tied = false});
inline constexpr model_spec pythia_160m = families::gpt_neox({.vocab = 50304, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072, .tied = false}, 0.25);
inline constexpr model_spec pythia_410m = families::gpt_neox({.vocab = 50304, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = false}, 0.25);
inline constexpr model_spec pythia_1b = families::gpt_neox({.vocab = 50304, .hidden = 2048, .layers = 16, .heads = 8, .ffn = 8192, .tied = false}, 0.25);
inline constexpr model_spec pythia_1_4b = families::gpt_neox({.vocab = 50304, .hidden = 2048, .layers = 24, .heads = 16, .ffn = 8192, .tied = false}, 0.25);
inline constexpr model_spec pythia_2_8b = families::gpt_neox({.vocab = 50304, .hidden = 2560, .layers = 32, .heads = 32, .ffn = 10240, .tied = false}, 0.25);
inline constexpr model_spec pythia_6_9b = families::gpt_neox({.vocab = 50432, .hidden = 4096, .layers = 32, .heads = 32, .ffn = 16384, .tied = false}, 0.25);
inline constexpr model_spec pythia_12b = families::gpt_neox({.vocab = 50688, .hidden = 5120, .layers = 36, .heads = 40, .ffn = 20480, .tied = false}, 0.25);
inline constexpr model_spec gpt_j_6b = families::gptj({.vocab = 50400, .hidden = 4096, .layers = 28, .heads = 16, .ffn = 16384, .tied = false}, 64);
inline constexpr model_spec opt_125m = families::opt({.vocab = 50272, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072, .tied = true}, 2048, 768, true);
inline constexpr model_spec opt_350m = families::opt({.vocab = 50272, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = true}, 2048, 512, false);
inline constexpr model_spec opt_1_3b = families::opt({.vocab = 50272, .hidden = 2048, .layers = 24, .heads = 32, .ffn = 8192, .tied = true}, 2048, 2048, true);
inline constexpr model_spec opt_2_7b = families::opt({.vocab = 50272, .hidden = 2560, .layers = 32, .heads = 32, .ffn = 10240, .tied = true}, 2048, 2560, true);
inline constexpr model_spec opt_6_7b = families::opt({.vocab = 50272, .hidden = 4096, .layers = 32, .heads = 32, .ffn = 16384, .tied = true}, 2048, 4096, true);
inline constexpr model_spec opt_13b = families::opt({.vocab = 50272, .hidden = 5120, .layers = 40, .heads = 40, .ffn = 20480, .tied = true}, 2048, 5120, true);
inline constexpr model_spec opt_30b = families::opt({.vocab = 50272, .hidden = 7168, .layers = 48, .heads = 56, .ffn = 28672, .tied = true}, 2048, 7168, true);
inline constexpr model_spec opt_66b = families::opt({.vocab = 50272, .hidden = 9216, .layers = 64, .heads = 72, .ffn = 36864, .tied = true}, 2048, 9216, true);
inline constexpr model_spec falcon_7b = families::falcon({.vocab = 65024, .hidden = 4544, .layers = 32, .heads = 71, .kv_heads = 1, .ffn = 18176, .tied = true}, false, false, true, 1);
inline constexpr model_spec falcon_40b = families::falcon({.vocab = 65024, .hidden = 8192, .layers = 60, .heads = 128, .kv_heads = 8, .ffn = 32768, .tied = true}, false, false, true, 2);
inline constexpr model_spec bloom_560m = families::bloom({.vocab = 250880, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = true});
inline constexpr model_spec bloom_1b1 = families::bloom({.vocab = 250880, .hidden = 1536, .layers = 24, .heads = 16, .ffn = 6144, .tied = true});
inline constexpr model_spec bloom_1b7 = families::bloom({.vocab = 250880, .hidden = 2048, .layers = 24, .heads = 16, .ffn = 8192, .tied = true});
inline constexpr model_spec bloom_3b = families::bloom({.vocab = 250880, .hidden = 2560, .layers = 30, .heads = 32, .ffn = 10240, .tied = true});
inline constexpr model_spec bloom_7b1 = families::bloom({.vocab = 250880, .hidden = 4096, .layers = 30, .heads = 32, .ffn = 16384, .tied = true});
inline constexpr model_spec vit_base = families::vit({.hidden = 768, .layers = 12, .heads = 12, .ffn = 3072}, 224, 16, 3, 1000);
inline constexpr model_spec vit_large = families::vit({.hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096}, 224, 16, 3, 1000);
inline constexpr model_spec t5_small = families::t5({.vocab = 32128, .d_model = 512, .d_kv = 64, .d_ff = 2048, .layers = 6, .decoder_layers = 6, .heads = 8}, false, activation::relu, true);
inline constexpr model_spec t5_base = families::t5({.vocab = 32128, .d_model = 768, .d_kv = 64, .d_ff = 3072, .layers = 12, .decoder_layers = 12, .heads = 12}, false, activation::relu, true);
inline constexpr model_spec t5_large = families::t5({.vocab = 32128, .d_model = 1024, .d_kv = 64, .d_ff = 4096, .layers = 24, .decoder_layers = 24, .heads = 16}, false, activation::relu, true);
inline constexpr model_spec t5_3b = families::t5({.vocab = 32128, .d_model = 1024, .d_kv = 128, .d_ff = 16384, .layers = 24, .decoder_layers = 24, .heads = 32}, false, activation::relu, true);
inline constexpr model_spec t5_11b = families::t5({.vocab = 32128, .d_model = 1024, .d_kv = 128, .d_ff = 65536, .layers = 24, .decoder_layers = 24, .heads = 128}, false, activation::relu, true);
inline constexpr model_spec flan_t5_base = families::t5({.vocab = 32128, .d_model = 768, .d_kv = 64, .d_ff = 2048, .layers = 12, .decoder_layers = 12, .heads = 12}, true, activation::gelu_new, false);
inline constexpr model_spec t5_v1_1_base = families::t5({.vocab = 32128, .d_model = 768, .d_kv = 64, .d_ff = 2048, .layers = 12, .decoder_layers = 12, .heads = 12}, true, activation::gelu_new, false);
// Mixtures of experts.
inline constexpr model_spec mixtral_8x7b = families::mixtral({.vocab = 32000, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 8, .ffn = 14336}, {.experts = 8, .top_k = 2, .hidden = 14336});
inline constexpr model_spec mixtral_8x22b = families::mixtral({.vocab = 32768, .hidden = 6144, .layers = 56, .heads = 48, .kv_heads = 8, .ffn = 16384}, {.experts = 8, .top_k = 2, .hidden = 16384});
inline constexpr model_spec qwen1_5_moe_a2_7b = families::qwen2_moe({.vocab = 151936, .hidden = 2048, .layers = 24, .heads = 16, .kv_heads = 16, .ffn = 5632}, {.experts = 60, .top_k = 4, .hidden = 1408, .shared = 5632});
inline constexpr model_spec qwen3_30b_a3b = families::qwen3_moe({.vocab = 151936, .hidden = 2048, .layers = 48, .heads = 32, .kv_heads = 4, .head_dim = 128, .ffn = 6144}, {.experts = 128, .top_k = 8, .hidden = 768});
inline constexpr model_spec qwen3_235b_a22b = families::qwen3_moe({.vocab = 151936, .hidden = 4096, .layers = 94, .heads = 64, .kv_heads = 4, .head_dim = 128, .ffn = 12288}, {.experts = 128, .top_k = 8, .hidden = 1536});
inline constexpr model_spec olmoe_1b_7b = families::olmoe({.vocab = 50304, .hidden = 2048, .layers = 16, .heads = 16, .kv_heads = 16, .ffn = 1024}, {.experts = 64, .top_k = 8, .hidden = 1024});
inline constexpr model_spec deepseek_v2_lite = families::deepseek_v2({.vocab = 102400, .hidden = 2048, .layers = 27, .heads = 16, .ffn = 10944}, {.experts = 64, .top_k = 6, .hidden = 1408, .shared = 2816, .first_dense = 1}, {.q_lora_rank = 0, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128});
inline constexpr model_spec deepseek_v2 = families::deepseek_v2({.vocab = 102400, .hidden = 5120, .layers = 60, .heads = 128, .ffn = 12288}, {.experts = 160, .top_k = 6, .hidden = 1536, .shared = 3072, .first_dense = 1}, {.q_lora_rank = 1536, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128});
inline constexpr model_spec deepseek_v3 = families::deepseek_v3({.vocab = 129280, .hidden = 7168, .layers = 61, .heads = 128, .ffn = 18432}, {.experts = 256, .top_k = 8, .hidden = 2048, .shared = 2048, .first_dense = 3}, {.q_lora_rank = 1536, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128});
inline constexpr model_spec gpt_oss_20b = families::gpt_oss({.vocab = 201088, .hidden = 2880, .layers = 24, .heads = 64, .kv_heads = 8, .head_dim = 64, .ffn = 2880}, {.experts = 32, .top_k = 4, .hidden = 2880}, 128);
inline constexpr model_spec gpt_oss_120b = families::gpt_oss({.vocab = 201088, .hidden = 2880, .layers = 36, .heads = 64, .kv_heads = 8, .head_dim = 64, .ffn = 2880}, {.experts = 128, .top_k = 4, .hidden = 2880}, 128);
inline constexpr model_spec llama_4_scout = families::llama4({.vocab = 202048, .hidden = 5120, .layers = 48, .heads = 40, .kv_heads = 8, .head_dim = 128, .ffn = 16384}, {.experts = 16, .top_k = 1, .hidden = 8192, .shared = 8192}, 1, 4, 8192, true, true);
inline constexpr model_spec llama_4_maverick = families::llama4({.vocab = 202048, .hidden = 5120, .layers = 48, .heads = 40, .kv_heads = 8, .head_dim = 128, .ffn = 16384}, {.experts = 128, .top_k = 1, .hidden = 8192, .shared = 8192}, 2, 4, 8192, false, true);
// GPT-3 175B (Brown et al., 2020, Table 2.1) in the GPT-2 layout; no checkpoint.
inline constexpr model_spec gpt3_175b = families::gpt2({.vocab = 50257, .hidden = 12288, .layers = 96, .heads = 96, .ffn = 49152, .tied = true}, 2048);

// `spec` refers to the preset's own variable: a table of copies would make
// the compiler build 88 more 960-byte constants in every TU.
struct named_preset {
    std::string_view name;
    const model_spec& spec;
};

inline constexpr std::array all = {
named_preset{"bert-base", bert_base},
    named_preset{"bert-large", bert_large},
    named_preset{"roberta-base", roberta_base},
    named_preset{"roberta-large", roberta_large},
    named_preset{"distilbert-base", distilbert_base},
    named_preset{"tinybert", tinybert},
    named_preset{"modernbert-base", modernbert_base},
    named_preset{"modernbert-large", modernbert_large},
    named_preset{"gpt2", gpt2},
    named_preset{"gpt2-medium", gpt2_medium},
    named_preset{"gpt2-large", gpt2_large},
    named_preset{"gpt2-xl", gpt2_xl},
    named_preset{"llama-2-7b", llama_2_7b},
    named_preset{"llama-2-13b", llama_2_13b},
    named_preset{"llama-2-70b", llama_2_70b},
    named_preset{"llama-3-8b", llama_3_8b},
    named_preset{"llama-3-70b", llama_3_70b},
    named_preset{"llama-3.2-1b", llama_3_2_1b},
    named_preset{"llama-3.2-3b", llama_3_2_3b},
    named_preset{"tinyllama-1.1b", tinyllama_1_1b},
    named_preset{"mistral-7b", mistral_7b},
    named_preset{"qwen2.5-0.5b", qwen2_5_0_5b},
    named_preset{"qwen2.5-1.5b", qwen2_5_1_5b},
    named_preset{"qwen2.5-7b", qwen2_5_7b},
    named_preset{"qwen3-0.6b", qwen3_0_6b},
    named_preset{"qwen3-1.7b", qwen3_1_7b},
    named_preset{"qwen3-4b", qwen3_4b},
    named_preset{"qwen3-8b", qwen3_8b},
    named_preset{"qwen3-14b", qwen3_14b},
    named_preset{"qwen3-32b", qwen3_32b},
    named_preset{"gemma-2-2b", gemma_2_2b},
    named_preset{"gemma-2-9b", gemma_2_9b},
    named_preset{"gemma-2-27b", gemma_2_27b},
    named_preset{"gemma-3-1b", gemma_3_1b},
    named_preset{"gemma-3-4b", gemma_3_4b},
    named_preset{"gemma-3-12b", gemma_3_12b},
    named_preset{"gemma-3-27b", gemma_3_27b},
    named_preset{"phi-3-mini", phi_3_mini},
    named_preset{"phi-3-medium", phi_3_medium},
    named_preset{"phi-4", phi_4},
    named_preset{"olmo-2-7b", olmo_2_7b},
    named_preset{"olmo-2-13b", olmo_2_13b},
    named_preset{"pythia-160m", pythia_160m},
    named_preset{"pythia-410m", pythia_410m},
    named_preset{"pythia-1b", pythia_1b},
    named_preset{"pythia-1.4b", pythia_1_4b},
    named_preset{"pythia-2.8b", pythia_2_8b},
    named_preset{"pythia-6.9b", pythia_6_9b},
    named_preset{"pythia-12b", pythia_12b},
    named_preset{"gpt-j-6b", gpt_j_6b},
    named_preset{"opt-125m", opt_125m},
    named_preset{"opt-350m", opt_350m},
    named_preset{"opt-1.3b", opt_1_3b},
    named_preset{"opt-2.7b", opt_2_7b},
    named_preset{"opt-6.7b", opt_6_7b},
    named_preset{"opt-13b", opt_13b},
    named_preset{"opt-30b", opt_30b},
    named_preset{"opt-66b", opt_66b},
    named_preset{"falcon-7b", falcon_7b},
    named_preset{"falcon-40b", falcon_40b},
    named_preset{"bloom-560m", bloom_560m},
    named_preset{"bloom-1b1", bloom_1b1},
    named_preset{"bloom-1b7", bloom_1b7},
    named_preset{"bloom-3b", bloom_3b},
    named_preset{"bloom-7b1", bloom_7b1},
    named_preset{"vit-base", vit_base},
    named_preset{"vit-large", vit_large},
    named_preset{"t5-small", t5_small},
    named_preset{"t5-base", t5_base},
    named_preset{"t5-large", t5_large},
    named_preset{"t5-3b", t5_3b},
    named_preset{"t5-11b", t5_11b},
    named_preset{"flan-t5-base", flan_t5_base},
    named_preset{"t5-v1_1-base", t5_v1_1_base},
    named_preset{"mixtral-8x7b", mixtral_8x7b},
    named_preset{"mixtral-8x22b", mixtral_8x22b},
    named_preset{"qwen1.5-moe-a2.7b", qwen1_5_moe_a2_7b},
    named_preset{"qwen3-30b-a3b", qwen3_30b_a3b},
    named_preset{"qwen3-235b-a22b", qwen3_235b_a22b},
    named_preset{"olmoe-1b-7b", olmoe_1b_7b},
    named_preset{"deepseek-v2-lite", deepseek_v2_lite},
    named_preset{"deepseek-v2", deepseek_v2},
    named_preset{"deepseek-v3", deepseek_v3},
    named_preset{"gpt-oss-20b", gpt_oss_20b},
    named_preset{"gpt-oss-120b", gpt_oss_120b},
    named_preset{"llama-4-scout", llama_4_scout},
    named_preset{"llama-4-maverick", llama_4_maverick},
    named_preset{"gpt3-175b", gpt3_175b},
};

constexpr std::optional<model_spec> find(std::string_view name) {
    for (const auto& p : all)
        if (p.name == name) return p.spec;
    return std::nullopt;
}

}  // namespace anatomy::presets
