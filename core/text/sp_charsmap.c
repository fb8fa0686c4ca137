/* SentencePiece precompiled charsmap (see sp_charsmap.h). Layout (sentencepiece
 * normalizer.cc, spm_precompiled): u32 LE trie size in bytes, the trie's u32 LE units, then the
 * replacement pool. */
#include "text/sp_charsmap.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "base/utf8.h"

static int b64_val(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* standard base64 with optional '=' padding; -1 on a bad character or length */
static long b64_decode(const char *s, unsigned char *out) {
    size_t n = strlen(s);
    while (n && s[n - 1] == '=') n--;
    if (n % 4 == 1) return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_val((unsigned char)s[i]);
        if (v < 0) return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)o;
}

void emb_sp_charsmap_free(sp_charsmap *m) {
    free(m->unit);
    free(m->pool);
    memset(m, 0, sizeof *m);
}

int emb_sp_charsmap_load(sp_charsmap *m, const char *b64, char err[EMB_ERR_LEN]) {
    memset(m, 0, sizeof *m);
    unsigned char *raw = malloc(strlen(b64) / 4 * 3 + 4);
    if (!raw) return emb_fail(err, "out of memory");
    long n = b64_decode(b64, raw);
    if (n < 0) {
        free(raw);
        return emb_fail(err, "precompiled_charsmap is not valid base64");
    }
    uint32_t tsize =
        n >= 4 ? (uint32_t)raw[0] | (uint32_t)raw[1] << 8 | (uint32_t)raw[2] << 16 | (uint32_t)raw[3] << 24 : 0;
    if (n < 8 || tsize < 4 || tsize % 4 || (uint64_t)tsize > (uint64_t)n - 4) {
        free(raw);
        return emb_fail(err, "precompiled_charsmap is truncated (%ld bytes, trie of %u bytes)", n, tsize);
    }
    m->n_units = tsize / 4;
    m->pool_len = (size_t)n - 4 - tsize;
    m->unit = malloc(tsize);
    m->pool = malloc(m->pool_len + 1);
    if (!m->unit || !m->pool) {
        free(raw);
        emb_sp_charsmap_free(m);
        return emb_fail(err, "out of memory");
    }
    for (size_t i = 0; i < m->n_units; i++) {
        const unsigned char *p = raw + 4 + 4 * i;
        m->unit[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
    memcpy(m->pool, raw + 4 + tsize, m->pool_len);
    m->pool[m->pool_len] = 0;
    free(raw);
    size_t bad;
    if (!emb_utf8_valid(m->pool, m->pool_len, &bad)) {
        emb_sp_charsmap_free(m);
        return emb_fail(err, "precompiled_charsmap: its replacements are not valid UTF-8 (byte %zu)", bad);
    }
    for (int c = 0; c < 128; c++) {
        char k = (char)c;
        size_t rl;
        m->ascii_mapped[c] = c == 0 || emb_sp_charsmap_lookup(m, &k, 1, &rl) != NULL;
    }
    return 0;
}

/* darts-clone unit fields */
static inline int has_leaf(uint32_t u) { return (u >> 8) & 1; }
static inline uint32_t value_of(uint32_t u) { return u & 0x7FFFFFFFu; }
static inline uint32_t label_of(uint32_t u) { return u & 0x800000FFu; }
static inline uint32_t offset_of(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

const char *emb_sp_charsmap_lookup(const sp_charsmap *m, const char *s, size_t len, size_t *out_len) {
    if (!m->n_units) return NULL;
    size_t pos = offset_of(m->unit[0]);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0) break;
        pos ^= c;
        if (pos >= m->n_units) return NULL;
        uint32_t u = m->unit[pos];
        if (label_of(u) != c) return NULL;
        pos ^= offset_of(u);
        if (pos >= m->n_units) return NULL;
        if (has_leaf(u)) {
            uint32_t v = value_of(m->unit[pos]);
            /* a replacement must start inside the pool, on a character boundary */
            if (v >= m->pool_len || ((unsigned char)m->pool[v] & 0xC0) == 0x80) return NULL;
            *out_len = strlen(m->pool + v);
            return m->pool + v;
        }
    }
    return NULL;
}

static size_t count_chars(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* HF precompiled.rs replace(): the new characters replace the old ones one for one; extra ones
 * are inserted (change 1), missing ones are removed by the last entry so far. */
static void replace_part(tlist *l, size_t old_chars, const char *r, size_t rlen) {
    size_t nc = 0, i = 0;
    while (i < rlen) {
        int k;
        uint32_t c = tok_get_utf8((const unsigned char *)r + i, &k);
        emb_tok_nstr_tlist_push(l, c, 0);
        i += (size_t)k;
        nc++;
    }
    if (l->oom) return;
    if (nc > old_chars) {
        for (size_t j = 0; j < nc - old_chars; j++) l->t[l->n - 1 - j].change = 1;
    } else if (nc < old_chars && l->n > 0) {
        l->t[l->n - 1].change -= (int32_t)(old_chars - nc);
    }
}

int emb_sp_charsmap_precompiled(const sp_charsmap *m, const nstr *src, nstr *dst, tlist *l) {
    const unsigned char *u = (const unsigned char *)src->b;
    /* ASCII text whose characters the map leaves alone (a grapheme of its own unless CR LF) */
    size_t i = 0;
    while (i < src->n && u[i] < 0x80 && !m->ascii_mapped[u[i]] && u[i] != '\r') i++;
    if (i == src->n) return 0;
    i = 0;
    l->n = 0;
    l->oom = 0;
    int modified = 0;
    while (i < src->n) {
        /* one extended grapheme cluster [i, e) */
        int k;
        int32_t prev = (int32_t)tok_get_utf8(u + i, &k), state = 0;
        size_t e = i + (size_t)k;
        while (e < src->n) {
            int32_t c = (int32_t)tok_get_utf8(u + e, &k);
            if (utf8proc_grapheme_break_stateful(prev, c, &state)) break;
            prev = c;
            e += (size_t)k;
        }
        size_t rl;
        const char *r;
        if (e - i < 6 && (r = emb_sp_charsmap_lookup(m, src->b + i, e - i, &rl))) {
            modified = 1;
            replace_part(l, count_chars(src->b + i, e - i), r, rl);
        } else {
            for (size_t p = i; p < e; p += (size_t)k) {
                uint32_t c = tok_get_utf8(u + p, &k);
                if ((r = emb_sp_charsmap_lookup(m, src->b + p, (size_t)k, &rl))) {
                    modified = 1;
                    replace_part(l, 1, r, rl);
                } else {
                    emb_tok_nstr_tlist_push(l, c, 0);
                }
            }
        }
        i = e;
    }
    if (!modified) return 0;
    emb_tok_nstr_transform(dst, src, l);
    return 1;
}
