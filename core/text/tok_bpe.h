/* Byte-level BPE (GPT-2 / RoBERTa; HF tokenizers models/bpe + pre_tokenizers/byte_level): the
 * GPT-2 pre-tokenizer regex written out by hand, bytes mapped to printable characters, merges
 * applied lowest rank first (leftmost on ties). */
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
    int32_t byte_id[256]; /* the token of each byte's character */
    int ignore_merges;
} tok_bpe;

typedef struct {
    int32_t *id;
    uint32_t *end; /* byte end of each symbol in the pre-token */
    int32_t *rank, *out; /* the merge of each symbol with the next: its rank and token */
    size_t cap;
} bpe_scratch;

/* The printable character GPT-2 maps byte b to. */
uint32_t emb_tok_bpe_byte_char(unsigned b);
/* merges: cJSON array of "a b" strings or [a, b] pairs. */
int emb_tok_bpe_build(tok_bpe *m, const emb_vocab *vocab, const void *merges_json, char err[EMB_ERR_LEN]);
void emb_tok_bpe_free(tok_bpe *m);
void emb_tok_bpe_scratch_free(bpe_scratch *s);
/* Tokens of the raw bytes s[0..len) (one pre-token); ranges in bytes of s. -1 out of memory. */
int emb_tok_bpe_encode(const tok_bpe *m, const emb_vocab *vocab, bpe_scratch *sc, const char *s, size_t len,
                       piece_list *out);
/* Length of the GPT-2 regex match at s[i..len) (len > i). */
size_t emb_tok_bpe_split_next(const char *s, size_t len, size_t i);
#endif
