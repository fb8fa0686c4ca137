/* BPE (HF tokenizers models/bpe): byte-level (GPT-2 / RoBERTa / Qwen, after a ByteLevel
 * pre-tokenizer: bytes mapped to printable characters) or over characters (SentencePiece-style
 * files such as Gemma's: a character missing from the vocabulary becomes its <0xNN> byte pieces
 * with byte_fallback, else the unknown token, fused with fuse_unk); merges applied lowest rank
 * first, leftmost on ties (tok_bpe_merge.c). */
#ifndef EMBED_TOK_BPE_H
#define EMBED_TOK_BPE_H
#include <stddef.h>
#include <stdint.h>

#include "base/emb_common.h"
#include "text/tok_unigram.h" /* piece_list */
#include "text/vocab.h"

typedef struct {
    uint64_t key; /* left id << 32 | right id */
    int32_t rank, out;
} bpe_merge;

typedef struct {
    bpe_merge *m; /* open addressing, power-of-two size */
    size_t mask;
    size_t n;
    int byte_level;
    int32_t byte_id[256]; /* byte-level: the token of each byte's character; else <0xNN> or -1 */
    int32_t ascii_id[128]; /* over characters: the token of each ASCII character, or -1 */
    int ignore_merges, byte_fallback, fuse_unk;
    int32_t unk_id; /* over characters: -1 when the model has none */
} tok_bpe;

typedef struct {
    uint64_t key; /* rank << 32 | position of the left symbol */
    int32_t out;
} bpe_heap_item;

typedef struct {
    int32_t *id;
    uint32_t *end; /* byte end of each symbol in the pre-token */
    int32_t *rank, *out; /* the merge of each symbol with the next: its rank and token */
    int32_t *prev, *next; /* the heap merge's list of symbols */
    size_t cap;
    bpe_heap_item *heap;
    size_t nheap, hcap;
} bpe_scratch;

/* The printable character GPT-2 maps byte b to. */
uint32_t emb_tok_bpe_byte_char(unsigned b);
/* merges: cJSON array of "a b" strings or [a, b] pairs. Set m->byte_level, byte_fallback and
 * unk_id first. */
int emb_tok_bpe_build(tok_bpe *m, const emb_vocab *vocab, const void *merges_json, char err[EMB_ERR_LEN]);
void emb_tok_bpe_free(tok_bpe *m);
void emb_tok_bpe_scratch_free(bpe_scratch *s);
/* Tokens of one pre-token s[0..len) (raw bytes when byte-level); ranges in bytes of s. -1 out
 * of memory. */
int emb_tok_bpe_encode(const tok_bpe *m, const emb_vocab *vocab, bpe_scratch *sc, const char *s, size_t len,
                       piece_list *out);

/* tok_bpe_merge.c. Merges the n symbols sc->id / sc->end by rank in place; the count left. -1
 * out of memory. */
long emb_tok_bpe_merge(const tok_bpe *m, bpe_scratch *sc, size_t n);

static inline size_t emb_tok_bpe_slot(uint64_t key, size_t mask) { /* Fibonacci hashing: high bits mix best */
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

/* The rank of merging tokens a and b (its token in *out), INT32_MAX when there is none. */
static inline int32_t emb_tok_bpe_rank(const tok_bpe *m, int32_t a, int32_t b, int32_t *out) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (size_t i = emb_tok_bpe_slot(key, m->mask);; i = (i + 1) & m->mask) {
        if (m->m[i].rank < 0) return INT32_MAX;
        if (m->m[i].key == key) {
            *out = m->m[i].out;
            return m->m[i].rank;
        }
    }
}
#endif
