/* A small per-encoding cache of the model's segmentation of recent pre-tokens (HF's Unigram and
 * BPE keep one too): words repeat, and a hit skips Viterbi or the merge loop. Direct-mapped,
 * short words only; tied to one tokenizer (cleared when the encoding meets another). */
#ifndef EMBED_TOK_CACHE_H
#define EMBED_TOK_CACHE_H
#include <stddef.h>
#include <stdint.h>

#include "text/tok_unigram.h" /* piece_list */

typedef struct tok_cache tok_cache;

tok_cache *emb_tok_cache_new(void);
void emb_tok_cache_free(tok_cache *c);
/* Empties c unless it already holds the segmentations of tokenizer (owner, fp). */
void emb_tok_cache_bind(tok_cache *c, const void *owner, uint64_t fp);
/* Appends the cached tokens of s[0..len) to out: 1 hit, 0 miss (*h then keys emb_tok_cache_put),
 * -1 out of memory. */
int emb_tok_cache_get(const tok_cache *c, const char *s, size_t len, uint64_t *h, piece_list *out);
/* Remembers the n tokens t of s[0..len) when they fit. */
void emb_tok_cache_put(tok_cache *c, const char *s, size_t len, uint64_t h, const piece_tok *t, size_t n);
#endif
