/* DistilBERT (model_type "distilbert", transformers' DistilBertModel): word + position rows (a
 * learned table, or the fixed sinusoidal one, built here when the checkpoint does not store it),
 * no token types, LayerNorm; BERT's post-norm layers under their own names; no pooler. */
#include "nn/arch/arch.h"
#include <math.h>
#include <stdlib.h>

static const char *const SIZES[EMB_ARCH_N_KEYS] = {
    "dim", "n_layers", "n_heads", "hidden_dim", "max_position_embeddings", "vocab_size", NULL, "pad_token_id"};

static const char *const LAYER[16] = {
    "transformer.layer.%d.attention.q_lin.weight",   "transformer.layer.%d.attention.q_lin.bias",
    "transformer.layer.%d.attention.k_lin.weight",   "transformer.layer.%d.attention.k_lin.bias",
    "transformer.layer.%d.attention.v_lin.weight",   "transformer.layer.%d.attention.v_lin.bias",
    "transformer.layer.%d.attention.out_lin.weight", "transformer.layer.%d.attention.out_lin.bias",
    "transformer.layer.%d.sa_layer_norm.weight",     "transformer.layer.%d.sa_layer_norm.bias",
    "transformer.layer.%d.ffn.lin1.weight",          "transformer.layer.%d.ffn.lin1.bias",
    "transformer.layer.%d.ffn.lin2.weight",          "transformer.layer.%d.ffn.lin2.bias",
    "transformer.layer.%d.output_layer_norm.weight", "transformer.layer.%d.output_layer_norm.bias"};

static int read_distilbert(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                           char err[EMB_ERR_LEN]) {
    (void)type;
    c->arch = EMB_ARCH_DISTILBERT;
    c->arch_name = "distilbert";
    emb_arch_all_biases(c);
    if (emb_arch_read_ints(root, file, SIZES, c, err)) return -1; /* no token types: type_vocab stays 0 */
    c->ln_eps = 1e-12f; /* DistilBERT's LayerNorms are built with eps=1e-12 */
    if (emb_arch_read_bool(root, "sinusoidal_pos_embds", 0, file, &c->sinusoidal, err)) return -1;
    if (c->sinusoidal) c->pos_kind = EMB_POS_SINUSOIDAL;
    return emb_arch_read_activation(root, "activation", file, err);
}

static void sinusoidal_table(float *out, int n_pos, int dim) {
    /* transformers' create_sinusoidal_embeddings */
    for (int p = 0; p < n_pos; p++)
        for (int j = 0; j < dim; j++) {
            double a = p / pow(10000.0, 2.0 * (j / 2) / dim);
            out[(size_t)p * dim + j] = (float)((j & 1) ? cos(a) : sin(a));
        }
}

/* A sinusoidal table that is not stored is built from config.json alone: it may not be larger
 * than the weights in the files, so that a config cannot ask for gigabytes. */
static int build_sinusoidal(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    uint64_t in_files = 0;
    for (int i = 0; i < e->nfiles; i++) in_files += e->files[i]->h.data_len;
    uint64_t bytes = (uint64_t)c->dims.max_positions * (uint64_t)c->dims.hidden * sizeof(float);
    if (bytes > in_files)
        return emb_fail(
            err,
            "config.json: max_position_embeddings %d needs a %llu-byte sinusoidal table, more than the "
            "%llu bytes of weights in %s",
            c->dims.max_positions, (unsigned long long)bytes, (unsigned long long)in_files, e->src_label);
    float *t = malloc((size_t)bytes);
    if (!t || emb_arch_own(e, t)) {
        free(t);
        return emb_fail(err, "out of memory");
    }
    sinusoidal_table(t, c->dims.max_positions, c->dims.hidden);
    e->pos = t;
    XXH3_64bits_update(e->hash, "sinusoidal", 11);
    return 0;
}

static int load_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    int H = c->dims.hidden;
    if (emb_arch_get_word_table(e, "embeddings.word_embeddings.weight", c->dims.vocab_size, H, err) ||
        emb_arch_get_tensor(e, "embeddings.position_embeddings.weight", c->dims.max_positions, H,
                            c->pos_kind == EMB_POS_SINUSOIDAL, &e->pos, err))
        return -1;
    if (!e->pos && build_sinusoidal(e, err)) return -1; /* as transformers builds it */
    return emb_arch_load_norm(e, "embeddings.LayerNorm", &e->ln_g, &e->ln_b, err);
}

static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    return emb_arch_load_post_norm(e, l, LAYER, 16, err);
}

static const char *const TYPES[] = {"distilbert", NULL};

const emb_arch_desc emb_arch_distilbert = {
    EMB_ARCH_DISTILBERT, TYPES,           NULL,       read_distilbert, "embeddings.word_embeddings.weight",
    "distilbert.",       load_embeddings, load_layer, emb_arch_no_head};
