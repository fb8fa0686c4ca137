/* Public API of libembedcore (installed as <sqlite-embed/rerank.h>).
 * Cross-encoders: a model folder whose config.json names BertForSequenceClassification,
 * XLMRobertaForSequenceClassification or ModernBertForSequenceClassification scores a
 * (query, text) pair as transformers' model(**inputs).logits does: the classifier over the
 * pair's [CLS] / <s> (through the pooler or classification head the architecture has), then
 * the activation sentence-transformers' CrossEncoder applies: the one the folder's settings name,
 * else Sigmoid (a single label). */
#ifndef EMBED_RERANK_H
#define EMBED_RERANK_H
#include <stddef.h>
#include "emb_error.h"
#include "model.h"

/* 1 when the model has a classifier (emb_model_rerank can score with it), else 0. */
int emb_model_has_classifier(const emb_model *m);

/* Relevance of each of n texts to one query: scores[i] for (query, texts[i]), the pair
 * tokenized as Hugging Face tokenizes a pair (truncated longest first to the model's limit),
 * all n run as one encoder batch (split only by the batch size). An error naming the model
 * when it has no classifier. 0, or -1 with err. */
int emb_model_rerank(emb_model *m, const char *query, size_t qlen, const char *const *texts, const size_t *lens,
                     size_t n, float *scores, char err[EMB_ERR_LEN]);

/* What a score is: the activation as above (emb_model_rerank's), the classifier's raw logit (as
 * transformers' model(**inputs).logits), or the logit's sigmoid whatever the folder says. */
typedef enum { EMB_RERANK_ACTIVATION, EMB_RERANK_LOGIT, EMB_RERANK_SIGMOID } emb_rerank_score;
int emb_model_rerank_with(emb_model *m, const char *query, size_t qlen, const char *const *texts,
                          const size_t *lens, size_t n, emb_rerank_score kind, float *scores,
                          char err[EMB_ERR_LEN]);

#endif
