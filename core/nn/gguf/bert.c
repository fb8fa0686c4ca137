/* GGUF "bert" (BertModel as convert_hf_to_gguf.py writes it: BERT, MiniLM, BGE, E5, GTE-small):
 * keys bert.embedding_length, block_count, attention.head_count, feed_forward_length,
 * attention.layer_norm_epsilon, attention.causal (must be false); the vocabulary, position and
 * token-type sizes from the tables' rows. A cross-encoder's head (cls, cls.output: XLM-R's
 * classifier.dense and out_proj) under RoBERTa's names, for classifier.c. */
#include "nn/gguf/gguf_arch.h"
#include <stdio.h>

static const emb_gguf_name_pair TOP[] = {{"token_embd", "embeddings.word_embeddings"},
                                         {"position_embd", "embeddings.position_embeddings"},
                                         {"token_types", "embeddings.token_type_embeddings"},
                                         {"token_embd_norm", "embeddings.LayerNorm"},
                                         /* a reranker's head (llama.cpp's rank pooling) */
                                         {"cls", "classifier.dense"},
                                         {"cls.output", "classifier.out_proj"}},
                                LAYER[] = {{"attn_q", "attention.self.query"},
                                           {"attn_k", "attention.self.key"},
                                           {"attn_v", "attention.self.value"},
                                           {"attn_output", "attention.output.dense"},
                                           {"attn_output_norm", "attention.output.LayerNorm"},
                                           {"ffn_up", "intermediate.dense"},
                                           {"ffn_down", "output.dense"},
                                           {"layer_output_norm", "output.LayerNorm"}};

static int config(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]) {
    int64_t H, L, NH, FF, causal = 0;
    double eps = 1e-12;
    if (emb_gguf_meta_int(g, "bert.embedding_length", 1, 65536, label, &H, err) ||
        emb_gguf_meta_int(g, "bert.block_count", 1, EMB_ENCODER_MAX_LAYERS, label, &L, err) ||
        emb_gguf_meta_int(g, "bert.attention.head_count", 1, 65536, label, &NH, err) ||
        emb_gguf_meta_int(g, "bert.feed_forward_length", 1, 1 << 20, label, &FF, err) ||
        emb_gguf_meta_number(g, "bert.attention.layer_norm_epsilon", label, &eps, err))
        return -1;
    const emb_gguf_kv *c = emb_gguf_find(g, "bert.attention.causal");
    if (c && (emb_gguf_kv_int(c, &causal) || causal))
        return emb_fail(err, "%s: bert.attention.causal is set: a causal BERT is not supported", label);
    int64_t vocab = emb_gguf_rows_of(g, "token_embd.weight"), pos = emb_gguf_rows_of(g, "position_embd.weight"),
            types = emb_gguf_rows_of(g, "token_types.weight");
    if (!vocab || !pos)
        return emb_fail(err, "%s: no 2-D tensor '%s'", label,
                        vocab ? "position_embd.weight" : "token_embd.weight");
    char json[512];
    snprintf(
        json, sizeof json,
        "{\"model_type\":\"bert\",\"hidden_size\":%lld,\"num_hidden_layers\":%lld,\"num_attention_heads\":%lld,"
        "\"intermediate_size\":%lld,\"max_position_embeddings\":%lld,\"type_vocab_size\":%lld,"
        "\"vocab_size\":%lld,\"layer_norm_eps\":%.17g,\"hidden_act\":\"gelu\"}",
        (long long)H, (long long)L, (long long)NH, (long long)FF, (long long)pos, (long long)(types ? types : 1),
        (long long)vocab, eps);
    return emb_gguf_config_parse(json, "bert", label, cfg, err);
}

#define N_OF(a) (sizeof a / sizeof *a)
const emb_gguf_arch emb_gguf_arch_bert = {"bert", TOP, N_OF(TOP), LAYER, N_OF(LAYER), "encoder.layer.%d.%s.%s",
                                          config};
