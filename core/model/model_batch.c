/* What model.c's sentence vectors and rerank.c's scores share (model_internal.h): the runner
 * pool, tokenizing (emb_model_tokenize), the tokens of a batch of inputs in length order, and one
 * encoder pass over a batch. */
#include "model/model_internal.h"
#include <stdlib.h>
#include <string.h>

emb_model_runner *emb_model_runner_take(emb_model *m) {
    pthread_mutex_lock(&m->lock);
    emb_model_runner *r = m->idle;
    if (r) {
        m->idle = r->next;
        m->n_idle--;
    }
    pthread_mutex_unlock(&m->lock);
    if (r) return r;
    r = calloc(1, sizeof *r);
    if (!r) return NULL;
    emb_encoding_init(&r->enc);
    r->ws = emb_workspace_new();
    if (!r->ws) {
        free(r);
        return NULL;
    }
    return r;
}

void emb_model_runner_free(emb_model_runner *r) {
    emb_workspace_free(r->ws);
    emb_encoding_free(&r->enc);
    free(r->ids);
    free(r->types);
    free(r->lens);
    free(r->hidden);
    free(r);
}

void emb_model_runner_give(emb_model *m, emb_model_runner *r) {
    if (!r) return;
    pthread_mutex_lock(&m->lock);
    if (m->n_idle < EMB_MODEL_RUNNERS_KEPT) {
        r->next = m->idle;
        m->idle = r;
        m->n_idle++;
        r = NULL;
    }
    pthread_mutex_unlock(&m->lock);
    if (r) emb_model_runner_free(r);
}

int emb_model_tokenize_limit(const emb_model *m, const char *text, size_t len, const char *text_b, size_t len_b,
                             int max_tokens, emb_encoding *enc, char err[EMB_ERR_LEN]) {
    enc->n = 0;
    if (m->defined) {
        if (text_b) return emb_fail(err, "a defined model takes one text, not a pair");
        return emb_defined_tokenize(m->defined, text, len, enc, err);
    }
    if (max_tokens < 0) max_tokens = m->info.max_tokens;
    return emb_tokenize(m->tok, text, len, text_b, len_b, (size_t)max_tokens, enc, err);
}

int emb_model_tokenize(const emb_model *m, const char *text, size_t len, const char *text_b, size_t len_b,
                       emb_encoding *enc, char err[EMB_ERR_LEN]) {
    return emb_model_tokenize_limit(m, text, len, text_b, len_b, -1, enc, err);
}

static int by_length(const void *a, const void *b, void *lens) {
    int32_t x = ((const int32_t *)lens)[*(const size_t *)a], y = ((const int32_t *)lens)[*(const size_t *)b];
    return (x > y) - (x < y);
}

int emb_model_tokens_make(const emb_model *m, emb_model_runner *r, const char *first, size_t first_len,
                          const char *const *texts, const size_t *lens, size_t n, emb_model_tokens *tk,
                          char err[EMB_ERR_LEN]) {
    memset(tk, 0, sizeof *tk);
    size_t ids_cap = 0, types_cap = 0, used = 0;
    tk->lens = malloc(n * sizeof(int32_t) + 1);
    tk->starts = malloc(n * sizeof(size_t) + 1);
    tk->order = malloc(n * sizeof(size_t) + 1);
    if (!tk->lens || !tk->starts || !tk->order) return emb_fail(err, "out of memory");
    for (size_t t = 0; t < n; t++) {
        /* a pair whose text is empty is the query alone, as transformers' tokenizer(query, "")
         * makes it (an empty text_pair is no pair there) */
        int rc = first && lens[t] ? emb_model_tokenize(m, first, first_len, texts[t], lens[t], &r->enc, err)
                 : first          ? emb_model_tokenize(m, first, first_len, NULL, 0, &r->enc, err)
                                  : emb_model_tokenize(m, texts[t], lens[t], NULL, 0, &r->enc, err);
        if (rc) return -1;
        if (emb_grow((void **)&tk->ids, &ids_cap, used + r->enc.n, sizeof(int32_t)) ||
            emb_grow((void **)&tk->types, &types_cap, used + r->enc.n, sizeof(int32_t)))
            return emb_fail(err, "out of memory");
        for (size_t i = 0; i < r->enc.n; i++) {
            tk->ids[used + i] = r->enc.tok[i].id;
            tk->types[used + i] = r->enc.tok[i].type_id;
        }
        tk->starts[t] = used;
        tk->lens[t] = (int32_t)r->enc.n;
        used += r->enc.n;
        tk->order[t] = t;
    }
    qsort_r(tk->order, n, sizeof *tk->order, by_length, tk->lens);
    return 0;
}

void emb_model_tokens_free(emb_model_tokens *tk) {
    free(tk->ids);
    free(tk->types);
    free(tk->lens);
    free(tk->starts);
    free(tk->order);
}

int emb_model_run_batch(emb_model *m, emb_model_runner *r, const int32_t *ids, const int32_t *types,
                        const size_t *starts, const int32_t *lens, const size_t *seq, int B, int n_layers,
                        int *T_out, char err[EMB_ERR_LEN]) {
    int T = 0;
    for (int b = 0; b < B; b++)
        if (lens[seq[b]] > T) T = lens[seq[b]];
    size_t cells = (size_t)B * (size_t)T, H = (size_t)m->info.dims->hidden;
    if (emb_grow((void **)&r->ids, &r->ids_cap, cells, sizeof(int32_t)) ||
        emb_grow((void **)&r->types, &r->types_cap, cells, sizeof(int32_t)) ||
        emb_grow((void **)&r->lens, &r->lens_cap, (size_t)B, sizeof(int32_t)) ||
        emb_grow((void **)&r->hidden, &r->hidden_cap, cells * H, sizeof(float)))
        return emb_fail(err, "out of memory");
    for (int b = 0; b < B; b++) {
        int32_t n = lens[seq[b]];
        int32_t *row_ids = r->ids + (size_t)b * T, *row_types = r->types + (size_t)b * T;
        memcpy(row_ids, ids + starts[seq[b]], (size_t)n * sizeof(int32_t));
        memcpy(row_types, types + starts[seq[b]], (size_t)n * sizeof(int32_t));
        for (int t = n; t < T; t++) row_ids[t] = row_types[t] = 0; /* padding, masked out */
        r->lens[b] = n;
    }
    *T_out = T;
    return emb_encoder_forward_grouped(m->enc, r->ws, B, T, r->ids, r->types, r->lens, n_layers, r->hidden, err);
}

int emb_model_run_all(emb_model *m, emb_model_runner *r, const emb_model_tokens *tk, size_t n,
                      emb_model_each_fn each, void *ctx, char err[EMB_ERR_LEN]) {
    size_t H = (size_t)m->info.dims->hidden;
    int rc = 0;
    for (size_t at = 0; rc == 0 && at < n; at += EMB_MODEL_BATCH) {
        int B = (int)(n - at < EMB_MODEL_BATCH ? n - at : EMB_MODEL_BATCH), T;
        const size_t *seq = tk->order + at;
        rc = emb_model_run_batch(m, r, tk->ids, tk->types, tk->starts, tk->lens, seq, B, m->info.dims->layers, &T,
                                 err);
        for (int b = 0; rc == 0 && b < B; b++)
            each(ctx, seq[b], r->hidden + (size_t)b * (size_t)T * H, T, tk->lens[seq[b]]);
    }
    return rc;
}
