/* Public API of libembedcore (installed as <sqlite-embed/token.h>).
 * One token of an encoded input, and a reusable list of them: the common currency of the
 * tokenizers (WordPiece, and whitespace for defined models) and the encoder. */
#ifndef EMBED_TOKEN_H
#define EMBED_TOKEN_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t id, type_id;
    int32_t start, end; /* UTF-8 byte offsets [start,end) into its own sequence's text; -1 for template specials */
    int32_t word; /* index of the word the token belongs to (HF word_ids); -1 for template specials */
    int32_t seq; /* 0 text, 1 text_b, -1 template specials */
} emb_token;

typedef struct {
    emb_token *tok;
    size_t n, cap;
    void *scratch; /* the tokenizer's working memory, kept between calls */
} emb_encoding;

#endif
