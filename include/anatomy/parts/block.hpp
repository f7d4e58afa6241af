// The block part: how a layer arranges its attention and MLP around the residual stream.
#pragma once

#include <cstdint>

namespace anatomy {

// Where a layer's norms sit.
enum class norm_placement {
    pre,            // x + f(norm(x)): GPT-2, Llama and most decoders
    post_residual,  // norm(x + f(x)): BERT, DistilBERT, OPT-350m
    post_sublayer,  // x + norm(f(x)): OLMo 2
    sandwich,       // x + post_norm(f(pre_norm(x))): Gemma 2 and 3
};

enum class residual_kind {
    sequential,  // attention, then the MLP on the updated stream
    parallel,    // attention and MLP read the same input; both add to the stream (GPT-J, GPT-NeoX, Falcon)
};

struct block_part {
    norm_placement placement = norm_placement::pre;
    residual_kind residual = residual_kind::sequential;
    // Parallel blocks: one norm feeds both branches (GPT-J, Falcon-7B), or
    // each branch has its own (GPT-NeoX, Falcon's new decoder architecture).
    bool shared_parallel_norm = false;
    double dropout = 0.0;  // on each branch's output before the residual add
    bool attention_branch_dropout = true;  // DistilBERT drops the MLP's output only
    // Falcon adds attention into the MLP's output in place (`mlp_output +=
    // attention_output`); GPT-J and GPT-NeoX make a new tensor.
    bool parallel_add_in_place = false;
    // ModernBERT's first layer has no attention norm (nn.Identity).
    bool first_layer_attention_norm = true;
    bool final_norm = true;  // a norm after the last layer
};

}  // namespace anatomy
