/* A GGUF file (llama.cpp's format) as a model: model_gguf.c. */
#ifndef EMBED_MODEL_GGUF_H
#define EMBED_MODEL_GGUF_H
#include "nn/encoder.h"
#include "sqlite-embed/model.h"
#include "sqlite-embed/pooling.h"
#include "text/tokenizer.h"

/* The tokenizer (from the tokenizer.ggml.* keys), the encoder (weights as opt asks), the pooling
 * ({arch}.pooling_type) and the weight type (general.file_type: "F32", "F16", "BF16", "Q8_0", or
 * "mixed"; a string literal) of the GGUF file path; tok and enc the caller's to free, none set on
 * an error, which names the file. A file without tensors (a vocabulary alone, as llama.cpp's
 * ggml-vocab-*.gguf) gives the tokenizer and *enc NULL. */
int emb_model_gguf_load(const char *path, const emb_load_options *opt, emb_tokenizer **tok, emb_encoder **enc,
                        emb_pool_mode *pool, const char **weight_type, char err[EMB_ERR_LEN]);
#endif
