/* Static embedding models: a token table and a mean, no layers. Two layouts:
 * sentence-transformers' StaticEmbedding (tensor "embedding.weight"; the mean of the rows of the
 * tokens without special tokens, [UNK] included, an empty text a zero vector) and model2vec's
 * (config.json model_type "model2vec", tensor "embeddings" with optional per-token "mapping"
 * and "weights"; unknown tokens dropped, at most 512 tokens, "normalize" from config.json). */
#ifndef EMBED_STATIC_MODEL_H
#define EMBED_STATIC_MODEL_H
#include <stdint.h>
#include "base/emb_common.h"
#include "nn/safetensors.h"
#include "text/tokenizer.h"

#define EMB_MODEL2VEC_MAX_TOKENS 512 /* model2vec's encode() default max_length */

typedef struct {
    const float *table; /* rows x dims */
    float *owned; /* the table when it is a converted copy, else NULL (used in place) */
    emb_safetensors *file; /* kept open while the table is used in place */
    int32_t rows, dims;
    int model2vec; /* the model2vec layout: drop unknown tokens, cut at 512 */
    int32_t unk_id; /* model2vec: the id dropped, or -1 */
    int normalize; /* model2vec: config.json's "normalize" */
    const char *weight_type; /* the table's dtype name */
    uint64_t fingerprint;
} emb_static_table;

/* Whether dir holds a model2vec folder (config.json with model_type "model2vec"). */
int emb_static_is_model2vec(const char *dir);
/* Reads dir/model.safetensors for tokenizer tok (its vocabulary must fit the table). */
int emb_static_load(const char *dir, const emb_tokenizer *tok, int use_mmap, emb_static_table *s,
                    char err[EMB_ERR_LEN]);
void emb_static_free(emb_static_table *s);
/* The sentence vector (s->dims floats) of the ids of an encoding, template specials left out. */
void emb_static_mean(const emb_static_table *s, const emb_encoding *enc, float *out);
#endif
