/* The tokenizer's entry (tokenizer.h): a text checked, each sequence cut by the model
 * (tok_wordpiece.c, or tok_pipeline.c's normalizers, pre-tokenizer and Unigram / BPE), then the
 * post-processor (longest_first truncation and the template's special tokens); equal to Hugging
 * Face tokenizers 0.23 (tests/fixtures/GOLDEN_README.md, GOLDEN_README3.md). */
#include "text/tokenizer_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok_pipeline.h"
#include "text/tok_wordpiece.h"
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
    toklist seq[2];
    void *wordpiece, *pipe; /* the models' memory (tok_wordpiece.c, tok_pipeline.c) */
    /* tokens of the output named by their own text (toklist tok_text, index into out->tok) */
    tok_text *ott;
    size_t nott, ottcap;
} scratch;

/* The model that cuts one sequence into tokens: WordPiece's fused pass or the pipeline of
 * normalizers, pre-tokenizer and Unigram / BPE; both with the same contract. */
typedef int (*segment_fn)(const emb_tokenizer *, void **, const char *, size_t, int, size_t, toklist *);

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
        emb_tok_wordpiece_scratch_free(sc->wordpiece);
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
    sc->nott = 0;
    sc->seq[0].ntt = sc->seq[1].ntt = sc->seq[0].text_n = sc->seq[1].text_n = 0;
    size_t budget = max_len ? max_len - nspec : 0;
    size_t cap = max_len ? (pair ? max_len : (budget ? budget : 1)) : 0;
    sc->seq[1].n = 0;
    int wp = t->kind == TOK_WORDPIECE;
    segment_fn segment = wp ? emb_tok_wordpiece_seq : emb_tok_pipeline_seq;
    void **mem = wp ? &sc->wordpiece : &sc->pipe;
    if (segment(t, mem, text ? text : "", len, 0, cap, &sc->seq[0]) ||
        (pair && segment(t, mem, text_b, len_b, 1, cap, &sc->seq[1])))
        return emb_fail(err, "out of memory");
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
