/* BERT (model_type "bert") and RoBERTa / XLM-RoBERTa ("roberta", "xlm-roberta"), as transformers'
 * BertModel and RobertaModel: word + learned positions (RoBERTa's from padding_idx + 1) + token
 * types, LayerNorm; post-norm layers of Q, K, V, output, GELU feed-forward, every projection and
 * norm with a bias; BERT's pooler where the checkpoint has one. */
#include "nn/arch/arch.h"
#include <string.h>

static const char *const SIZES[EMB_ARCH_N_KEYS] = {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "max_position_embeddings",
    "vocab_size",  "type_vocab_size",   "pad_token_id"};

const char *const emb_arch_bert_layer_names[16] = {"encoder.layer.%d.attention.self.query.weight",
                                                   "encoder.layer.%d.attention.self.query.bias",
                                                   "encoder.layer.%d.attention.self.key.weight",
                                                   "encoder.layer.%d.attention.self.key.bias",
                                                   "encoder.layer.%d.attention.self.value.weight",
                                                   "encoder.layer.%d.attention.self.value.bias",
                                                   "encoder.layer.%d.attention.output.dense.weight",
                                                   "encoder.layer.%d.attention.output.dense.bias",
                                                   "encoder.layer.%d.attention.output.LayerNorm.weight",
                                                   "encoder.layer.%d.attention.output.LayerNorm.bias",
                                                   "encoder.layer.%d.intermediate.dense.weight",
                                                   "encoder.layer.%d.intermediate.dense.bias",
                                                   "encoder.layer.%d.output.dense.weight",
                                                   "encoder.layer.%d.output.dense.bias",
                                                   "encoder.layer.%d.output.LayerNorm.weight",
                                                   "encoder.layer.%d.output.LayerNorm.bias"};

/* bert, roberta and xlm-roberta (a "bert" with ALiBi is JinaBERT v2's: jina_bert.c). */
static int read_bert(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                     char err[EMB_ERR_LEN]) {
    int roberta = strcmp(type, "bert") != 0;
    c->arch = roberta ? EMB_ARCH_ROBERTA : EMB_ARCH_BERT;
    c->arch_name = roberta ? (strcmp(type, "roberta") == 0 ? "roberta" : "xlm-roberta") : "bert";
    emb_arch_all_biases(c);
    if (emb_arch_read_ints(root, file, SIZES, c, err) ||
        emb_arch_read_eps(root, "layer_norm_eps", 1e-12, file, c, err))
        return -1;
    const char *pe;
    if (emb_arch_read_string(root, "position_embedding_type", "absolute", file, &pe, err)) return -1;
    if (strcmp(pe, "absolute") != 0)
        return emb_fail(err, "%s: position_embedding_type '%.40s' is not supported (\"absolute\"%s)", file, pe,
                        roberta ? "" : ", or \"alibi\" for JinaBERT v2");
    if (roberta) {
        /* position ids are padding_idx + 1 + i (transformers' create_position_ids_from_input_ids) */
        const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
        if (!pad || cJSON_IsNull(pad)) c->pad_token_id = 1; /* RobertaConfig's default */
        if (emb_arch_position_offset(file, c, err)) return -1;
    }
    return emb_arch_read_activation(root, "hidden_act", file, err);
}

static int load_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    return emb_arch_load_embeddings(e, "embeddings.word_embeddings.weight", "embeddings.LayerNorm", err);
}

static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    return emb_arch_load_post_norm(e, l, emb_arch_bert_layer_names, 16, err);
}

int emb_arch_bert_pooler(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const int H = e->cfg.dims.hidden;
    if (emb_arch_get_tensor(e, "pooler.dense.weight", H, H, 1, &e->pool_w, err) ||
        emb_arch_get_tensor(e, "pooler.dense.bias", H, -1, 1, &e->pool_b, err))
        return -1;
    if (!e->pool_w || !e->pool_b) e->pool_w = e->pool_b = NULL;
    return 0;
}

static const char *const BERT_TYPES[] = {"bert", NULL};
static const char *const ROBERTA_TYPES[] = {"roberta", "xlm-roberta", NULL};

const emb_arch_desc emb_arch_bert = {
    EMB_ARCH_BERT, BERT_TYPES,      NULL,       read_bert,           "embeddings.word_embeddings.weight",
    "bert.",       load_embeddings, load_layer, emb_arch_bert_pooler};
const emb_arch_desc emb_arch_roberta = {
    EMB_ARCH_ROBERTA, ROBERTA_TYPES,   NULL,       read_bert,           "embeddings.word_embeddings.weight",
    "roberta.",       load_embeddings, load_layer, emb_arch_bert_pooler};
