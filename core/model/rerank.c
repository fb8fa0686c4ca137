/* Cross-encoder scores (rerank.h): the (query, text) pairs tokenized as a pair, run through the
 * encoder in length-sorted batches as emb_model_embed runs texts, then the classifier's head on
 * each sequence's hidden states and the activation (the folder's, else sentence-transformers'
 * default: Sigmoid for one label). */
#include "sqlite-embed/rerank.h"
#include "model/model_internal.h"
#include <math.h>
#include <stdlib.h>

int emb_model_has_classifier(const emb_model *m) { return m->cls != NULL; }

/* The one message for a model that cannot score pairs: no head, or a head of several labels. */
static int require_one_label(const emb_model *m, char err[EMB_ERR_LEN]) {
    if (!m->cls)
        return emb_fail(err,
                        "model '%s' has no classifier (it makes embeddings; a cross-encoder folder's config.json "
                        "names BertForSequenceClassification, XLMRobertaForSequenceClassification or "
                        "ModernBertForSequenceClassification)",
                        m->name);
    int labels = emb_classifier_labels(m->cls);
    if (labels != 1)
        return emb_fail(err, "model '%s' has a classifier of %d labels; a relevance score needs a single label",
                        m->name, labels);
    return 0;
}

int emb_model_rerank(emb_model *m, const char *query, size_t qlen, const char *const *texts, const size_t *lens,
                     size_t n, float *scores, char err[EMB_ERR_LEN]) {
    return emb_model_rerank_with(m, query, qlen, texts, lens, n, EMB_RERANK_ACTIVATION, scores, err);
}

typedef struct {
    const emb_model *m;
    emb_rerank_score kind;
    float *scratch, *scores;
} score_ctx;

static void score_one(void *ctx, size_t i, const float *hidden, int T, int len) {
    (void)T;
    const score_ctx *c = ctx;
    float logit;
    emb_classifier_logits(c->m->cls, c->m->enc, hidden, len, c->scratch, &logit);
    c->scores[i] = c->kind == EMB_RERANK_LOGIT     ? logit
                   : c->kind == EMB_RERANK_SIGMOID ? (float)(1.0 / (1.0 + exp(-(double)logit)))
                                                   : emb_classifier_activate(c->m->cls, logit);
}

int emb_model_rerank_with(emb_model *m, const char *query, size_t qlen, const char *const *texts,
                          const size_t *lens, size_t n, emb_rerank_score kind, float *scores,
                          char err[EMB_ERR_LEN]) {
    if (require_one_label(m, err)) return -1;
    if (n == 0) return 0;
    emb_model_runner *r = emb_model_runner_take(m);
    emb_model_tokens tk = {0};
    score_ctx c = {m, kind, malloc(2 * (size_t)m->info.dims->hidden * sizeof(float)), scores};
    int rc = r && c.scratch ? emb_model_tokens_make(m, r, query, qlen, texts, lens, n, &tk, err)
                            : emb_fail(err, "out of memory");
    if (rc == 0) rc = emb_model_run_all(m, r, &tk, n, score_one, &c, err);
    free(c.scratch);
    emb_model_tokens_free(&tk);
    emb_model_runner_give(m, r);
    return rc;
}
