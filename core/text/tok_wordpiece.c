/* BERT's tokenizer as one pass over the text: the BertNormalizer (clean_text, CJK isolation,
 * strip_accents' NFD with Hugging Face's spans, lowercase), the BertPreTokenizer (white space
 * and punctuation split) and the WordPiece model (longest match first, "##" continuations, one
 * [UNK] per word that does not split), fused so that each character is read once and an ASCII
 * character costs a table lookup. tokenizer.c runs it as it runs the Unigram / BPE pipeline
 * (tok_wordpiece.h); equal to tokenizers 0.23 (tests/fixtures/GOLDEN_README.md). */
#include "text/tok_wordpiece.h"

#include <stdlib.h>
#include <string.h>

#include "text/tok_nstr.h"
#include "text/tok_pipeline.h"
#include "text/unicode_hf.h"

typedef struct {
    uint32_t nb; /* byte offset of the character in the normalized word */
    int32_t s, e; /* its span in the original text */
} wchar;

typedef struct {
    uint32_t cp;
    uint8_t ccc, keep, first; /* first: the first part of its character's decomposition */
} mark;

typedef struct {
    char *wb; /* normalized word, UTF-8 */
    size_t wlen, wcap;
    wchar *wc;
    size_t nwc, wccap;
    size_t nchars; /* characters in the word (may exceed nwc for over-long words) */
    int32_t w_s, w_e;
    int32_t word; /* next word index */
    size_t cap; /* early exit: stop after the word that brings the count to cap (0: never) */
    int stop;
    int oom;
    /* strip_accents' NFD: the pending run of nonzero-class marks (sorted when a starter comes),
     * the spans of the characters whose first part is in the run (in text order) and the span
     * of the character consumed last (see flush_marks) */
    mark *pend;
    size_t npend, pendcap;
    int32_t (*psrc)[2];
    size_t nsrc, srccap;
    int32_t last_s, last_e;
} wp_scratch;

static inline void push_tok(wp_scratch *sc, toklist *l, int32_t id, int32_t s, int32_t e, int32_t word,
                            int32_t seq) {
    if (l->n == l->cap && emb_grow((void **)&l->tok, &l->cap, l->n + 1, sizeof *l->tok)) {
        sc->oom = 1;
        return;
    }
    l->tok[l->n++] = (emb_token){id, 0, s, e, word, seq};
}

/* Appends one normalized character (bytes b[0..n)) with original span [s,e) to the word. */
static inline void add_bytes(const emb_tokenizer *t, wp_scratch *sc, const char *b, int n, int32_t s, int32_t e) {
    if (sc->nchars == 0) sc->w_s = s;
    sc->w_e = e;
    if (sc->nchars++ > (size_t)t->max_chars) return; /* the word is [UNK] anyway: stop storing */
    if (sc->nwc + 2 > sc->wccap && emb_grow((void **)&sc->wc, &sc->wccap, sc->nwc + 2, sizeof *sc->wc)) {
        sc->oom = 1;
        return;
    }
    if (sc->wlen + 8 > sc->wcap && emb_grow((void **)&sc->wb, &sc->wcap, sc->wlen + 8, 1)) {
        sc->oom = 1;
        return;
    }
    sc->wc[sc->nwc++] = (wchar){(uint32_t)sc->wlen, s, e};
    for (int i = 0; i < n; i++) sc->wb[sc->wlen++] = b[i];
}

static inline void add_cp(const emb_tokenizer *t, wp_scratch *sc, uint32_t c, int32_t s, int32_t e) {
    char b[4];
    int n = tok_put_utf8(b, c);
    add_bytes(t, sc, b, n, s, e);
}

/* WordPiece on the word collected in sc, then reset it. */
static void flush_word(const emb_tokenizer *t, wp_scratch *sc, toklist *l, int32_t seq) {
    if (sc->nchars == 0) return;
    if (sc->stop) {
        sc->nchars = sc->nwc = sc->wlen = 0;
        return;
    }
    int32_t word = sc->word++;
    if (sc->nchars > (size_t)t->max_chars) {
        push_tok(sc, l, t->unk_id, sc->w_s, sc->w_e, word, seq);
        goto done;
    }
    size_t n = sc->nwc, saved = l->n;
    sc->wc[n].nb = (uint32_t)sc->wlen; /* sentinel: end of the last character */
    size_t cs = 0;
    while (cs < n) {
        uint32_t b0 = sc->wc[cs].nb;
        const emb_vocab *v = cs == 0 ? t->vocab : t->cont;
        size_t maxb = cs == 0 ? t->max_tok : t->max_cont;
        size_t ce = n;
        while (ce > cs && sc->wc[ce].nb - b0 > maxb) ce--;
        int32_t id = -1;
        for (; ce > cs; ce--) {
            id = emb_vocab_find(v, sc->wb + b0, sc->wc[ce].nb - b0);
            if (id >= 0) break;
        }
        if (id < 0) {
            l->n = saved;
            push_tok(sc, l, t->unk_id, sc->w_s, sc->w_e, word, seq);
            goto done;
        }
        push_tok(sc, l, id, sc->wc[cs].s, sc->wc[ce - 1].e, word, seq);
        cs = ce;
    }
done:
    sc->nchars = sc->nwc = sc->wlen = 0;
    if (sc->cap && l->n >= sc->cap) sc->stop = 1;
}

/* Feeds one normalized character to the pre-tokenizer: punctuation is a word of its own. */
static void put_char(const emb_tokenizer *t, wp_scratch *sc, toklist *l, int32_t seq, uint32_t c, int32_t s,
                     int32_t e) {
    unsigned f = c < 65536 ? t->bmp[c] : emb_hf_flags(c);
    if (f & EMB_HF_PUNCT) {
        flush_word(t, sc, l, seq);
        add_cp(t, sc, c, s, e);
        flush_word(t, sc, l, seq);
    } else {
        add_cp(t, sc, c, s, e);
    }
}

/* A part of strip_accents' NFD that survives the Mn filter: lowercased, then fed on. */
static void put_part(const emb_tokenizer *t, wp_scratch *sc, toklist *l, int32_t seq, uint32_t c, int32_t s,
                     int32_t e) {
    unsigned f = c < 65536 ? t->bmp[c] : emb_hf_flags(c);
    if (!t->lowercase || (f & EMB_HF_LOWER_ID)) {
        put_char(t, sc, l, seq, c, s, e);
        return;
    }
    uint32_t out[EMB_HF_MAXMAP];
    int no = emb_hf_lower(c, out);
    for (int i = 0; i < no; i++) put_char(t, sc, l, seq, out[i], s, e);
}

/* Ends the pending run of marks as HF's NFD does (a stable sort by combining class) and feeds
 * the kept ones on with HF's spans: NFD's transform() gives the k-th first part of a
 * decomposition, in the sorted order, the span of the k-th character of the run in text order,
 * and a later part the span of the character consumed just before it. So a mark that moves
 * takes the bytes of the character that stood where it lands. */
static void flush_marks(const emb_tokenizer *t, wp_scratch *sc, toklist *l, int32_t seq) {
    mark *m = sc->pend;
    size_t n = sc->npend;
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable, runs are short */
        mark x = m[i];
        size_t j = i;
        for (; j > 0 && m[j - 1].ccc > x.ccc; j--) m[j] = m[j - 1];
        m[j] = x;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].first && k < sc->nsrc) {
            sc->last_s = sc->psrc[k][0];
            sc->last_e = sc->psrc[k][1];
            k++;
        }
        if (m[i].keep) put_part(t, sc, l, seq, m[i].cp, sc->last_s, sc->last_e);
    }
    sc->npend = sc->nsrc = 0;
}

/* strip_accents of a character whose decomposition holds marks: its starters go on at once
 * (after the pending run), its marks join the run. */
static void feed_nfd(const emb_tokenizer *t, wp_scratch *sc, toklist *l, int32_t seq, uint32_t c, int32_t s,
                     int32_t e) {
    emb_hf_nfd_item d[EMB_HF_MAXMAP];
    int n = emb_hf_nfd(c, d);
    for (int i = 0; i < n; i++) {
        if (d[i].ccc == 0) {
            if (sc->npend) flush_marks(t, sc, l, seq);
            if (i == 0) {
                sc->last_s = s;
                sc->last_e = e;
            }
            if (d[i].keep) put_part(t, sc, l, seq, d[i].cp, sc->last_s, sc->last_e);
            continue;
        }
        if ((sc->npend == sc->pendcap &&
             emb_grow((void **)&sc->pend, &sc->pendcap, sc->npend + 1, sizeof *sc->pend)) ||
            (i == 0 && sc->nsrc == sc->srccap &&
             emb_grow((void **)&sc->psrc, &sc->srccap, sc->nsrc + 1, sizeof *sc->psrc))) {
            sc->oom = 1;
            return;
        }
        sc->pend[sc->npend++] = (mark){d[i].cp, d[i].ccc, d[i].keep, (uint8_t)(i == 0)};
        if (i == 0) {
            sc->psrc[sc->nsrc][0] = s;
            sc->psrc[sc->nsrc][1] = e;
            sc->nsrc++;
        }
    }
}

/* Normalizes one non-ASCII character of the input and feeds the pre-tokenizer. */
static void feed_cp(const emb_tokenizer *t, wp_scratch *sc, toklist *l, int32_t seq, uint32_t c, unsigned f,
                    const char *src, int srclen, int32_t s, int32_t e) {
    if (t->strip && (f & EMB_HF_NONSTARTER) && !(t->chinese && (f & EMB_HF_CJK))) {
        feed_nfd(t, sc, l, seq, c, s, e);
        return;
    }
    if (sc->npend) flush_marks(t, sc, l, seq); /* c is a starter */
    int isolate = t->chinese && (f & EMB_HF_CJK);
    int strip = t->strip && !(f & EMB_HF_STRIP_ID);
    int lower = t->lowercase && !(f & EMB_HF_LOWER_ID);
    if (!strip && !lower) { /* unchanged character */
        if (isolate || (f & EMB_HF_PUNCT)) {
            flush_word(t, sc, l, seq);
            add_bytes(t, sc, src, srclen, s, e);
            flush_word(t, sc, l, seq);
        } else {
            add_bytes(t, sc, src, srclen, s, e);
        }
        return;
    }
    uint32_t a[EMB_HF_MAXMAP], out[EMB_HF_MAXMAP * 3];
    int na = 1, no = 0;
    a[0] = c;
    if (strip) na = emb_hf_strip(c, a);
    for (int i = 0; i < na; i++) {
        unsigned fi = a[i] < 65536 ? t->bmp[a[i]] : emb_hf_flags(a[i]);
        if (t->lowercase && !(fi & EMB_HF_LOWER_ID)) no += emb_hf_lower(a[i], out + no);
        else out[no++] = a[i];
    }
    if (isolate) flush_word(t, sc, l, seq);
    for (int i = 0; i < no; i++) put_char(t, sc, l, seq, out[i], s, e);
    if (isolate) flush_word(t, sc, l, seq);
}

/* Tokenizes one (valid UTF-8) sequence into l; stops after the word that brings the
 * count to cap (cap 0: no limit), as HF 0.23's early exit does. */
static void tokenize_seq(const emb_tokenizer *t, wp_scratch *sc, const char *text, size_t len, int seq, size_t cap,
                         toklist *l) {
    l->n = 0;
    sc->word = 0;
    sc->nchars = sc->nwc = sc->wlen = 0;
    sc->cap = cap;
    sc->stop = 0;
    sc->npend = sc->nsrc = 0;
    const unsigned char *u = (const unsigned char *)text;
    size_t i = 0, added_end = 0;
    while (i < len && !sc->stop && !sc->oom) {
        unsigned b = u[i];
        if (t->added_first[b]) {
            size_t k;
            size_t m = emb_tok_pipeline_match_added(t, text + i, len - i, &k);
            if (m) {
                const added_tok *a = &t->added[k];
                if (sc->npend) flush_marks(t, sc, l, seq); /* HF normalizes each side apart */
                flush_word(t, sc, l, seq);
                if (sc->stop) break;
                /* lstrip / rstrip: the token's span takes the white space beside it (a separator
                 * here anyway), back to the previous added token's end */
                size_t ms = a->lstrip ? tok_ws_left(text, added_end, i) : i;
                size_t me = a->rstrip ? tok_ws_right(text, len, i + m) : i + m;
                push_tok(sc, l, a->id, (int32_t)ms, (int32_t)me, sc->word++, seq);
                if (cap && l->n >= cap) sc->stop = 1;
                i = added_end = me;
                continue;
            }
        }
        if (b < 0x80) {
            if (sc->npend && t->ascii_act[b] != A_REMOVED) flush_marks(t, sc, l, seq); /* a starter */
            switch (t->ascii_act[b]) {
            case A_WORD:
                if (sc->nchars == 0) sc->w_s = (int32_t)i;
                sc->w_e = (int32_t)i + 1;
                if (sc->nchars++ <= (size_t)t->max_chars) {
                    if ((sc->nwc + 2 > sc->wccap &&
                         emb_grow((void **)&sc->wc, &sc->wccap, sc->nwc + 2, sizeof *sc->wc)) ||
                        (sc->wlen + 8 > sc->wcap && emb_grow((void **)&sc->wb, &sc->wcap, sc->wlen + 8, 1))) {
                        sc->oom = 1;
                        return;
                    }
                    sc->wc[sc->nwc++] = (wchar){(uint32_t)sc->wlen, (int32_t)i, (int32_t)i + 1};
                    sc->wb[sc->wlen++] = t->ascii_low[b];
                }
                break;
            case A_REMOVED: break;
            case A_WS: flush_word(t, sc, l, seq); break;
            default: /* punctuation */
                flush_word(t, sc, l, seq);
                add_bytes(t, sc, text + i, 1, (int32_t)i, (int32_t)i + 1);
                flush_word(t, sc, l, seq);
            }
            i++;
            continue;
        }
        uint32_t c;
        int n;
        if (b < 0xE0) {
            c = ((b & 0x1F) << 6) | (u[i + 1] & 0x3F);
            n = 2;
        } else if (b < 0xF0) {
            c = ((b & 0x0F) << 12) | ((u[i + 1] & 0x3F) << 6) | (u[i + 2] & 0x3F);
            n = 3;
        } else {
            c = ((b & 0x07) << 18) | ((u[i + 1] & 0x3F) << 12) | ((u[i + 2] & 0x3F) << 6) | (u[i + 3] & 0x3F);
            n = 4;
        }
        unsigned f = c < 65536 ? t->bmp[c] : emb_hf_flags(c);
        if (t->clean && (f & EMB_HF_REMOVED)) {
            /* deleted by clean_text, before NFD: marks on either side form one run */
        } else if (f & EMB_HF_WS) {
            if (sc->npend) flush_marks(t, sc, l, seq);
            flush_word(t, sc, l, seq);
        } else {
            feed_cp(t, sc, l, seq, c, f, text + i, n, (int32_t)i, (int32_t)(i + (size_t)n));
        }
        i += (size_t)n;
    }
    if (sc->npend) flush_marks(t, sc, l, seq);
    flush_word(t, sc, l, seq);
}

int emb_tok_wordpiece_seq(const emb_tokenizer *t, void **scratch, const char *text, size_t len, int seq,
                          size_t cap, toklist *out) {
    wp_scratch *sc = *scratch;
    if (!sc && !(sc = *scratch = calloc(1, sizeof *sc))) return -1;
    sc->oom = 0;
    tokenize_seq(t, sc, text, len, seq, cap, out);
    return sc->oom ? -1 : 0;
}

void emb_tok_wordpiece_scratch_free(void *scratch) {
    wp_scratch *sc = scratch;
    if (!sc) return;
    free(sc->wb);
    free(sc->wc);
    free(sc->pend);
    free(sc->psrc);
    free(sc);
}
