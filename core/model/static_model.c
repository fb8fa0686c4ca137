#include "model/static_model.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "model/tensor_copy.h"
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define MAX_ROWS (1 << 24)
#define MAX_DIMS (1 << 16)

static int read_model2vec_config(const char *dir, int *is_m2v, int *normalize, char err[EMB_ERR_LEN]) {
    char path[4096];
    *is_m2v = *normalize = 0;
    if (emb_path_join(path, sizeof path, dir, "config.json", err)) return -1;
    if (!emb_path_exists(path)) return 0;
    cJSON *root;
    if (emb_json_read_file(path, EMB_CONFIG_MAX_BYTES, &root, err)) return -1;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "normalize");
    int rc = 0;
    *is_m2v = cJSON_IsString(mt) && strcmp(mt->valuestring, "model2vec") == 0;
    if (*is_m2v && nm && !cJSON_IsNull(nm) && !cJSON_IsBool(nm))
        rc = emb_fail(err, "config.json: key 'normalize' is not a boolean");
    *normalize = cJSON_IsTrue(nm);
    cJSON_Delete(root);
    return rc;
}

int emb_static_is_model2vec(const char *dir) {
    char err[EMB_ERR_LEN];
    int m2v, norm;
    return read_model2vec_config(dir, &m2v, &norm, err) == 0 && m2v;
}

/* model2vec's "mapping" (a row of "embeddings" per token id) and "weights" (a factor per token
 * id) folded into one row per token, as sentence-transformers folds them. */
static int fold_model2vec(emb_static_table *s, const emb_safetensors *sf, const float *emb, int64_t emb_rows,
                          char err[EMB_ERR_LEN]) {
    const emb_safetensors_tensor *map = emb_safetensors_find(sf, "mapping");
    float *weights = NULL;
    int64_t rows = map ? (map->ndim == 1 ? map->shape[0] : -1) : emb_rows;
    if (map &&
        (map->ndim != 1 || (map->dtype != EMB_DT_I64 && map->dtype != EMB_DT_I32) || rows < 1 || rows > MAX_ROWS))
        return emb_fail(err, "%s: tensor 'mapping' must be one int32 or int64 row id per token", sf->label);
    if (emb_tensor_copy_f32(sf, "weights", rows, -1, MAX_ROWS, 1, &weights, NULL, NULL, err)) return -1;
    float *t = malloc((size_t)rows * (size_t)s->dims * sizeof(float) + 1);
    if (!t) {
        free(weights);
        return emb_fail(err, "out of memory");
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t src = r;
        if (map) {
            src = map->dtype == EMB_DT_I64 ? ((const int64_t *)(const void *)map->data)[r]
                                           : ((const int32_t *)(const void *)map->data)[r];
            if (src < 0 || src >= emb_rows) {
                free(weights);
                free(t);
                return emb_fail(err, "%s: tensor 'mapping' sends token %lld to row %lld of %lld", sf->label,
                                (long long)r, (long long)src, (long long)emb_rows);
            }
        }
        for (int32_t j = 0; j < s->dims; j++)
            t[r * s->dims + j] = emb[src * s->dims + j] * (weights ? weights[r] : 1.0f);
    }
    free(weights);
    s->owned = t;
    s->rows = (int32_t)rows;
    return 0;
}

/* The table from the open file: "embedding.weight" (in place when F32 and aligned), else
 * model2vec's "embeddings". */
static int read_table(emb_static_table *s, emb_safetensors *sf, char err[EMB_ERR_LEN]) {
    const emb_safetensors_tensor *t = emb_safetensors_find(sf, "embedding.weight");
    int64_t r, d;
    if (t && !s->model2vec && t->dtype == EMB_DT_F32 && t->ndim == 2 && ((uintptr_t)t->data & 3u) == 0 &&
        t->shape[0] >= 1 && t->shape[0] <= MAX_ROWS && t->shape[1] >= 1 && t->shape[1] <= MAX_DIMS) {
        s->table = (const float *)(const void *)t->data;
        s->rows = (int32_t)t->shape[0];
        s->dims = (int32_t)t->shape[1];
        s->file = sf;
        return 0;
    }
    const char *name = s->model2vec || !t ? "embeddings" : "embedding.weight";
    float *emb;
    if (emb_tensor_copy_f32(sf, name, 0, 0, MAX_ROWS, 0, &emb, &r, &d, err)) return -1;
    if (d > MAX_DIMS) {
        free(emb);
        return emb_fail(err, "%s: tensor '%s' has %lld columns (at most %d)", sf->label, name, (long long)d,
                        MAX_DIMS);
    }
    s->dims = (int32_t)d;
    t = emb_safetensors_find(sf, name);
    s->weight_type = emb_dtype_name(t->dtype);
    if (!s->model2vec) {
        s->owned = emb;
        s->rows = (int32_t)r;
        return 0;
    }
    int rc = fold_model2vec(s, sf, emb, r, err);
    free(emb);
    return rc;
}

static void fingerprint(emb_static_table *s) {
    XXH3_state_t *h = XXH3_createState();
    if (!h) return;
    XXH3_64bits_reset(h);
    int32_t head[5] = {s->rows, s->dims, s->model2vec, s->unk_id, s->normalize};
    XXH3_64bits_update(h, head, sizeof head);
    XXH3_64bits_update(h, s->table, (size_t)s->rows * (size_t)s->dims * sizeof(float));
    s->fingerprint = XXH3_64bits_digest(h);
    XXH3_freeState(h);
}

int emb_static_load(const char *dir, const emb_tokenizer *tok, int use_mmap, emb_static_table *s,
                    char err[EMB_ERR_LEN]) {
    memset(s, 0, sizeof *s);
    s->unk_id = -1;
    s->weight_type = "F32";
    char path[4096];
    if (read_model2vec_config(dir, &s->model2vec, &s->normalize, err) ||
        emb_path_join(path, sizeof path, dir, "model.safetensors", err))
        return -1;
    if (!emb_path_exists(path))
        return emb_fail(
            err, "%s: a static embedding model without model.safetensors (pytorch_model.bin is not read)", dir);
    emb_safetensors *sf;
    if (emb_safetensors_open(path, use_mmap, &sf, err)) return -1;
    int rc = read_table(s, sf, err);
    if (!s->file) emb_safetensors_close(sf);
    if (rc == 0 && s->owned) s->table = s->owned;
    if (rc == 0 && emb_tokenizer_vocab_size(tok) > s->rows)
        rc = emb_fail(err, "the tokenizer has %d tokens but the static table only %d rows",
                      emb_tokenizer_vocab_size(tok), s->rows);
    if (rc) {
        emb_static_free(s);
        return -1;
    }
    if (s->model2vec) s->unk_id = emb_tokenizer_unk_id(tok);
    fingerprint(s);
    return 0;
}

void emb_static_free(emb_static_table *s) {
    free(s->owned);
    if (s->file) emb_safetensors_close(s->file);
    memset(s, 0, sizeof *s);
}

/* out += row, D floats (the two never overlap: out is the caller's vector, row the table's). */
static void add_row(float *restrict out, const float *restrict row, size_t D) {
#pragma omp simd
    for (size_t j = 0; j < D; j++) out[j] += row[j];
}

/* Whether token t is one the mean takes. */
static int counted(const emb_static_table *s, const emb_token *t) {
    return t->seq >= 0 && !(s->model2vec && t->id == s->unk_id);
}

void emb_static_mean(const emb_static_table *s, const emb_encoding *enc, float *out) {
    size_t D = (size_t)s->dims, n = 0, limit = s->model2vec ? EMB_MODEL2VEC_MAX_TOKENS : (size_t)-1;
    memset(out, 0, D * sizeof *out);
    for (size_t i = 0; i < 2 && i < enc->n; i++)
        for (size_t j = 0; j < D; j += 16) __builtin_prefetch(s->table + (size_t)enc->tok[i].id * D + j);
    for (size_t i = 0; i < enc->n && n < limit; i++) {
        const emb_token *t = &enc->tok[i];
        if (!counted(s, t)) continue;
        if (i + 2 < enc->n) /* a row two tokens ahead, while this one is added: rows are far apart */
            for (size_t j = 0; j < D; j += 16) __builtin_prefetch(s->table + (size_t)enc->tok[i + 2].id * D + j);
        add_row(out, s->table + (size_t)t->id * D, D);
        n++;
    }
    if (n > 1)
        for (size_t j = 0; j < D; j++) out[j] /= (float)n;
}
