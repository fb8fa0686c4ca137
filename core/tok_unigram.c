/* Unigram Viterbi (see tok_unigram.h). Pieces are found by extending a prefix one byte at a time
 * in a hash set of every prefix of every piece, stopping at the first prefix no piece has. */
#include "tok_unigram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


int piece_push(piece_list *l, uint32_t a, uint32_t b, int32_t id) {
    if (l->n == l->cap && emb_grow((void **)&l->t, &l->cap, l->n + 1, sizeof *l->t)) return -1;
    l->t[l->n++] = (piece_tok){a, b, id};
    return 0;
}

void tok_unigram_free(tok_unigram *m) {
    emb_vocab_free(m->prefix);
    free(m->score);
    memset(m, 0, sizeof *m);
}

void unigram_scratch_free(unigram_scratch *s) {
    free(s->best);
    free(s->from);
    free(s->id);
    memset(s, 0, sizeof *s);
}

int tok_unigram_build(tok_unigram *m, const emb_vocab *vocab, const double *score, int32_t n, int32_t unk_id,
                      char err[EMB_ERR_LEN]) {
    memset(m, 0, sizeof *m);
    m->prefix = emb_vocab_new();
    m->score = malloc((size_t)(n ? n : 1) * sizeof *m->score);
    if (!m->prefix || !m->score) return emb_fail(err, "out of memory");
    memcpy(m->score, score, (size_t)n * sizeof *score);
    m->n = n;
    m->unk_id = unk_id;
    double mn = INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (score[i] < mn) mn = score[i];
    m->unk_score = mn - 10.0;
    /* pieces first (a later duplicate keeps the later id, as HF's token_to_ids), then prefixes */
    for (int32_t id = 0; id < n; id++) {
        size_t len;
        const char *s = emb_vocab_token(vocab, id, &len);
        if (!s || emb_vocab_find(vocab, s, len) != id || len == 0) continue;
        if (len > m->max_len) m->max_len = len;
        if (emb_vocab_add(m->prefix, s, len, id)) return emb_fail(err, "out of memory");
    }
    for (int32_t id = 0; id < n; id++) {
        size_t len;
        const char *s = emb_vocab_token(vocab, id, &len);
        if (!s || emb_vocab_find(vocab, s, len) != id) continue;
        for (size_t k = 1; k < len; k++)
            if (emb_vocab_find(m->prefix, s, k) < 0 && emb_vocab_add(m->prefix, s, k, n))
                return emb_fail(err, "out of memory");
    }
    return 0;
}

static inline size_t char_len(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

int tok_unigram_encode(const tok_unigram *m, const emb_vocab *vocab, unigram_scratch *sc, const char *s, size_t len,
                       piece_list *out) {
    if (len == 0) return 0;
    if (len + 1 > sc->cap) {
        size_t c1 = sc->cap, c2 = sc->cap, c3 = sc->cap;
        if (emb_grow((void **)&sc->best, &c1, len + 1, sizeof *sc->best) ||
            emb_grow((void **)&sc->from, &c2, len + 1, sizeof *sc->from) ||
            emb_grow((void **)&sc->id, &c3, len + 1, sizeof *sc->id))
            return -1;
        sc->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    }
    for (size_t i = 0; i <= len; i++) sc->from[i] = -1;
    sc->best[0] = 0;
    for (size_t st = 0; st < len; st += char_len((unsigned char)s[st])) {
        if (st > 0 && sc->from[st] < 0) continue; /* cannot happen: every character boundary is reached */
        double base = sc->best[st];
        size_t mb = char_len((unsigned char)s[st]);
        int single = 0;
        size_t lim = len - st < m->max_len ? len - st : m->max_len;
        for (size_t k = 1; k <= lim; k++) {
            int32_t id = emb_vocab_find(m->prefix, s + st, k);
            if (id < 0) break;
            if (id == m->n) continue; /* a prefix, not a piece */
            size_t e = st + k;
            double cand = m->score[id] + base;
            if (sc->from[e] < 0 || cand > sc->best[e]) {
                sc->best[e] = cand;
                sc->from[e] = (int32_t)st;
                sc->id[e] = id;
            }
            if (k == mb) single = 1;
        }
        if (!single) {
            size_t e = st + mb;
            double cand = m->unk_score + base;
            if (sc->from[e] < 0 || cand > sc->best[e]) {
                sc->best[e] = cand;
                sc->from[e] = (int32_t)st;
                sc->id[e] = m->unk_id;
            }
        }
    }
    /* backtrack, fusing consecutive unknowns; the pieces come out reversed */
    size_t first = out->n;
    size_t e = len;
    while (e > 0) {
        size_t st = (size_t)sc->from[e];
        int32_t id = sc->id[e];
        if (id == m->unk_id && out->n > first && out->t[out->n - 1].id == -2) {
            out->t[out->n - 1].a = (uint32_t)st; /* extend the fused unknown run */
        } else if (piece_push(out, (uint32_t)st, (uint32_t)e, id == m->unk_id ? -2 : id)) {
            return -1;
        }
        e = st;
    }
    for (size_t a = first, b = out->n - 1; a < b; a++, b--) {
        piece_tok t = out->t[a];
        out->t[a] = out->t[b];
        out->t[b] = t;
    }
    /* a fused run is looked up as a string, like every HF Unigram result */
    for (size_t q = first; q < out->n; q++)
        if (out->t[q].id == -2) {
            int32_t id = emb_vocab_find(vocab, s + out->t[q].a, out->t[q].b - out->t[q].a);
            out->t[q].id = id >= 0 ? id : m->unk_id;
        }
    return 0;
}
