/* Byte-level BPE (see tok_bpe.h). */
#include "text/tok_bpe.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "text/tok_nstr.h"

uint32_t emb_tok_bpe_byte_char(unsigned b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return b;
    /* the others, in byte order, from U+0100 */
    unsigned k = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) k++;
    return 0x100 + k;
}

static inline size_t slot_of(uint64_t key, size_t mask) { /* Fibonacci hashing: the high bits mix best */
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

static const bpe_merge *find_merge(const tok_bpe *m, int32_t a, int32_t b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (size_t i = slot_of(key, m->mask);; i = (i + 1) & m->mask) {
        if (m->m[i].rank < 0) return NULL;
        if (m->m[i].key == key) return &m->m[i];
    }
}

static inline int32_t pair_rank(const tok_bpe *m, int32_t a, int32_t b, int32_t *out) {
    const bpe_merge *g = find_merge(m, a, b);
    if (!g) return INT32_MAX;
    *out = g->out;
    return g->rank;
}

void emb_tok_bpe_free(tok_bpe *m) {
    free(m->m);
    memset(m, 0, sizeof *m);
}

void emb_tok_bpe_scratch_free(bpe_scratch *s) {
    free(s->id);
    free(s->end);
    free(s->rank);
    free(s->out);
    memset(s, 0, sizeof *s);
}

/* token id of the byte-level string of a merge side, or a load error naming it */
static int side_id(const emb_vocab *v, const char *s, size_t len, size_t rank, int32_t *id,
                   char err[EMB_ERR_LEN]) {
    *id = emb_vocab_find(v, s, len);
    if (*id < 0)
        return emb_fail(err, "BPE merge %zu names '%.*s', which is not in the vocabulary", rank,
                        (int)(len > 40 ? 40 : len), s);
    return 0;
}

int emb_tok_bpe_build(tok_bpe *m, const emb_vocab *vocab, const void *merges_json, char err[EMB_ERR_LEN]) {
    const cJSON *merges = merges_json;
    memset(m, 0, sizeof *m);
    for (unsigned b = 0; b < 256; b++) {
        char u[4];
        int k = tok_put_utf8(u, emb_tok_bpe_byte_char(b));
        m->byte_id[b] = emb_vocab_find(vocab, u, (size_t)k);
        if (m->byte_id[b] < 0)
            return emb_fail(err, "byte-level BPE: the character of byte 0x%02X is not in the vocabulary", b);
    }
    size_t n = (size_t)cJSON_GetArraySize(merges), cap = 16;
    while (cap < n * 2) cap *= 2;
    m->m = malloc(cap * sizeof *m->m);
    if (!m->m) return emb_fail(err, "out of memory");
    for (size_t i = 0; i < cap; i++) m->m[i].rank = -1;
    m->mask = cap - 1;
    size_t rank = 0;
    const cJSON *e;
    char buf[1024];
    cJSON_ArrayForEach(e, merges) {
        const char *l, *r;
        size_t ll, rl;
        if (cJSON_IsString(e)) {
            const char *s = e->valuestring, *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' '))
                return emb_fail(err, "BPE merge %zu is not two tokens separated by one space", rank);
            l = s;
            ll = (size_t)(sp - s);
            r = sp + 1;
            rl = strlen(r);
        } else if (cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
            l = cJSON_GetArrayItem(e, 0)->valuestring;
            r = cJSON_GetArrayItem(e, 1)->valuestring;
            ll = strlen(l);
            rl = strlen(r);
        } else {
            return emb_fail(err, "BPE merge %zu is neither \"a b\" nor [\"a\", \"b\"]", rank);
        }
        if (ll + rl >= sizeof buf) return emb_fail(err, "BPE merge %zu is too long", rank);
        int32_t a, b, o;
        memcpy(buf, l, ll);
        memcpy(buf + ll, r, rl);
        if (side_id(vocab, l, ll, rank, &a, err) || side_id(vocab, r, rl, rank, &b, err)) return -1;
        o = emb_vocab_find(vocab, buf, ll + rl);
        if (o < 0)
            return emb_fail(err, "BPE merge %zu: the merged token '%.*s' is not in the vocabulary", rank,
                            (int)((ll + rl) > 40 ? 40 : ll + rl), buf);
        uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
        size_t i = slot_of(key, m->mask);
        while (m->m[i].rank >= 0 && m->m[i].key != key) i = (i + 1) & m->mask;
        if (m->m[i].rank < 0) { /* a repeated pair keeps its first (best) rank */
            m->m[i] = (bpe_merge){key, (int32_t)rank, o};
            m->n++;
        }
        rank++;
    }
    return 0;
}

int emb_tok_bpe_encode(const tok_bpe *m, const emb_vocab *vocab, bpe_scratch *sc, const char *s, size_t len,
                       piece_list *out) {
    if (len == 0) return 0;
    if (len > sc->cap) {
        size_t c1 = sc->cap, c2 = sc->cap, c3 = sc->cap, c4 = sc->cap;
        if (emb_grow((void **)&sc->id, &c1, len, sizeof *sc->id) ||
            emb_grow((void **)&sc->end, &c2, len, sizeof *sc->end) ||
            emb_grow((void **)&sc->rank, &c3, len, sizeof *sc->rank) ||
            emb_grow((void **)&sc->out, &c4, len, sizeof *sc->out))
            return -1;
        sc->cap = c1 < c2 ? c1 : c2;
        if (c3 < sc->cap) sc->cap = c3;
        if (c4 < sc->cap) sc->cap = c4;
    }
    const unsigned char *u = (const unsigned char *)s;
    if (m->ignore_merges) {
        char buf[256];
        size_t bl = 0;
        for (size_t i = 0; i < len && bl + 2 <= sizeof buf; i++)
            bl += (size_t)tok_put_utf8(buf + bl, emb_tok_bpe_byte_char(u[i]));
        int32_t id = bl < sizeof buf - 2 ? emb_vocab_find(vocab, buf, bl) : -1;
        if (id >= 0) return emb_tok_unigram_piece_push(out, 0, (uint32_t)len, id);
    }
    size_t n = len;
    for (size_t i = 0; i < len; i++) {
        sc->id[i] = m->byte_id[u[i]];
        sc->end[i] = (uint32_t)i + 1;
    }
    /* rank[i]: the rank of the merge of symbols i and i + 1 (INT32_MAX: none) */
    for (size_t i = 0; i + 1 < n; i++) sc->rank[i] = pair_rank(m, sc->id[i], sc->id[i + 1], &sc->out[i]);
    while (n > 1) { /* the lowest-ranked adjacent pair, leftmost on ties */
        int32_t best = INT32_MAX;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++)
            if (sc->rank[i] < best) {
                best = sc->rank[i];
                at = i;
            }
        if (best == INT32_MAX) break;
        sc->id[at] = sc->out[at];
        sc->end[at] = sc->end[at + 1];
        size_t tail = n - at - 2;
        memmove(sc->id + at + 1, sc->id + at + 2, tail * sizeof *sc->id);
        memmove(sc->end + at + 1, sc->end + at + 2, tail * sizeof *sc->end);
        memmove(sc->rank + at + 1, sc->rank + at + 2, tail * sizeof *sc->rank);
        memmove(sc->out + at + 1, sc->out + at + 2, tail * sizeof *sc->out);
        n--;
        if (at > 0) sc->rank[at - 1] = pair_rank(m, sc->id[at - 1], sc->id[at], &sc->out[at - 1]);
        if (at + 1 < n) sc->rank[at] = pair_rank(m, sc->id[at], sc->id[at + 1], &sc->out[at]);
    }
    uint32_t a = 0;
    for (size_t i = 0; i < n; i++) {
        if (emb_tok_unigram_piece_push(out, a, sc->end[i], sc->id[i])) return -1;
        a = sc->end[i];
    }
    return 0;
}

/* ---- GPT-2 pre-tokenizer: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */

enum { C_L, C_N, C_WS, C_OTHER };

static int cls_of(uint32_t c) {
    if (c < 0x80) {
        if ((c | 32) >= 'a' && (c | 32) <= 'z') return C_L;
        if (c >= '0' && c <= '9') return C_N;
        if (tok_is_ws(c)) return C_WS;
        return C_OTHER;
    }
    if (tok_is_ws(c)) return C_WS;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return C_L;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return C_N;
    default: return C_OTHER;
    }
}

static inline int cls_at(const char *s, size_t i, int *k) {
    return cls_of(tok_get_utf8((const unsigned char *)s + i, k));
}

/* end of the run of class cl starting at i */
static size_t run_end(const char *s, size_t len, size_t i, int cl) {
    while (i < len) {
        int k;
        if (cls_at(s, i, &k) != cl) break;
        i += (size_t)k;
    }
    return i;
}

size_t emb_tok_bpe_split_next(const char *s, size_t len, size_t i) {
    if (s[i] == '\'' && i + 1 < len) {
        char a = s[i + 1], b = i + 2 < len ? s[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    int k;
    int cl = cls_at(s, i, &k);
    size_t j = i;
    if (s[i] == ' ' && i + 1 < len) { /* " ?" then a run of letters, digits or others */
        int k2;
        int c2 = cls_at(s, i + 1, &k2);
        if (c2 != C_WS) return run_end(s, len, i + 1, c2) - i;
    }
    if (cl != C_WS) return run_end(s, len, i, cl) - i;
    j = run_end(s, len, i, C_WS);
    if (j < len) { /* \s+(?!\S): give the last whitespace character back to what follows */
        size_t p = j - 1;
        while (p > i && ((unsigned char)s[p] & 0xC0) == 0x80) p--;
        if (p > i) return p - i;
    }
    return j - i; /* \s+ */
}
