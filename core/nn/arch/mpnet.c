/* MPNet (model_type "mpnet", transformers' MPNetModel; MPNetForMaskedLM saves under "mpnet."):
 * word + learned position rows from padding_idx + 1 (as RoBERTa; MPNetEmbeddings fixes
 * padding_idx at 1), no token types, LayerNorm; BERT's post-norm layers under attention.attn.q /
 * k / v / o, with one relative-position bias shared by every layer added to the scores (T5-style
 * bidirectional buckets of key - query, a table of buckets x heads); BERT's pooler where present. */
#include "nn/arch/arch.h"
#include <math.h>
#include <stdlib.h>

static const char *const SIZES[EMB_ARCH_N_KEYS] = {"hidden_size",
                                                   "num_hidden_layers",
                                                   "num_attention_heads",
                                                   "intermediate_size",
                                                   "max_position_embeddings",
                                                   "vocab_size",
                                                   NULL,
                                                   NULL};

static const char *const LAYER[16] = {
    "encoder.layer.%d.attention.attn.q.weight",    "encoder.layer.%d.attention.attn.q.bias",
    "encoder.layer.%d.attention.attn.k.weight",    "encoder.layer.%d.attention.attn.k.bias",
    "encoder.layer.%d.attention.attn.v.weight",    "encoder.layer.%d.attention.attn.v.bias",
    "encoder.layer.%d.attention.attn.o.weight",    "encoder.layer.%d.attention.attn.o.bias",
    "encoder.layer.%d.attention.LayerNorm.weight", "encoder.layer.%d.attention.LayerNorm.bias",
    "encoder.layer.%d.intermediate.dense.weight",  "encoder.layer.%d.intermediate.dense.bias",
    "encoder.layer.%d.output.dense.weight",        "encoder.layer.%d.output.dense.bias",
    "encoder.layer.%d.output.LayerNorm.weight",    "encoder.layer.%d.output.LayerNorm.bias"};

/* MPNetEncoder.compute_position_bias always asks for 32 buckets within a distance of 128,
 * whatever relative_attention_num_buckets says (that only sizes the table). */
#define BUCKETS 32
#define MAX_DISTANCE 128

static int read_mpnet(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                      char err[EMB_ERR_LEN]) {
    (void)type;
    c->arch = EMB_ARCH_MPNET;
    c->arch_name = "mpnet";
    emb_arch_all_biases(c);
    if (emb_arch_read_ints(root, file, SIZES, c, err) ||
        emb_arch_read_eps(root, "layer_norm_eps", 1e-12, file, c, err))
        return -1;
    double nb;
    if (emb_arch_read_number(root, "relative_attention_num_buckets", BUCKETS, BUCKETS, 1 << 16, file, &nb, err))
        return -1;
    if (nb != floor(nb)) return emb_fail(err, "%s: relative_attention_num_buckets must be an integer", file);
    c->rel_buckets = (int)nb;
    c->pad_token_id = 1; /* MPNetEmbeddings.padding_idx, not config.json's pad_token_id */
    if (emb_arch_position_offset(file, c, err)) return -1;
    return emb_arch_read_activation(root, "hidden_act", file, err);
}

/* transformers' MPNetEncoder.relative_position_bucket of rel = key - query, bidirectional: 16
 * buckets a side, exact under 8, then logarithmic in float32 (torch.log) up to 128, then the last. */
static int bucket_of(int64_t rel) {
    int64_t n = -rel;
    int half = BUCKETS / 2, max_exact = half / 2, ret = n < 0 ? half : 0;
    n = n < 0 ? -n : n;
    if (n < max_exact) return ret + (int)n;
    float scale = (float)log((double)MAX_DISTANCE / max_exact); /* a Python float, used as float32 */
    float v = logf((float)n / (float)max_exact) / scale * (float)(half - max_exact);
    int large = max_exact + (int)v; /* .to(torch.long) truncates */
    return ret + (large < half - 1 ? large : half - 1);
}

/* Per head, the bias of every distance key - query from -(T - 1) to T - 1 (T: the most tokens),
 * so that attention adds a row of it with no logarithm per score. */
static int bias_table(emb_encoder *e, const float *w, char err[EMB_ERR_LEN]) {
    int NH = e->cfg.dims.heads, T = e->cfg.dims.max_positions - e->cfg.pos_offset;
    size_t n = 2 * (size_t)T - 1;
    float *tab = malloc((size_t)NH * n * sizeof(float));
    if (!tab || emb_arch_own(e, tab)) {
        free(tab);
        return emb_fail(err, "out of memory");
    }
    for (size_t d = 0; d < n; d++) {
        int b = bucket_of((int64_t)d - (T - 1));
        for (int h = 0; h < NH; h++) tab[(size_t)h * n + d] = w[(size_t)b * NH + h];
    }
    e->rel_bias = tab;
    e->rel_span = T;
    return 0;
}

static int load_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const float *w;
    return emb_arch_load_embeddings(e, "embeddings.word_embeddings.weight", "embeddings.LayerNorm", err) ||
           emb_arch_get_tensor(e, "encoder.relative_attention_bias.weight", e->cfg.rel_buckets, e->cfg.dims.heads,
                               0, &w, err) ||
           bias_table(e, w, err);
}

static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    return emb_arch_load_post_norm(e, l, LAYER, 16, err);
}

static const char *const TYPES[] = {"mpnet", NULL};

const emb_arch_desc emb_arch_mpnet = {
    EMB_ARCH_MPNET, TYPES,           NULL,       read_mpnet,          "embeddings.word_embeddings.weight",
    "mpnet.",       load_embeddings, load_layer, emb_arch_bert_pooler};
