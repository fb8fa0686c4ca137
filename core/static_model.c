#include "static_model.h"
#include "posenc.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "utf8.h"
#include <xxhash.h>

#define STATIC_DEFAULT_POSITIONS 512
#define STATIC_MAX_DIM 65536
#define STATIC_MAX_ROWS 1000000

static int cmp_words(const void *a, const void *b, void *m) {
    const emb_static_model *sm = m;
    return strcmp(sm->vocab[*(const int32_t *)a], sm->vocab[*(const int32_t *)b]);
}

/* Reads an array of `rows` arrays of `dim` finite numbers into out (rows x dim). */
static int read_matrix(const cJSON *arr, const char *key, int32_t rows, int32_t *dim, float **out,
                       char err[EMB_ERR_LEN]) {
    if (!cJSON_IsArray(arr)) return emb_fail(err, "\"%s\" must be an array of arrays of numbers", key);
    int32_t n = cJSON_GetArraySize(arr);
    if (rows >= 0 && n != rows)
        return emb_fail(err, "\"%s\" has %d rows, expected %d (one per vocabulary word)", key, n, rows);
    if (n == 0) return emb_fail(err, "\"%s\" is empty", key);
    if (n > STATIC_MAX_ROWS) return emb_fail(err, "\"%s\" has too many rows (%d)", key, n);
    int32_t r = 0;
    for (const cJSON *row = arr->child; row; row = row->next, r++) {
        if (!cJSON_IsArray(row)) return emb_fail(err, "\"%s\"[%d] is not an array", key, r);
        int32_t d = cJSON_GetArraySize(row);
        if (*dim < 0) {
            if (d < 1 || d > STATIC_MAX_DIM) return emb_fail(err, "\"%s\"[0] has %d values", key, d);
            *dim = d;
            *out = malloc((size_t)n * (size_t)d * sizeof(float));
            if (!*out) return emb_fail(err, "out of memory");
        } else if (d != *dim) {
            return emb_fail(err, "\"%s\"[%d] has %d values, expected %d", key, r, d, *dim);
        }
        if (!*out) {
            *out = malloc((size_t)n * (size_t)d * sizeof(float));
            if (!*out) return emb_fail(err, "out of memory");
        }
        int32_t c = 0;
        for (const cJSON *v = row->child; v; v = v->next, c++) {
            float f = cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
            if (!isfinite(f))
                return emb_fail(err, "\"%s\"[%d][%d] is not a finite number", key, r, c);
            (*out)[(size_t)r * (size_t)*dim + (size_t)c] = f;
        }
    }
    return 0;
}

static int parse(const cJSON *root, emb_static_model *m, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(root)) return emb_fail(err, "model definition must be a JSON object");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(root, "vocab");
    if (!cJSON_IsArray(vocab) || cJSON_GetArraySize(vocab) == 0)
        return emb_fail(err, "\"vocab\" must be a non-empty array of strings");
    m->vocab_size = cJSON_GetArraySize(vocab);
    if (m->vocab_size > STATIC_MAX_ROWS) return emb_fail(err, "\"vocab\" is too large");
    m->vocab = calloc((size_t)m->vocab_size, sizeof(char *));
    m->sorted = malloc((size_t)m->vocab_size * sizeof(int32_t));
    if (!m->vocab || !m->sorted) return emb_fail(err, "out of memory");
    int32_t i = 0;
    for (const cJSON *w = vocab->child; w; w = w->next, i++) {
        if (!cJSON_IsString(w) || w->valuestring[0] == '\0')
            return emb_fail(err, "\"vocab\"[%d] must be a non-empty string", i);
        for (const char *p = w->valuestring; *p; p++)
            if (*p == ' ' || (*p >= '\t' && *p <= '\r'))
                return emb_fail(err, "\"vocab\"[%d] contains whitespace (tokens are split on it)", i);
        m->vocab[i] = strdup(w->valuestring);
        if (!m->vocab[i]) return emb_fail(err, "out of memory");
        m->sorted[i] = i;
    }
    qsort_r(m->sorted, (size_t)m->vocab_size, sizeof(int32_t), cmp_words, m);
    for (i = 1; i < m->vocab_size; i++)
        if (strcmp(m->vocab[m->sorted[i - 1]], m->vocab[m->sorted[i]]) == 0)
            return emb_fail(err, "\"vocab\" lists '%s' twice", m->vocab[m->sorted[i]]);

    m->dim = -1;
    if (read_matrix(cJSON_GetObjectItemCaseSensitive(root, "embeddings"), "embeddings",
                    m->vocab_size, &m->dim, &m->embeddings, err))
        return -1;

    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(root, "positions");
    if (cJSON_IsString(pos)) {
        if (strcmp(pos->valuestring, "sinusoidal") != 0)
            return emb_fail(err, "\"positions\" must be an array of rows or \"sinusoidal\"");
        const cJSON *maxp = cJSON_GetObjectItemCaseSensitive(root, "max_positions");
        m->max_positions = STATIC_DEFAULT_POSITIONS;
        if (maxp) {
            if (!cJSON_IsNumber(maxp) || maxp->valuedouble < 1 || maxp->valuedouble > 65536 ||
                maxp->valuedouble != (int)maxp->valuedouble)
                return emb_fail(err, "\"max_positions\" must be an integer from 1 to 65536");
            m->max_positions = (int32_t)maxp->valuedouble;
        }
        m->sinusoidal = 1;
        m->positions = malloc((size_t)m->max_positions * (size_t)m->dim * sizeof(float));
        if (!m->positions) return emb_fail(err, "out of memory");
        for (int32_t p = 0; p < m->max_positions; p++)
            emb_sinusoidal(p, (size_t)m->dim, 10000.0, m->positions + (size_t)p * (size_t)m->dim);
    } else if (pos) {
        int32_t pdim = m->dim;
        if (read_matrix(pos, "positions", -1, &pdim, &m->positions, err)) return -1;
        m->max_positions = cJSON_GetArraySize(pos);
    } else {
        return emb_fail(err, "\"positions\" is missing (an array of rows, or \"sinusoidal\")");
    }
    return 0;
}

int emb_static_model_from_json(const char *json, size_t len, emb_static_model **out,
                               char err[EMB_ERR_LEN]) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return emb_fail(err, "model definition is not valid JSON");
    emb_static_model *m = calloc(1, sizeof *m);
    if (!m) {
        cJSON_Delete(root);
        return emb_fail(err, "out of memory");
    }
    int rc = parse(root, m, err);
    cJSON_Delete(root);
    if (rc) {
        emb_static_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void emb_static_model_free(emb_static_model *m) {
    if (!m) return;
    if (m->vocab)
        for (int32_t i = 0; i < m->vocab_size; i++) free(m->vocab[i]);
    free(m->vocab);
    free(m->sorted);
    free(m->embeddings);
    free(m->positions);
    free(m);
}

int32_t emb_static_lookup(const emb_static_model *m, const char *word, size_t len) {
    int32_t lo = 0, hi = m->vocab_size - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const char *w = m->vocab[m->sorted[mid]];
        int c = strncmp(w, word, len);
        if (c == 0 && w[len] != '\0') c = 1; /* w is longer: it sorts after word */
        if (c == 0) return m->sorted[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int emb_static_tokenize(const emb_static_model *m, const char *text, size_t len,
                        emb_encoding *enc, char err[EMB_ERR_LEN]) {
    enc->n = 0;
    size_t bad;
    if (!emb_utf8_valid(text, len, &bad)) return emb_fail(err, "invalid UTF-8 at byte %zu", bad);
    size_t i = 0;
    while (i < len) {
        while (i < len && is_space(text[i])) i++;
        if (i == len) break;
        size_t start = i;
        while (i < len && !is_space(text[i])) i++;
        int32_t id = emb_static_lookup(m, text + start, i - start);
        if (id < 0) {
            int shown = (int)((i - start) > 64 ? 64 : (i - start));
            return emb_fail(err, "word '%.*s' is not in the vocabulary", shown, text + start);
        }
        if (enc->n >= (size_t)m->max_positions)
            return emb_fail(err, "text has more than %d words, the model's positions", m->max_positions);
        if (emb_grow((void **)&enc->tok, &enc->cap, enc->n + 1, sizeof *enc->tok))
            return emb_fail(err, "out of memory");
        int32_t word = (int32_t)enc->n;
        enc->tok[enc->n++] = (emb_token){id, 0, (int32_t)start, (int32_t)i, word, 0};
    }
    return 0;
}

uint64_t emb_static_fingerprint(const emb_static_model *m) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return 0;
    XXH3_64bits_reset(st);
    int32_t head[4] = {m->vocab_size, m->dim, m->max_positions, m->sinusoidal};
    XXH3_64bits_update(st, head, sizeof head);
    for (int32_t i = 0; i < m->vocab_size; i++)
        XXH3_64bits_update(st, m->vocab[i], strlen(m->vocab[i]) + 1);
    XXH3_64bits_update(st, m->embeddings, (size_t)m->vocab_size * (size_t)m->dim * sizeof(float));
    XXH3_64bits_update(st, m->positions, (size_t)m->max_positions * (size_t)m->dim * sizeof(float));
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}
