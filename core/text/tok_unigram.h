/* SentencePiece Unigram model (HF tokenizers models/unigram): Viterbi over the pieces of a
 * pre-token, scores as double, unknown characters scored min_score - 10 and consecutive unknowns
 * fused into one token, as HF's encode_optimized does. */
#ifndef EMBED_TOK_UNIGRAM_H
#define EMBED_TOK_UNIGRAM_H
#include <stddef.h>
#include <stdint.h>

#include "base/emb_common.h"
#include "text/vocab.h"

typedef struct {
    int32_t id; /* the piece ending here, -1 none */
    uint32_t first; /* its children: labels / kids [first, first + nkids), labels ascending */
    uint32_t nkids;
    int32_t direct; /* nodes with many children: their table in direct[256 * k], else -1 */
} trie_node;

typedef struct {
    trie_node *node; /* node 0 is the root */
    uint8_t *label;
    uint32_t *kid;
    size_t n_node, n_edge, cap_node, cap_edge;
    uint32_t *direct; /* 256 children (0: none) per node with many children */
    size_t n_direct;
    double *score; /* by id */
    int32_t n;
    int32_t unk_id;
    double unk_score;
    size_t max_len;
} tok_unigram;

typedef struct {
    double *best;
    int32_t *from, *id;
    size_t cap;
} unigram_scratch;

/* One segment result: token byte ranges in the pre-token and ids. */
typedef struct {
    uint32_t a, b;
    int32_t id;
} piece_tok;

typedef struct {
    piece_tok *t;
    size_t n, cap;
} piece_list;

int emb_tok_unigram_build(tok_unigram *m, const emb_vocab *vocab, const double *score, int32_t n, int32_t unk_id,
                          char err[EMB_ERR_LEN]);
void emb_tok_unigram_free(tok_unigram *m);
void emb_tok_unigram_scratch_free(unigram_scratch *s);
/* Appends the tokens of s[0..len) to out. -1 out of memory. */
int emb_tok_unigram_encode(const tok_unigram *m, const emb_vocab *vocab, unigram_scratch *sc, const char *s,
                           size_t len, piece_list *out);
int emb_tok_unigram_piece_push(piece_list *l, uint32_t a, uint32_t b, int32_t id);
#endif
