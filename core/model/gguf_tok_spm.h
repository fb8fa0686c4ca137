/* A GGUF file's SentencePiece vocabulary (tokenizer.ggml.model "llama": pieces, scores, types, as
 * convert_hf_to_gguf.py's _set_vocab_sentencepiece writes a tokenizer.model) as the tokenizer.json
 * Hugging Face's converter makes of the same tokenizer.model: gguf_tok_spm.c. */
#ifndef EMBED_GGUF_TOK_SPM_H
#define EMBED_GGUF_TOK_SPM_H
#include "base/emb_common.h"
#include "nn/gguf.h"

/* tokenizer.json text (malloc'ed into *out); errors name label (the file) and the key. */
int emb_gguf_spm_json(const emb_gguf *g, const char *label, char **out, char err[EMB_ERR_LEN]);
#endif
