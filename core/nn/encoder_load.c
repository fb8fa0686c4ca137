/* Loading an encoder: config.json, the safetensors files (one, or the shards of an index), every
 * tensor found under the checkpoint's prefix and checked against the config's shapes, F16/BF16
 * converted once to float32, and the fingerprint of what is used. */
#include "nn/encoder_internal.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "math/half.h"
#include "nn/relpos.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const emb_safetensors_tensor *find_any(const emb_encoder *e, const char *name, int *file) {
    for (int i = 0; i < e->nfiles; i++) {
        const emb_safetensors_tensor *t = emb_safetensors_find(e->files[i], name);
        if (t) {
            if (file) *file = i;
            return t;
        }
    }
    return NULL;
}

static int own(emb_encoder *e, void *p) {
    if (e->nowned == e->capowned) {
        int nc = e->capowned ? e->capowned * 2 : 64;
        void **n = realloc(e->owned, (size_t)nc * sizeof *n);
        if (!n) return -1;
        e->owned = n;
        e->capowned = nc;
    }
    e->owned[e->nowned++] = p;
    return 0;
}

static void fmt_shape(char *buf, size_t cap, int nd, const int64_t *s) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < nd && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)s[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

static void hash_u64(XXH3_state_t *h, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    XXH3_64bits_update(h, b, 8);
}

/* Load tensor prefix+suffix with shape [d0] (d1 < 0) or [d0, d1] as float32. */
static int get_tensor(emb_encoder *e, const char *suffix, int64_t d0, int64_t d1, int optional, const float **out,
                      char err[EMB_ERR_LEN]) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", e->prefix, suffix);
    int fi = 0;
    const emb_safetensors_tensor *t = find_any(e, name, &fi);
    const emb_safetensors *file = e->files[fi];
    *out = NULL;
    if (!t) {
        if (optional) return 0;
        return emb_fail(err, "%.40s: missing tensor '%.150s'", e->src_label, name);
    }
    int64_t want[2] = {d0, d1};
    int nd = d1 < 0 ? 1 : 2;
    if (t->ndim != nd || t->shape[0] != d0 || (nd == 2 && t->shape[1] != d1)) {
        char got[128], exp[64];
        fmt_shape(got, sizeof got, t->ndim, t->shape);
        fmt_shape(exp, sizeof exp, nd, want);
        return emb_fail(err, "%.40s: tensor '%.100s' has shape %.40s, expected %.40s", file->label, name, got,
                        exp);
    }
    size_t n = (size_t)d0 * (size_t)(nd == 2 ? d1 : 1);
    const float *p;
    if (t->dtype == EMB_DT_F32) {
        if (((uintptr_t)t->data & 3u) == 0) {
            p = (const float *)(const void *)t->data;
            e->in_place[fi] = 1;
            if (file->mapped) e->info.mapped_bytes += n * sizeof(float);
        } else {
            float *c = emb_alloc_large(n * sizeof(float) + 1);
            if (!c || own(e, c)) {
                free(c);
                return emb_fail(err, "out of memory loading '%.150s'", name);
            }
            memcpy(c, t->data, n * sizeof(float));
            e->info.converted_bytes += n * sizeof(float);
            p = c;
        }
    } else if (t->dtype == EMB_DT_F16 || t->dtype == EMB_DT_BF16) {
        float *c = emb_alloc_large(n * sizeof(float) + 1);
        if (!c || own(e, c)) {
            free(c);
            return emb_fail(err, "out of memory loading '%.150s'", name);
        }
        if (t->dtype == EMB_DT_F16) emb_f16_to_f32_n(t->data, c, n);
        else emb_bf16_to_f32_n(t->data, c, n);
        e->info.converted_bytes += n * sizeof(float);
        p = c;
    } else {
        return emb_fail(err, "%.40s: tensor '%.150s' has dtype %.10s, expected F32, F16 or BF16", file->label,
                        name, emb_dtype_name(t->dtype));
    }
    if (e->first_dtype < 0) e->first_dtype = (int)t->dtype;
    else if (e->first_dtype != (int)t->dtype) e->mixed = 1;
    e->info.weight_bytes += n * sizeof(float);
    /* fingerprint: canonical name, shape, float32 values (little-endian host) */
    XXH3_64bits_update(e->hash, suffix, strlen(suffix) + 1);
    hash_u64(e->hash, (uint64_t)d0);
    hash_u64(e->hash, (uint64_t)(nd == 2 ? d1 : 0));
    XXH3_64bits_update(e->hash, p, n * sizeof(float));
    *out = p;
    return 0;
}

static int add_file(emb_encoder *e, const char *path, int use_mmap, char err[EMB_ERR_LEN]) {
    emb_safetensors **n = realloc(e->files, (size_t)(e->nfiles + 1) * sizeof *n);
    if (n) e->files = n;
    unsigned char *u = n ? realloc(e->in_place, (size_t)(e->nfiles + 1)) : NULL;
    if (!u) return emb_fail(err, "out of memory");
    e->in_place = u;
    if (emb_safetensors_open(path, use_mmap, &e->files[e->nfiles], err)) return -1;
    e->in_place[e->nfiles++] = 0;
    return 0;
}

/* Closes the files none of whose tensors is used in place (all converted or unused), so that
 * only what the model needs stays mapped or in memory. */
static void drop_unused_files(emb_encoder *e) {
    int kept = 0;
    for (int i = 0; i < e->nfiles; i++) {
        if (e->in_place[i]) e->files[kept++] = e->files[i];
        else emb_safetensors_close(e->files[i]);
    }
    e->nfiles = kept;
}

/* The shards that model.safetensors.index.json's weight_map (in root) names, each opened once. */
static int open_shards(emb_encoder *e, const char *dir, const cJSON *root, int use_mmap, char err[EMB_ERR_LEN]) {
    const char *idx = "model.safetensors.index.json";
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm)) return emb_fail(err, "%s: no \"weight_map\" object", idx);
    for (const cJSON *it = wm->child; it; it = it->next) {
        if (!cJSON_IsString(it))
            return emb_fail(err, "%s: weight_map entry '%.100s' is not a file name", idx, it->string);
        const char *f = it->valuestring;
        size_t fl = strlen(f);
        if (!fl || strchr(f, '/') || strchr(f, '\\') || f[0] == '.' || fl < 12 ||
            strcmp(f + fl - 12, ".safetensors") != 0)
            return emb_fail(err, "%s: shard name '%.100s' is not a plain *.safetensors file name", idx, f);
        int seen = 0;
        for (int i = 0; i < e->nfiles && !seen; i++) seen = strcmp(e->files[i]->label, f) == 0;
        if (seen) continue;
        if (e->nfiles >= 4096) return emb_fail(err, "%s: too many shards", idx);
        char path[4096];
        if (emb_path_join(path, sizeof path, dir, f, err) || add_file(e, path, use_mmap, err)) return -1;
    }
    if (e->nfiles == 0) return emb_fail(err, "%s: weight_map is empty", idx);
    return 0;
}

static int open_weights(emb_encoder *e, const char *dir, int use_mmap, char err[EMB_ERR_LEN]) {
    char path[4096];
    if (emb_path_join(path, sizeof path, dir, "model.safetensors", err)) return -1;
    if (emb_path_exists(path)) {
        snprintf(e->src_label, sizeof e->src_label, "model.safetensors");
        return add_file(e, path, use_mmap, err);
    }
    if (emb_path_join(path, sizeof path, dir, "model.safetensors.index.json", err)) return -1;
    if (!emb_path_exists(path))
        return emb_fail(err,
                        "%s: no model.safetensors or model.safetensors.index.json (PyTorch .bin checkpoints are "
                        "not supported)",
                        dir);
    snprintf(e->src_label, sizeof e->src_label, "model.safetensors.index.json");
    cJSON *root;
    if (emb_json_read_file(path, 64u << 20, &root, err)) return -1;
    int rc = open_shards(e, dir, root, use_mmap, err);
    cJSON_Delete(root);
    return rc;
}

static void sinusoidal_table(float *out, int n_pos, int dim) {
    /* transformers' create_sinusoidal_embeddings */
    for (int p = 0; p < n_pos; p++)
        for (int j = 0; j < dim; j++) {
            double a = p / pow(10000.0, 2.0 * (j / 2) / dim);
            out[(size_t)p * dim + j] = (float)((j & 1) ? cos(a) : sin(a));
        }
}

/* A DistilBERT sinusoidal table that is not stored is built from config.json alone: it may not
 * be larger than the weights in the files, so that a config cannot ask for gigabytes. */
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
    if (!t || own(e, t)) {
        free(t);
        return emb_fail(err, "out of memory");
    }
    sinusoidal_table(t, c->dims.max_positions, c->dims.hidden);
    e->pos = t;
    XXH3_64bits_update(e->hash, "sinusoidal", 11);
    return 0;
}

/* The word-embedding tensor's name (without prefix) and the prefix a task-head checkpoint of
 * the architecture puts before the model's own tensors (whose head tensors are then ignored). */
static const char *word_tensor(emb_arch a) {
    return a == EMB_ARCH_MODERNBERT ? "embeddings.tok_embeddings.weight" : "embeddings.word_embeddings.weight";
}
static const char *head_prefix(emb_arch a) {
    switch (a) {
    case EMB_ARCH_DISTILBERT: return "distilbert.";
    case EMB_ARCH_ROBERTA: return "roberta.";
    case EMB_ARCH_MODERNBERT: return "model.";
    default: return "bert.";
    }
}

/* The prefix under which the word embeddings exist: "", or the architecture's ("bert."). */
static int find_prefix(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const char *word = word_tensor(e->cfg.arch);
    const char *cands[2] = {"", head_prefix(e->cfg.arch)};
    for (int i = 0; i < 2; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s%s", cands[i], word);
        if (find_any(e, name, NULL)) {
            snprintf(e->prefix, sizeof e->prefix, "%s", cands[i]);
            e->info.tensor_prefix = cands[i]; /* a string literal: valid after free */
            return 0;
        }
    }
    return emb_fail(err, "%s: missing tensor '%s' (also looked for '%s%s')", e->src_label, word, cands[1], word);
}

/* The fingerprint starts with the config's numbers (BERT's and DistilBERT's as they always were,
 * so that their fingerprints stay what applications stored; the newer settings after them). */
static void hash_config(emb_encoder *e) {
    const emb_encoder_config *c = &e->cfg;
    int64_t nums[] = {c->arch,
                      c->dims.hidden,
                      c->dims.layers,
                      c->dims.heads,
                      c->dims.intermediate,
                      c->dims.max_positions,
                      c->dims.type_vocab,
                      c->dims.vocab_size,
                      c->sinusoidal,
                      c->act};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) hash_u64(e->hash, (uint64_t)nums[i]);
    double eps = c->ln_eps;
    uint64_t eb;
    memcpy(&eb, &eps, 8);
    hash_u64(e->hash, eb);
    if (c->arch == EMB_ARCH_BERT || c->arch == EMB_ARCH_DISTILBERT) return;
    int64_t more[] = {c->pad_token_id, c->pos_kind,  c->pos_offset,  c->gated,
                      c->pre_norm,     c->rope_dims, c->half_window, c->global_every};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) hash_u64(e->hash, (uint64_t)more[i]);
    double th[2] = {c->rope_theta, c->rope_theta_local};
    for (int i = 0; i < 2; i++) {
        memcpy(&eb, &th[i], 8);
        hash_u64(e->hash, eb);
    }
}

/* The bias prefix+suffix of n values where the architecture has it, else the zeros. */
static int get_bias(emb_encoder *e, const char *suffix, int64_t n, int present, const float **out,
                    char err[EMB_ERR_LEN]) {
    if (!present) {
        *out = e->zeros;
        return 0;
    }
    return get_tensor(e, suffix, n, -1, 0, out, err);
}

/* get_tensor / get_bias with the layer number put into the name's format. */
static int layer_tensor(emb_encoder *e, const char *fmt, int l, int64_t d0, int64_t d1, const float **out,
                        char err[EMB_ERR_LEN]) {
    char name[128];
    snprintf(name, sizeof name, fmt, l);
    return get_tensor(e, name, d0, d1, 0, out, err);
}
static int layer_bias(emb_encoder *e, const char *fmt, int l, int64_t n, int present, const float **out,
                      char err[EMB_ERR_LEN]) {
    char name[128];
    snprintf(name, sizeof name, fmt, l);
    return get_bias(e, name, n, present, out, err);
}

/* The zeros that stand for absent biases, and ALiBi's slopes. */
static int make_constants(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    size_t n = 3 * (size_t)c->dims.hidden;
    if (2 * (size_t)c->dims.intermediate > n) n = 2 * (size_t)c->dims.intermediate;
    float *z = calloc(n, sizeof(float));
    if (!z || own(e, z)) {
        free(z);
        return emb_fail(err, "out of memory");
    }
    e->zeros = z;
    if (c->pos_kind != EMB_POS_ALIBI) return 0;
    e->alibi_slopes = malloc((size_t)c->dims.heads * sizeof(float));
    if (!e->alibi_slopes || own(e, e->alibi_slopes)) {
        free(e->alibi_slopes);
        e->alibi_slopes = NULL;
        return emb_fail(err, "out of memory");
    }
    emb_relpos_alibi_slopes(c->dims.heads, e->alibi_slopes);
    return 0;
}

static int load_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    int H = c->dims.hidden;
    if (get_tensor(e, word_tensor(c->arch), c->dims.vocab_size, H, 0, &e->word, err)) return -1;
    if (c->pos_kind == EMB_POS_LEARNED || c->pos_kind == EMB_POS_SINUSOIDAL) {
        if (get_tensor(e, "embeddings.position_embeddings.weight", c->dims.max_positions, H,
                       c->pos_kind == EMB_POS_SINUSOIDAL, &e->pos, err))
            return -1;
        if (!e->pos && build_sinusoidal(e, err)) return -1; /* as transformers builds it */
    }
    if (c->dims.type_vocab > 0 &&
        get_tensor(e, "embeddings.token_type_embeddings.weight", c->dims.type_vocab, H, 0, &e->type, err))
        return -1;
    const char *ln = c->arch == EMB_ARCH_NOMIC_BERT   ? "emb_ln"
                     : c->arch == EMB_ARCH_MODERNBERT ? "embeddings.norm"
                                                      : "embeddings.LayerNorm";
    char g[48], b[48];
    snprintf(g, sizeof g, "%s.weight", ln);
    snprintf(b, sizeof b, "%s.bias", ln);
    return get_tensor(e, g, H, -1, 0, &e->ln_g, err) || get_bias(e, b, H, c->norm_bias, &e->ln_b, err);
}

/* BERT's and DistilBERT's layers: sixteen tensors each; RoBERTa's are BERT's. */
static int load_layer_classic(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    static const char *const fmt_bert[16] = {"encoder.layer.%d.attention.self.query.weight",
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
    static const char *const fmt_distil[16] = {
        "transformer.layer.%d.attention.q_lin.weight",   "transformer.layer.%d.attention.q_lin.bias",
        "transformer.layer.%d.attention.k_lin.weight",   "transformer.layer.%d.attention.k_lin.bias",
        "transformer.layer.%d.attention.v_lin.weight",   "transformer.layer.%d.attention.v_lin.bias",
        "transformer.layer.%d.attention.out_lin.weight", "transformer.layer.%d.attention.out_lin.bias",
        "transformer.layer.%d.sa_layer_norm.weight",     "transformer.layer.%d.sa_layer_norm.bias",
        "transformer.layer.%d.ffn.lin1.weight",          "transformer.layer.%d.ffn.lin1.bias",
        "transformer.layer.%d.ffn.lin2.weight",          "transformer.layer.%d.ffn.lin2.bias",
        "transformer.layer.%d.output_layer_norm.weight", "transformer.layer.%d.output_layer_norm.bias"};
    const int64_t H = e->cfg.dims.hidden, FF = e->cfg.dims.intermediate;
    emb_layer_weights *w = &e->L[l];
    const float **dst[16] = {&w->wq,    &w->bq,    &w->wk, &w->bk, &w->wv, &w->bv, &w->wo,    &w->bo,
                             &w->ln1_g, &w->ln1_b, &w->w1, &w->b1, &w->w2, &w->b2, &w->ln2_g, &w->ln2_b};
    const int64_t shp[16][2] = {{H, H},  {H, -1}, {H, H},  {H, -1},  {H, H},  {H, -1}, {H, H},  {H, -1},
                                {H, -1}, {H, -1}, {FF, H}, {FF, -1}, {H, FF}, {H, -1}, {H, -1}, {H, -1}};
    /* JinaBERT v2 with a gated feed-forward has BERT's attention and its own MLP tensors */
    int n = e->cfg.gated ? 10 : 16;
    for (int k = 0; k < n; k++)
        if (layer_tensor(e, e->cfg.arch == EMB_ARCH_DISTILBERT ? fmt_distil[k] : fmt_bert[k], l, shp[k][0],
                         shp[k][1], dst[k], err))
            return -1;
    if (!e->cfg.gated) return 0;
    const float *gl;
    if (layer_tensor(e, "encoder.layer.%d.mlp.gated_layers.weight", l, 2 * FF, H, &gl, err) ||
        layer_tensor(e, "encoder.layer.%d.mlp.wo.weight", l, H, FF, &w->w2, err) ||
        layer_tensor(e, "encoder.layer.%d.mlp.wo.bias", l, H, -1, &w->b2, err) ||
        layer_tensor(e, "encoder.layer.%d.mlp.layernorm.weight", l, H, -1, &w->ln2_g, err) ||
        layer_tensor(e, "encoder.layer.%d.mlp.layernorm.bias", l, H, -1, &w->ln2_b, err))
        return -1;
    w->w1 = gl; /* gelu(g[:I]) * g[I:] */
    w->w1b = gl + FF * H;
    w->b1 = e->zeros;
    return 0;
}

/* Q, K, V as the three row blocks of a fused Wqkv [3H, H] and its bias (or the zeros). */
static void split_qkv(const emb_encoder *e, emb_layer_weights *w, const float *qkv, const float *qkv_b) {
    const size_t H = (size_t)e->cfg.dims.hidden;
    int has_b = qkv_b != e->zeros;
    w->wq = qkv, w->wk = qkv + H * H, w->wv = qkv + 2 * H * H;
    w->bq = qkv_b, w->bk = qkv_b + (has_b ? H : 0), w->bv = qkv_b + (has_b ? 2 * H : 0);
}

/* NomicBERT: fused Wqkv, out_proj, norm1, fc11 / fc12 / fc2, norm2; biases as config.json says. */
static int load_layer_nomic(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int64_t H = c->dims.hidden, FF = c->dims.intermediate;
    emb_layer_weights *w = &e->L[l];
    const float *qkv, *qkv_b;
    if (layer_tensor(e, "encoder.layers.%d.attn.Wqkv.weight", l, 3 * H, H, &qkv, err) ||
        layer_bias(e, "encoder.layers.%d.attn.Wqkv.bias", l, 3 * H, c->qkv_bias, &qkv_b, err) ||
        layer_tensor(e, "encoder.layers.%d.attn.out_proj.weight", l, H, H, &w->wo, err) ||
        layer_bias(e, "encoder.layers.%d.attn.out_proj.bias", l, H, c->out_bias, &w->bo, err) ||
        layer_tensor(e, "encoder.layers.%d.norm1.weight", l, H, -1, &w->ln1_g, err) ||
        layer_bias(e, "encoder.layers.%d.norm1.bias", l, H, c->norm_bias, &w->ln1_b, err) ||
        layer_tensor(e, "encoder.layers.%d.mlp.fc12.weight", l, FF, H, &w->w1, err) ||
        layer_tensor(e, "encoder.layers.%d.mlp.fc11.weight", l, FF, H, &w->w1b, err) ||
        layer_tensor(e, "encoder.layers.%d.mlp.fc2.weight", l, H, FF, &w->w2, err) ||
        layer_bias(e, "encoder.layers.%d.mlp.fc2.bias", l, H, c->ffn_out_bias, &w->b2, err) ||
        layer_tensor(e, "encoder.layers.%d.norm2.weight", l, H, -1, &w->ln2_g, err) ||
        layer_bias(e, "encoder.layers.%d.norm2.bias", l, H, c->norm_bias, &w->ln2_b, err))
        return -1;
    split_qkv(e, w, qkv, qkv_b);
    w->b1 = e->zeros;
    if (!c->ffn_in_bias) return 0;
    /* the two halves' biases side by side, in the order of the halves: [fc12 | fc11] */
    const float *b12, *b11;
    float *b = malloc((size_t)(2 * FF) * sizeof(float));
    if (!b || own(e, b)) {
        free(b);
        return emb_fail(err, "out of memory");
    }
    if (layer_tensor(e, "encoder.layers.%d.mlp.fc12.bias", l, FF, -1, &b12, err) ||
        layer_tensor(e, "encoder.layers.%d.mlp.fc11.bias", l, FF, -1, &b11, err))
        return -1;
    memcpy(b, b12, (size_t)FF * sizeof(float));
    memcpy(b + FF, b11, (size_t)FF * sizeof(float));
    w->b1 = b;
    return 0;
}

/* ModernBERT: attn_norm (none in layer 0), fused Wqkv, Wo, mlp_norm, Wi = [input | gate], Wo. */
static int load_layer_modernbert(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int64_t H = c->dims.hidden, FF = c->dims.intermediate;
    emb_layer_weights *w = &e->L[l];
    const float *qkv, *qkv_b, *wi;
    if (l > 0 && (layer_tensor(e, "layers.%d.attn_norm.weight", l, H, -1, &w->ln1_g, err) ||
                  layer_bias(e, "layers.%d.attn_norm.bias", l, H, c->norm_bias, &w->ln1_b, err)))
        return -1;
    if (layer_tensor(e, "layers.%d.attn.Wqkv.weight", l, 3 * H, H, &qkv, err) ||
        layer_bias(e, "layers.%d.attn.Wqkv.bias", l, 3 * H, c->qkv_bias, &qkv_b, err) ||
        layer_tensor(e, "layers.%d.attn.Wo.weight", l, H, H, &w->wo, err) ||
        layer_bias(e, "layers.%d.attn.Wo.bias", l, H, c->out_bias, &w->bo, err) ||
        layer_tensor(e, "layers.%d.mlp_norm.weight", l, H, -1, &w->ln2_g, err) ||
        layer_bias(e, "layers.%d.mlp_norm.bias", l, H, c->norm_bias, &w->ln2_b, err) ||
        layer_tensor(e, "layers.%d.mlp.Wi.weight", l, 2 * FF, H, &wi, err) ||
        layer_bias(e, "layers.%d.mlp.Wi.bias", l, 2 * FF, c->ffn_in_bias, &w->b1, err) ||
        layer_tensor(e, "layers.%d.mlp.Wo.weight", l, H, FF, &w->w2, err) ||
        layer_bias(e, "layers.%d.mlp.Wo.bias", l, H, c->ffn_out_bias, &w->b2, err))
        return -1;
    split_qkv(e, w, qkv, qkv_b);
    w->w1 = wi; /* act(input) * gate */
    w->w1b = wi + FF * H;
    return 0;
}

static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    switch (e->cfg.arch) {
    case EMB_ARCH_NOMIC_BERT: return load_layer_nomic(e, l, err);
    case EMB_ARCH_MODERNBERT: return load_layer_modernbert(e, l, err);
    default: return load_layer_classic(e, l, err);
    }
}

/* BERT's pooler (also in RoBERTa and JinaBERT checkpoints) where present; ModernBERT's final norm. */
static int load_head(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int H = c->dims.hidden;
    if (c->pre_norm)
        return get_tensor(e, "final_norm.weight", H, -1, 0, &e->final_g, err) ||
               get_bias(e, "final_norm.bias", H, c->norm_bias, &e->final_b, err);
    if (c->arch == EMB_ARCH_DISTILBERT || c->arch == EMB_ARCH_NOMIC_BERT) return 0;
    if (get_tensor(e, "pooler.dense.weight", H, H, 1, &e->pool_w, err) ||
        get_tensor(e, "pooler.dense.bias", H, -1, 1, &e->pool_b, err))
        return -1;
    if (!e->pool_w || !e->pool_b) e->pool_w = e->pool_b = NULL;
    return 0;
}

/* Everything into e, which the caller frees on failure. */
static int load(emb_encoder *e, const char *dir, int use_mmap, char err[EMB_ERR_LEN]) {
    e->first_dtype = -1;
    e->hash = XXH3_createState();
    if (!e->hash) return emb_fail(err, "out of memory");
    XXH3_64bits_reset(e->hash);
    if (emb_encoder_config_load(dir, &e->cfg, err) || open_weights(e, dir, use_mmap, err) || find_prefix(e, err))
        return -1;
    hash_config(e);
    if (make_constants(e, err) || load_embeddings(e, err)) return -1;
    const emb_model_dims *d = &e->cfg.dims;
    e->L = calloc((size_t)d->layers, sizeof *e->L);
    if (!e->L) return emb_fail(err, "out of memory");
    for (int l = 0; l < d->layers; l++)
        if (load_layer(e, l, err)) return -1;
    if (load_head(e, err)) return -1;
    e->fingerprint = e->fingerprint_f32 = XXH3_64bits_digest(e->hash);
    XXH3_freeState(e->hash);
    e->hash = NULL;
    emb_encoder_info *in = &e->info;
    in->weight_type = e->mixed ? "mixed" : emb_dtype_name((emb_dtype)e->first_dtype);
    in->has_pooler = e->pool_w != NULL;
    in->n_files = e->nfiles;
    in->used_bytes = in->weight_bytes;
    /* out of memory is an error, not the mapped weights: their kernels round otherwise */
    return emb_encoder_pack_f32(e) ? emb_fail(err, "out of memory") : 0;
}

int emb_encoder_load(const char *dir, emb_encoder **out, char err[EMB_ERR_LEN]) {
    return emb_encoder_load_with(dir, 1, out, err);
}

int emb_encoder_load_open(const char *dir, int use_mmap, emb_encoder **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_encoder *e = calloc(1, sizeof *e);
    if (!e) return emb_fail(err, "out of memory");
    if (load(e, dir, use_mmap, err)) {
        emb_encoder_free(e);
        return -1;
    }
    *out = e;
    return 0;
}

int emb_encoder_load_with(const char *dir, int use_mmap, emb_encoder **out, char err[EMB_ERR_LEN]) {
    if (emb_encoder_load_open(dir, use_mmap, out, err)) return -1;
    emb_encoder_close_unused(*out);
    return 0;
}

void emb_encoder_close_unused(emb_encoder *e) { drop_unused_files(e); }

const emb_safetensors_tensor *emb_encoder_file_tensor(const emb_encoder *e, const char *name, const char **file) {
    int fi = 0;
    const emb_safetensors_tensor *t = find_any(e, name, &fi);
    if (t && file) *file = e->files[fi]->label;
    return t;
}

void emb_encoder_free(emb_encoder *e) {
    if (!e) return;
    for (int i = 0; i < e->nowned; i++) free(e->owned[i]);
    free(e->owned);
    for (int i = 0; i < e->nfiles; i++) emb_safetensors_close(e->files[i]);
    free(e->files);
    free(e->in_place);
    emb_encoder_free_weights(e);
    free(e->L);
    if (e->hash) XXH3_freeState(e->hash);
    free(e);
}

const emb_encoder_info *emb_encoder_get_info(const emb_encoder *e) { return &e->info; }
const emb_encoder_config *emb_encoder_get_config(const emb_encoder *e) { return &e->cfg; }
uint64_t emb_encoder_fingerprint(const emb_encoder *e) { return e->fingerprint; }
