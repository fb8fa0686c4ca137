/* Public API of libembedcore (installed as <sqlite-embed/chunk.h>).
 * Token-aware chunks of a long text: pieces of at most max_tokens of the model's tokens
 * (special tokens excluded), cut at sentence ends when a sentence fits, else at word
 * boundaries, else inside a word only when one word is longer than the limit. */
#ifndef EMBED_CHUNK_H
#define EMBED_CHUNK_H
#include <stddef.h>
#include <stdint.h>
#include "emb_error.h"
#include "model.h"

typedef struct {
    int64_t start, end; /* UTF-8 byte offsets [start, end) into the text */
    int32_t tokens; /* the model's tokens of text[start, end) tokenized alone, specials excluded */
} emb_chunk;

typedef struct {
    int max_tokens; /* tokens per chunk, specials excluded; <= 0: the model's limit less its
                     * special tokens */
    int overlap; /* tokens consecutive chunks share (0 .. max_tokens - 1) */
} emb_chunk_options;

/* The chunks of text[0, len) in order, into *out (malloc'd, the caller frees; *n of them;
 * none for a text of only white space). Every non-space byte lies in some chunk, and each
 * chunk's text tokenized alone has at most max_tokens tokens. 0, or -1 with err. */
int emb_model_chunks(const emb_model *m, const char *text, size_t len, const emb_chunk_options *opt,
                     emb_chunk **out, size_t *n, char err[EMB_ERR_LEN]);

#endif
