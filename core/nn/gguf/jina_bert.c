/* GGUF "jina-bert-v2" (JinaBertModel as convert_hf_to_gguf.py writes it: jina-embeddings-v2 with
 * a BERT WordPiece tokenizer): keys jina-bert-v2.embedding_length, block_count,
 * attention.head_count, feed_forward_length, context_length, attention.layer_norm_epsilon,
 * attention.causal (must be false); ALiBi positions (no position table); the vocabulary and
 * token-type sizes from the tables' rows. The feed-forward is GEGLU as the converter writes it
 * today: blk.N.ffn_up is gated_layers whole ([2I, H]: gelu(first half) * second half), ffn_down
 * mlp.wo, layer_output_norm mlp.layernorm. Older converters (the files of 2024) split it: ffn_gate
 * is the first half (their gated_layers_w), ffn_up the second (gated_layers_v), I rows each; both
 * are read. Refused by name: an ungated feed-forward and the q / k layernorms of the code model. */
#include "nn/gguf/gguf_arch.h"
#include <stdio.h>

static const emb_gguf_name_pair TOP[] = {{"token_embd", "embeddings.word_embeddings"},
                                         {"token_types", "embeddings.token_type_embeddings"},
                                         {"token_embd_norm", "embeddings.LayerNorm"}},
                                LAYER[] = {{"attn_q", "attention.self.query"},
                                           {"attn_k", "attention.self.key"},
                                           {"attn_v", "attention.self.value"},
                                           {"attn_output", "attention.output.dense"},
                                           {"attn_output_norm", "attention.output.LayerNorm"},
                                           {"ffn_up", "mlp.gated_layers"},
                                           {"ffn_gate", "mlp.gated_layers_w"},
                                           {"ffn_down", "mlp.wo"},
                                           {"layer_output_norm", "mlp.layernorm"}};

/* What this reader does not build, by the tensors that would carry it. */
static int refuse_unbuilt(const emb_gguf *g, int64_t FF, const char *label, char err[EMB_ERR_LEN]) {
    static const char *const extra[] = {"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight",
                                        "blk.0.attn_norm_2.weight", "blk.0.attn_qkv.weight"};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        if (emb_gguf_find_tensor(g, extra[i]))
            return emb_fail(err, "%s: tensor '%s' is not read from jina-bert-v2 files yet", label, extra[i]);
    int64_t up = emb_gguf_rows_of(g, "blk.0.ffn_up.weight"), gate = emb_gguf_rows_of(g, "blk.0.ffn_gate.weight");
    if (gate && (gate != FF || up != FF))
        return emb_fail(err,
                        "%s: blk.0.ffn_gate.weight and ffn_up.weight have %lld and %lld rows, not "
                        "jina-bert-v2.feed_forward_length %lld each (the two halves of GEGLU)",
                        label, (long long)gate, (long long)up, (long long)FF);
    if (!gate && up != 2 * FF)
        return emb_fail(err,
                        "%s: blk.0.ffn_up.weight has %lld rows, not 2 x jina-bert-v2.feed_forward_length %lld "
                        "(GEGLU): an ungated feed-forward is not read yet",
                        label, (long long)up, (long long)FF);
    return 0;
}

static int config(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]) {
    int64_t H, L, NH, FF, ctx, causal = 0;
    double eps = 1e-12;
    if (emb_gguf_meta_int(g, "jina-bert-v2.embedding_length", 1, 65536, label, &H, err) ||
        emb_gguf_meta_int(g, "jina-bert-v2.block_count", 1, EMB_ENCODER_MAX_LAYERS, label, &L, err) ||
        emb_gguf_meta_int(g, "jina-bert-v2.attention.head_count", 1, 65536, label, &NH, err) ||
        emb_gguf_meta_int(g, "jina-bert-v2.feed_forward_length", 1, 1 << 20, label, &FF, err) ||
        emb_gguf_meta_int(g, "jina-bert-v2.context_length", 1, 1 << 24, label, &ctx, err) ||
        emb_gguf_meta_number(g, "jina-bert-v2.attention.layer_norm_epsilon", label, &eps, err))
        return -1;
    const emb_gguf_kv *c = emb_gguf_find(g, "jina-bert-v2.attention.causal");
    if (c && (emb_gguf_kv_int(c, &causal) || causal))
        return emb_fail(err, "%s: jina-bert-v2.attention.causal is set: a causal JinaBERT is not supported",
                        label);
    if (refuse_unbuilt(g, FF, label, err)) return -1;
    int64_t vocab = emb_gguf_rows_of(g, "token_embd.weight"), types = emb_gguf_rows_of(g, "token_types.weight");
    if (!vocab) return emb_fail(err, "%s: no 2-D tensor 'token_embd.weight'", label);
    char json[640];
    snprintf(json, sizeof json,
             "{\"model_type\":\"bert\",\"position_embedding_type\":\"alibi\",\"feed_forward_type\":\"geglu\","
             "\"hidden_size\":%lld,\"num_hidden_layers\":%lld,\"num_attention_heads\":%lld,"
             "\"intermediate_size\":%lld,\"max_position_embeddings\":%lld,\"type_vocab_size\":%lld,"
             "\"vocab_size\":%lld,\"layer_norm_eps\":%.17g,\"hidden_act\":\"gelu\"}",
             (long long)H, (long long)L, (long long)NH, (long long)FF, (long long)ctx,
             (long long)(types ? types : 1), (long long)vocab, eps);
    return emb_gguf_config_parse(json, "jina-bert-v2", label, cfg, err);
}

#define N_OF(a) (sizeof a / sizeof *a)
const emb_gguf_arch emb_gguf_arch_jina_bert_v2 = {.arch = "jina-bert-v2",
                                                  .top = TOP,
                                                  .n_top = N_OF(TOP),
                                                  .layer = LAYER,
                                                  .n_layer = N_OF(LAYER),
                                                  .layer_fmt = "encoder.layer.%d.%s.%s",
                                                  .config = config};
