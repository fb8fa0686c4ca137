#include "encoder.h"
#include "emb_json.h"
#include "file.h"
#include "half.h"
#include "model_config.h"
#include "safetensors.h"
#include "workers.h"
#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct {
    const float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *ln1_g, *ln1_b;
    const float *w1, *b1, *w2, *b2, *ln2_g, *ln2_b;
} layer_w;

struct emb_encoder {
    emb_model_config cfg;
    emb_encoder_info info;
    char prefix[16];
    char src_label[64];         /* "model.safetensors" or "model.safetensors.index.json" */
    emb_safetensors **files;
    unsigned char *in_place;    /* per file: some tensor is used where it lies in the file's memory */
    int nfiles;
    void **owned;
    int nowned, capowned;
    const float *word, *pos, *type, *ln_g, *ln_b, *pool_w, *pool_b;
    layer_w *L;
    int first_dtype, mixed;
    XXH3_state_t *hash;
    uint64_t fingerprint;
};

struct emb_workspace {
    float *arena;
    size_t arena_n;
    float *scores;              /* one T*T block per worker */
    size_t scores_n;
    emb_workers *workers;       /* helper threads, or NULL */
};

/* ------------------------------------------------------------------ loading */

static const emb_st_tensor *find_any(const emb_encoder *e, const char *name, int *file) {
    for (int i = 0; i < e->nfiles; i++) {
        const emb_st_tensor *t = emb_safetensors_find(e->files[i], name);
        if (t) { if (file) *file = i; return t; }
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
static int get_tensor(emb_encoder *e, const char *suffix, int64_t d0, int64_t d1, int optional,
                      const float **out, char err[EMB_ERR_LEN]) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", e->prefix, suffix);
    int fi = 0;
    const emb_st_tensor *t = find_any(e, name, &fi);
    const emb_safetensors *file = e->files[fi];
    *out = NULL;
    if (!t) {
        if (optional) return 0;
        snprintf(err, EMB_ERR_LEN, "%.40s: missing tensor '%.150s'", e->src_label, name);
        return -1;
    }
    int64_t want[2] = {d0, d1};
    int nd = d1 < 0 ? 1 : 2;
    if (t->ndim != nd || t->shape[0] != d0 || (nd == 2 && t->shape[1] != d1)) {
        char got[128], exp[64];
        fmt_shape(got, sizeof got, t->ndim, t->shape);
        fmt_shape(exp, sizeof exp, nd, want);
        snprintf(err, EMB_ERR_LEN, "%.40s: tensor '%.100s' has shape %.40s, expected %.40s", file->label, name, got, exp);
        return -1;
    }
    size_t n = (size_t)d0 * (size_t)(nd == 2 ? d1 : 1);
    const float *p;
    if (t->dtype == EMB_DT_F32) {
        if (((uintptr_t)t->data & 3u) == 0) {
            p = (const float *)(const void *)t->data;
            e->in_place[fi] = 1;
            if (file->mapped) e->info.mapped_bytes += n * sizeof(float);
        } else {
            float *c = malloc(n * sizeof(float) + 1);
            if (!c || own(e, c)) { free(c); snprintf(err, EMB_ERR_LEN, "out of memory loading '%.150s'", name); return -1; }
            memcpy(c, t->data, n * sizeof(float));
            e->info.converted_bytes += n * sizeof(float);
            p = c;
        }
    } else if (t->dtype == EMB_DT_F16 || t->dtype == EMB_DT_BF16) {
        float *c = malloc(n * sizeof(float) + 1);
        if (!c || own(e, c)) { free(c); snprintf(err, EMB_ERR_LEN, "out of memory loading '%.150s'", name); return -1; }
        if (t->dtype == EMB_DT_F16) emb_f16_to_f32_n(t->data, c, n);
        else emb_bf16_to_f32_n(t->data, c, n);
        e->info.converted_bytes += n * sizeof(float);
        p = c;
    } else {
        snprintf(err, EMB_ERR_LEN, "%.40s: tensor '%.150s' has dtype %.10s, expected F32, F16 or BF16", file->label, name,
                 emb_dtype_name(t->dtype));
        return -1;
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
    if (!u) { snprintf(err, EMB_ERR_LEN, "out of memory"); return -1; }
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

static int open_weights(emb_encoder *e, const char *dir, int use_mmap, char err[EMB_ERR_LEN]) {
    char path[4096];
    if (emb_path_join(path, sizeof path, dir, "model.safetensors", err)) return -1;
    if (emb_path_exists(path)) {
        snprintf(e->src_label, sizeof e->src_label, "model.safetensors");
        return add_file(e, path, use_mmap, err);
    }
    if (emb_path_join(path, sizeof path, dir, "model.safetensors.index.json", err)) return -1;
    if (!emb_path_exists(path)) {
        snprintf(err, EMB_ERR_LEN, "%s: no model.safetensors or model.safetensors.index.json (PyTorch .bin checkpoints are not supported)", dir);
        return -1;
    }
    snprintf(e->src_label, sizeof e->src_label, "model.safetensors.index.json");
    cJSON *root;
    if (emb_json_read_file(path, 64u << 20, &root, err)) return -1;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    int rc = -1;
    if (!cJSON_IsObject(wm)) { snprintf(err, EMB_ERR_LEN, "model.safetensors.index.json: no \"weight_map\" object"); goto done; }
    for (const cJSON *it = wm->child; it; it = it->next) {
        if (!cJSON_IsString(it)) { snprintf(err, EMB_ERR_LEN, "model.safetensors.index.json: weight_map entry '%.100s' is not a file name", it->string); goto done; }
        const char *f = it->valuestring;
        size_t fl = strlen(f);
        if (!fl || strchr(f, '/') || strchr(f, '\\') || f[0] == '.' || fl < 12 || strcmp(f + fl - 12, ".safetensors") != 0) {
            snprintf(err, EMB_ERR_LEN, "model.safetensors.index.json: shard name '%.100s' is not a plain *.safetensors file name", f);
            goto done;
        }
        int seen = 0;
        for (int i = 0; i < e->nfiles && !seen; i++) seen = strcmp(e->files[i]->label, f) == 0;
        if (seen) continue;
        if (e->nfiles >= 4096) { snprintf(err, EMB_ERR_LEN, "model.safetensors.index.json: too many shards"); goto done; }
        if (emb_path_join(path, sizeof path, dir, f, err) || add_file(e, path, use_mmap, err)) goto done;
    }
    if (e->nfiles == 0) { snprintf(err, EMB_ERR_LEN, "model.safetensors.index.json: weight_map is empty"); goto done; }
    rc = 0;
done:
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
    const emb_model_config *c = &e->cfg;
    uint64_t in_files = 0;
    for (int i = 0; i < e->nfiles; i++) in_files += e->files[i]->h.data_len;
    uint64_t bytes = (uint64_t)c->max_positions * (uint64_t)c->hidden * sizeof(float);
    if (bytes > in_files)
        return emb_fail(err, "config.json: max_position_embeddings %d needs a %llu-byte sinusoidal table, more than the "
                        "%llu bytes of weights in %s", c->max_positions, (unsigned long long)bytes,
                        (unsigned long long)in_files, e->src_label);
    float *t = malloc((size_t)bytes);
    if (!t || own(e, t)) { free(t); return emb_fail(err, "out of memory"); }
    sinusoidal_table(t, c->max_positions, c->hidden);
    e->pos = t;
    XXH3_64bits_update(e->hash, "sinusoidal", 11);
    return 0;
}

int emb_encoder_load(const char *dir, emb_encoder **out, char err[EMB_ERR_LEN]) {
    return emb_encoder_load_with(dir, 1, out, err);
}

int emb_encoder_load_with(const char *dir, int use_mmap, emb_encoder **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_encoder *e = calloc(1, sizeof *e);
    if (!e) { snprintf(err, EMB_ERR_LEN, "out of memory"); return -1; }
    e->first_dtype = -1;
    e->hash = XXH3_createState();
    if (!e->hash) { snprintf(err, EMB_ERR_LEN, "out of memory"); goto fail; }
    XXH3_64bits_reset(e->hash);
    if (emb_model_config_load(dir, &e->cfg, err)) goto fail;
    if (open_weights(e, dir, use_mmap, err)) goto fail;
    const emb_model_config *c = &e->cfg;
    int H = c->hidden, FF = c->intermediate;
    int bert = c->arch == EMB_ARCH_BERT;
    /* prefix: the one under which the word embeddings exist */
    const char *cands[2] = {"", bert ? "bert." : "distilbert."};
    int found = 0;
    for (int i = 0; i < 2 && !found; i++) {
        char name[64];
        snprintf(name, sizeof name, "%sembeddings.word_embeddings.weight", cands[i]);
        if (find_any(e, name, NULL)) {
            snprintf(e->prefix, sizeof e->prefix, "%s", cands[i]);
            e->info.tensor_prefix = cands[i]; /* a string literal: valid after free */
            found = 1;
        }
    }
    if (!found) {
        snprintf(err, EMB_ERR_LEN, "%s: missing tensor 'embeddings.word_embeddings.weight' (also looked for '%sembeddings.word_embeddings.weight')",
                 e->src_label, cands[1]);
        goto fail;
    }
    /* fingerprint: config numbers first */
    {
        int64_t nums[] = {c->arch, H, c->layers, c->heads, FF, c->max_positions, c->type_vocab, c->vocab_size, c->sinusoidal, c->act};
        for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) hash_u64(e->hash, (uint64_t)nums[i]);
        double eps = c->ln_eps;
        uint64_t eb;
        memcpy(&eb, &eps, 8);
        hash_u64(e->hash, eb);
    }
    if (get_tensor(e, "embeddings.word_embeddings.weight", c->vocab_size, H, 0, &e->word, err)) goto fail;
    if (get_tensor(e, "embeddings.position_embeddings.weight", c->max_positions, H, !bert && c->sinusoidal, &e->pos, err)) goto fail;
    if (!e->pos && build_sinusoidal(e, err)) goto fail; /* as transformers builds it */
    if (bert && get_tensor(e, "embeddings.token_type_embeddings.weight", c->type_vocab, H, 0, &e->type, err)) goto fail;
    if (get_tensor(e, "embeddings.LayerNorm.weight", H, -1, 0, &e->ln_g, err) ||
        get_tensor(e, "embeddings.LayerNorm.bias", H, -1, 0, &e->ln_b, err)) goto fail;
    e->L = calloc((size_t)c->layers, sizeof *e->L);
    if (!e->L) { snprintf(err, EMB_ERR_LEN, "out of memory"); goto fail; }
    for (int l = 0; l < c->layers; l++) {
        layer_w *w = &e->L[l];
        char nm[16][96];
        const char *fmt_bert[16] = {
            "encoder.layer.%d.attention.self.query.weight", "encoder.layer.%d.attention.self.query.bias",
            "encoder.layer.%d.attention.self.key.weight", "encoder.layer.%d.attention.self.key.bias",
            "encoder.layer.%d.attention.self.value.weight", "encoder.layer.%d.attention.self.value.bias",
            "encoder.layer.%d.attention.output.dense.weight", "encoder.layer.%d.attention.output.dense.bias",
            "encoder.layer.%d.attention.output.LayerNorm.weight", "encoder.layer.%d.attention.output.LayerNorm.bias",
            "encoder.layer.%d.intermediate.dense.weight", "encoder.layer.%d.intermediate.dense.bias",
            "encoder.layer.%d.output.dense.weight", "encoder.layer.%d.output.dense.bias",
            "encoder.layer.%d.output.LayerNorm.weight", "encoder.layer.%d.output.LayerNorm.bias"};
        const char *fmt_distil[16] = {
            "transformer.layer.%d.attention.q_lin.weight", "transformer.layer.%d.attention.q_lin.bias",
            "transformer.layer.%d.attention.k_lin.weight", "transformer.layer.%d.attention.k_lin.bias",
            "transformer.layer.%d.attention.v_lin.weight", "transformer.layer.%d.attention.v_lin.bias",
            "transformer.layer.%d.attention.out_lin.weight", "transformer.layer.%d.attention.out_lin.bias",
            "transformer.layer.%d.sa_layer_norm.weight", "transformer.layer.%d.sa_layer_norm.bias",
            "transformer.layer.%d.ffn.lin1.weight", "transformer.layer.%d.ffn.lin1.bias",
            "transformer.layer.%d.ffn.lin2.weight", "transformer.layer.%d.ffn.lin2.bias",
            "transformer.layer.%d.output_layer_norm.weight", "transformer.layer.%d.output_layer_norm.bias"};
        const float **dst[16] = {&w->wq, &w->bq, &w->wk, &w->bk, &w->wv, &w->bv, &w->wo, &w->bo,
                                 &w->ln1_g, &w->ln1_b, &w->w1, &w->b1, &w->w2, &w->b2, &w->ln2_g, &w->ln2_b};
        const int64_t shp[16][2] = {{H, H}, {H, -1}, {H, H}, {H, -1}, {H, H}, {H, -1}, {H, H}, {H, -1},
                                    {H, -1}, {H, -1}, {FF, H}, {FF, -1}, {H, FF}, {H, -1}, {H, -1}, {H, -1}};
        for (int k = 0; k < 16; k++) {
            snprintf(nm[k], sizeof nm[k], bert ? fmt_bert[k] : fmt_distil[k], l);
            if (get_tensor(e, nm[k], shp[k][0], shp[k][1], 0, dst[k], err)) goto fail;
        }
    }
    if (bert) {
        if (get_tensor(e, "pooler.dense.weight", H, H, 1, &e->pool_w, err) ||
            get_tensor(e, "pooler.dense.bias", H, -1, 1, &e->pool_b, err)) goto fail;
        if (!e->pool_w || !e->pool_b) e->pool_w = e->pool_b = NULL;
    }
    e->fingerprint = XXH3_64bits_digest(e->hash);
    XXH3_freeState(e->hash);
    e->hash = NULL;

    emb_encoder_info *in = &e->info;
    in->arch = c->arch_name;
    in->hidden = H;
    in->layers = c->layers;
    in->heads = c->heads;
    in->intermediate = FF;
    in->max_positions = c->max_positions;
    in->type_vocab = c->type_vocab;
    in->vocab_size = c->vocab_size;
    in->sinusoidal = c->sinusoidal;
    in->ln_eps = c->ln_eps;
    in->weight_type = e->mixed ? "mixed" : emb_dtype_name((emb_dtype)e->first_dtype);
    in->has_pooler = e->pool_w != NULL;
    in->pad_token_id = c->pad_token_id;
    in->n_files = e->nfiles;
    drop_unused_files(e);
    *out = e;
    return 0;
fail:
    emb_encoder_free(e);
    return -1;
}

void emb_encoder_free(emb_encoder *e) {
    if (!e) return;
    for (int i = 0; i < e->nowned; i++) free(e->owned[i]);
    free(e->owned);
    for (int i = 0; i < e->nfiles; i++) emb_safetensors_close(e->files[i]);
    free(e->files);
    free(e->in_place);
    free(e->L);
    if (e->hash) XXH3_freeState(e->hash);
    free(e);
}

const emb_encoder_info *emb_encoder_get_info(const emb_encoder *e) { return &e->info; }
uint64_t emb_encoder_fingerprint(const emb_encoder *e) { return e->fingerprint; }

const float *emb_encoder_word_row(const emb_encoder *e, int32_t id) {
    if (id < 0 || id >= e->cfg.vocab_size) return NULL;
    return e->word + (size_t)id * e->cfg.hidden;
}
const float *emb_encoder_position_row(const emb_encoder *e, int32_t pos) {
    if (pos < 0 || pos >= e->cfg.max_positions) return NULL;
    return e->pos + (size_t)pos * e->cfg.hidden;
}
const float *emb_encoder_type_row(const emb_encoder *e, int32_t type) {
    if (!e->type || type < 0 || type >= e->cfg.type_vocab) return NULL;
    return e->type + (size_t)type * e->cfg.hidden;
}

int emb_encoder_pooler(const emb_encoder *e, const float *cls, float *out) {
    if (!e->pool_w) return -1;
    int H = e->cfg.hidden;
    memcpy(out, e->pool_b, (size_t)H * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, H, H, 1.0f, cls, H, e->pool_w, H, 1.0f, out, H);
    for (int i = 0; i < H; i++) out[i] = tanhf(out[i]);
    return 0;
}

/* ------------------------------------------------------------------ kernels */


/* Element-wise kernels. GCC builds them for AVX-512, AVX2 and baseline x86-64 and picks one
 * at load time (ifunc); without -ftrapping-math the clamps and selects below if-convert, so
 * the loops vectorize on every target. */
#ifdef __clang__ /* "omp simd" is a hint; clang warns where it cannot follow it (e.g. at -O0/-O1) */
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(EMB_NO_CLONES)
#define EMB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define EMB_CLONES
#endif

/* exp for x <= 88 (Cephes polynomial, ~1 ulp; clamped below at -87 where the result is < 2e-38) */
static inline float emb_expf(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    float y = p * (r * r) + r + 1.0f;
    union { int32_t i; float f; } u;
    u.i = ((int32_t)n + 127) << 23;
    return y * u.f;
}

/* erf as a rational function, evaluated in double: |error| < 7e-8 */
static inline double emb_erf(double x) {
    x = x > 4.0 ? 4.0 : x;
    x = x < -4.0 ? -4.0 : x;
    double x2 = x * x;
    double p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
    p = x2 * p + -2.10102402082508e-06;
    p = x2 * p + -5.69250639462346e-05;
    p = x2 * p + -7.34990630326855e-04;
    p = x2 * p + -2.95459980854025e-03;
    p = x2 * p + -1.60960333262415e-02;
    double q = x2 * -1.45660718464996e-05 + -2.13374055278905e-04;
    q = x2 * q + -1.68282697438203e-03;
    q = x2 * q + -7.37332916720468e-03;
    q = x2 * q + -1.42647390514189e-02;
    return x * p / q;
}

/* x[i] = LayerNorm(x[i]) in place, statistics in double */
static inline void ln_inplace(float *x, const float *g, const float *b, int H, float eps) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < H; i++) s += x[i];
    double mean = s / H, v = 0;
#pragma omp simd reduction(+ : v)
    for (int i = 0; i < H; i++) { double d = x[i] - mean; v += d * d; }
    double rstd = 1.0 / sqrt(v / H + (double)eps);
    float m = (float)mean;
    float rs = (float)rstd;
    /* (x - mean) is exact enough in float: x and mean are of similar magnitude */
#pragma omp simd
    for (int i = 0; i < H; i++) x[i] = (float)((double)(x[i] - m) * rstd) * g[i] + b[i];
    (void)rs;
}

EMB_CLONES
static void embed_ln_row(float *dst, const float *w, const float *p, const float *ty, const float *g, const float *b, int H, float eps) {
    if (ty) {
#pragma omp simd
        for (int i = 0; i < H; i++) dst[i] = (w[i] + ty[i]) + p[i];
    } else {
#pragma omp simd
        for (int i = 0; i < H; i++) dst[i] = w[i] + p[i];
    }
    ln_inplace(dst, g, b, H, eps);
}

/* rows of C[rows, n] = bias: sgemm then adds the product onto it (beta = 1), which
 * spares OpenBLAS's own zeroing pass of C (slow when C is split over threads) */
EMB_CLONES
static void fill_bias(float *C, const float *bias, size_t rows, int n) {
    for (size_t r = 0; r < rows; r++) {
        float *x = C + r * (size_t)n;
#pragma omp simd
        for (int i = 0; i < n; i++) x[i] = bias[i];
    }
}

EMB_CLONES
static void softmax_rows(float *S, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        float *s = S + (size_t)r * n;
        float mx = s[0];
#pragma omp simd reduction(max : mx)
        for (int i = 0; i < n; i++) mx = s[i] > mx ? s[i] : mx;
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int i = 0; i < n; i++) { float y = emb_expf(s[i] - mx); s[i] = y; sum += y; }
        float inv = 1.0f / sum;
#pragma omp simd
        for (int i = 0; i < n; i++) s[i] *= inv;
    }
}

/* x = LayerNorm(x + bias) row by row (x already holds residual + product) */
EMB_CLONES
static void bias_ln(float *X, const float *bias, const float *g, const float *b, size_t rows, int H, float eps) {
    for (size_t r = 0; r < rows; r++) {
        float *x = X + r * H;
#pragma omp simd
        for (int i = 0; i < H; i++) x[i] += bias[i];
        ln_inplace(x, g, b, H, eps);
    }
}

EMB_CLONES
static void gelu_rows(float *Y, size_t rows, int n) {
    for (size_t r = 0; r < rows; r++) {
        float *y = Y + r * n;
#pragma omp simd
        for (int i = 0; i < n; i++) {
            double x = (double)y[i];
            y[i] = (float)(0.5 * x * (1.0 + emb_erf(x * 0.70710678118654752440)));
        }
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* ------------------------------------------------------------------ forward */

emb_workspace *emb_workspace_new(void) { return calloc(1, sizeof(emb_workspace)); }
void emb_workspace_free(emb_workspace *w) {
    if (!w) return;
    emb_workers_free(w->workers);
    free(w->arena);
    free(w->scores);
    free(w);
}
size_t emb_workspace_bytes(const emb_workspace *w) { return (w->arena_n + w->scores_n) * sizeof(float); }

/* Grows by at least half again, so that batches of slowly increasing size (length-sorted
 * input) do not reallocate, and fault in fresh pages, at every call. */
static int grow(float **p, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    if (n < *cap + *cap / 2) n = *cap + *cap / 2;
    void *q = NULL;
    if (posix_memalign(&q, 64, n * sizeof(float))) return -1;
    free(*p);
    *p = q;
    *cap = n;
    return 0;
}

/* OpenBLAS (interface/gemm.c) keeps a product on the calling thread when
 * M*N*K <= 65536 * GEMM_MULTITHREAD_THRESHOLD (4 by default). */
#define ATT_BLOCK_MNK 262144.0

/* C[M,N] += A[M,K] * W[N,K]^T  (W as stored by PyTorch Linear: [out, in]) */
static void linear_acc(const float *A, const float *W, float *C, int M, int N, int K) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K, W, K, 1.0f, C, N);
}

double emb_encoder_flops(const emb_encoder *e, int B, int T, const int32_t *lens, int n_layers) {
    double H = e->cfg.hidden, FF = e->cfg.intermediate, BT = (double)B * T;
    double proj = 2.0 * BT * (4 * H * H + 2 * H * FF);
    double att = 0;
    for (int b = 0; b < B; b++) att += 2.0 * 2.0 * T * (double)(lens ? lens[b] : T) * H;
    return n_layers * (proj + att);
}

#define PAR_MIN_ELEMS ((size_t)16384)
#define PAR_MIN_ATT_MNK 1048576.0

typedef struct {
    const emb_encoder *e;
    const layer_w *w;
    const layer_w *next;        /* layer whose Q/K/V biases the row tasks preload, or NULL */
    int B, T, H, NH, dh, FF;
    size_t BT;
    const int32_t *ids, *type_ids, *lens;
    float *X, *q, *k, *v, *inter, *scores;
    float scale, eps;
    int split, rows_per_task, ffn_rows;
} fwd_ctx;

/* Q, K, V rows [r0, r0+n) start as the next layer's biases */
static void preload_qkv(const fwd_ctx *c, size_t r0, size_t n) {
    if (!c->next) return;
    size_t o = r0 * c->H;
    fill_bias(c->q + o, c->next->bq, n, c->H);
    fill_bias(c->k + o, c->next->bk, n, c->H);
    fill_bias(c->v + o, c->next->bv, n, c->H);
}

static void task_embed(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    const emb_encoder *e = c->e;
    size_t r0 = (size_t)t * c->rows_per_task, r1 = r0 + (size_t)c->rows_per_task;
    if (r1 > c->BT) r1 = c->BT;
    for (size_t r = r0; r < r1; r++) {
        int pos = (int)(r % (size_t)c->T);
        const float *wr = e->word + (size_t)c->ids[r] * c->H;
        const float *p = e->pos + (size_t)pos * c->H;
        const float *ty = e->type ? e->type + (size_t)(c->type_ids ? c->type_ids[r] : 0) * c->H : NULL;
        embed_ln_row(c->X + r * c->H, wr, p, ty, e->ln_g, e->ln_b, c->H, e->cfg.ln_eps);
    }
    preload_qkv(c, r0, r1 - r0);
}

/* One (sequence, head): scores, softmax over the real keys, context into the query slice. */
static void task_attention(void *cv, int t, int worker) {
    fwd_ctx *c = cv;
    int b = t / c->NH, h = t % c->NH, T = c->T, H = c->H, dh = c->dh, len = c->lens[b];
    size_t off = (size_t)b * T * H + (size_t)h * dh;
    float *qb = c->q + off, *kb = c->k + off, *vb = c->v + off;
    float *S = c->scores + (size_t)worker * T * T;
    /* With several OpenBLAS threads, products are issued in row blocks of at most
     * ATT_BLOCK_MNK multiply-adds, which OpenBLAS keeps on the calling thread: splitting
     * such small products over its pool costs more in synchronisation than it saves,
     * and here the heads already run in parallel. */
    int rb = T;
    if (c->split) {
        rb = (int)(ATT_BLOCK_MNK / ((double)len * dh));
        if (rb < 8) rb = 8;
    }
    for (int r0 = 0; r0 < T; r0 += rb) {
        int m = T - r0 < rb ? T - r0 : rb;
        float *Sr = S + (size_t)r0 * len, *qr = qb + (size_t)r0 * H;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, len, dh, c->scale, qr, H, kb, H, 0.0f, Sr, len);
        softmax_rows(Sr, m, len);
        /* the context overwrites these query rows of this head (no longer needed) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dh, len, 1.0f, Sr, len, vb, H, 0.0f, qr, H);
    }
}

static void row_range(const fwd_ctx *c, int t, int per, size_t *r0, size_t *n) {
    *r0 = (size_t)t * per;
    *n = *r0 + (size_t)per > c->BT ? c->BT - *r0 : (size_t)per;
}
static void task_ln1(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    bias_ln(c->X + r0 * c->H, c->w->bo, c->w->ln1_g, c->w->ln1_b, n, c->H, c->eps);
    /* the FFN's inner rows start as its bias (Q/K/V, which share the arena, are consumed) */
    fill_bias(c->inter + r0 * c->FF, c->w->b1, n, c->FF);
}
static void task_gelu(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->ffn_rows, &r0, &n);
    gelu_rows(c->inter + r0 * c->FF, n, c->FF);
}
static void task_ln2(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    bias_ln(c->X + r0 * c->H, c->w->b2, c->w->ln2_g, c->w->ln2_b, n, c->H, c->eps);
    preload_qkv(c, r0, n);
}

int emb_encoder_forward(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                        const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                        char err[EMB_ERR_LEN]) {
    const emb_model_config *c = &e->cfg;
    const int H = c->hidden, FF = c->intermediate, NH = c->heads, dh = H / NH;
    if (B < 1 || T < 1) { snprintf(err, EMB_ERR_LEN, "batch %d x %d tokens: both must be at least 1", B, T); return -1; }
    if (T > c->max_positions) {
        snprintf(err, EMB_ERR_LEN, "%d tokens exceed the model's maximum of %d positions", T, c->max_positions);
        return -1;
    }
    if (n_layers < 0 || n_layers > c->layers) {
        snprintf(err, EMB_ERR_LEN, "layer %d out of range (the model has %d layers; 0 is the embedding output)", n_layers, c->layers);
        return -1;
    }
    if ((size_t)B * (size_t)T > (size_t)1 << 26) { snprintf(err, EMB_ERR_LEN, "batch too large"); return -1; }
    for (int b = 0; b < B; b++)
        if (lens[b] < 1 || lens[b] > T) { snprintf(err, EMB_ERR_LEN, "sequence %d has length %d, expected 1..%d", b, lens[b], T); return -1; }
    const size_t BT = (size_t)B * T;
    for (size_t i = 0; i < BT; i++) {
        if (ids[i] < 0 || ids[i] >= c->vocab_size) {
            snprintf(err, EMB_ERR_LEN, "token id %d out of range (vocabulary size %d)", ids[i], c->vocab_size);
            return -1;
        }
        if (e->type && type_ids && (type_ids[i] < 0 || type_ids[i] >= c->type_vocab)) {
            snprintf(err, EMB_ERR_LEN, "token type id %d out of range (type vocabulary size %d)", type_ids[i], c->type_vocab);
            return -1;
        }
    }
    /* helpers: as many as OpenBLAS has threads, minus the caller */
    int nthr = openblas_get_num_threads();
    if (nthr < 1) nthr = 1;
    if (nthr > 16) nthr = 16;
    int want_workers = nthr > 1 && ((size_t)BT * H >= PAR_MIN_ELEMS || (double)B * NH * T * T * dh >= PAR_MIN_ATT_MNK);
    if (ws->workers && emb_workers_helpers(ws->workers) != nthr - 1) { /* OpenBLAS's count changed */
        emb_workers_free(ws->workers);
        ws->workers = NULL;
    }
    if (want_workers && !ws->workers) ws->workers = emb_workers_new(nthr - 1); /* NULL: run on the caller alone */
    int n_workers = emb_workers_helpers(ws->workers) + 1;
    size_t need = BT * (size_t)(3 * H > FF ? 3 * H : FF); /* q, k, v; later the FFN's inner activations */
    if (grow(&ws->arena, &ws->arena_n, need) || grow(&ws->scores, &ws->scores_n, (size_t)n_workers * T * T)) {
        snprintf(err, EMB_ERR_LEN, "out of memory for a batch of %d x %d tokens", B, T);
        return -1;
    }
    fwd_ctx fc;
    memset(&fc, 0, sizeof fc);
    fc.e = e;
    fc.B = B; fc.T = T; fc.H = H; fc.NH = NH; fc.dh = dh; fc.FF = FF; fc.BT = BT;
    fc.ids = ids; fc.type_ids = type_ids; fc.lens = lens;
    fc.X = out;
    fc.q = ws->arena; fc.k = fc.q + BT * H; fc.v = fc.k + BT * H;
    fc.inter = ws->arena;
    fc.scores = ws->scores;
    fc.scale = (float)(1.0 / sqrt((double)dh));
    fc.eps = c->ln_eps;
    fc.split = nthr > 1; /* keep every attention product on its calling thread */
    emb_workers *par_rows = (size_t)BT * H >= PAR_MIN_ELEMS ? ws->workers : NULL;
    emb_workers *par_att = (double)B * NH * T * T * dh >= PAR_MIN_ATT_MNK ? ws->workers : NULL;
    fc.rows_per_task = (int)(PAR_MIN_ELEMS / 2 / (size_t)H);
    if (fc.rows_per_task < 4) fc.rows_per_task = 4;
    int row_tasks = (int)((BT + (size_t)fc.rows_per_task - 1) / (size_t)fc.rows_per_task);
    int ffn_rows = (int)(PAR_MIN_ELEMS / 2 / (size_t)FF);
    if (ffn_rows < 4) ffn_rows = 4;
    int ffn_tasks = (int)((BT + (size_t)ffn_rows - 1) / (size_t)ffn_rows);
    fc.ffn_rows = ffn_rows;
    float *X = out;
    fc.next = n_layers > 0 ? &e->L[0] : NULL;
    emb_workers_run(par_rows, row_tasks, task_embed, &fc);
    for (int l = 0; l < n_layers; l++) {
        const layer_w *w = &e->L[l];
        fc.w = w;
        fc.next = l + 1 < n_layers ? &e->L[l + 1] : NULL;
        /* every product accumulates onto what its output already holds: the bias
         * (preloaded by the row tasks) or the residual */
        linear_acc(X, w->wq, fc.q, (int)BT, H, H);
        linear_acc(X, w->wk, fc.k, (int)BT, H, H);
        linear_acc(X, w->wv, fc.v, (int)BT, H, H);
        emb_workers_run(par_att, B * NH, task_attention, &fc);
        linear_acc(fc.q, w->wo, X, (int)BT, H, H);
        emb_workers_run(par_rows, row_tasks, task_ln1, &fc);
        linear_acc(X, w->w1, fc.inter, (int)BT, FF, H);
        emb_workers_run(par_rows, ffn_tasks, task_gelu, &fc);
        linear_acc(fc.inter, w->w2, X, (int)BT, H, FF);
        emb_workers_run(par_rows, row_tasks, task_ln2, &fc);
    }
    return 0;
}
