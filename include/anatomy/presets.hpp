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
#include <anatomy/error.hpp>
#include <anatomy/model.hpp>

#include <array>
#include <optional>
#include <string_view>
#include <type_traits>

namespace anatomy::presets {

// A preset names a model and builds its spec where it is used, so that a TU
// pays only for the presets it names. As 88 constexpr model_specs they cost
// every TU that included this header about 190 M compiler instructions
// (1.3 M apiece: g++ evaluates and keeps each 960-byte value), 6 % of a TU
// that checks three budgets (docs/performance.md). A preset converts to
// model_spec wherever one is taken; preset() gives the spec to read a field.
struct preset {
    model_spec (*build)();

    constexpr operator model_spec() const { return (*this)(); }
    constexpr model_spec operator()() const {
        // At run time only: g++ with -fsanitize does not fold a function
        // pointer's comparison with null in constant evaluation, where
        // calling a null one is a compile error anyway.
        if (!std::is_constant_evaluated() && build == nullptr)
            throw error("anatomy::presets::preset: this preset has no builder; use a named one such as "
                        "presets::llama_3_8b, or presets::find(name)");
        return build();
    }
};

// The builders, one per preset.
namespace make {

constexpr model_spec bert_base() { return families::bert({.vocab = 30522, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072}); }
constexpr model_spec bert_large() { return families::bert({.vocab = 30522, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096}); }
constexpr model_spec roberta_base() { return families::roberta({.vocab = 50265, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072}); }
constexpr model_spec roberta_large() { return families::roberta({.vocab = 50265, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096}); }
constexpr model_spec distilbert_base() { return families::distilbert({.vocab = 30522, .hidden = 768, .layers = 6, .heads = 12, .ffn = 3072}); }
constexpr model_spec tinybert() { return families::bert({.vocab = 30522, .hidden = 312, .layers = 4, .heads = 12, .ffn = 1200}); }
constexpr model_spec modernbert_base() { return families::modernbert({.vocab = 50368, .hidden = 768, .layers = 22, .heads = 12, .ffn = 1152}, 3, 64); }
constexpr model_spec modernbert_large() { return families::modernbert({.vocab = 50368, .hidden = 1024, .layers = 28, .heads = 16, .ffn = 2624}, 3, 64); }
constexpr model_spec gpt2() { return families::gpt2({.vocab = 50257, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072, .tied = true}, 1024); }
constexpr model_spec gpt2_medium() { return families::gpt2({.vocab = 50257, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = true}, 1024); }
constexpr model_spec gpt2_large() { return families::gpt2({.vocab = 50257, .hidden = 1280, .layers = 36, .heads = 20, .ffn = 5120, .tied = true}, 1024); }
constexpr model_spec gpt2_xl() { return families::gpt2({.vocab = 50257, .hidden = 1600, .layers = 48, .heads = 25, .ffn = 6400, .tied = true}, 1024); }
constexpr model_spec llama_2_7b() { return families::llama({.vocab = 32000, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 32, .head_dim = 0, .ffn = 11008, .tied = false}); }
constexpr model_spec llama_2_13b() { return families::llama({.vocab = 32000, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 40, .head_dim = 0, .ffn = 13824, .tied = false}); }
constexpr model_spec llama_2_70b() { return families::llama({.vocab = 32000, .hidden = 8192, .layers = 80, .heads = 64, .kv_heads = 8, .head_dim = 0, .ffn = 28672, .tied = false}); }
constexpr model_spec llama_3_8b() { return families::llama({.vocab = 128256, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 0, .ffn = 14336, .tied = false}); }
constexpr model_spec llama_3_70b() { return families::llama({.vocab = 128256, .hidden = 8192, .layers = 80, .heads = 64, .kv_heads = 8, .head_dim = 0, .ffn = 28672, .tied = false}); }
constexpr model_spec llama_3_2_1b() { return families::llama({.vocab = 128256, .hidden = 2048, .layers = 16, .heads = 32, .kv_heads = 8, .head_dim = 0, .ffn = 8192, .tied = true}); }
constexpr model_spec llama_3_2_3b() { return families::llama({.vocab = 128256, .hidden = 3072, .layers = 28, .heads = 24, .kv_heads = 8, .head_dim = 0, .ffn = 8192, .tied = true}); }
constexpr model_spec tinyllama_1_1b() { return families::llama({.vocab = 32000, .hidden = 2048, .layers = 22, .heads = 32, .kv_heads = 4, .head_dim = 0, .ffn = 5632, .tied = false}); }
constexpr model_spec mistral_7b() { return families::mistral({.vocab = 32000, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 0, .ffn = 14336, .tied = false}, 4096); }
constexpr model_spec qwen2_5_0_5b() { return families::qwen2({.vocab = 151936, .hidden = 896, .layers = 24, .heads = 14, .kv_heads = 2, .head_dim = 0, .ffn = 4864, .tied = true}); }
constexpr model_spec qwen2_5_1_5b() { return families::qwen2({.vocab = 151936, .hidden = 1536, .layers = 28, .heads = 12, .kv_heads = 2, .head_dim = 0, .ffn = 8960, .tied = true}); }
constexpr model_spec qwen2_5_7b() { return families::qwen2({.vocab = 152064, .hidden = 3584, .layers = 28, .heads = 28, .kv_heads = 4, .head_dim = 0, .ffn = 18944, .tied = false}); }
constexpr model_spec qwen3_0_6b() { return families::qwen3({.vocab = 151936, .hidden = 1024, .layers = 28, .heads = 16, .kv_heads = 8, .head_dim = 128, .ffn = 3072, .tied = true}); }
constexpr model_spec qwen3_1_7b() { return families::qwen3({.vocab = 151936, .hidden = 2048, .layers = 28, .heads = 16, .kv_heads = 8, .head_dim = 128, .ffn = 6144, .tied = true}); }
constexpr model_spec qwen3_4b() { return families::qwen3({.vocab = 151936, .hidden = 2560, .layers = 36, .heads = 32, .kv_heads = 8, .head_dim = 128, .ffn = 9728, .tied = true}); }
constexpr model_spec qwen3_8b() { return families::qwen3({.vocab = 151936, .hidden = 4096, .layers = 36, .heads = 32, .kv_heads = 8, .head_dim = 128, .ffn = 12288, .tied = false}); }
constexpr model_spec qwen3_14b() { return families::qwen3({.vocab = 151936, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 8, .head_dim = 128, .ffn = 17408, .tied = false}); }
constexpr model_spec qwen3_32b() { return families::qwen3({.vocab = 151936, .hidden = 5120, .layers = 64, .heads = 64, .kv_heads = 8, .head_dim = 128, .ffn = 25600, .tied = false}); }
constexpr model_spec gemma_2_2b() { return families::gemma2({.vocab = 256000, .hidden = 2304, .layers = 26, .heads = 8, .kv_heads = 4, .head_dim = 256, .ffn = 9216, .tied = true}, 4096); }
constexpr model_spec gemma_2_9b() { return families::gemma2({.vocab = 256000, .hidden = 3584, .layers = 42, .heads = 16, .kv_heads = 8, .head_dim = 256, .ffn = 14336, .tied = true}, 4096); }
constexpr model_spec gemma_2_27b() { return families::gemma2({.vocab = 256000, .hidden = 4608, .layers = 46, .heads = 32, .kv_heads = 16, .head_dim = 128, .ffn = 36864, .tied = true}, 4096); }
constexpr model_spec gemma_3_1b() { return families::gemma3({.vocab = 262144, .hidden = 1152, .layers = 26, .heads = 4, .kv_heads = 1, .head_dim = 256, .ffn = 6912, .tied = true}, 512, 6); }
constexpr model_spec gemma_3_4b() { return families::gemma3({.vocab = 262208, .hidden = 2560, .layers = 34, .heads = 8, .kv_heads = 4, .head_dim = 256, .ffn = 10240, .tied = true}, 1024, 6); }
constexpr model_spec gemma_3_12b() { return families::gemma3({.vocab = 262208, .hidden = 3840, .layers = 48, .heads = 16, .kv_heads = 8, .head_dim = 256, .ffn = 15360, .tied = true}, 1024, 6); }
constexpr model_spec gemma_3_27b() { return families::gemma3({.vocab = 262208, .hidden = 5376, .layers = 62, .heads = 32, .kv_heads = 16, .head_dim = 128, .ffn = 21504, .tied = true}, 1024, 6); }
constexpr model_spec phi_3_mini() { return families::phi3({.vocab = 32064, .hidden = 3072, .layers = 32, .heads = 32, .kv_heads = 32, .head_dim = 0, .ffn = 8192, .tied = false}, 2047); }
constexpr model_spec phi_3_medium() { return families::phi3({.vocab = 32064, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 10, .head_dim = 0, .ffn = 17920, .tied = false}, 2047); }
constexpr model_spec phi_4() { return families::phi3({.vocab = 100352, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 10, .head_dim = 0, .ffn = 17920, .tied = false}); }
constexpr model_spec olmo_2_7b() { return families::olmo2({.vocab = 100352, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 32, .head_dim = 0, .ffn = 11008, .tied = false}); }
constexpr model_spec olmo_2_13b() { return families::olmo2({.vocab = 100352, .hidden = 5120, .layers = 40, .heads = 40, .kv_heads = 40, .head_dim = 0, .ffn = 13824, .tied = false}); }
constexpr model_spec pythia_160m() { return families::gpt_neox({.vocab = 50304, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072, .tied = false}, 0.25); }
constexpr model_spec pythia_410m() { return families::gpt_neox({.vocab = 50304, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = false}, 0.25); }
constexpr model_spec pythia_1b() { return families::gpt_neox({.vocab = 50304, .hidden = 2048, .layers = 16, .heads = 8, .ffn = 8192, .tied = false}, 0.25); }
constexpr model_spec pythia_1_4b() { return families::gpt_neox({.vocab = 50304, .hidden = 2048, .layers = 24, .heads = 16, .ffn = 8192, .tied = false}, 0.25); }
constexpr model_spec pythia_2_8b() { return families::gpt_neox({.vocab = 50304, .hidden = 2560, .layers = 32, .heads = 32, .ffn = 10240, .tied = false}, 0.25); }
constexpr model_spec pythia_6_9b() { return families::gpt_neox({.vocab = 50432, .hidden = 4096, .layers = 32, .heads = 32, .ffn = 16384, .tied = false}, 0.25); }
constexpr model_spec pythia_12b() { return families::gpt_neox({.vocab = 50688, .hidden = 5120, .layers = 36, .heads = 40, .ffn = 20480, .tied = false}, 0.25); }
constexpr model_spec gpt_j_6b() { return families::gptj({.vocab = 50400, .hidden = 4096, .layers = 28, .heads = 16, .ffn = 16384, .tied = false}, 64); }
constexpr model_spec opt_125m() { return families::opt({.vocab = 50272, .hidden = 768, .layers = 12, .heads = 12, .ffn = 3072, .tied = true}, 2048, 768, true); }
constexpr model_spec opt_350m() { return families::opt({.vocab = 50272, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = true}, 2048, 512, false); }
constexpr model_spec opt_1_3b() { return families::opt({.vocab = 50272, .hidden = 2048, .layers = 24, .heads = 32, .ffn = 8192, .tied = true}, 2048, 2048, true); }
constexpr model_spec opt_2_7b() { return families::opt({.vocab = 50272, .hidden = 2560, .layers = 32, .heads = 32, .ffn = 10240, .tied = true}, 2048, 2560, true); }
constexpr model_spec opt_6_7b() { return families::opt({.vocab = 50272, .hidden = 4096, .layers = 32, .heads = 32, .ffn = 16384, .tied = true}, 2048, 4096, true); }
constexpr model_spec opt_13b() { return families::opt({.vocab = 50272, .hidden = 5120, .layers = 40, .heads = 40, .ffn = 20480, .tied = true}, 2048, 5120, true); }
constexpr model_spec opt_30b() { return families::opt({.vocab = 50272, .hidden = 7168, .layers = 48, .heads = 56, .ffn = 28672, .tied = true}, 2048, 7168, true); }
constexpr model_spec opt_66b() { return families::opt({.vocab = 50272, .hidden = 9216, .layers = 64, .heads = 72, .ffn = 36864, .tied = true}, 2048, 9216, true); }
constexpr model_spec falcon_7b() { return families::falcon({.vocab = 65024, .hidden = 4544, .layers = 32, .heads = 71, .kv_heads = 1, .ffn = 18176, .tied = true}, false, false, true, 1); }
constexpr model_spec falcon_40b() { return families::falcon({.vocab = 65024, .hidden = 8192, .layers = 60, .heads = 128, .kv_heads = 8, .ffn = 32768, .tied = true}, false, false, true, 2); }
constexpr model_spec bloom_560m() { return families::bloom({.vocab = 250880, .hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096, .tied = true}); }
constexpr model_spec bloom_1b1() { return families::bloom({.vocab = 250880, .hidden = 1536, .layers = 24, .heads = 16, .ffn = 6144, .tied = true}); }
constexpr model_spec bloom_1b7() { return families::bloom({.vocab = 250880, .hidden = 2048, .layers = 24, .heads = 16, .ffn = 8192, .tied = true}); }
constexpr model_spec bloom_3b() { return families::bloom({.vocab = 250880, .hidden = 2560, .layers = 30, .heads = 32, .ffn = 10240, .tied = true}); }
constexpr model_spec bloom_7b1() { return families::bloom({.vocab = 250880, .hidden = 4096, .layers = 30, .heads = 32, .ffn = 16384, .tied = true}); }
constexpr model_spec vit_base() { return families::vit({.hidden = 768, .layers = 12, .heads = 12, .ffn = 3072}, 224, 16, 3, 1000); }
constexpr model_spec vit_large() { return families::vit({.hidden = 1024, .layers = 24, .heads = 16, .ffn = 4096}, 224, 16, 3, 1000); }
constexpr model_spec t5_small() { return families::t5({.vocab = 32128, .d_model = 512, .d_kv = 64, .d_ff = 2048, .layers = 6, .decoder_layers = 6, .heads = 8}, false, activation::relu, true); }
constexpr model_spec t5_base() { return families::t5({.vocab = 32128, .d_model = 768, .d_kv = 64, .d_ff = 3072, .layers = 12, .decoder_layers = 12, .heads = 12}, false, activation::relu, true); }
constexpr model_spec t5_large() { return families::t5({.vocab = 32128, .d_model = 1024, .d_kv = 64, .d_ff = 4096, .layers = 24, .decoder_layers = 24, .heads = 16}, false, activation::relu, true); }
constexpr model_spec t5_3b() { return families::t5({.vocab = 32128, .d_model = 1024, .d_kv = 128, .d_ff = 16384, .layers = 24, .decoder_layers = 24, .heads = 32}, false, activation::relu, true); }
constexpr model_spec t5_11b() { return families::t5({.vocab = 32128, .d_model = 1024, .d_kv = 128, .d_ff = 65536, .layers = 24, .decoder_layers = 24, .heads = 128}, false, activation::relu, true); }
constexpr model_spec flan_t5_base() { return families::t5({.vocab = 32128, .d_model = 768, .d_kv = 64, .d_ff = 2048, .layers = 12, .decoder_layers = 12, .heads = 12}, true, activation::gelu_new, false); }
constexpr model_spec t5_v1_1_base() { return families::t5({.vocab = 32128, .d_model = 768, .d_kv = 64, .d_ff = 2048, .layers = 12, .decoder_layers = 12, .heads = 12}, true, activation::gelu_new, false); }
// Mixtures of experts.
constexpr model_spec mixtral_8x7b() { return families::mixtral({.vocab = 32000, .hidden = 4096, .layers = 32, .heads = 32, .kv_heads = 8, .ffn = 14336}, {.experts = 8, .top_k = 2, .hidden = 14336}); }
constexpr model_spec mixtral_8x22b() { return families::mixtral({.vocab = 32768, .hidden = 6144, .layers = 56, .heads = 48, .kv_heads = 8, .ffn = 16384}, {.experts = 8, .top_k = 2, .hidden = 16384}); }
constexpr model_spec qwen1_5_moe_a2_7b() { return families::qwen2_moe({.vocab = 151936, .hidden = 2048, .layers = 24, .heads = 16, .kv_heads = 16, .ffn = 5632}, {.experts = 60, .top_k = 4, .hidden = 1408, .shared = 5632}); }
constexpr model_spec qwen3_30b_a3b() { return families::qwen3_moe({.vocab = 151936, .hidden = 2048, .layers = 48, .heads = 32, .kv_heads = 4, .head_dim = 128, .ffn = 6144}, {.experts = 128, .top_k = 8, .hidden = 768}); }
constexpr model_spec qwen3_235b_a22b() { return families::qwen3_moe({.vocab = 151936, .hidden = 4096, .layers = 94, .heads = 64, .kv_heads = 4, .head_dim = 128, .ffn = 12288}, {.experts = 128, .top_k = 8, .hidden = 1536}); }
constexpr model_spec olmoe_1b_7b() { return families::olmoe({.vocab = 50304, .hidden = 2048, .layers = 16, .heads = 16, .kv_heads = 16, .ffn = 1024}, {.experts = 64, .top_k = 8, .hidden = 1024}); }
constexpr model_spec deepseek_v2_lite() { return families::deepseek_v2({.vocab = 102400, .hidden = 2048, .layers = 27, .heads = 16, .ffn = 10944}, {.experts = 64, .top_k = 6, .hidden = 1408, .shared = 2816, .first_dense = 1}, {.q_lora_rank = 0, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128}); }
constexpr model_spec deepseek_v2() { return families::deepseek_v2({.vocab = 102400, .hidden = 5120, .layers = 60, .heads = 128, .ffn = 12288}, {.experts = 160, .top_k = 6, .hidden = 1536, .shared = 3072, .first_dense = 1}, {.q_lora_rank = 1536, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128}); }
constexpr model_spec deepseek_v3() { return families::deepseek_v3({.vocab = 129280, .hidden = 7168, .layers = 61, .heads = 128, .ffn = 18432}, {.experts = 256, .top_k = 8, .hidden = 2048, .shared = 2048, .first_dense = 3}, {.q_lora_rank = 1536, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128}); }
constexpr model_spec gpt_oss_20b() { return families::gpt_oss({.vocab = 201088, .hidden = 2880, .layers = 24, .heads = 64, .kv_heads = 8, .head_dim = 64, .ffn = 2880}, {.experts = 32, .top_k = 4, .hidden = 2880}, 128); }
constexpr model_spec gpt_oss_120b() { return families::gpt_oss({.vocab = 201088, .hidden = 2880, .layers = 36, .heads = 64, .kv_heads = 8, .head_dim = 64, .ffn = 2880}, {.experts = 128, .top_k = 4, .hidden = 2880}, 128); }
constexpr model_spec llama_4_scout() { return families::llama4({.vocab = 202048, .hidden = 5120, .layers = 48, .heads = 40, .kv_heads = 8, .head_dim = 128, .ffn = 16384}, {.experts = 16, .top_k = 1, .hidden = 8192, .shared = 8192}, 1, 4, 8192, true, true); }
constexpr model_spec llama_4_maverick() { return families::llama4({.vocab = 202048, .hidden = 5120, .layers = 48, .heads = 40, .kv_heads = 8, .head_dim = 128, .ffn = 16384}, {.experts = 128, .top_k = 1, .hidden = 8192, .shared = 8192}, 2, 4, 8192, false, true); }
// GPT-3 175B (Brown et al., 2020, Table 2.1) in the GPT-2 layout; no checkpoint.
constexpr model_spec gpt3_175b() { return families::gpt2({.vocab = 50257, .hidden = 12288, .layers = 96, .heads = 96, .ffn = 49152, .tied = true}, 2048); }

}  // namespace make

inline constexpr preset bert_base{make::bert_base};
inline constexpr preset bert_large{make::bert_large};
inline constexpr preset roberta_base{make::roberta_base};
inline constexpr preset roberta_large{make::roberta_large};
inline constexpr preset distilbert_base{make::distilbert_base};
inline constexpr preset tinybert{make::tinybert};
inline constexpr preset modernbert_base{make::modernbert_base};
inline constexpr preset modernbert_large{make::modernbert_large};
inline constexpr preset gpt2{make::gpt2};
inline constexpr preset gpt2_medium{make::gpt2_medium};
inline constexpr preset gpt2_large{make::gpt2_large};
inline constexpr preset gpt2_xl{make::gpt2_xl};
inline constexpr preset llama_2_7b{make::llama_2_7b};
inline constexpr preset llama_2_13b{make::llama_2_13b};
inline constexpr preset llama_2_70b{make::llama_2_70b};
inline constexpr preset llama_3_8b{make::llama_3_8b};
inline constexpr preset llama_3_70b{make::llama_3_70b};
inline constexpr preset llama_3_2_1b{make::llama_3_2_1b};
inline constexpr preset llama_3_2_3b{make::llama_3_2_3b};
inline constexpr preset tinyllama_1_1b{make::tinyllama_1_1b};
inline constexpr preset mistral_7b{make::mistral_7b};
inline constexpr preset qwen2_5_0_5b{make::qwen2_5_0_5b};
inline constexpr preset qwen2_5_1_5b{make::qwen2_5_1_5b};
inline constexpr preset qwen2_5_7b{make::qwen2_5_7b};
inline constexpr preset qwen3_0_6b{make::qwen3_0_6b};
inline constexpr preset qwen3_1_7b{make::qwen3_1_7b};
inline constexpr preset qwen3_4b{make::qwen3_4b};
inline constexpr preset qwen3_8b{make::qwen3_8b};
inline constexpr preset qwen3_14b{make::qwen3_14b};
inline constexpr preset qwen3_32b{make::qwen3_32b};
inline constexpr preset gemma_2_2b{make::gemma_2_2b};
inline constexpr preset gemma_2_9b{make::gemma_2_9b};
inline constexpr preset gemma_2_27b{make::gemma_2_27b};
inline constexpr preset gemma_3_1b{make::gemma_3_1b};
inline constexpr preset gemma_3_4b{make::gemma_3_4b};
inline constexpr preset gemma_3_12b{make::gemma_3_12b};
inline constexpr preset gemma_3_27b{make::gemma_3_27b};
inline constexpr preset phi_3_mini{make::phi_3_mini};
inline constexpr preset phi_3_medium{make::phi_3_medium};
inline constexpr preset phi_4{make::phi_4};
inline constexpr preset olmo_2_7b{make::olmo_2_7b};
inline constexpr preset olmo_2_13b{make::olmo_2_13b};
inline constexpr preset pythia_160m{make::pythia_160m};
inline constexpr preset pythia_410m{make::pythia_410m};
inline constexpr preset pythia_1b{make::pythia_1b};
inline constexpr preset pythia_1_4b{make::pythia_1_4b};
inline constexpr preset pythia_2_8b{make::pythia_2_8b};
inline constexpr preset pythia_6_9b{make::pythia_6_9b};
inline constexpr preset pythia_12b{make::pythia_12b};
inline constexpr preset gpt_j_6b{make::gpt_j_6b};
inline constexpr preset opt_125m{make::opt_125m};
inline constexpr preset opt_350m{make::opt_350m};
inline constexpr preset opt_1_3b{make::opt_1_3b};
inline constexpr preset opt_2_7b{make::opt_2_7b};
inline constexpr preset opt_6_7b{make::opt_6_7b};
inline constexpr preset opt_13b{make::opt_13b};
inline constexpr preset opt_30b{make::opt_30b};
inline constexpr preset opt_66b{make::opt_66b};
inline constexpr preset falcon_7b{make::falcon_7b};
inline constexpr preset falcon_40b{make::falcon_40b};
inline constexpr preset bloom_560m{make::bloom_560m};
inline constexpr preset bloom_1b1{make::bloom_1b1};
inline constexpr preset bloom_1b7{make::bloom_1b7};
inline constexpr preset bloom_3b{make::bloom_3b};
inline constexpr preset bloom_7b1{make::bloom_7b1};
inline constexpr preset vit_base{make::vit_base};
inline constexpr preset vit_large{make::vit_large};
inline constexpr preset t5_small{make::t5_small};
inline constexpr preset t5_base{make::t5_base};
inline constexpr preset t5_large{make::t5_large};
inline constexpr preset t5_3b{make::t5_3b};
inline constexpr preset t5_11b{make::t5_11b};
inline constexpr preset flan_t5_base{make::flan_t5_base};
inline constexpr preset t5_v1_1_base{make::t5_v1_1_base};
inline constexpr preset mixtral_8x7b{make::mixtral_8x7b};
inline constexpr preset mixtral_8x22b{make::mixtral_8x22b};
inline constexpr preset qwen1_5_moe_a2_7b{make::qwen1_5_moe_a2_7b};
inline constexpr preset qwen3_30b_a3b{make::qwen3_30b_a3b};
inline constexpr preset qwen3_235b_a22b{make::qwen3_235b_a22b};
inline constexpr preset olmoe_1b_7b{make::olmoe_1b_7b};
inline constexpr preset deepseek_v2_lite{make::deepseek_v2_lite};
inline constexpr preset deepseek_v2{make::deepseek_v2};
inline constexpr preset deepseek_v3{make::deepseek_v3};
inline constexpr preset gpt_oss_20b{make::gpt_oss_20b};
inline constexpr preset gpt_oss_120b{make::gpt_oss_120b};
inline constexpr preset llama_4_scout{make::llama_4_scout};
inline constexpr preset llama_4_maverick{make::llama_4_maverick};
inline constexpr preset gpt3_175b{make::gpt3_175b};

struct named_preset {
    std::string_view name;
    preset spec;
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
        if (p.name == name) return p.spec();
    return std::nullopt;
}

}  // namespace anatomy::presets
