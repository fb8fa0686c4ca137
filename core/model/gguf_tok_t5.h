/* A GGUF file's SentencePiece Unigram tokenizer (tokenizer.ggml.model "t5") as tokenizer.json:
 * gguf_tok_t5.c. Internal to core/model. */
#ifndef EMBED_MODEL_GGUF_TOK_T5_H
#define EMBED_MODEL_GGUF_TOK_T5_H
#include "nn/gguf.h"

/* tokenizer.json text (malloc'ed into *out) of g's Unigram tokenizer; -1 with err naming label. */
int emb_gguf_t5_json(const emb_gguf *g, const char *label, char **out, char err[EMB_ERR_LEN]);
#endif
