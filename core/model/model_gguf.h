/* A GGUF file (llama.cpp's format) as a model: model_gguf.c. */
#ifndef EMBED_MODEL_GGUF_H
#define EMBED_MODEL_GGUF_H
#include "model/dense.h"
#include "nn/classifier.h"
#include "nn/encoder.h"
#include "sqlite-embed/model.h"
#include "sqlite-embed/pooling.h"
#include "text/tokenizer.h"

/* The tokenizer (from the tokenizer.ggml.* keys), the encoder (weights as opt asks), the pooling
 * ({arch}.pooling_type), the weight type (general.file_type: "F32", "F16", "Q4_K_M" ..., or
 * "mixed"; a string literal) and the sentence-transformers Dense layers after the pooling
 * (dense[0..*n_dense): EmbeddingGemma's, gguf_dense.h) of the GGUF file path; tok, enc and the
 * Dense layers the caller's to free, none set on an error, which names the file. A file without
 * tensors (a vocabulary alone, as llama.cpp's ggml-vocab-*.gguf) gives the tokenizer and *enc NULL.
 * A reranker (pooling_type 4, or a cls.output tensor and no pooling_type) also gives its head in
 * *cls (classifier.h's emb_classifier_load_gguf), else *cls is NULL. */
int emb_model_gguf_load(const char *path, const emb_load_options *opt, emb_tokenizer **tok, emb_encoder **enc,
                        emb_classifier **cls, emb_pool_mode *pool, const char **weight_type, emb_dense dense[2],
                        int *n_dense, char err[EMB_ERR_LEN]);
#endif
