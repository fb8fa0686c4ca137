/* BPE: the merge table and the symbols a pre-token starts from (see tok_bpe.h). */
#include "text/tok_bpe.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void emb_tok_bpe_free(tok_bpe *m) {
    free(m->m);
    memset(m, 0, sizeof *m);
}

void emb_tok_bpe_scratch_free(bpe_scratch *s) {
    free(s->id);
    free(s->end);
    free(s->rank);
    free(s->out);
    free(s->prev);
    free(s->next);
    free(s->heap);
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

/* The token each byte starts as (byte-level: its character's, which must exist) or falls back
 * to (<0xNN>, -1 when absent), and the token of each ASCII character. */
static int byte_tokens(tok_bpe *m, const emb_vocab *vocab, char err[EMB_ERR_LEN]) {
    for (unsigned b = 0; b < 256; b++) {
        char u[8];
        int k = m->byte_level ? tok_put_utf8(u, emb_tok_bpe_byte_char(b)) : snprintf(u, sizeof u, "<0x%02X>", b);
        m->byte_id[b] = emb_vocab_find(vocab, u, (size_t)k);
        if (m->byte_id[b] < 0 && m->byte_level)
            return emb_fail(err, "byte-level BPE: the character of byte 0x%02X is not in the vocabulary", b);
        if (b < 128) {
            char c = (char)b;
            m->ascii_id[b] = emb_vocab_find(vocab, &c, 1);
        }
    }
    return 0;
}

int emb_tok_bpe_build(tok_bpe *m, const emb_vocab *vocab, const void *merges_json, char err[EMB_ERR_LEN]) {
    const cJSON *merges = merges_json;
    if (byte_tokens(m, vocab, err)) return -1;
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
        size_t i = emb_tok_bpe_slot(key, m->mask);
        while (m->m[i].rank >= 0 && m->m[i].key != key) i = (i + 1) & m->mask;
        if (m->m[i].rank < 0) { /* a repeated pair keeps its first (best) rank */
            m->m[i] = (bpe_merge){key, (int32_t)rank, o};
            m->n++;
        }
        rank++;
    }
    return 0;
}

/* HF merge_word over the characters of s: each a token of its own, else its <0xNN> bytes
 * (byte_fallback), else the unknown token (consecutive ones fused with fuse_unk; a pending one
 * is written only when a known character or the end comes, after any bytes in between, as HF
 * does); with no unknown token the character is dropped. Ends are HF's sums of lengths. */
static size_t init_chars(const tok_bpe *m, const emb_vocab *vocab, bpe_scratch *sc, const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0, unk_len = 0;
    uint32_t pos = 0;
#define PUSH(tok, l) (sc->id[n] = (tok), pos += (uint32_t)(l), sc->end[n++] = pos)
    for (size_t i = 0; i < len;) {
        int k;
        tok_get_utf8(u + i, &k);
        int32_t id = k == 1 ? m->ascii_id[u[i]] : emb_vocab_find(vocab, s + i, (size_t)k);
        if (id >= 0) {
            if (unk_len) PUSH(m->unk_id, unk_len);
            unk_len = 0;
            PUSH(id, k);
        } else if (m->byte_fallback && m->byte_id[u[i]] >= 0 && (k < 2 || m->byte_id[u[i + 1]] >= 0) &&
                   (k < 3 || m->byte_id[u[i + 2]] >= 0) && (k < 4 || m->byte_id[u[i + 3]] >= 0)) {
            for (int b = 0; b < k; b++) PUSH(m->byte_id[u[i + (size_t)b]], 1);
        } else if (m->unk_id >= 0) {
            if (unk_len && !m->fuse_unk) {
                PUSH(m->unk_id, unk_len);
                unk_len = 0;
            }
            unk_len += (size_t)k;
        }
        i += (size_t)k;
    }
    if (unk_len) PUSH(m->unk_id, unk_len);
#undef PUSH
    return n;
}

static int grow_scratch(bpe_scratch *sc, size_t len) {
    if (len <= sc->cap) return 0;
    size_t c[6] = {sc->cap, sc->cap, sc->cap, sc->cap, sc->cap, sc->cap};
    if (emb_grow((void **)&sc->id, &c[0], len, sizeof *sc->id) ||
        emb_grow((void **)&sc->end, &c[1], len, sizeof *sc->end) ||
        emb_grow((void **)&sc->rank, &c[2], len, sizeof *sc->rank) ||
        emb_grow((void **)&sc->out, &c[3], len, sizeof *sc->out) ||
        emb_grow((void **)&sc->prev, &c[4], len, sizeof *sc->prev) ||
        emb_grow((void **)&sc->next, &c[5], len, sizeof *sc->next))
        return -1;
    size_t mn = c[0];
    for (int i = 1; i < 6; i++)
        if (c[i] < mn) mn = c[i];
    sc->cap = mn;
    return 0;
}

/* ignore_merges: a pre-token that is a token as a whole is that token */
static int32_t whole_token(const tok_bpe *m, const emb_vocab *vocab, const char *s, size_t len) {
    if (!m->byte_level) return emb_vocab_find(vocab, s, len);
    char buf[256];
    size_t bl = 0;
    for (size_t i = 0; i < len && bl + 2 <= sizeof buf; i++)
        bl += (size_t)tok_put_utf8(buf + bl, emb_tok_bpe_byte_char((unsigned char)s[i]));
    return bl < sizeof buf - 2 ? emb_vocab_find(vocab, buf, bl) : -1;
}

int emb_tok_bpe_encode(const tok_bpe *m, const emb_vocab *vocab, bpe_scratch *sc, const char *s, size_t len,
                       piece_list *out) {
    if (len == 0) return 0;
    if (grow_scratch(sc, len)) return -1;
    if (m->ignore_merges) {
        int32_t id = whole_token(m, vocab, s, len);
        if (id >= 0) return emb_tok_unigram_piece_push(out, 0, (uint32_t)len, id);
    }
    size_t n = len;
    if (m->byte_level) {
        for (size_t i = 0; i < len; i++) {
            sc->id[i] = m->byte_id[(unsigned char)s[i]];
            sc->end[i] = (uint32_t)i + 1;
        }
    } else {
        n = init_chars(m, vocab, sc, s, len);
    }
    long left = emb_tok_bpe_merge(m, sc, n);
    if (left < 0) return -1;
    uint32_t a = 0;
    for (long i = 0; i < left; i++) {
        if (emb_tok_unigram_piece_push(out, a, sc->end[i], sc->id[i])) return -1;
        a = sc->end[i];
    }
    return 0;
}
