#include "model.h"
#include "static_model.h"
#include "vec.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct emb_model {
    atomic_int refs;
    emb_model_info info;
    char *name, *path;
    emb_static_model *defined; /* kind "defined" */
};

static int fail(char err[EMB_ERR_LEN], const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, EMB_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

static emb_model *model_new(const char *name, const char *path) {
    emb_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    atomic_init(&m->refs, 1);
    m->name = strdup(name);
    m->path = path ? strdup(path) : NULL;
    if (!m->name || (path && !m->path)) {
        free(m->name);
        free(m->path);
        free(m);
        return NULL;
    }
    m->info.name = m->name;
    m->info.path = m->path;
    return m;
}

static void set_fingerprint(emb_model_info *info, uint64_t h) {
    snprintf(info->fingerprint, sizeof info->fingerprint, "%016" PRIx64, h);
}

int emb_model_define(const char *name, const char *json, size_t len, emb_model **out,
                     char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_static_model *sm;
    if (emb_static_model_from_json(json, len, &sm, err)) return -1;
    emb_model *m = model_new(name, NULL);
    if (!m) {
        emb_static_model_free(sm);
        return fail(err, "out of memory");
    }
    m->defined = sm;
    emb_model_info *info = &m->info;
    info->architecture = "defined";
    info->hidden = sm->dim;
    info->vocab_size = sm->vocab_size;
    info->max_positions = sm->max_positions;
    info->max_tokens = sm->max_positions;
    info->position_kind = sm->sinusoidal ? "sinusoidal" : "learned";
    info->pooling = "mean";
    info->weight_type = "F32";
    info->bytes = (int64_t)(sm->vocab_size + sm->max_positions) * sm->dim * (int64_t)sizeof(float);
    info->has_vectors = 1;
    set_fingerprint(info, emb_static_fingerprint(sm));
    *out = m;
    return 0;
}

int emb_model_load(const char *name, const char *dir, emb_model **out, char err[EMB_ERR_LEN]) {
    (void)name;
    (void)dir;
    *out = NULL;
    return fail(err, "loading model folders is not built yet");
}

void emb_model_retain(emb_model *m) { atomic_fetch_add(&m->refs, 1); }

void emb_model_release(emb_model *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    emb_static_model_free(m->defined);
    free(m->name);
    free(m->path);
    free(m);
}

const emb_model_info *emb_model_get_info(const emb_model *m) { return &m->info; }

void emb_model_encoding_init(emb_encoding *enc) { memset(enc, 0, sizeof *enc); }

void emb_model_encoding_free(emb_encoding *enc) {
    free(enc->tok);
    memset(enc, 0, sizeof *enc);
}

static int tokenize_defined(const emb_model *m, const char *text, size_t len, emb_encoding *enc,
                            char err[EMB_ERR_LEN]) {
    const emb_static_model *sm = m->defined;
    emb_static_token *words = NULL;
    size_t cap = 0, n = 0;
    int rc = emb_static_tokenize(sm, text, len, &words, &cap, &n, err);
    if (rc == 0 && n > enc->cap) {
        emb_token *t = realloc(enc->tok, n * sizeof *t);
        if (!t) rc = fail(err, "out of memory");
        else {
            enc->tok = t;
            enc->cap = n;
        }
    }
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            enc->tok[i] = (emb_token){words[i].id, 0, words[i].start, words[i].end, (int32_t)i, 0};
        enc->n = n;
    }
    free(words);
    return rc;
}

int emb_model_tokenize(const emb_model *m, const char *text, size_t len, const char *text_b,
                       size_t len_b, emb_encoding *enc, char err[EMB_ERR_LEN]) {
    (void)len_b;
    enc->n = 0;
    if (m->defined) {
        if (text_b) return fail(err, "a defined model takes one text, not a pair");
        return tokenize_defined(m, text, len, enc, err);
    }
    return fail(err, "model '%s' has no tokenizer", m->name);
}

const char *emb_model_token_text(const emb_model *m, int32_t id, size_t *len) {
    if (m->defined) {
        if (id < 0 || id >= m->defined->vocab_size) return NULL;
        *len = strlen(m->defined->vocab[id]);
        return m->defined->vocab[id];
    }
    return NULL;
}

const float *emb_model_token_row(const emb_model *m, int32_t id) {
    if (m->defined && id >= 0 && id < m->defined->vocab_size)
        return m->defined->embeddings + (size_t)id * (size_t)m->defined->dim;
    return NULL;
}

const float *emb_model_position_row(const emb_model *m, int32_t pos) {
    if (m->defined && pos >= 0 && pos < m->defined->max_positions)
        return m->defined->positions + (size_t)pos * (size_t)m->defined->dim;
    return NULL;
}

const float *emb_model_type_row(const emb_model *m, int32_t type) {
    (void)m;
    (void)type;
    return NULL;
}

int emb_model_hidden_states(emb_model *m, const emb_encoding *enc, int n_layers, float *out,
                            char err[EMB_ERR_LEN]) {
    if (m->defined) {
        if (n_layers != 0)
            return fail(err, "model '%s' has no layers (layer %d asked)", m->name, n_layers);
        size_t d = (size_t)m->defined->dim;
        for (size_t i = 0; i < enc->n; i++)
            emb_vec_add(out + i * d, emb_model_token_row(m, enc->tok[i].id),
                        emb_model_position_row(m, (int32_t)i), d);
        return 0;
    }
    return fail(err, "model '%s' has no vectors (tokenizer only)", m->name);
}

int emb_model_embed(emb_model *m, const char *const *texts, const size_t *lens, size_t n,
                    const emb_embed_options *opt, float *out, char err[EMB_ERR_LEN]) {
    (void)opt;
    if (!m->defined) return fail(err, "model '%s' has no vectors (tokenizer only)", m->name);
    size_t d = (size_t)m->info.hidden;
    emb_encoding enc;
    emb_model_encoding_init(&enc);
    float *hidden = NULL;
    int rc = 0;
    for (size_t t = 0; rc == 0 && t < n; t++) {
        rc = emb_model_tokenize(m, texts[t], lens[t], NULL, 0, &enc, err);
        if (rc) break;
        float *h = realloc(hidden, (enc.n ? enc.n : 1) * d * sizeof(float));
        if (!h) {
            rc = fail(err, "out of memory");
            break;
        }
        hidden = h;
        rc = emb_model_hidden_states(m, &enc, 0, hidden, err);
        float *o = out + t * d;
        memset(o, 0, d * sizeof(float));
        for (size_t i = 0; rc == 0 && i < enc.n; i++) emb_vec_add(o, o, hidden + i * d, d);
        if (enc.n) emb_vec_scale(o, o, 1.0f / (float)enc.n, d);
    }
    free(hidden);
    emb_model_encoding_free(&enc);
    return rc;
}
