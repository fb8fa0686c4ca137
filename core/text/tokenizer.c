/* WordPiece tokenizer equal to Hugging Face tokenizers 0.23 for BERT-family tokenizer.json files
 * (see tokenizer.h and tests/fixtures/GOLDEN_README.md, "Behaviour the golden data pins down"). */
#include "text/tokenizer_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok_nstr.h"
#include "text/tok_pipeline.h"
#include "text/unicode_hf.h"
#include "base/utf8.h"

/* ---------------------------------------------------------------------------------------- */
/* accessors */

const char *emb_tokenizer_token(const emb_tokenizer *t, int32_t id, size_t *len) {
    return emb_vocab_token(t->vocab, id, len);
}
int32_t emb_tokenizer_vocab_size(const emb_tokenizer *t) { return emb_vocab_size(t->vocab); }
int32_t emb_tokenizer_lookup(const emb_tokenizer *t, const char *s, size_t len) {
    return emb_vocab_find(t->vocab, s, len);
}
uint64_t emb_tokenizer_fingerprint(const emb_tokenizer *t) { return t->fp; }
int emb_tokenizer_lowercase(const emb_tokenizer *t) { return t->lowercase; }
int emb_tokenizer_strip_accents(const emb_tokenizer *t) { return t->strip; }
int emb_tokenizer_chinese_chars(const emb_tokenizer *t) { return t->chinese; }
int emb_tokenizer_clean_text(const emb_tokenizer *t) { return t->clean; }
int32_t emb_tokenizer_unk_id(const emb_tokenizer *t) { return t->unk_id; }
int32_t emb_tokenizer_cls_id(const emb_tokenizer *t) { return t->cls_id; }
int32_t emb_tokenizer_sep_id(const emb_tokenizer *t) { return t->sep_id; }
int32_t emb_tokenizer_pad_id(const emb_tokenizer *t) { return t->pad_id; }
int32_t emb_tokenizer_mask_id(const emb_tokenizer *t) { return t->mask_id; }
int emb_tokenizer_max_input_chars_per_word(const emb_tokenizer *t) { return t->max_chars; }
int emb_tokenizer_words_alone(const emb_tokenizer *t) { return t->kind == TOK_WORDPIECE; }
int64_t emb_tokenizer_model_max_length(const emb_tokenizer *t) { return t->model_max_length; }
int emb_tokenizer_num_special(const emb_tokenizer *t, int pair) { return pair ? t->spec_pair : t->spec_single; }
int emb_tokenizer_max_type_id(const emb_tokenizer *t, int pair) { return t->max_type[pair != 0]; }

/* ---------------------------------------------------------------------------------------- */
/* encoding */

typedef struct {
    uint32_t nb; /* byte offset of the character in the normalized word */
    int32_t s, e; /* its span in the original text */
} wchar;

typedef struct {
    uint32_t cp;
    uint8_t ccc, keep, first; /* first: the first part of its character's decomposition */
} mark;

typedef struct {
    toklist seq[2];
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
    void *pipe; /* the Unigram / BPE pipeline's memory */
    /* strip_accents' NFD: the pending run of nonzero-class marks (sorted when a starter comes),
     * the spans of the characters whose first part is in the run (in text order) and the span
     * of the character consumed last (see flush_marks) */
    mark *pend;
    size_t npend, pendcap;
    int32_t (*psrc)[2];
    size_t nsrc, srccap;
    int32_t last_s, last_e;
    /* tokens of the output named by their own text (toklist tok_text, index into out->tok) */
    tok_text *ott;
    size_t nott, ottcap;
} scratch;

void emb_encoding_init(emb_encoding *enc) { memset(enc, 0, sizeof *enc); }

void emb_encoding_free(emb_encoding *enc) {
    if (!enc) return;
    scratch *sc = enc->scratch;
    if (sc) {
        for (int q = 0; q < 2; q++) {
            free(sc->seq[q].tok);
            free(sc->seq[q].tt);
            free(sc->seq[q].text);
        }
        free(sc->ott);
        free(sc->wb);
        free(sc->wc);
        free(sc->pend);
        free(sc->psrc);
        emb_tok_pipeline_scratch_free(sc->pipe);
        free(sc);
    }
    free(enc->tok);
    memset(enc, 0, sizeof *enc);
}

const char *emb_encoding_token_text(const emb_encoding *enc, size_t i, size_t *len) {
    const scratch *sc = enc->scratch;
    if (!sc || i >= enc->n) return NULL;
    size_t lo = 0, hi = sc->nott;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sc->ott[mid].index < i) lo = mid + 1;
        else hi = mid;
    }
    if (lo == sc->nott || sc->ott[lo].index != i) return NULL;
    const tok_text *x = &sc->ott[lo];
    /* the entry is of this encoding's token, not of an older call's (a defined model's
     * tokenizer refills enc without this scratch): the whole token must match */
    const emb_token *k = &enc->tok[i];
    if (k->id != x->tok.id || k->start != x->tok.start || k->end != x->tok.end || k->word != x->tok.word ||
        k->seq != x->tok.seq || k->type_id != x->tok.type_id)
        return NULL;
    *len = x->len;
    return sc->seq[x->tok.seq].text + x->off;
}

static inline void push_tok(scratch *sc, toklist *l, int32_t id, int32_t s, int32_t e, int32_t word, int32_t seq) {
    if (l->n == l->cap && emb_grow((void **)&l->tok, &l->cap, l->n + 1, sizeof *l->tok)) {
        sc->oom = 1;
        return;
    }
    l->tok[l->n++] = (emb_token){id, 0, s, e, word, seq};
}

/* Appends one normalized character (bytes b[0..n)) with original span [s,e) to the word. */
static inline void add_bytes(const emb_tokenizer *t, scratch *sc, const char *b, int n, int32_t s, int32_t e) {
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

static inline void add_cp(const emb_tokenizer *t, scratch *sc, uint32_t c, int32_t s, int32_t e) {
    char b[4];
    int n = tok_put_utf8(b, c);
    add_bytes(t, sc, b, n, s, e);
}

/* WordPiece on the word collected in sc, then reset it. */
static void flush_word(const emb_tokenizer *t, scratch *sc, toklist *l, int32_t seq) {
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
static void put_char(const emb_tokenizer *t, scratch *sc, toklist *l, int32_t seq, uint32_t c, int32_t s,
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
static void put_part(const emb_tokenizer *t, scratch *sc, toklist *l, int32_t seq, uint32_t c, int32_t s,
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
static void flush_marks(const emb_tokenizer *t, scratch *sc, toklist *l, int32_t seq) {
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
static void feed_nfd(const emb_tokenizer *t, scratch *sc, toklist *l, int32_t seq, uint32_t c, int32_t s,
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
static void feed_cp(const emb_tokenizer *t, scratch *sc, toklist *l, int32_t seq, uint32_t c, unsigned f,
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

/* Tokenizes one (valid UTF-8) sequence into sc->seq[seq]; stops after the word that brings the
 * count to cap (cap 0: no limit), as HF 0.23's early exit does. */
static void tokenize_seq(const emb_tokenizer *t, scratch *sc, const char *text, size_t len, int seq, size_t cap) {
    toklist *l = &sc->seq[seq];
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

static int append_out(emb_encoding *out, emb_token tk) {
    if (out->n == out->cap && emb_grow((void **)&out->tok, &out->cap, out->n + 1, sizeof *out->tok)) return -1;
    out->tok[out->n++] = tk;
    return 0;
}

int emb_tokenize(const emb_tokenizer *t, const char *text, size_t len, const char *text_b, size_t len_b,
                 size_t max_len, emb_encoding *out, char err[EMB_ERR_LEN]) {
    out->n = 0;
    if (!text && len) return emb_fail(err, "no text");
    if (len > INT32_MAX || (text_b && len_b > INT32_MAX)) return emb_fail(err, "text too long (over 2 GB)");
    size_t bad;
    if (!emb_utf8_valid(text, len, &bad)) return emb_fail(err, "invalid UTF-8 at byte %zu", bad);
    if (text_b && !emb_utf8_valid(text_b, len_b, &bad))
        return emb_fail(err, "invalid UTF-8 in text_b at byte %zu", bad);
    int pair = text_b != NULL;
    size_t nspec = (size_t)(pair ? t->spec_pair : t->spec_single);
    if (max_len && max_len < nspec)
        return emb_fail(err, "max length %zu is less than the %zu special tokens", max_len, nspec);
    scratch *sc = out->scratch;
    if (!sc) {
        sc = calloc(1, sizeof *sc);
        if (!sc) return emb_fail(err, "out of memory");
        out->scratch = sc;
    }
    sc->oom = 0;
    sc->nott = 0;
    sc->seq[0].ntt = sc->seq[1].ntt = sc->seq[0].text_n = sc->seq[1].text_n = 0;
    size_t budget = max_len ? max_len - nspec : 0;
    size_t cap = max_len ? (pair ? max_len : (budget ? budget : 1)) : 0;
    sc->seq[1].n = 0;
    if (t->kind == TOK_WORDPIECE) {
        tokenize_seq(t, sc, text ? text : "", len, 0, cap);
        if (pair) tokenize_seq(t, sc, text_b, len_b, 1, cap);
    } else if (emb_tok_pipeline_seq(t, &sc->pipe, text ? text : "", len, 0, cap, &sc->seq[0]) ||
               (pair && emb_tok_pipeline_seq(t, &sc->pipe, text_b, len_b, 1, cap, &sc->seq[1]))) {
        sc->oom = 1;
    }
    if (sc->oom) return emb_fail(err, "out of memory");
    size_t n1 = sc->seq[0].n, n2 = sc->seq[1].n;
    if (max_len && n1 + n2 > budget) {
        if (!pair) n1 = budget;
        else if (budget == 0) n1 = n2 = 0;
        else { /* longest_first (tokenizers utils/truncation.rs) on the early-exit counts */ size_t a = n1, b = n2;
            int swap = a > b;
            if (swap) {
                size_t tmp = a;
                a = b;
                b = tmp;
            }
            if (a > budget) b = a;
            else b = a > budget - a ? a : budget - a;
            if (a + b > budget) {
                a = budget / 2;
                b = a + budget % 2;
            }
            if (swap) {
                size_t tmp = a;
                a = b;
                b = tmp;
            }
            if (a < n1) n1 = a;
            if (b < n2) n2 = b;
        }
    }
    const tmpl_item *tm = pair ? t->pair : t->single;
    int ntm = pair ? t->n_pair : t->n_single;
    size_t total = n1 + n2 + nspec;
    if (emb_grow((void **)&out->tok, &out->cap, total, sizeof *out->tok)) return emb_fail(err, "out of memory");
    for (int k = 0; k < ntm; k++) {
        if (tm[k].kind == 0) {
            if (append_out(out, (emb_token){tm[k].id, tm[k].type_id, -1, -1, -1, -1}))
                return emb_fail(err, "out of memory");
        } else {
            int s = tm[k].kind - 1;
            size_t cnt = s ? n2 : n1;
            if (s == 1 && !pair) continue;
            const toklist *sl = &sc->seq[s];
            for (size_t j = 0; j < sl->ntt && sl->tt[j].index < cnt; j++) {
                if (sc->nott == sc->ottcap &&
                    emb_grow((void **)&sc->ott, &sc->ottcap, sc->nott + 1, sizeof *sc->ott))
                    return emb_fail(err, "out of memory");
                sc->ott[sc->nott] = sl->tt[j];
                sc->ott[sc->nott].tok = sl->tok[sl->tt[j].index]; /* as output: after trim_offsets */
                sc->ott[sc->nott].tok.type_id = tm[k].type_id;
                sc->ott[sc->nott++].index = out->n + sl->tt[j].index;
            }
            for (size_t q = 0; q < cnt; q++) {
                emb_token tk = sc->seq[s].tok[q];
                tk.type_id = tm[k].type_id;
                if (append_out(out, tk)) return emb_fail(err, "out of memory");
            }
        }
    }
    return 0;
}
