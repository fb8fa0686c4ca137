/* Normalized strings with per-byte original spans (see tok_nstr.h). */
#include "text/tok_nstr.h"

#include <stdlib.h>
#include <string.h>

#include "base/emb_common.h"

void emb_tok_nstr_free(nstr *s) {
    free(s->b);
    free(s->al);
    memset(s, 0, sizeof *s);
}

static int reserve(nstr *s, size_t need) {
    if (need <= s->cap) return 0;
    size_t cap = s->cap;
    if (emb_grow((void **)&s->b, &cap, need, 1)) {
        s->oom = 1;
        return -1;
    }
    size_t cap2 = s->cap;
    if (emb_grow((void **)&s->al, &cap2, need, sizeof *s->al)) {
        s->oom = 1;
        return -1;
    }
    s->cap = cap < cap2 ? cap : cap2;
    return 0;
}

/* appends character c (UTF-8) with span al */
static inline void push_cp(nstr *s, uint32_t c, int32_t st, int32_t en) {
    if (s->n + 4 > s->cap && reserve(s, s->n + 4)) return;
    int k = tok_put_utf8(s->b + s->n, c);
    for (int i = 0; i < k; i++) {
        s->al[s->n + i][0] = st;
        s->al[s->n + i][1] = en;
    }
    s->n += (size_t)k;
}

void emb_tok_nstr_from_raw(nstr *s, const char *t, size_t len, int32_t base) {
    s->n = 0;
    s->oom = 0;
    if (reserve(s, len + 1)) return;
    memcpy(s->b, t, len);
    size_t i = 0;
    while (i < len) {
        int k;
        tok_get_utf8((const unsigned char *)t + i, &k);
        for (int j = 0; j < k; j++) {
            s->al[i + (size_t)j][0] = base + (int32_t)i;
            s->al[i + (size_t)j][1] = base + (int32_t)i + k;
        }
        i += (size_t)k;
    }
    s->n = len;
}

void emb_tok_nstr_tlist_push(tlist *l, uint32_t c, int32_t change) {
    if (l->n == l->cap && emb_grow((void **)&l->t, &l->cap, l->n + 1, sizeof *l->t)) {
        l->oom = 1;
        return;
    }
    l->t[l->n++] = (tchar){c, change};
}

void emb_tok_nstr_tlist_free(tlist *l) {
    free(l->t);
    memset(l, 0, sizeof *l);
}

/* HF transform_range over the whole string with initial_offset 0: a replacing character takes
 * the span of the original character at the current offset, an inserted one the span of the
 * byte before it; removed characters are skipped. */
void emb_tok_nstr_transform(nstr *dst, const nstr *src, const tlist *l) {
    dst->n = 0;
    dst->oom = src->oom || l->oom;
    size_t off = 0;
    for (size_t k = 0; k < l->n; k++) {
        int32_t ch = l->t[k].change;
        int32_t st = 0, en = 0;
        if (ch > 0) {
            if (off >= 1 && off - 1 < src->n) {
                st = src->al[off - 1][0];
                en = src->al[off - 1][1];
            }
        } else if (off < src->n) {
            st = src->al[off][0];
            en = src->al[off][1];
        }
        if (ch <= 0) {
            int64_t take = 1 + (ch < 0 ? -(int64_t)ch : 0);
            for (int64_t r = 0; r < take && off < src->n; r++) {
                int nb;
                tok_get_utf8((const unsigned char *)src->b + off, &nb);
                off += (size_t)nb;
            }
        }
        push_cp(dst, l->t[k].c, st, en);
    }
}

void emb_tok_nstr_strip(nstr *s, int left, int right) {
    size_t a = 0, b = s->n;
    if (left)
        while (a < b) {
            int k;
            uint32_t c = tok_get_utf8((const unsigned char *)s->b + a, &k);
            if (!tok_is_ws(c)) break;
            a += (size_t)k;
        }
    if (right)
        while (b > a) {
            size_t p = b - 1;
            while (p > a && ((unsigned char)s->b[p] & 0xC0) == 0x80) p--;
            int k;
            uint32_t c = tok_get_utf8((const unsigned char *)s->b + p, &k);
            if (!tok_is_ws(c)) break;
            b = p;
        }
    if (a) {
        memmove(s->b, s->b + a, b - a);
        memmove(s->al, s->al + a, (b - a) * sizeof *s->al);
    }
    s->n = b - a;
}

int emb_tok_nstr_has_run(const nstr *src, uint32_t c, size_t min_run) {
    char u[4];
    int k = tok_put_utf8(u, c);
    size_t run = 0;
    for (size_t i = 0; i + (size_t)k <= src->n;) {
        if (memcmp(src->b + i, u, (size_t)k) == 0) {
            if (++run >= min_run) return 1;
            i += (size_t)k;
        } else {
            run = 0;
            i++;
        }
    }
    return 0;
}

void emb_tok_nstr_metaspace(nstr *dst, const nstr *src, const char *r, size_t rlen, int prepend) {
    dst->n = 0;
    dst->oom = src->oom;
    if (reserve(dst, src->n * rlen + rlen + 1)) return;
    if (prepend && src->n && src->b[0] != ' ' && !(src->n >= rlen && memcmp(src->b, r, rlen) == 0)) {
        /* the prepended string shares the first character's span (HF prepend) */
        for (size_t j = 0; j < rlen; j++) memcpy(dst->al[j], src->al[0], sizeof *dst->al);
        memcpy(dst->b, r, rlen);
        dst->n = rlen;
    }
    for (size_t i = 0; i < src->n; i++) {
        if (src->b[i] == ' ') { /* the replacement takes the space's span */
            for (size_t j = 0; j < rlen; j++) memcpy(dst->al[dst->n + j], src->al[i], sizeof *dst->al);
            memcpy(dst->b + dst->n, r, rlen);
            dst->n += rlen;
        } else {
            dst->b[dst->n] = src->b[i];
            memcpy(dst->al[dst->n], src->al[i], sizeof *dst->al);
            dst->n++;
        }
    }
}

void emb_tok_nstr_replace_run(nstr *dst, const nstr *src, uint32_t c, size_t min_run, int single, const char *r,
                              size_t rlen) {
    dst->n = 0;
    dst->oom = src->oom;
    if (reserve(dst, src->n + 1)) return;
    size_t i = 0;
    while (i < src->n) {
        int k;
        uint32_t x = tok_get_utf8((const unsigned char *)src->b + i, &k);
        if (x != c) {
            if (dst->n + 4 > dst->cap && reserve(dst, dst->n + 4)) return;
            for (int j = 0; j < k; j++) {
                dst->b[dst->n] = src->b[i + (size_t)j];
                memcpy(dst->al[dst->n], src->al[i + (size_t)j], sizeof *dst->al);
                dst->n++;
            }
            i += (size_t)k;
            continue;
        }
        size_t e = i, cnt = 0;
        while (e < src->n) {
            int kk;
            if (tok_get_utf8((const unsigned char *)src->b + e, &kk) != c) break;
            e += (size_t)kk;
            cnt++;
            if (single) break;
        }
        if (cnt < min_run) { /* too short: kept as it is */
            while (i < e) {
                if (dst->n + 1 > dst->cap && reserve(dst, dst->n + 1)) return;
                dst->b[dst->n] = src->b[i];
                memcpy(dst->al[dst->n], src->al[i], sizeof *dst->al);
                dst->n++;
                i++;
            }
            continue;
        }
        /* inserted characters share the span of the match's last byte */
        int32_t st = src->al[e - 1][0], en = src->al[e - 1][1];
        if (dst->n + rlen > dst->cap && reserve(dst, dst->n + rlen)) return;
        for (size_t j = 0; j < rlen; j++) {
            dst->b[dst->n] = r[j];
            dst->al[dst->n][0] = st;
            dst->al[dst->n][1] = en;
            dst->n++;
        }
        i = e;
    }
}

void emb_tok_nstr_prepend(nstr *dst, const nstr *src, const char *r, size_t rlen) {
    dst->n = 0;
    dst->oom = src->oom;
    if (src->n == 0 || reserve(dst, src->n + rlen + 1)) return;
    /* the first character of r replaces the first character (its span); the rest of r and
     * that character are inserted after it and share the span too */
    memcpy(dst->b, r, rlen);
    memcpy(dst->b + rlen, src->b, src->n);
    for (size_t j = 0; j < rlen; j++) memcpy(dst->al[j], src->al[0], sizeof *dst->al);
    memcpy(dst->al + rlen, src->al, src->n * sizeof *src->al);
    dst->n = src->n + rlen;
    int k;
    tok_get_utf8((const unsigned char *)src->b, &k);
    for (int j = 0; j < k; j++) memcpy(dst->al[rlen + (size_t)j], src->al[k - 1], sizeof *dst->al);
}

void emb_tok_nstr_span(const nstr *s, size_t a, size_t b, int32_t *start, int32_t *end) {
    if (a >= b || b > s->n) {
        *start = *end = a < s->n ? s->al[a][0] : 0;
        return;
    }
    int32_t st = s->al[a][0], en = s->al[a][1];
    for (size_t i = a + 1; i < b; i++) {
        if (s->al[i][0] < st) st = s->al[i][0];
        if (s->al[i][1] > en) en = s->al[i][1];
    }
    *start = st;
    *end = en;
}
