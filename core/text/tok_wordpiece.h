/* WordPiece (BERT's tokenizer) as one fused pass: tok_wordpiece.c. Internal to the tokenizer's
 * files. */
#ifndef EMBED_TOK_WORDPIECE_H
#define EMBED_TOK_WORDPIECE_H
#include "text/tokenizer_internal.h"

/* Tokenizes one valid UTF-8 sequence into out (cleared first), stopping after the word that
 * brings the count to cap (0: no cap), as emb_tok_pipeline_seq does for Unigram and BPE.
 * *scratch is its memory, kept by the caller. -1 out of memory. */
int emb_tok_wordpiece_seq(const emb_tokenizer *t, void **scratch, const char *text, size_t len, int seq,
                          size_t cap, toklist *out);
void emb_tok_wordpiece_scratch_free(void *scratch);
#endif
