/* SentencePiece Unigram model (HF tokenizers models/unigram): Viterbi over the pieces of a
 * pre-token, scores as double, unknown characters scored min_score - 10 and consecutive unknowns
 * fused into one token, as HF's encode_optimized does. */
#ifndef EMBED_TOK_UNIGRAM_H
#define EMBED_TOK_UNIGRAM_H
#include <stddef.h>
#include <stdint.h>

#include "emb_common.h"
#include "vocab.h"

typedef struct {
    emb_vocab *prefix; /* every prefix of every piece: the piece's id, or n for a bare prefix */
    double *score;     /* by id */
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

int tok_unigram_build(tok_unigram *m, const emb_vocab *vocab, const double *score, int32_t n, int32_t unk_id,
                      char err[EMB_ERR_LEN]);
void tok_unigram_free(tok_unigram *m);
void unigram_scratch_free(unigram_scratch *s);
/* Appends the tokens of s[0..len) to out. -1 out of memory. */
int tok_unigram_encode(const tok_unigram *m, const emb_vocab *vocab, unigram_scratch *sc, const char *s, size_t len,
                       piece_list *out);
int piece_push(piece_list *l, uint32_t a, uint32_t b, int32_t id);
#endif
