// The head part: what sits on the last hidden states, and the task it trains.
#pragma once

#include <cstdint>

namespace anatomy {

enum class task { causal_lm, seq_cls, seq2seq, masked_lm, image_cls };

// The classifier a sequence- or image-classification model puts on its
// hidden states, as transformers writes each.
enum class classifier_kind {
    last_token_score,   // decoders: a bias-free `score` on every token, then the last token's logits
    pooler_tanh,        // BERT: pooler dense + tanh on the first token, dropout, classifier
    dense_tanh,         // RoBERTa: dropout, dense, tanh, dropout, out_proj on the first token
    pre_classifier_relu,  // DistilBERT: pre_classifier + ReLU, dropout, classifier
    mean_pool_head,     // ModernBERT: masked mean over tokens, head (dense, act, norm), dropout, classifier
    first_token,        // ViT: the classifier on the first (CLS) token
};

// The prediction head of a masked-LM: a transform (dense, activation, norm)
// and the decoder, tied to the embeddings, with a bias.
struct head_part {
    task kind = task::causal_lm;
    std::uint64_t num_labels = 2;
    bool tied = true;              // the LM head or MLM decoder is the input embedding table
    double logit_softcap = 0.0;    // Gemma 2: tanh(logits / cap) * cap before the loss
    classifier_kind classifier = classifier_kind::last_token_score;
    double classifier_dropout = 0.0;
    bool decoder_bias = true;      // masked-LM decoder bias
    bool lm_head_bias = false;
    // The dense layer of a masked-LM transform or a ModernBERT head has a
    // bias (BERT: always; ModernBERT: classifier_bias).
    bool transform_bias = true;
    // transformers' loss_function upcasts the logits (logits.float()); BERT,
    // RoBERTa and T5 call CrossEntropyLoss on them as they are.
    bool loss_upcast = true;
    // transformers' loss_function cannot map the class name (GPT2LMHeadModel)
    // to a loss and logs a warning inside the forward, where torch.compile
    // breaks the graph: the loss is compiled as a graph of its own.
    bool loss_graph_break = false;
    // T5: the decoder output is rescaled by d_model^-0.5 before a tied head.
    bool rescale_before_head = false;
};

}  // namespace anatomy
