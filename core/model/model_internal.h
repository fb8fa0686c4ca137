/* The model's state and the batch machinery its sentence vectors (model.c) and cross-encoder
 * scores (rerank.c) share: the pool of per-thread scratch (runners), the tokens of n inputs in
 * flat arrays in length order, and one encoder pass over a batch of them (model_batch.c).
 * Not for use outside core/model. */
#ifndef EMBED_MODEL_INTERNAL_H
#define EMBED_MODEL_INTERNAL_H
#include "sqlite-embed/model.h"
#include "nn/encoder.h"
#include "nn/classifier.h"
#include "model/sbert_config.h"
#include "model/defined_model.h"
#include "model/dense.h"
#include "model/prompts.h"
#include "model/static_model.h"
#include "text/tokenizer.h"
#include <pthread.h>
#include <stdatomic.h>

#define EMB_MODEL_BATCH 32 /* sequences per forward pass */
#define EMB_MODEL_RUNNERS_KEPT 8 /* idle scratch sets a model keeps for reuse */

/* Scratch for one forward pass at a time: taken from the model's pool by a thread,
 * returned after, so activations are reused across calls without locks during the math. */
typedef struct emb_model_runner {
    struct emb_model_runner *next;
    emb_workspace *ws;
    emb_encoding enc;
    int32_t *ids, *types, *lens;
    size_t ids_cap, types_cap, lens_cap;
    float *hidden;
    size_t hidden_cap;
} emb_model_runner;

struct emb_model {
    atomic_int refs;
    emb_model_info info;
    char *name, *path;
    emb_defined_model *defined; /* architecture "defined" */
    emb_tokenizer *tok; /* folder models */
    emb_encoder *enc; /* NULL for tokenizer-only folders */
    emb_classifier *cls; /* a cross-encoder's head, else NULL */
    emb_sbert_config sbert; /* sentence-transformers settings (pooling, normalize, limit) */
    emb_static_table *statics; /* a static embedding model's table, else NULL */
    emb_dense dense[EMB_SBERT_MAX_DENSE]; /* sbert.n_dense Dense modules after the pooling */
    emb_prompts prompts; /* config_sentence_transformers.json's */
    emb_model_dims vocab_only; /* a tokenizer-only model's sizes: its vocabulary's */
    pthread_mutex_t lock; /* guards idle */
    emb_model_runner *idle;
    int n_idle;
};

/* The vector of one text from its pooled row (hidden floats in pooled, changed): the Dense
 * modules, then the first dims components, normalised when normalize. scratch holds
 * emb_model_scratch_floats(m) floats. */
void emb_model_finish(const emb_model *m, float *pooled, int normalize, int dims, float *scratch, float *out);
size_t emb_model_scratch_floats(const emb_model *m);

/* A runner from the pool (or a new one; NULL when out of memory), and back. */
emb_model_runner *emb_model_runner_take(emb_model *m);
void emb_model_runner_give(emb_model *m, emb_model_runner *r); /* r may be NULL */
void emb_model_runner_free(emb_model_runner *r);

/* The tokens of n inputs: sequence i is ids / types [starts[i], starts[i] + lens[i]); order
 * lists the sequences by increasing length. */
typedef struct {
    int32_t *ids, *types, *lens;
    size_t *starts, *order;
} emb_model_tokens;

/* Tokenizes texts[0..n) (with first, when not NULL, as the first text of each pair: the query
 * of (query, text) pairs, truncated as the tokenizer truncates pairs) into tk with r's encoding.
 * tk is to be freed (emb_model_tokens_free) whatever the result. */
int emb_model_tokens_make(const emb_model *m, emb_model_runner *r, const char *first, size_t first_len,
                          const char *const *texts, const size_t *lens, size_t n, emb_model_tokens *tk,
                          char err[EMB_ERR_LEN]);
void emb_model_tokens_free(emb_model_tokens *tk);

/* Runs the encoder over sequences seq[0..B) of the flat token arrays (ids and types, with
 * starts[] and lens[] per sequence), padded to the longest of them (run in groups of similar
 * lengths when seq is in length order). The hidden states of the real tokens land in
 * r->hidden, B x *T x hidden. */
int emb_model_run_batch(emb_model *m, emb_model_runner *r, const int32_t *ids, const int32_t *types,
                        const size_t *starts, const int32_t *lens, const size_t *seq, int B, int n_layers,
                        int *T_out, char err[EMB_ERR_LEN]);
/* Every sequence of tk (n of them) through all the layers, in its length-sorted batches; each(ctx, i,
 * hidden, T, len) sees sequence i's rows (len real ones of a batch padded to T). */
typedef void (*emb_model_each_fn)(void *ctx, size_t i, const float *hidden, int T, int len);
int emb_model_run_all(emb_model *m, emb_model_runner *r, const emb_model_tokens *tk, size_t n,
                      emb_model_each_fn each, void *ctx, char err[EMB_ERR_LEN]);
#endif
