#include "model/defined_model.h"
#include "sqlite-embed/posenc.h"
#include "base/emb_json.h"
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/utf8.h"
#include <xxhash.h>

#define DEFINED_DEFAULT_POSITIONS 512

struct emb_defined_model {
    emb_model_dims dims; /* hidden, vocab_size, max_positions */
    int sinusoidal;
    char **vocab; /* vocab_size NUL-terminated words */
    int32_t *sorted; /* word ids sorted by word, for binary search */
    float *embeddings; /* vocab_size x hidden */
    float *positions; /* max_positions x hidden (sinusoidal rows precomputed) */
};

static int cmp_words(const void *a, const void *b, void *m) {
    const emb_defined_model *sm = m;
    return strcmp(sm->vocab[*(const int32_t *)a], sm->vocab[*(const int32_t *)b]);
}

/* Reads `rows` arrays of `dim` finite numbers (float32) into a new rows x dim matrix. */
static int read_matrix(const cJSON *arr, const char *key, int32_t rows, int32_t dim, float **out,
                       char err[EMB_ERR_LEN]) {
    *out = malloc((size_t)rows * (size_t)dim * sizeof(float));
    if (!*out) return emb_fail(err, "out of memory");
    int32_t r = 0;
    for (const cJSON *row = arr->child; row; row = row->next, r++) {
        if (!cJSON_IsArray(row)) return emb_fail(err, "\"%s\"[%d] is not an array", key, r);
        int32_t d = cJSON_GetArraySize(row);
        if (d != dim) return emb_fail(err, "\"%s\"[%d] has %d values, expected %d", key, r, d, dim);
        int32_t c = 0;
        for (const cJSON *v = row->child; v; v = v->next, c++) {
            /* range first: converting a double beyond float's range is undefined */
            if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) <= FLT_MAX))
                return emb_fail(err, "\"%s\"[%d][%d] is not a finite number", key, r, c);
            (*out)[(size_t)r * (size_t)dim + (size_t)c] = (float)v->valuedouble;
        }
    }
    return 0;
}

static int parse_vocab(const cJSON *vocab, emb_defined_model *m, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsArray(vocab) || cJSON_GetArraySize(vocab) == 0)
        return emb_fail(err, "\"vocab\" must be a non-empty array of strings");
    m->dims.vocab_size = cJSON_GetArraySize(vocab);
    if (m->dims.vocab_size > EMB_DEFINED_MAX_VOCAB)
        return emb_fail(err, "\"vocab\" has %d words, more than the %d allowed", m->dims.vocab_size,
                        EMB_DEFINED_MAX_VOCAB);
    m->vocab = calloc((size_t)m->dims.vocab_size, sizeof(char *));
    m->sorted = malloc((size_t)m->dims.vocab_size * sizeof(int32_t));
    if (!m->vocab || !m->sorted) return emb_fail(err, "out of memory");
    int32_t i = 0;
    for (const cJSON *w = vocab->child; w; w = w->next, i++) {
        if (!cJSON_IsString(w) || w->valuestring[0] == '\0')
            return emb_fail(err, "\"vocab\"[%d] must be a non-empty string", i);
        for (const char *p = w->valuestring; *p; p++)
            if (*p == ' ' || (*p >= '\t' && *p <= '\r'))
                return emb_fail(err, "\"vocab\"[%d] contains whitespace (tokens are split on it)", i);
        if (!emb_utf8_valid(w->valuestring, strlen(w->valuestring), NULL))
            return emb_fail(err, "\"vocab\"[%d] is not valid UTF-8", i); /* texts are: it could never match */
        m->vocab[i] = strdup(w->valuestring);
        if (!m->vocab[i]) return emb_fail(err, "out of memory");
        m->sorted[i] = i;
    }
    qsort_r(m->sorted, (size_t)m->dims.vocab_size, sizeof(int32_t), cmp_words, m);
    for (i = 1; i < m->dims.vocab_size; i++)
        if (strcmp(m->vocab[m->sorted[i - 1]], m->vocab[m->sorted[i]]) == 0)
            return emb_fail(err, "\"vocab\" lists '%.60s' twice", m->vocab[m->sorted[i]]);
    return 0;
}

/* The number of position rows: those given, or "max_positions" (default 512) for "sinusoidal". */
static int position_rows(const cJSON *root, const cJSON *pos, emb_defined_model *m, char err[EMB_ERR_LEN]) {
    if (cJSON_IsString(pos)) {
        if (strcmp(pos->valuestring, "sinusoidal") != 0)
            return emb_fail(err, "\"positions\" must be an array of rows or \"sinusoidal\"");
        const cJSON *maxp = cJSON_GetObjectItemCaseSensitive(root, "max_positions");
        int64_t n = DEFINED_DEFAULT_POSITIONS;
        if (maxp && emb_json_int(maxp, 1, EMB_DEFINED_MAX_POSITIONS, &n))
            return emb_fail(err, "\"max_positions\" must be an integer from 1 to %d", EMB_DEFINED_MAX_POSITIONS);
        m->dims.max_positions = (int32_t)n;
        m->sinusoidal = 1;
        return 0;
    }
    if (!pos) return emb_fail(err, "\"positions\" is missing (an array of rows, or \"sinusoidal\")");
    if (!cJSON_IsArray(pos) || cJSON_GetArraySize(pos) == 0)
        return emb_fail(err, "\"positions\" must be a non-empty array of arrays of numbers, or \"sinusoidal\"");
    m->dims.max_positions = cJSON_GetArraySize(pos);
    if (m->dims.max_positions > EMB_DEFINED_MAX_POSITIONS)
        return emb_fail(err, "\"positions\" has %d rows, more than the %d allowed", m->dims.max_positions,
                        EMB_DEFINED_MAX_POSITIONS);
    return 0;
}

/* Every size is known and checked against the limits before a table is allocated. */
static int parse(const cJSON *root, emb_defined_model *m, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(root)) return emb_fail(err, "model definition must be a JSON object");
    if (parse_vocab(cJSON_GetObjectItemCaseSensitive(root, "vocab"), m, err)) return -1;
    const cJSON *emb = cJSON_GetObjectItemCaseSensitive(root, "embeddings");
    if (!cJSON_IsArray(emb) || !cJSON_IsArray(emb->child))
        return emb_fail(err, "\"embeddings\" must be an array of arrays of numbers");
    int32_t rows = cJSON_GetArraySize(emb);
    if (rows != m->dims.vocab_size)
        return emb_fail(err, "\"embeddings\" has %d rows, expected %d (one per vocabulary word)", rows,
                        m->dims.vocab_size);
    m->dims.hidden = cJSON_GetArraySize(emb->child);
    if (m->dims.hidden < 1 || m->dims.hidden > EMB_DEFINED_MAX_DIMS)
        return emb_fail(err, "\"embeddings\"[0] has %d values (1 to %d allowed)", m->dims.hidden,
                        EMB_DEFINED_MAX_DIMS);
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(root, "positions");
    if (position_rows(root, pos, m, err)) return -1;
    uint64_t bytes = ((uint64_t)m->dims.vocab_size + (uint64_t)m->dims.max_positions) * (uint64_t)m->dims.hidden *
                     sizeof(float);
    if (bytes > EMB_DEFINED_MAX_BYTES)
        return emb_fail(err,
                        "the tables would take %llu bytes, more than the %llu allowed ((vocabulary + positions) "
                        "x dimensions x 4)",
                        (unsigned long long)bytes, (unsigned long long)EMB_DEFINED_MAX_BYTES);
    if (read_matrix(emb, "embeddings", m->dims.vocab_size, m->dims.hidden, &m->embeddings, err)) return -1;
    if (!m->sinusoidal)
        return read_matrix(pos, "positions", m->dims.max_positions, m->dims.hidden, &m->positions, err);
    m->positions = malloc((size_t)m->dims.max_positions * (size_t)m->dims.hidden * sizeof(float));
    if (!m->positions) return emb_fail(err, "out of memory");
    for (int32_t p = 0; p < m->dims.max_positions; p++)
        emb_sinusoidal(p, (size_t)m->dims.hidden, 10000.0, m->positions + (size_t)p * (size_t)m->dims.hidden);
    return 0;
}

int emb_defined_model_from_json(const char *json, size_t len, emb_defined_model **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return emb_fail(err, "model definition is not valid JSON");
    emb_defined_model *m = calloc(1, sizeof *m);
    if (!m) {
        cJSON_Delete(root);
        return emb_fail(err, "out of memory");
    }
    int rc = parse(root, m, err);
    cJSON_Delete(root);
    if (rc) {
        emb_defined_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void emb_defined_model_free(emb_defined_model *m) {
    if (!m) return;
    if (m->vocab)
        for (int32_t i = 0; i < m->dims.vocab_size; i++) free(m->vocab[i]);
    free(m->vocab);
    free(m->sorted);
    free(m->embeddings);
    free(m->positions);
    free(m);
}

int32_t emb_defined_lookup(const emb_defined_model *m, const char *word, size_t len) {
    int32_t lo = 0, hi = m->dims.vocab_size - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const char *w = m->vocab[m->sorted[mid]];
        /* by lengths, never past either string: word may hold a NUL (SQL text can) */
        size_t wl = strlen(w);
        int c = memcmp(w, word, wl < len ? wl : len);
        if (c == 0) c = (wl > len) - (wl < len);
        if (c == 0) return m->sorted[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int emb_defined_tokenize(const emb_defined_model *m, const char *text, size_t len, emb_encoding *enc,
                         char err[EMB_ERR_LEN]) {
    enc->n = 0;
    size_t bad;
    if (!emb_utf8_valid(text, len, &bad)) return emb_fail(err, "invalid UTF-8 at byte %zu", bad);
    size_t i = 0;
    while (i < len) {
        while (i < len && is_space(text[i])) i++;
        if (i == len) break;
        size_t start = i;
        while (i < len && !is_space(text[i])) i++;
        int32_t id = emb_defined_lookup(m, text + start, i - start);
        if (id < 0 && memchr(text + start, '\0', i - start))
            return emb_fail(err, "word %zu contains a NUL character", enc->n + 1);
        if (id < 0) {
            int shown = (int)((i - start) > 64 ? 64 : (i - start));
            return emb_fail(err, "word '%.*s' is not in the vocabulary", shown, text + start);
        }
        if (enc->n >= (size_t)m->dims.max_positions)
            return emb_fail(err, "text has more than %d words, the model's positions", m->dims.max_positions);
        if (emb_grow((void **)&enc->tok, &enc->cap, enc->n + 1, sizeof *enc->tok))
            return emb_fail(err, "out of memory");
        int32_t word = (int32_t)enc->n;
        enc->tok[enc->n++] = (emb_token){id, 0, (int32_t)start, (int32_t)i, word, 0};
    }
    return 0;
}

uint64_t emb_defined_fingerprint(const emb_defined_model *m) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return 0;
    XXH3_64bits_reset(st);
    int32_t head[4] = {m->dims.vocab_size, m->dims.hidden, m->dims.max_positions, m->sinusoidal};
    XXH3_64bits_update(st, head, sizeof head);
    for (int32_t i = 0; i < m->dims.vocab_size; i++) XXH3_64bits_update(st, m->vocab[i], strlen(m->vocab[i]) + 1);
    XXH3_64bits_update(st, m->embeddings, (size_t)m->dims.vocab_size * (size_t)m->dims.hidden * sizeof(float));
    XXH3_64bits_update(st, m->positions, (size_t)m->dims.max_positions * (size_t)m->dims.hidden * sizeof(float));
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

const emb_model_dims *emb_defined_dims(const emb_defined_model *m) { return &m->dims; }
int emb_defined_sinusoidal(const emb_defined_model *m) { return m->sinusoidal; }

const float *emb_defined_token_row(const emb_defined_model *m, int32_t id) {
    if (id < 0 || id >= m->dims.vocab_size) return NULL;
    return m->embeddings + (size_t)id * (size_t)m->dims.hidden;
}

const float *emb_defined_position_row(const emb_defined_model *m, int32_t pos) {
    if (pos < 0 || pos >= m->dims.max_positions) return NULL;
    return m->positions + (size_t)pos * (size_t)m->dims.hidden;
}

const char *emb_defined_token(const emb_defined_model *m, int32_t id, size_t *len) {
    if (id < 0 || id >= m->dims.vocab_size) return NULL;
    *len = strlen(m->vocab[id]);
    return m->vocab[id];
}
