#include "model/model_internal.h"
#include "base/file.h"
#include "sqlite-embed/pooling.h"
#include "model/sbert_config.h"
#include "model/defined_model.h"
#include "model/model_gguf.h"
#include "nn/encoder_gguf.h"
#include "text/tokenizer.h"
#include "sqlite-embed/vec.h"
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static emb_model *model_new(const char *name, const char *path) {
    emb_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    atomic_init(&m->refs, 1);
    m->prompts.default_index = -1;
    pthread_mutex_init(&m->lock, NULL);
    m->name = strdup(name);
    m->path = path ? strdup(path) : NULL;
    m->info.name = m->name;
    m->info.path = m->path;
    if (!m->name || (path && !m->path)) {
        emb_model_release(m);
        return NULL;
    }
    return m;
}

static void set_fingerprint(emb_model_info *info, uint64_t h) {
    snprintf(info->fingerprint, sizeof info->fingerprint, "%016" PRIx64, h);
}

int emb_model_define(const char *name, const char *json, size_t len, emb_model **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_defined_model *sm;
    if (emb_defined_model_from_json(json, len, &sm, err)) return -1;
    emb_model *m = model_new(name, NULL);
    if (!m) {
        emb_defined_model_free(sm);
        return emb_fail(err, "out of memory");
    }
    m->defined = sm;
    emb_model_info *info = &m->info;
    const emb_model_dims *d = emb_defined_dims(sm);
    info->architecture = "defined";
    info->dims = d;
    info->max_tokens = d->max_positions;
    info->position_kind = emb_defined_sinusoidal(sm) ? "sinusoidal" : "learned";
    info->pooling = "mean";
    info->weight_type = "F32";
    info->bytes = (int64_t)(d->vocab_size + d->max_positions) * d->hidden * (int64_t)sizeof(float);
    info->has_vectors = 1;
    info->dimensions = d->hidden;
    set_fingerprint(info, emb_defined_fingerprint(sm));
    *out = m;
    return 0;
}

static int exists(const char *dir, const char *file) {
    char path[PATH_MAX];
    return emb_path_join(path, sizeof path, dir, file, NULL) == 0 && emb_path_exists(path);
}

/* The token limit in force: sentence-transformers' max_seq_length when the folder has one
 * (as sentence-transformers applies it), else the tokenizer's model_max_length, and never
 * more than the position table; none for a static model (its max_seq_length is infinite). */
static int token_limit(const emb_model *m) {
    int64_t limit = 0;
    if (m->statics) return 0; /* a static model reads every token (model2vec cuts its own at 512) */
    if (m->sbert.present && m->sbert.max_seq_length > 0) limit = m->sbert.max_seq_length;
    else if (emb_tokenizer_model_max_length(m->tok) > 0) limit = emb_tokenizer_model_max_length(m->tok);
    if (m->enc) {
        int maxpos = emb_encoder_max_tokens(m->enc); /* RoBERTa: the table less its offset */
        if (limit == 0 || limit > maxpos) limit = maxpos;
    }
    return limit > INT_MAX ? INT_MAX : (int)limit;
}

/* The encoder (and a cross-encoder's head) of dir, or a static table. */
static int load_weights(emb_model *m, const char *dir, const emb_load_options *opt, char err[EMB_ERR_LEN]) {
    int has_weights = exists(dir, "model.safetensors") || exists(dir, "model.safetensors.index.json");
    if (m->sbert.input_static || emb_static_is_model2vec(dir)) {
        if (opt->weights != EMB_WEIGHTS_F32 && opt->weights != EMB_WEIGHTS_DEFAULT)
            return emb_fail(err, "%s: %s weights are for encoders; a static model's table is used as stored", dir,
                            emb_weights_name(opt->weights));
        m->statics = calloc(1, sizeof *m->statics);
        if (!m->statics) return emb_fail(err, "out of memory");
        if (emb_static_load(dir, m->tok, opt->mmap, m->statics, err)) {
            free(m->statics);
            m->statics = NULL;
            return -1;
        }
        return 0;
    }
    if (exists(dir, "config.json") && has_weights) {
        /* the head's tensors are read from the weight files before those not needed are closed */
        if (emb_encoder_load_open(dir, opt->mmap, &m->enc, err)) return -1;
        int rc = emb_classifier_load(dir, m->enc, &m->cls, err);
        emb_encoder_close_unused(m->enc);
        return rc || emb_encoder_set_weights(m->enc, opt->weights, err) ? -1 : 0;
    }
    if (has_weights) return emb_fail(err, "%s: model weights but no config.json", dir);
    if (exists(dir, "pytorch_model.bin"))
        return emb_fail(err, "%s: only pytorch_model.bin (convert it to model.safetensors)", dir);
    if (opt->weights != EMB_WEIGHTS_F32 && opt->weights != EMB_WEIGHTS_DEFAULT)
        return emb_fail(err, "%s: %s weights, but the folder has no model weights (a tokenizer only)", dir,
                        emb_weights_name(opt->weights));
    return 0;
}

/* The Dense modules after the pooling, each taking the width before it; the vectors' width. */
static int load_dense(emb_model *m, const char *root, int width, char err[EMB_ERR_LEN]) {
    for (int i = 0; i < m->sbert.n_dense; i++) {
        if (emb_dense_load(root, m->sbert.dense_path[i], width, &m->dense[i], err)) {
            m->sbert.n_dense = i; /* the ones loaded are freed with the model */
            return -1;
        }
        width = m->dense[i].out;
    }
    m->info.dimensions = width;
    return 0;
}

/* An encoder's sizes against its tokenizer and pooling, into info. */
static int describe_encoder(emb_model *m, char err[EMB_ERR_LEN]) {
    emb_model_info *info = &m->info;
    const emb_encoder_config *c = emb_encoder_get_config(m->enc);
    const emb_encoder_info *e = emb_encoder_get_info(m->enc);
    if (emb_tokenizer_vocab_size(m->tok) > c->dims.vocab_size)
        return emb_fail(err, "the tokenizer has %d tokens but the model's embedding table only %d rows",
                        emb_tokenizer_vocab_size(m->tok), c->dims.vocab_size);
    /* a single text must always work (a pair's type ids are checked when a pair comes) */
    int max_type = emb_tokenizer_max_type_id(m->tok, 0);
    if (c->dims.type_vocab > 0 && max_type >= c->dims.type_vocab)
        return emb_fail(err,
                        "tokenizer.json: the post_processor gives type id %d but the model has only %d token "
                        "types (config.json type_vocab_size)",
                        max_type, c->dims.type_vocab);
    if (m->sbert.pooling_dim > 0 && m->sbert.pooling_dim != c->dims.hidden)
        return emb_fail(err, "1_Pooling/config.json: embedding dimension %d differs from hidden size %d",
                        m->sbert.pooling_dim, c->dims.hidden);
    info->architecture = c->arch_name;
    info->dims = &c->dims;
    info->position_kind = emb_pos_kind_name(c->pos_kind);
    info->weight_type = e->weight_type;
    info->weights = emb_weights_name(emb_encoder_weights(m->enc));
    info->bytes = (int64_t)e->used_bytes;
    info->mapped = e->mapped_bytes > 0;
    info->has_vectors = 1;
    if (m->cls) {
        info->classifier = emb_classifier_architecture(m->cls);
        info->num_labels = emb_classifier_labels(m->cls);
    }
    return 0;
}

/* A static table's sizes: its rows and width; no layers, no positions. */
static void describe_static(emb_model *m) {
    emb_model_info *info = &m->info;
    const emb_static_table *s = m->statics;
    m->vocab_only.vocab_size = s->rows;
    m->vocab_only.hidden = s->dims;
    info->architecture = s->model2vec ? "model2vec" : "static";
    info->dims = &m->vocab_only;
    info->weight_type = s->weight_type;
    info->weights = "f32";
    info->bytes = (int64_t)s->rows * s->dims * (int64_t)sizeof(float);
    info->mapped = s->file && s->file->mapped;
    info->has_vectors = 1;
    info->is_static = 1;
    if (s->model2vec && s->normalize) m->sbert.normalize = 1;
}

/* The fingerprint: the parts every model always had, then (only where present, so that older
 * models keep theirs) a cross-encoder's head, a static table, Dense modules and prompts. */
static void fingerprint(emb_model *m) {
    uint64_t parts[6] = {m->enc ? emb_encoder_fingerprint(m->enc) : 0,
                         emb_tokenizer_fingerprint(m->tok),
                         (uint64_t)m->sbert.pool,
                         (uint64_t)m->sbert.normalize,
                         (uint64_t)m->info.max_tokens,
                         m->cls ? emb_classifier_fingerprint(m->cls) : 0};
    uint64_t h = XXH3_64bits(parts, sizeof parts - (m->cls ? 0 : sizeof parts[5]));
    uint64_t more[4] = {h, m->statics ? m->statics->fingerprint : 0, 0, (uint64_t)m->sbert.include_prompt};
    for (int i = 0; i < m->sbert.n_dense; i++)
        more[2] = XXH3_64bits_withSeed(&more[2], 8, emb_dense_fingerprint(&m->dense[i]) ^ (uint64_t)i);
    if (m->prompts.json)
        more[2] ^= XXH3_64bits_withSeed(m->prompts.json, strlen(m->prompts.json),
                                        (uint64_t)(m->prompts.default_index + 1));
    if (m->statics || m->sbert.n_dense || m->prompts.json || !m->sbert.include_prompt)
        h = XXH3_64bits(more, sizeof more);
    set_fingerprint(&m->info, h);
}

static int load_folder(emb_model *m, const char *dir, const emb_load_options *opt, char err[EMB_ERR_LEN]) {
    if (emb_path_kind_of(dir) != EMB_PATH_DIR) return emb_fail(err, "%s: not a folder", dir);
    const char *root = dir;
    if (emb_sbert_config_load(dir, &m->sbert, err) || emb_prompts_load(root, &m->prompts, err)) return -1;
    char sub[PATH_MAX];
    if (m->sbert.present && m->sbert.transformer_path[0]) { /* the input module in a subfolder */
        if (emb_path_join(sub, sizeof sub, dir, m->sbert.transformer_path, err)) return -1;
        dir = sub;
    }
    if (!exists(dir, "tokenizer.json") && !exists(dir, "vocab.txt"))
        return emb_fail(err, "%s: neither tokenizer.json nor vocab.txt", dir);
    if (emb_tokenizer_load(dir, &m->tok, err) || load_weights(m, dir, opt, err)) return -1;
    emb_model_info *info = &m->info;
    info->max_tokens = token_limit(m);
    info->pooling = m->enc ? emb_pool_mode_name(m->sbert.pool) : m->statics ? "mean" : NULL;
    info->prompts = m->prompts.json;
    if (m->enc && describe_encoder(m, err)) return -1;
    if (m->statics) describe_static(m);
    if (!m->enc && !m->statics) {
        info->architecture = "tokenizer";
        m->vocab_only.vocab_size = emb_tokenizer_vocab_size(m->tok);
        info->dims = &m->vocab_only;
    }
    info->normalize = m->sbert.normalize;
    if (info->has_vectors && load_dense(m, root, info->dims->hidden, err)) return -1;
    fingerprint(m);
    return 0;
}

/* A GGUF file (model_gguf.c): its tokenizer, encoder, pooling and the Dense layers some files
 * carry (EmbeddingGemma's); no Normalize or prompts (the file has none). A file without tensors
 * is a tokenizer, as a folder without weights. */
static int load_gguf(emb_model *m, const char *path, const emb_load_options *opt, char err[EMB_ERR_LEN]) {
    const char *file_type;
    if (emb_model_gguf_load(path, opt, &m->tok, &m->enc, &m->cls, &m->sbert.pool, &file_type, m->dense,
                            &m->sbert.n_dense, err))
        return -1;
    m->sbert.include_prompt = 1;
    emb_model_info *info = &m->info;
    info->max_tokens = token_limit(m);
    if (!m->enc) { /* a vocabulary alone: a tokenizer, as a folder with no weights */
        info->architecture = "tokenizer";
        m->vocab_only.vocab_size = emb_tokenizer_vocab_size(m->tok);
        info->dims = &m->vocab_only;
        fingerprint(m);
        return 0;
    }
    info->pooling = emb_pool_mode_name(m->sbert.pool);
    if (describe_encoder(m, err)) return -1;
    info->weight_type = file_type; /* the file's type, not float32 widened from it */
    info->dimensions = m->sbert.n_dense ? m->dense[m->sbert.n_dense - 1].out : info->dims->hidden;
    fingerprint(m);
    return 0;
}

int emb_model_load(const char *name, const char *dir, emb_model **out, char err[EMB_ERR_LEN]) {
    return emb_model_load_with(name, dir, NULL, out, err);
}

int emb_model_load_with(const char *name, const char *dir, const emb_load_options *opt, emb_model **out,
                        char err[EMB_ERR_LEN]) {
    static const emb_load_options defaults = EMB_LOAD_DEFAULTS;
    if (!opt) opt = &defaults;
    *out = NULL;
    emb_model *m = model_new(name, dir);
    if (!m) return emb_fail(err, "out of memory");
    m->info.mmap = opt->mmap;
    if (emb_gguf_path(dir) ? load_gguf(m, dir, opt, err) : load_folder(m, dir, opt, err)) {
        emb_model_release(m);
        return -1;
    }
    *out = m;
    return 0;
}

void emb_model_retain(emb_model *m) { atomic_fetch_add(&m->refs, 1); }

void emb_model_release(emb_model *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    while (m->idle) {
        emb_model_runner *r = m->idle;
        m->idle = r->next;
        emb_model_runner_free(r);
    }
    pthread_mutex_destroy(&m->lock);
    emb_defined_model_free(m->defined);
    emb_tokenizer_free(m->tok);
    if (m->statics) emb_static_free(m->statics);
    free(m->statics);
    for (int i = 0; i < m->sbert.n_dense; i++) emb_dense_free(&m->dense[i]);
    emb_prompts_free(&m->prompts);
    emb_classifier_free(m->cls);
    emb_encoder_free(m->enc);
    free(m->name);
    free(m->path);
    free(m);
}

const emb_model_info *emb_model_get_info(const emb_model *m) { return &m->info; }

int emb_model_require_vectors(const emb_model_info *info, const char *what, char err[EMB_ERR_LEN]) {
    if (info->has_vectors) return 0;
    return emb_fail(err, "model '%s' is a tokenizer only: it has no %s", info->name, what);
}

void emb_model_encoding_init(emb_encoding *enc) { emb_encoding_init(enc); }
void emb_model_encoding_free(emb_encoding *enc) { emb_encoding_free(enc); }

const char *emb_model_token_text(const emb_model *m, int32_t id, size_t *len) {
    if (m->defined) return emb_defined_token(m->defined, id, len);
    return emb_tokenizer_token(m->tok, id, len);
}

const float *emb_model_token_row(const emb_model *m, int32_t id, float *buf) {
    if (m->defined) return emb_defined_token_row(m->defined, id);
    if (m->statics)
        return id >= 0 && id < m->statics->rows ? m->statics->table + (size_t)id * m->statics->dims : NULL;
    return m->enc ? emb_encoder_word_row(m->enc, id, buf) : NULL;
}

const float *emb_model_position_row(const emb_model *m, int32_t pos) {
    if (m->defined) return emb_defined_position_row(m->defined, pos);
    return m->enc ? emb_encoder_position_row(m->enc, pos) : NULL;
}

int emb_model_rotary(const emb_model *m, int *rot_dims, double *theta) {
    const emb_encoder_config *c = m->enc ? emb_encoder_get_config(m->enc) : NULL;
    if (!c || c->pos_kind != EMB_POS_ROTARY) return -1;
    *rot_dims = c->rope_dims;
    *theta = c->rope_theta;
    return 0;
}

int emb_model_hidden_states(emb_model *m, const emb_encoding *enc, int n_layers, float *out,
                            char err[EMB_ERR_LEN]) {
    size_t H = (size_t)m->info.dims->hidden;
    if (m->defined) {
        if (n_layers != 0) return emb_fail(err, "model '%s' has no layers (layer %d asked)", m->name, n_layers);
        for (size_t i = 0; i < enc->n; i++)
            emb_vec_add(out + i * H, emb_model_token_row(m, enc->tok[i].id, NULL),
                        emb_model_position_row(m, (int32_t)i), H);
        return 0;
    }
    if (m->statics) { /* the lookup is all there is */
        if (n_layers != 0)
            return emb_fail(err, "model '%s' is a static embedding model: it has no layers (layer %d asked)",
                            m->name, n_layers);
        for (size_t i = 0; i < enc->n; i++)
            memcpy(out + i * H, emb_model_token_row(m, enc->tok[i].id, NULL), H * sizeof(float));
        return 0;
    }
    if (emb_model_require_vectors(&m->info, "vectors", err)) return -1;
    if (n_layers < 0 || n_layers > m->info.dims->layers)
        return emb_fail(err, "layer %d is out of range (0 to %d)", n_layers, m->info.dims->layers);
    if (enc->n == 0) return 0;
    emb_model_runner *r = emb_model_runner_take(m);
    int32_t *ids = malloc(enc->n * 2 * sizeof(int32_t));
    int rc = r && ids ? 0 : emb_fail(err, "out of memory");
    if (rc == 0) {
        int32_t *types = ids + enc->n, len = (int32_t)enc->n;
        for (size_t i = 0; i < enc->n; i++) {
            ids[i] = enc->tok[i].id;
            types[i] = enc->tok[i].type_id;
        }
        size_t start = 0, seq = 0;
        int T;
        rc = emb_model_run_batch(m, r, ids, types, &start, &len, &seq, 1, n_layers, &T, err);
        if (rc == 0) memcpy(out, r->hidden, enc->n * H * sizeof(float));
    }
    free(ids);
    emb_model_runner_give(m, r);
    return rc;
}

/* A model whose attention can be shown: an encoder (defined models have no layers). */
static int require_attention(const emb_model *m, char err[EMB_ERR_LEN]) {
    if (emb_model_require_vectors(&m->info, "attention", err)) return -1;
    if (!m->enc) return emb_fail(err, "model '%s' has no layers, so no attention", m->name);
    return 0;
}

int emb_model_attention(emb_model *m, const emb_encoding *enc, int first_layer, int last_layer, int first_head,
                        int last_head, float *out, char err[EMB_ERR_LEN]) {
    if (require_attention(m, err)) return -1;
    if (enc->n == 0) return 0;
    emb_attention_span span = {first_layer, last_layer, first_head, last_head};
    emb_model_runner *r = emb_model_runner_take(m);
    int32_t *ids = malloc(enc->n * 2 * sizeof(int32_t));
    int rc = r && ids ? 0 : emb_fail(err, "out of memory");
    if (rc == 0) {
        for (size_t i = 0; i < enc->n; i++) {
            ids[i] = enc->tok[i].id;
            ids[enc->n + i] = enc->tok[i].type_id;
        }
        rc = emb_encoder_attention(m->enc, r->ws, (int)enc->n, ids, ids + enc->n, &span, out, err);
    }
    free(ids);
    emb_model_runner_give(m, r);
    return rc;
}

int emb_model_attention_bias(const emb_model *m, int layer, int64_t i, int64_t j, float *out,
                             char err[EMB_ERR_LEN]) {
    if (require_attention(m, err)) return -1;
    return emb_encoder_attention_bias(m->enc, layer, i, j, out, err);
}
