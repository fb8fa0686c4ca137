/* JinaBERT v2 (jinaai's JinaBertModel: model_type "bert" with position_embedding_type "alibi"):
 * BERT's embeddings without a position table, BERT's attention with ALiBi's bias on the scores,
 * and a feed-forward that is BERT's ("original") or gated: gated_layers [2I, H] without bias,
 * act(first half) * second half, wo, then its own layernorm. */
#include "nn/arch/arch.h"
#include <stdio.h>
#include <string.h>

static const char *const SIZES[EMB_ARCH_N_KEYS] = {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "max_position_embeddings",
    "vocab_size",  "type_vocab_size",   "pad_token_id"};

static int claims(const cJSON *root) {
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    return cJSON_IsString(pe) && strcmp(pe->valuestring, "alibi") == 0;
}

/* feed_forward_type "geglu" / "reglu" (gated_layers, wo, layernorm) or "original" */
static int read_jina(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                     char err[EMB_ERR_LEN]) {
    (void)type;
    emb_arch_all_biases(c);
    if (emb_arch_read_ints(root, file, SIZES, c, err) ||
        emb_arch_read_eps(root, "layer_norm_eps", 1e-12, file, c, err))
        return -1;
    c->arch = EMB_ARCH_JINA_BERT;
    c->arch_name = "jina_bert";
    c->pos_kind = EMB_POS_ALIBI;
    const char *ff;
    if (emb_arch_read_string(root, "feed_forward_type", "original", file, &ff, err)) return -1;
    if (strcmp(ff, "original") == 0) return emb_arch_read_activation(root, "hidden_act", file, err);
    c->gated = 1;
    c->ffn_in_bias = 0; /* gated_layers has no bias */
    if (strcmp(ff, "geglu") == 0) c->act = EMB_ACT_GELU;
    else if (strcmp(ff, "reglu") == 0) c->act = EMB_ACT_RELU;
    else
        return emb_fail(err, "%s: JinaBERT feed_forward_type '%.40s' is not supported (geglu, reglu, original)",
                        file, ff);
    return 0;
}

static int load_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    return emb_arch_load_embeddings(e, "embeddings.word_embeddings.weight", "embeddings.LayerNorm", err);
}

/* The gated halves: gated_layers [2I, H] whole (w1 = g[:I], w1b = g[I:]), or as older llama.cpp
 * converters split it in GGUF files: its first half as gated_layers_w, its second as
 * gated_layers [I, H] (their names for the two halves). */
static int load_gated(emb_encoder *e, int l, emb_layer_weights *w, char err[EMB_ERR_LEN]) {
    const int64_t H = e->cfg.dims.hidden, FF = e->cfg.dims.intermediate;
    char first[96];
    snprintf(first, sizeof first, "encoder.layer.%d.mlp.gated_layers_w.weight", l);
    if (emb_arch_get_tensor(e, first, FF, H, 1, &w->w1, err)) return -1;
    if (w->w1) return emb_arch_layer_tensor(e, "encoder.layer.%d.mlp.gated_layers.weight", l, FF, H, &w->w1b, err);
    if (emb_arch_layer_tensor(e, "encoder.layer.%d.mlp.gated_layers.weight", l, 2 * FF, H, &w->w1, err)) return -1;
    w->w1b = w->w1 + FF * H;
    return 0;
}

static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    const int64_t H = e->cfg.dims.hidden, FF = e->cfg.dims.intermediate;
    emb_layer_weights *w = &e->L[l];
    if (!e->cfg.gated) return emb_arch_load_post_norm(e, l, emb_arch_bert_layer_names, 16, err);
    if (emb_arch_load_post_norm(e, l, emb_arch_bert_layer_names, 10, err) || load_gated(e, l, w, err) ||
        emb_arch_layer_tensor(e, "encoder.layer.%d.mlp.wo.weight", l, H, FF, &w->w2, err) ||
        emb_arch_layer_tensor(e, "encoder.layer.%d.mlp.wo.bias", l, H, -1, &w->b2, err) ||
        emb_arch_layer_tensor(e, "encoder.layer.%d.mlp.layernorm.weight", l, H, -1, &w->ln2_g, err) ||
        emb_arch_layer_tensor(e, "encoder.layer.%d.mlp.layernorm.bias", l, H, -1, &w->ln2_b, err))
        return -1;
    w->b1 = e->zeros; /* act(w1 x) * (w1b x) */
    return 0;
}

static const char *const TYPES[] = {"bert", NULL};

const emb_arch_desc emb_arch_jina_bert = {EMB_ARCH_JINA_BERT,
                                          TYPES,
                                          claims,
                                          read_jina,
                                          "embeddings.word_embeddings.weight",
                                          "bert.",
                                          load_embeddings,
                                          load_layer,
                                          emb_arch_bert_pooler};
