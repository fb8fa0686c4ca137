/* Sentence vectors (emb_model_embed): the prompt put before each text, then an encoder pass (or
 * a static table's mean, or a defined model's rows), the pooling, the Dense modules, the cut
 * to dims and the norm, in sentence-transformers' order. */
#include "model/model_internal.h"
#include "sqlite-embed/pooling.h"
#include "sqlite-embed/vec.h"
#include <stdlib.h>
#include <string.h>

size_t emb_model_scratch_floats(const emb_model *m) {
    size_t w = (size_t)m->info.dims->hidden;
    for (int i = 0; i < m->sbert.n_dense; i++)
        if ((size_t)m->dense[i].out > w) w = (size_t)m->dense[i].out;
    return 2 * w;
}

void emb_model_finish(const emb_model *m, float *pooled, int normalize, int dims, float *scratch, float *out) {
    float *x = pooled;
    size_t width = (size_t)m->info.dims->hidden, half = emb_model_scratch_floats(m) / 2;
    for (int i = 0; i < m->sbert.n_dense; i++) {
        if (m->sbert.normalize_before[i]) emb_vec_normalize(x, x, width);
        float *y = x == scratch ? scratch + half : scratch;
        emb_dense_apply(&m->dense[i], x, y);
        x = y;
        width = (size_t)m->dense[i].out;
    }
    if (normalize) emb_vec_normalize(out, x, (size_t)dims);
    else memcpy(out, x, (size_t)dims * sizeof(float));
}

int emb_model_embed_dims(const emb_model *m, const emb_embed_options *opt) {
    return opt && opt->dims > 0 ? opt->dims : m->info.dimensions;
}

const char *emb_model_prompt(const emb_model *m, const char *name) { return emb_prompts_find(&m->prompts, name); }

const char *emb_model_role_prompt(const emb_model *m, emb_prompt_role role) {
    static const char *const QUERY[] = {"query"}, *const DOCUMENT[] = {"document", "passage", "corpus"};
    if (role == EMB_PROMPT_QUERY) return emb_prompts_first(&m->prompts, QUERY, 1);
    if (role == EMB_PROMPT_DOCUMENT) return emb_prompts_first(&m->prompts, DOCUMENT, 3);
    const emb_prompts *p = &m->prompts;
    return p->default_index >= 0 ? p->text[p->default_index] : NULL;
}

/* The prompt in force: the options', else the folder's default; NULL or "" for none. */
static const char *prompt_of(const emb_model *m, const emb_embed_options *opt) {
    return opt && opt->prompt ? opt->prompt : emb_model_role_prompt(m, EMB_PROMPT_DEFAULT);
}

/* Rows of a prompt left out of the pooling (include_prompt false): its token count less one,
 * as sentence-transformers counts it (the prompt tokenized alone, specials included). */
static int prompt_rows(emb_model *m, const char *prompt, int *skip, char err[EMB_ERR_LEN]) {
    *skip = 0;
    if (!prompt || m->sbert.include_prompt) return 0;
    emb_encoding enc;
    emb_encoding_init(&enc);
    int rc = emb_model_tokenize(m, prompt, strlen(prompt), NULL, 0, &enc, err);
    if (rc == 0 && enc.n > 0) *skip = (int)enc.n - 1;
    emb_encoding_free(&enc);
    return rc;
}

/* texts with the prompt before each: the new pointers and lengths in *ptrs / *plens (one
 * allocation, freed by freeing *ptrs). */
static int prefix_texts(const char *prompt, const char *const *texts, const size_t *lens, size_t n,
                        const char ***ptrs, size_t **plens, char err[EMB_ERR_LEN]) {
    size_t pl = strlen(prompt), total = 0;
    for (size_t i = 0; i < n; i++) total += pl + lens[i];
    char *block = malloc(n * (sizeof(char *) + sizeof(size_t)) + total + 1);
    if (!block) return emb_fail(err, "out of memory");
    const char **p = (const char **)(void *)block;
    size_t *l = (size_t *)(void *)(block + n * sizeof(char *));
    char *at = block + n * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < n; i++) {
        memcpy(at, prompt, pl);
        if (lens[i]) memcpy(at + pl, texts[i], lens[i]);
        p[i] = at;
        l[i] = pl + lens[i];
        at += l[i];
    }
    *ptrs = p;
    *plens = l;
    return 0;
}

typedef struct {
    emb_pool_mode mode;
    int normalize, dims, skip;
} embed_plan;

static int embed_defined(emb_model *m, const char *const *texts, const size_t *lens, size_t n, const embed_plan *p,
                         float *out, char err[EMB_ERR_LEN]) {
    int H = m->info.dims->hidden;
    emb_encoding enc;
    emb_encoding_init(&enc);
    size_t rows = (size_t)m->info.dims->max_positions;
    float *hidden = malloc((rows * (size_t)H + emb_model_scratch_floats(m) + (size_t)H) * sizeof(float));
    int rc = hidden ? 0 : emb_fail(err, "out of memory");
    float *pooled = hidden ? hidden + rows * (size_t)H : NULL, *scratch = pooled ? pooled + H : NULL;
    for (size_t t = 0; rc == 0 && t < n; t++) {
        rc = emb_model_tokenize(m, texts[t], lens[t], NULL, 0, &enc, err);
        if (rc == 0 && enc.n == 0) rc = emb_fail(err, "the text has no words");
        if (rc == 0) rc = emb_model_hidden_states(m, &enc, 0, hidden, err);
        if (rc == 0) {
            emb_pool_from(hidden, (int)enc.n, H, p->skip, (int)enc.n, p->mode, pooled);
            emb_model_finish(m, pooled, p->normalize, p->dims, scratch, out + t * (size_t)p->dims);
        }
    }
    free(hidden);
    emb_encoding_free(&enc);
    return rc;
}

static int embed_static(emb_model *m, const char *const *texts, const size_t *lens, size_t n, const embed_plan *p,
                        float *out, char err[EMB_ERR_LEN]) {
    size_t H = (size_t)m->info.dims->hidden;
    emb_encoding enc;
    emb_encoding_init(&enc);
    float *pooled = malloc((H + emb_model_scratch_floats(m)) * sizeof(float));
    int rc = pooled ? 0 : emb_fail(err, "out of memory");
    for (size_t t = 0; rc == 0 && t < n; t++) {
        rc = emb_model_tokenize(m, texts[t], lens[t], NULL, 0, &enc, err);
        if (rc) break;
        emb_static_mean(m->statics, &enc, pooled);
        emb_model_finish(m, pooled, p->normalize, p->dims, pooled + H, out + t * (size_t)p->dims);
    }
    free(pooled);
    emb_encoding_free(&enc);
    return rc;
}

typedef struct {
    const emb_model *m;
    const embed_plan *p;
    float *pooled, *out;
} pool_ctx;

static void pool_one(void *ctx, size_t i, const float *hidden, int T, int len) {
    const pool_ctx *c = ctx;
    int H = c->m->info.dims->hidden;
    emb_pool_from(hidden, T, H, c->p->skip, len, c->p->mode, c->pooled);
    emb_model_finish(c->m, c->pooled, c->p->normalize, c->p->dims, c->pooled + H, c->out + i * (size_t)c->p->dims);
}

static int embed_encoder(emb_model *m, const char *const *texts, const size_t *lens, size_t n, const embed_plan *p,
                         float *out, char err[EMB_ERR_LEN]) {
    emb_model_runner *r = emb_model_runner_take(m);
    emb_model_tokens tk = {0};
    pool_ctx c = {m, p, malloc(((size_t)m->info.dims->hidden + emb_model_scratch_floats(m)) * sizeof(float)), out};
    int rc = r && c.pooled ? emb_model_tokens_make(m, r, NULL, 0, texts, lens, n, &tk, err)
                           : emb_fail(err, "out of memory");
    if (rc == 0) rc = emb_model_run_all(m, r, &tk, n, pool_one, &c, err);
    free(c.pooled);
    emb_model_tokens_free(&tk);
    emb_model_runner_give(m, r);
    return rc;
}

int emb_model_embed(emb_model *m, const char *const *texts, const size_t *lens, size_t n,
                    const emb_embed_options *opt, float *out, char err[EMB_ERR_LEN]) {
    embed_plan p = {opt && opt->pool >= 0 ? (emb_pool_mode)opt->pool : m->sbert.pool,
                    opt && opt->normalize >= 0 ? opt->normalize : m->sbert.normalize, emb_model_embed_dims(m, opt),
                    0};
    if (emb_model_require_vectors(&m->info, "vectors", err)) return -1;
    if (p.dims < 1 || p.dims > m->info.dimensions)
        return emb_fail(err, "dims %d is out of range: model '%s' makes vectors of %d dimensions", p.dims, m->name,
                        m->info.dimensions);
    if (n == 0) return 0;
    const char *prompt = prompt_of(m, opt);
    const char **ptrs = NULL;
    size_t *plens = NULL;
    /* an empty prompt still counts its specials out of the pooling, as sentence-transformers does */
    if (prompt_rows(m, prompt, &p.skip, err)) return -1;
    if (prompt && *prompt && prefix_texts(prompt, texts, lens, n, &ptrs, &plens, err)) return -1;
    if (ptrs) {
        texts = ptrs;
        lens = plens;
    }
    int rc = m->defined   ? embed_defined(m, texts, lens, n, &p, out, err)
             : m->statics ? embed_static(m, texts, lens, n, &p, out, err)
                          : embed_encoder(m, texts, lens, n, &p, out, err);
    free((void *)ptrs);
    return rc;
}
