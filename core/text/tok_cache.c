/* Segmentation cache (see tok_cache.h). */
#include "text/tok_cache.h"

#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define SLOTS 16384 /* HF keeps 10,000 words */
#define KEY_MAX 40
#define TOK_MAX 10

/* hash, lengths and key first: a miss reads one cache line */
typedef struct {
    uint64_t h;
    uint8_t klen, ntok; /* ntok 0: empty */
    char key[KEY_MAX];
    uint8_t a[TOK_MAX], b[TOK_MAX];
    int32_t id[TOK_MAX];
} entry;

struct tok_cache {
    const void *owner;
    uint64_t fp;
    entry e[SLOTS];
};

tok_cache *emb_tok_cache_new(void) { return calloc(1, sizeof(tok_cache)); }
void emb_tok_cache_free(tok_cache *c) { free(c); }

void emb_tok_cache_bind(tok_cache *c, const void *owner, uint64_t fp) {
    if (c->owner == owner && c->fp == fp) return;
    memset(c->e, 0, sizeof c->e);
    c->owner = owner;
    c->fp = fp;
}

int emb_tok_cache_get(const tok_cache *c, const char *s, size_t len, uint64_t *h, piece_list *out) {
    if (len > KEY_MAX) return 0;
    *h = XXH3_64bits(s, len);
    const entry *e = &c->e[*h & (SLOTS - 1)];
    if (!e->ntok || e->h != *h || e->klen != len || memcmp(e->key, s, len) != 0) return 0;
    for (int i = 0; i < e->ntok; i++)
        if (emb_tok_unigram_piece_push(out, e->a[i], e->b[i], e->id[i])) return -1;
    return 1;
}

void emb_tok_cache_put(tok_cache *c, const char *s, size_t len, uint64_t h, const piece_tok *t, size_t n) {
    if (len > KEY_MAX || n == 0 || n > TOK_MAX) return;
    entry *e = &c->e[h & (SLOTS - 1)];
    e->h = h;
    e->klen = (uint8_t)len;
    e->ntok = (uint8_t)n;
    memcpy(e->key, s, len);
    for (size_t i = 0; i < n; i++) {
        e->a[i] = (uint8_t)t[i].a;
        e->b[i] = (uint8_t)t[i].b;
        e->id[i] = t[i].id;
    }
}
