/* The sequence-classification head of a cross-encoder checkpoint (config.json's "architectures"
 * names BertForSequenceClassification, RobertaForSequenceClassification,
 * XLMRobertaForSequenceClassification or ModernBertForSequenceClassification): its tensors read
 * from the encoder's weight files, and the logits it gives for one sequence's hidden states, as
 * transformers computes model(**inputs).logits (dropout is the identity at inference):
 *   BERT:       classifier(pooler(h[0]))              (the pooler is the encoder's: tanh(W h + b))
 *   RoBERTa:    out_proj(tanh(dense(h[0])))           (RobertaClassificationHead; no pooler)
 *   ModernBERT: classifier(norm(act(dense(pool(h))))) (pool: h[0], or the mean of the real tokens,
 *               as "classifier_pooling" says; h is already final_norm's output)
 * Plus the activation that a sentence-transformers CrossEncoder's settings in config.json name
 * ("sentence_transformers": {"activation_fn": ...}, or the older
 * "sbert_ce_default_activation_function"); none named: the raw logit. */
#ifndef EMBED_CLASSIFIER_H
#define EMBED_CLASSIFIER_H
#include <stdint.h>
#include "base/emb_common.h"
#include "nn/encoder.h"

typedef struct emb_classifier emb_classifier;

/* The head of the checkpoint in dir whose encoder e was loaded with emb_encoder_load_open (its
 * files still open). 0 with *out NULL when config.json names no ForSequenceClassification
 * architecture; 0 with a head; -1 with err for a head that is malformed or one of an
 * architecture this file does not know (a head of the wrong encoder, a missing tensor, a shape
 * that differs from the config's labels). */
int emb_classifier_load(const char *dir, const emb_encoder *e, emb_classifier **out, char err[EMB_ERR_LEN]);
/* The head of a GGUF reranker (arch "bert": BERT and XLM-R cross-encoders as llama.cpp's
 * converter writes them) whose encoder e was opened from the file (encoder_gguf.h), computed as
 * llama.cpp's rank pooling computes it: cls.output(tanh(cls(h[0]))), which is RoBERTa's head
 * (cls = classifier.dense) and BERT's (cls = the pooler). labels: the rows of cls.output
 * ({arch}.classifier.output_labels' count, else 1); arch: the name the head reports. No
 * activation setting: sentence-transformers' default (Sigmoid for one label). A file without
 * cls.weight is refused: BERT's converter drops the pooler, and the scores would not be the
 * model's. */
int emb_classifier_load_gguf(const emb_encoder *e, const char *arch, int labels, emb_classifier **out,
                             char err[EMB_ERR_LEN]);
void emb_classifier_free(emb_classifier *);

int emb_classifier_labels(const emb_classifier *); /* num_labels: the logits per sequence */
const char *emb_classifier_architecture(const emb_classifier *); /* "BertForSequenceClassification", ... */
/* The activation's name ("Sigmoid", "Identity", "Tanh"): the folder's, else sentence-transformers'
 * default (Sigmoid for one label, Identity for more). */
const char *emb_classifier_activation(const emb_classifier *);
/* XXH3_64 over the head's settings and float32 weights. */
uint64_t emb_classifier_fingerprint(const emb_classifier *);

/* The logits of one sequence: hidden holds its len real tokens' rows (H floats each, the
 * encoder's last hidden state), logits gets emb_classifier_labels floats. scratch: 2 H floats. */
void emb_classifier_logits(const emb_classifier *, const emb_encoder *e, const float *hidden, int len,
                           float *scratch, float *logits);
/* The activation applied to one logit (the score a CrossEncoder's predict gives). */
float emb_classifier_activate(const emb_classifier *, float logit);

#endif
