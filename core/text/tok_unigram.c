/* Unigram Viterbi (see tok_unigram.h). Pieces are found by walking a byte trie of every piece
 * (children kept sorted, found by binary search; the root's by a table). */
#include "text/tok_unigram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int emb_tok_unigram_piece_push(piece_list *l, uint32_t a, uint32_t b, int32_t id) {
    if (l->n == l->cap && emb_grow((void **)&l->t, &l->cap, l->n + 1, sizeof *l->t)) return -1;
    l->t[l->n++] = (piece_tok){a, b, id};
    return 0;
}

void emb_tok_unigram_free(tok_unigram *m) {
    free(m->node);
    free(m->label);
    free(m->kid);
    free(m->direct);
    free(m->score);
    memset(m, 0, sizeof *m);
}

void emb_tok_unigram_scratch_free(unigram_scratch *s) {
    free(s->best);
    free(s->from);
    free(s->id);
    memset(s, 0, sizeof *s);
}

#define MAX_PIECE 1024
#define DIRECT_MIN 12 /* children from which a node gets a table instead of a binary search */

typedef struct {
    const char *s;
    uint32_t len;
    int32_t id;
} piece_ref;

static int cmp_piece(const void *x, const void *y) {
    const piece_ref *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int64_t new_node(tok_unigram *m) {
    if (m->n_node == m->cap_node && emb_grow((void **)&m->node, &m->cap_node, m->n_node + 1, sizeof *m->node))
        return -1;
    m->node[m->n_node] = (trie_node){-1, 0, 0, -1};
    return (int64_t)m->n_node++;
}

/* the subtree of node for the sorted pieces p[lo, hi), which share their first depth bytes */
static int build(tok_unigram *m, const piece_ref *p, size_t lo, size_t hi, uint32_t depth, uint32_t node) {
    if (lo < hi && p[lo].len == depth) m->node[node].id = p[lo++].id;
    uint32_t groups = 0;
    for (size_t i = lo; i < hi; i++)
        if (i == lo || p[i].s[depth] != p[i - 1].s[depth]) groups++;
    size_t first = m->n_edge;
    if (first + groups > m->cap_edge) {
        size_t c1 = m->cap_edge, c2 = m->cap_edge;
        if (emb_grow((void **)&m->label, &c1, first + groups, 1) ||
            emb_grow((void **)&m->kid, &c2, first + groups, sizeof *m->kid))
            return -1;
        m->cap_edge = c1 < c2 ? c1 : c2;
    }
    m->n_edge += groups;
    m->node[node].first = (uint32_t)first;
    m->node[node].nkids = groups;
    size_t g = 0;
    for (size_t i = lo; i < hi;) {
        size_t j = i + 1;
        while (j < hi && p[j].s[depth] == p[i].s[depth]) j++;
        int64_t kid = new_node(m);
        if (kid < 0) return -1;
        m->label[first + g] = (uint8_t)p[i].s[depth];
        m->kid[first + g] = (uint32_t)kid;
        g++;
        if (build(m, p, i, j, depth + 1, (uint32_t)kid)) return -1;
        i = j;
    }
    return 0;
}

int emb_tok_unigram_build(tok_unigram *m, const emb_vocab *vocab, const double *score, int32_t n, int32_t unk_id,
                          char err[EMB_ERR_LEN]) {
    memset(m, 0, sizeof *m);
    m->score = malloc((size_t)(n ? n : 1) * sizeof *m->score);
    piece_ref *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!m->score || !p || new_node(m) < 0) {
        free(p);
        return emb_fail(err, "out of memory");
    }
    memcpy(m->score, score, (size_t)n * sizeof *score);
    m->n = n;
    m->unk_id = unk_id;
    double mn = INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (score[i] < mn) mn = score[i];
    m->unk_score = mn - 10.0;
    /* every piece once, with the id a lookup finds (a later duplicate wins, as HF's token_to_ids) */
    size_t np = 0;
    for (int32_t id = 0; id < n; id++) {
        size_t len;
        const char *s = emb_vocab_token(vocab, id, &len);
        if (!s || len == 0 || emb_vocab_find(vocab, s, len) != id) continue;
        if (len > MAX_PIECE) { /* SentencePiece's own limit is 16 characters; the trie is built by recursion */
            free(p);
            return emb_fail(err, "Unigram piece %d is longer than %d bytes", id, MAX_PIECE);
        }
        if (len > m->max_len) m->max_len = len;
        p[np++] = (piece_ref){s, (uint32_t)len, id};
    }
    qsort(p, np, sizeof *p, cmp_piece);
    int rc = build(m, p, 0, np, 0, 0);
    free(p);
    if (rc) return emb_fail(err, "out of memory");
    /* a table of 256 for every node with many children (the root, the node after '▁'...) */
    size_t nd = 0;
    for (size_t i = 0; i < m->n_node; i++) nd += i == 0 || m->node[i].nkids >= DIRECT_MIN;
    m->direct = calloc(nd * 256, sizeof *m->direct);
    if (!m->direct) return emb_fail(err, "out of memory");
    for (size_t i = 0; i < m->n_node; i++) {
        trie_node *t = &m->node[i];
        if (i && t->nkids < DIRECT_MIN) continue;
        t->direct = (int32_t)m->n_direct++;
        for (uint32_t k = 0; k < t->nkids; k++)
            m->direct[(size_t)t->direct * 256 + m->label[t->first + k]] = m->kid[t->first + k];
    }
    return 0;
}

/* the child of node under byte c, 0 if none */
static inline uint32_t child(const tok_unigram *m, uint32_t node, unsigned char c) {
    const trie_node *t = &m->node[node];
    if (t->direct >= 0) return m->direct[(size_t)t->direct * 256 + c];
    const uint8_t *lab = m->label + t->first;
    uint32_t lo = 0, hi = t->nkids;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (lab[mid] < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->nkids && lab[lo] == c ? m->kid[t->first + lo] : 0;
}

static inline size_t char_len(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

int emb_tok_unigram_encode(const tok_unigram *m, const emb_vocab *vocab, unigram_scratch *sc, const char *s,
                           size_t len, piece_list *out) {
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
        uint32_t node = 0;
        for (size_t k = 1; st + k <= len; k++) {
            node = child(m, node, (unsigned char)s[st + k - 1]);
            if (!node) break;
            int32_t id = m->node[node].id;
            if (id < 0) continue; /* a prefix, not a piece */
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
        } else if (emb_tok_unigram_piece_push(out, (uint32_t)st, (uint32_t)e, id == m->unk_id ? -2 : id)) {
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
