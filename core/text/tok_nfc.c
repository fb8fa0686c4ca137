/* NFC with HF's spans (see tok_nfc.h): decomposed.rs then recompose.rs of the crate, in C. */
#include "text/tok_nfc.h"

#include <utf8proc.h>

#include "text/unicode_hf.h"

#define CCC_SHIFT 21 /* dec packs each character's combining class above its 21 bits */

static uint32_t cp_of(uint32_t x) { return x & ((1u << CCC_SHIFT) - 1); }
static unsigned ccc_of(uint32_t x) { return x >> CCC_SHIFT; }

/* The stable sort of the crate's pending marks: by class, text order within a class. */
static void sort_run(tchar *t, size_t n) {
    for (size_t i = 1; i < n; i++) {
        tchar x = t[i];
        size_t j = i;
        for (; j > 0 && ccc_of(t[j - 1].c) > ccc_of(x.c); j--) t[j] = t[j - 1];
        t[j] = x;
    }
}

/* Canonical decomposition: the first part of a character has change 0, the others 1; every
 * run of nonzero classes sorted. */
static void decompose(const nstr *src, tlist *dec) {
    dec->n = 0;
    dec->oom = 0;
    size_t run = 0; /* start of the current run of marks */
    for (size_t i = 0; i < src->n;) {
        int k;
        uint32_t c = tok_get_utf8((const unsigned char *)src->b + i, &k);
        i += (size_t)k;
        emb_hf_nfd_item d[EMB_HF_MAXMAP];
        int n = emb_hf_nfd(c, d);
        for (int j = 0; j < n; j++) {
            if (d[j].ccc == 0) {
                if (dec->n > run + 1) sort_run(dec->t + run, dec->n - run);
                run = dec->n + 1;
            }
            emb_tok_nstr_tlist_push(dec, d[j].cp | (uint32_t)d[j].ccc << CCC_SHIFT, j ? 1 : 0);
            if (dec->oom) return;
        }
    }
    if (dec->n > run + 1) sort_run(dec->t + run, dec->n - run);
}

/* The primary composite of a + b in Unicode 9.0, or 0: utf8proc's (Unicode 15.0) unless HF's
 * tables do not decompose it (a composite added after 9.0). */
static uint32_t compose(uint32_t a, uint32_t b) {
    if (b < 0x300) return 0; /* no composition has a second character below U+0300 */
    utf8proc_int32_t buf[2] = {(utf8proc_int32_t)a, (utf8proc_int32_t)b};
    if (utf8proc_normalize_utf32(buf, 2, UTF8PROC_COMPOSE | UTF8PROC_STABLE) != 1) return 0;
    emb_hf_nfd_item d[EMB_HF_MAXMAP];
    return emb_hf_nfd((uint32_t)buf[0], d) > 1 ? (uint32_t)buf[0] : 0;
}

typedef struct {
    tlist *out;
    tchar k; /* the composee */
    int has_k;
    int last; /* class of the last blocked mark, -1 none */
    size_t buf; /* marks held back: out->t[buf..] are not emitted yet, they follow k */
} recomp;

/* emits the composee, then the marks held back after it */
static void emit_k(recomp *r) {
    tlist *o = r->out;
    emb_tok_nstr_tlist_push(o, 0, 0); /* room for k before the held marks */
    if (o->oom) return;
    for (size_t i = o->n - 1; i > r->buf; i--) o->t[i] = o->t[i - 1];
    o->t[r->buf] = r->k;
    r->buf = o->n;
}

/* One decomposed character through the crate's Recompositions::next (state Composing). */
static void recompose_one(recomp *r, uint32_t ch, unsigned cl, int32_t change) {
    tchar x = {ch, change};
    if (!r->has_k) {
        if (cl != 0) { /* a mark before any starter goes out as it is */
            emb_tok_nstr_tlist_push(r->out, ch, change);
            r->buf = r->out->n;
            return;
        }
        r->k = x;
        r->has_k = 1;
        return;
    }
    if (r->last >= 0 && (unsigned)r->last >= cl) { /* blocked from the composee */
        if (cl == 0) {
            emit_k(r);
            r->k = x;
            r->last = -1;
            return;
        }
        emb_tok_nstr_tlist_push(r->out, ch, change);
        r->last = (int)cl;
        return;
    }
    uint32_t c = compose(r->k.c, ch);
    if (c) {
        r->k = (tchar){c, r->k.change + change - 1};
        return;
    }
    if (r->last < 0 && cl == 0) {
        emit_k(r);
        r->k = x;
        return;
    }
    emb_tok_nstr_tlist_push(r->out, ch, change);
    r->last = (int)cl;
}

int emb_tok_nfc(const nstr *src, nstr *dst, tlist *dec, tlist *out) {
    size_t i = 0;
    while (i < src->n && (unsigned char)src->b[i] < 0xCC) i++; /* below U+0300: NFC already */
    if (i == src->n) return 0;
    decompose(src, dec);
    out->n = 0;
    out->oom = dec->oom;
    recomp r = {out, {0, 0}, 0, -1, 0};
    for (size_t j = 0; j < dec->n && !out->oom; j++)
        recompose_one(&r, cp_of(dec->t[j].c), ccc_of(dec->t[j].c), dec->t[j].change);
    if (r.has_k) emit_k(&r);
    if (out->oom) {
        dst->n = 0;
        dst->oom = 1;
        return 1;
    }
    /* unchanged: the same characters, each replacing one */
    size_t p = 0, q = 0;
    while (q < out->n && p < src->n && out->t[q].change == 0) {
        int k;
        if (tok_get_utf8((const unsigned char *)src->b + p, &k) != out->t[q].c) break;
        p += (size_t)k;
        q++;
    }
    if (q == out->n && p == src->n) return 0;
    emb_tok_nstr_transform(dst, src, out);
    return 1;
}
