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

int emb_model_rerank_with(emb_model *m, const char *query, size_t qlen, const char *const *texts,
                          const size_t *lens, size_t n, emb_rerank_score kind, float *scores,
                          char err[EMB_ERR_LEN]) {
    if (require_one_label(m, err)) return -1;
    if (n == 0) return 0;
    emb_model_runner *r = emb_model_runner_take(m);
    emb_model_tokens tk = {0};
    size_t H = (size_t)m->info.dims->hidden;
    float *scratch = malloc(2 * H * sizeof(float));
    int rc = r && scratch ? emb_model_tokens_make(m, r, query, qlen, texts, lens, n, &tk, err)
                          : emb_fail(err, "out of memory");
    for (size_t at = 0; rc == 0 && at < n; at += EMB_MODEL_BATCH) {
        int B = (int)(n - at < EMB_MODEL_BATCH ? n - at : EMB_MODEL_BATCH), T;
        const size_t *seq = tk.order + at;
        rc =
            emb_model_run_batch(m, r, tk.ids, tk.types, tk.starts, tk.lens, seq, B, m->info.dims->layers, &T, err);
        for (int b = 0; rc == 0 && b < B; b++) {
            float logit;
            emb_classifier_logits(m->cls, m->enc, r->hidden + (size_t)b * (size_t)T * H, tk.lens[seq[b]], scratch,
                                  &logit);
            scores[seq[b]] = kind == EMB_RERANK_LOGIT     ? logit
                             : kind == EMB_RERANK_SIGMOID ? (float)(1.0 / (1.0 + exp(-(double)logit)))
                                                          : emb_classifier_activate(m->cls, logit);
        }
    }
    free(scratch);
    emb_model_tokens_free(&tk);
    emb_model_runner_give(m, r);
    return rc;
}
