/* Running the Unigram / BPE pipeline (see tok_pipeline.h), equal to HF tokenizers
 * 0.23: added tokens split off the raw text first (lstrip / rstrip absorb whitespace), then each
 * remaining segment is normalized, pre-tokenized and segmented by the model; offsets are read
 * back through the normalized string's spans; RobertaProcessing's trim_offsets applied last. */
#include "text/tok_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "text/tok_cache.h"
#include "text/tok_nfc.h"
#include "text/tok_nstr.h"

typedef struct {
    nstr a, b;
    tlist tl, tl2;
    piece_list pl;
    unigram_scratch us;
    bpe_scratch bs;
    tok_cache *cache; /* made once the encoding has seen CACHE_AFTER bytes: short one-off calls skip it */
    size_t seen;
} pipe_scratch;

#define CACHE_AFTER 4096

void emb_tok_pipeline_scratch_free(void *s) {
    pipe_scratch *sc = s;
    if (!sc) return;
    emb_tok_nstr_free(&sc->a);
    emb_tok_nstr_free(&sc->b);
    emb_tok_nstr_tlist_free(&sc->tl);
    emb_tok_nstr_tlist_free(&sc->tl2);
    free(sc->pl.t);
    emb_tok_unigram_scratch_free(&sc->us);
    emb_tok_bpe_scratch_free(&sc->bs);
    emb_tok_cache_free(sc->cache);
    free(sc);
}

size_t emb_tok_pipeline_match_added(const emb_tokenizer *t, const char *p, size_t rem, size_t *idx) {
    size_t best = 0;
    for (size_t k = 0; k < t->n_added; k++) {
        const added_tok *a = &t->added[k];
        if (a->len > best && a->len <= rem && memcmp(p, a->s, a->len) == 0) {
            best = a->len;
            *idx = k;
        }
    }
    return best;
}

static int push_out(toklist *l, int32_t id, int32_t s, int32_t e, int32_t word, int32_t seq) {
    if (l->n == l->cap && emb_grow((void **)&l->tok, &l->cap, l->n + 1, sizeof *l->tok)) return -1;
    l->tok[l->n++] = (emb_token){id, 0, s, e, word, seq};
    return 0;
}

/* Records the text of the token just pushed onto l (l->n - 1); -1 when out of memory. */
static int toklist_name(toklist *l, const char *s, size_t len) {
    if ((l->ntt == l->ttcap && emb_grow((void **)&l->tt, &l->ttcap, l->ntt + 1, sizeof *l->tt)) ||
        (l->text_n + len > l->text_cap && emb_grow((void **)&l->text, &l->text_cap, l->text_n + len, 1)))
        return -1;
    memcpy(l->text + l->text_n, s, len);
    l->tt[l->ntt++] = (tok_text){l->n - 1, l->text_n, len, l->tok[l->n - 1]};
    l->text_n += len;
    return 0;
}

static void swap_n(nstr *a, nstr *b) {
    nstr t = *a;
    *a = *b;
    *b = t;
}

/* normalizers, then the Metaspace replacement and prepend / ByteLevel prefix space: sc->a */
static void normalize(const tok_pipe *p, pipe_scratch *sc, int at_start) {
    for (int i = 0; i < p->n_norm; i++) {
        const norm_step *st = &p->norm[i];
        if (st->kind == N_PRECOMPILED) {
            if (emb_sp_charsmap_precompiled(&st->cm, &sc->a, &sc->b, &sc->tl)) swap_n(&sc->a, &sc->b);
        } else if (st->kind == N_NFC) {
            if (emb_tok_nfc(&sc->a, &sc->b, &sc->tl2, &sc->tl)) swap_n(&sc->a, &sc->b);
        } else if (st->kind == N_STRIP) {
            emb_tok_nstr_strip(&sc->a, st->left, st->right);
        } else if (emb_tok_nstr_has_run(&sc->a, st->rc, st->min_run)) {
            emb_tok_nstr_replace_run(&sc->b, &sc->a, st->rc, st->min_run, st->single, st->rs, st->rlen);
            swap_n(&sc->a, &sc->b);
        }
    }
    if (p->pre == P_METASPACE) {
        int want = p->prepend == PREPEND_ALWAYS || (p->prepend == PREPEND_FIRST && at_start);
        emb_tok_nstr_metaspace(&sc->b, &sc->a, p->repl, p->repl_len, want);
        swap_n(&sc->a, &sc->b);
    } else if (p->prefix_space && sc->a.n && sc->a.b[0] != ' ') {
        emb_tok_nstr_prepend(&sc->b, &sc->a, " ", 1);
        swap_n(&sc->a, &sc->b);
    }
}

/* end of the pre-token that starts at i */
static size_t next_pre(const tok_pipe *p, const nstr *s, size_t i) {
    if (p->pre == P_BYTELEVEL) return p->pat ? i + emb_tok_split_next(p->pat, s->b, s->n, i) : s->n;
    if (p->pre == P_NONE || !p->split) return s->n;
    size_t e = i;
    if (s->n - e >= p->repl_len && memcmp(s->b + e, p->repl, p->repl_len) == 0) e += p->repl_len;
    while (e < s->n && !(s->n - e >= p->repl_len && memcmp(s->b + e, p->repl, p->repl_len) == 0)) e++;
    return e;
}

typedef struct {
    int32_t word;
    size_t count, cap;
    int stop;
} run_state;

/* one segment of text between added tokens: [a, b) of the sequence */
static int segment(const emb_tokenizer *t, pipe_scratch *sc, const char *text, size_t a, size_t b, int seq,
                   run_state *rs, toklist *out) {
    const tok_pipe *p = t->pipe;
    emb_tok_nstr_from_raw(&sc->a, text + a, b - a, (int32_t)a);
    normalize(p, sc, a == 0);
    if (sc->a.oom || sc->tl.oom) return -1;
    const nstr *n = &sc->a;
    size_t i = 0;
    while (i < n->n && !rs->stop) {
        size_t e = next_pre(p, n, i);
        sc->pl.n = 0;
        uint64_t h;
        int rc = sc->cache ? emb_tok_cache_get(sc->cache, n->b + i, e - i, &h, &sc->pl) : 0;
        if (rc < 0) return -1;
        if (rc == 0) {
            rc = t->kind == TOK_UNIGRAM
                     ? emb_tok_unigram_encode(&p->ug, t->vocab, &sc->us, n->b + i, e - i, &sc->pl)
                     : emb_tok_bpe_encode(&p->bpe, t->vocab, &sc->bs, n->b + i, e - i, &sc->pl);
            if (rc) return -1;
            if (sc->cache) emb_tok_cache_put(sc->cache, n->b + i, e - i, h, sc->pl.t, sc->pl.n);
        }
        int32_t word = rs->word++;
        for (size_t k = 0; k < sc->pl.n; k++) {
            int32_t s, en;
            emb_tok_nstr_span(n, i + sc->pl.t[k].a, i + sc->pl.t[k].b, &s, &en);
            if (push_out(out, sc->pl.t[k].id, s, en, word, seq)) return -1;
            /* HF's Unigram token is the piece's text; an unknown keeps it (model.rs tokenize) */
            if (sc->pl.t[k].id == t->unk_id && t->kind == TOK_UNIGRAM &&
                toklist_name(out, n->b + i + sc->pl.t[k].a, sc->pl.t[k].b - sc->pl.t[k].a))
                return -1;
        }
        rs->count += sc->pl.n;
        if (rs->cap && rs->count >= rs->cap) rs->stop = 1;
        i = e;
    }
    return 0;
}

/* leading / trailing characters of a token string that are 'Ġ' or whitespace (byte_level.rs
 * process_offsets); counts of characters, which HF adds to byte offsets */
static void space_counts(const char *s, size_t len, size_t *lead, size_t *trail) {
    size_t i = 0, n = 0, last_run = 0;
    int all = 1;
    *lead = 0;
    while (i < len) {
        int k;
        uint32_t c = tok_get_utf8((const unsigned char *)s + i, &k);
        int sp = c == 0x120 || tok_is_ws(c);
        if (sp && all) (*lead)++;
        if (!sp) all = 0;
        last_run = sp ? last_run + 1 : 0;
        i += (size_t)k;
        n++;
    }
    *trail = last_run;
}

static void trim_offsets(const emb_tokenizer *t, toklist *l, const char *text) {
    const tok_pipe *p = t->pipe;
    for (size_t i = 0; i < l->n; i++) {
        emb_token *k = &l->tok[i];
        size_t lead = 0, trail = 0;
        if (k->word < 0) { /* an added token's string is the matched text, absorbed whitespace included */
            k->word = -k->word - 2;
            space_counts(text + k->start, (size_t)(k->end - k->start), &lead, &trail);
        } else { /* a byte-level token's 'Ġ' are the spaces of its text: no other whitespace maps to
                  * a whitespace character (e.g. '\n' is 'Ċ') */
            while (k->start + (int32_t)lead < k->end && text[k->start + (int32_t)lead] == ' ') lead++;
            if ((int32_t)lead < k->end - k->start)
                while (text[k->end - 1 - (int32_t)trail] == ' ') trail++;
        }
        if (lead == 0 && trail == 0) continue;
        /* HF adds the counts of characters to byte offsets; moving by whole characters of the
         * text is the same for 'Ġ' (one byte) and keeps offsets on character boundaries where
         * an added token absorbed multi-byte whitespace (HF would cut into it) */
        if (lead) {
            if ((i == 0 || k->start == 0) && p->trim_prefix && lead == 1) lead = 0;
            int32_t st = k->start;
            for (size_t q = 0; q < lead && st < k->end; q++) {
                int n;
                tok_get_utf8((const unsigned char *)text + st, &n);
                st += n;
            }
            k->start = st < k->end ? st : k->end;
        }
        if (trail) {
            int32_t en = k->end;
            for (size_t q = 0; q < trail && en > k->start; q++) {
                en--;
                while (en > k->start && ((unsigned char)text[en] & 0xC0) == 0x80) en--;
            }
            k->end = en;
        }
    }
}

int emb_tok_pipeline_seq(const emb_tokenizer *t, void **scratch, const char *text, size_t len, int seq, size_t cap,
                         toklist *out) {
    pipe_scratch *sc = *scratch;
    if (!sc) {
        sc = calloc(1, sizeof *sc);
        if (!sc) return -1;
        *scratch = sc;
    }
    sc->seen += len;
    if (!sc->cache && sc->seen > CACHE_AFTER && !(sc->cache = emb_tok_cache_new())) return -1;
    if (sc->cache) emb_tok_cache_bind(sc->cache, t, t->fp);
    out->n = out->ntt = out->text_n = 0;
    run_state rs = {0, 0, cap, 0};
    size_t pos = 0, i = 0;
    while (pos < len && !rs.stop) {
        /* the leftmost (then longest) added token from i */
        size_t m = 0, k = 0;
        while (i < len) {
            if (t->added_first[(unsigned char)text[i]] &&
                (m = emb_tok_pipeline_match_added(t, text + i, len - i, &k)))
                break;
            i++;
        }
        size_t ms = i, me = i + m;
        if (m) {
            const added_tok *a = &t->added[k];
            if (a->lstrip) ms = tok_ws_left(text, pos, ms);
            if (a->rstrip) me = tok_ws_right(text, len, me);
        }
        if (ms > pos && segment(t, sc, text, pos, ms, seq, &rs, out)) return -1;
        if (!m || rs.stop) break;
        /* word -2 - w marks an added token for trim_offsets, which restores w */
        int32_t w = rs.word++;
        if (push_out(out, t->added[k].id, (int32_t)ms, (int32_t)me, t->pipe->trim ? -2 - w : w, seq)) return -1;
        if (cap && ++rs.count >= cap) rs.stop = 1;
        pos = i = me;
    }
    if (t->pipe->trim) trim_offsets(t, out, text);
    return 0;
}
