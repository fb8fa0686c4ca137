/* Unigram / byte-level BPE pipeline (see tok_pipeline.h), equal to HF tokenizers 0.23: added
 * tokens split off the raw text first (lstrip / rstrip absorb whitespace), then each remaining
 * segment is normalized, pre-tokenized and segmented by the model; offsets are read back
 * through the normalized string's spans; RobertaProcessing's trim_offsets applied last. */
#include "tok_pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sp_charsmap.h"
#include "tok_bpe.h"
#include "tok_cache.h"
#include "tok_nstr.h"
#include "tok_unigram.h"
#include "utf8.h"

#define MAX_NORM 8

enum { N_PRECOMPILED, N_STRIP, N_REPLACE };
enum { P_METASPACE, P_BYTELEVEL };
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };

typedef struct {
    int kind;
    sp_charsmap cm;       /* Precompiled */
    int left, right;      /* Strip */
    uint32_t rc;          /* Replace: the repeated character */
    size_t min_run;       /* Replace: runs of at least min_run characters rc ... */
    int single;           /* ... or (1) every occurrence on its own */
    char *rs;             /* Replace: the content */
    size_t rlen;
} norm_step;

struct tok_pipe {
    norm_step norm[MAX_NORM];
    int n_norm;
    int pre;                /* P_* */
    char repl[8];           /* Metaspace replacement, UTF-8 */
    size_t repl_len;
    uint32_t repl_cp;
    int prepend, split;     /* Metaspace */
    int prefix_space, use_regex; /* ByteLevel */
    tok_unigram ug;
    tok_bpe bpe;
    int trim, trim_prefix;  /* RobertaProcessing trim_offsets / add_prefix_space */
    uint64_t fp;
};

typedef struct {
    nstr a, b;
    tlist tl;
    piece_list pl;
    unigram_scratch us;
    bpe_scratch bs;
    tok_cache *cache; /* made once the encoding has seen CACHE_AFTER bytes: short one-off calls skip it */
    size_t seen;
} pipe_scratch;

#define CACHE_AFTER 4096

void tok_pipe_free(tok_pipe *p) {
    if (!p) return;
    for (int i = 0; i < p->n_norm; i++) {
        sp_charsmap_free(&p->norm[i].cm);
        free(p->norm[i].rs);
    }
    tok_unigram_free(&p->ug);
    tok_bpe_free(&p->bpe);
    free(p);
}

uint64_t tok_pipe_fingerprint(const tok_pipe *p) { return p->fp; }
int tok_pipe_has_normalizer(const tok_pipe *p) { return p->n_norm > 0; }
void tok_pipe_set_trim(tok_pipe *p, int trim, int add_prefix_space) {
    p->trim = trim;
    p->trim_prefix = add_prefix_space;
    p->fp = XXH3_64bits_withSeed(&p->fp, sizeof p->fp, (uint64_t)(trim * 2 + add_prefix_space));
}

void tok_pipe_scratch_free(void *s) {
    pipe_scratch *sc = s;
    if (!sc) return;
    nstr_free(&sc->a);
    nstr_free(&sc->b);
    tlist_free(&sc->tl);
    free(sc->pl.t);
    unigram_scratch_free(&sc->us);
    bpe_scratch_free(&sc->bs);
    tok_cache_free(sc->cache);
    free(sc);
}

/* ---------------------------------------------------------------------------------------- */
/* loading */

static const char *type_str(const cJSON *o) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : NULL;
}

static int jbool(const cJSON *o, const char *k, int dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* cJSON does not check the UTF-8 of strings: every string the pipeline matches or inserts is */
static int bad_utf8(const char *s, const char *what, char err[EMB_ERR_LEN]) {
    size_t bad;
    if (emb_utf8_valid(s, strlen(s), &bad)) return 0;
    return emb_fail(err, "tokenizer.json: %s is not valid UTF-8 (byte %zu)", what, bad);
}

/* exactly one UTF-8 character at s (NUL-terminated); its code point, else -1 */
static int64_t one_char(const char *s, size_t *len) {
    size_t n = strlen(s);
    if (n == 0 || !emb_utf8_valid(s, n, NULL)) return -1;
    int k;
    uint32_t c = tok_get_utf8((const unsigned char *)s, &k);
    if ((size_t)k != n) return -1;
    if (len) *len = n;
    return c;
}

/* A Replace pattern: {"String": one character} or {"Regex": "X{n,}" / "X+" / "X"} with X one
 * character (the forms the SentencePiece converters write). */
static int parse_replace(norm_step *st, const cJSON *n, char err[EMB_ERR_LEN]) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(n, "pattern");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(n, "content");
    if (!cJSON_IsString(content)) return emb_fail(err, "tokenizer.json: Replace normalizer without a content string");
    if (bad_utf8(content->valuestring, "a Replace content", err)) return -1;
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(pat, "String");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
    int64_t c = -1;
    st->min_run = 1;
    st->single = 1;
    if (cJSON_IsString(ps)) {
        c = one_char(ps->valuestring, NULL);
        if (c < 0)
            return emb_fail(err, "tokenizer.json: Replace pattern '%.40s' is not supported (only one character)", ps->valuestring);
    } else if (cJSON_IsString(pr)) {
        const char *r = pr->valuestring;
        if (bad_utf8(r, "a Replace regex", err)) return -1;
        const char *q = r;
        if (*q == '\\' && q[1]) q++;
        int k;
        if (*q) {
            c = tok_get_utf8((const unsigned char *)q, &k);
            q += k;
            if (strchr(".[](){}|*+?^$\\", (int)c) && q - r == k) c = -1; /* an unescaped metacharacter */
        }
        if (c >= 0 && *q == '+' && !q[1]) st->single = 0; /* X+ */
        else if (c >= 0 && *q == '{') {
            char *end;
            long mn = strtol(q + 1, &end, 10);
            if (end == q + 1 || strcmp(end, ",}") != 0 || mn < 1 || mn > 1000) c = -1;
            else {
                st->min_run = (size_t)mn;
                st->single = 0;
            }
        } else if (c >= 0 && *q) c = -1;
        if (c < 0)
            return emb_fail(err, "tokenizer.json: Replace regex '%.40s' is not supported (only one character, "
                            "optionally repeated as X+ or X{n,})", r);
    } else {
        return emb_fail(err, "tokenizer.json: Replace normalizer without a String or Regex pattern");
    }
    st->rc = (uint32_t)c;
    st->rlen = strlen(content->valuestring);
    st->rs = malloc(st->rlen + 1);
    if (!st->rs) return emb_fail(err, "out of memory");
    memcpy(st->rs, content->valuestring, st->rlen + 1);
    return 0;
}

static int parse_norm(tok_pipe *p, const cJSON *n, char err[EMB_ERR_LEN]) {
    const char *ty = type_str(n);
    if (ty && strcmp(ty, "Sequence") == 0) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) if (parse_norm(p, e, err)) return -1;
        return 0;
    }
    if (p->n_norm == MAX_NORM) return emb_fail(err, "tokenizer.json: more than %d normalizers", MAX_NORM);
    norm_step *st = &p->norm[p->n_norm];
    memset(st, 0, sizeof *st);
    if (ty && strcmp(ty, "Precompiled") == 0) {
        const cJSON *cm = cJSON_GetObjectItemCaseSensitive(n, "precompiled_charsmap");
        if (!cJSON_IsString(cm)) return emb_fail(err, "tokenizer.json: Precompiled normalizer without a precompiled_charsmap string");
        st->kind = N_PRECOMPILED;
        char e2[EMB_ERR_LEN];
        if (sp_charsmap_load(&st->cm, cm->valuestring, e2)) return emb_fail(err, "tokenizer.json: %s", e2);
    } else if (ty && strcmp(ty, "Strip") == 0) {
        st->kind = N_STRIP;
        st->left = jbool(n, "strip_left", 1);
        st->right = jbool(n, "strip_right", 1);
    } else if (ty && strcmp(ty, "Replace") == 0) {
        st->kind = N_REPLACE;
        if (parse_replace(st, n, err)) {
            free(st->rs);
            return -1;
        }
    } else {
        return emb_fail(err, "tokenizer.json: normalizer type '%.40s' is not supported with a Unigram or BPE model "
                        "(only Precompiled, Strip, Replace and Sequence)", ty ? ty : "?");
    }
    p->n_norm++;
    return 0;
}

static int parse_pre(tok_pipe *p, const cJSON *pt, int kind, char err[EMB_ERR_LEN]) {
    const char *ty = type_str(pt);
    if (ty && strcmp(ty, "Metaspace") == 0 && kind == TOK_UNIGRAM) {
        p->pre = P_METASPACE;
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(pt, "replacement");
        int64_t c = cJSON_IsString(r) ? one_char(r->valuestring, &p->repl_len) : -1;
        if (c < 0) return emb_fail(err, "tokenizer.json: Metaspace replacement is not one character");
        p->repl_cp = (uint32_t)c;
        memcpy(p->repl, r->valuestring, p->repl_len);
        const cJSON *ps = cJSON_GetObjectItemCaseSensitive(pt, "prepend_scheme");
        if (cJSON_IsString(ps)) {
            if (strcmp(ps->valuestring, "always") == 0) p->prepend = PREPEND_ALWAYS;
            else if (strcmp(ps->valuestring, "first") == 0) p->prepend = PREPEND_FIRST;
            else if (strcmp(ps->valuestring, "never") == 0) p->prepend = PREPEND_NEVER;
            else return emb_fail(err, "tokenizer.json: Metaspace prepend_scheme '%.20s' is unknown", ps->valuestring);
        } else {
            p->prepend = jbool(pt, "add_prefix_space", 1) ? PREPEND_ALWAYS : PREPEND_NEVER;
        }
        p->split = jbool(pt, "split", 1);
        return 0;
    }
    if (ty && strcmp(ty, "ByteLevel") == 0 && kind == TOK_BPE) {
        p->pre = P_BYTELEVEL;
        p->prefix_space = jbool(pt, "add_prefix_space", 1);
        p->use_regex = jbool(pt, "use_regex", 1);
        return 0;
    }
    return emb_fail(err, "tokenizer.json: pre_tokenizer type '%.40s' is not supported with a %s model (only %s)",
                    ty ? ty : "null", kind == TOK_UNIGRAM ? "Unigram" : "BPE", kind == TOK_UNIGRAM ? "Metaspace" : "ByteLevel");
}

/* The score HF sees for a number JSON wrote as the shortest decimal of x: serde_json's default
 * (best-effort) parse takes the decimal digits as an integer (at most 19 digits: u64), converts
 * it to double and then multiplies or divides by a power of ten: two roundings, so about one score
 * in six of a SentencePiece vocabulary is an ULP away from strtod's, and Viterbi ties between
 * equally long paths follow these values (e.g. a run of 101 'é' in xlmr-style-ml8k). */
static double serde_json_f64(double x) {
    char buf[40];
    int p;
    for (p = 15; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (strtod(buf, NULL) == x) break;
    }
    if (p == 15) return x; /* at most 15 digits: an exact integer, one rounding */
    /* buf = [-]d.ddddde[+-]xx */
    const char *q = buf;
    int neg = *q == '-';
    if (neg) q++;
    uint64_t sig = 0;
    int nd = 0;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') {
            sig = sig * 10 + (uint64_t)(*q - '0');
            nd++;
        }
    int e10 = atoi(q + 1) - (nd - 1);
    double f = (double)sig;
    while (e10 < -308 && f != 0) {
        f /= 1e308;
        e10 += 308;
    }
    /* serde_json's table holds the correctly rounded powers 1e0 .. 1e308 */
    snprintf(buf, sizeof buf, "1e%d", e10 < 0 ? -e10 : e10 > 308 ? 308 : e10);
    double pw = strtod(buf, NULL);
    if (e10 >= 0) f *= pw;
    else f /= pw;
    return neg ? -f : f;
}

static int parse_unigram(emb_tokenizer *t, tok_pipe *p, const cJSON *model, int64_t bound, char err[EMB_ERR_LEN]) {
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsArray(vocab)) return emb_fail(err, "tokenizer.json: Unigram model without a vocab array");
    if (jbool(model, "byte_fallback", 0)) return emb_fail(err, "tokenizer.json: Unigram byte_fallback is not supported");
    int n = cJSON_GetArraySize(vocab);
    if (n == 0) return emb_fail(err, "tokenizer.json: the vocabulary is empty");
    double *score = malloc((size_t)n * sizeof *score);
    if (!score) return emb_fail(err, "out of memory");
    int32_t id = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        const cJSON *s = cJSON_GetArrayItem(e, 0), *sc = cJSON_GetArrayItem(e, 1);
        if (cJSON_GetArraySize(e) != 2 || !cJSON_IsString(s) || !cJSON_IsNumber(sc) || !isfinite(sc->valuedouble) ||
            fabs(sc->valuedouble) > 1e300) {
            free(score);
            return emb_fail(err, "tokenizer.json: Unigram vocab entry %d is not [piece, finite score]", id);
        }
        if (bad_utf8(s->valuestring, "a Unigram piece", err)) {
            free(score);
            return -1;
        }
        score[id] = serde_json_f64(sc->valuedouble);
        if (emb_vocab_add(t->vocab, s->valuestring, strlen(s->valuestring), id)) {
            free(score);
            return emb_fail(err, "out of memory");
        }
        id++;
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_id");
    int64_t u = -1;
    if (cJSON_IsNumber(unk)) {
        if (!(unk->valuedouble >= 0 && unk->valuedouble < n && unk->valuedouble == (double)(int64_t)unk->valuedouble)) {
            free(score);
            return emb_fail(err, "tokenizer.json: Unigram unk_id %.15g is out of range 0 to %d", unk->valuedouble, n - 1);
        }
        u = (int64_t)unk->valuedouble;
    } else if (unk && !cJSON_IsNull(unk)) {
        free(score);
        return emb_fail(err, "tokenizer.json: Unigram unk_id is not a number");
    }
    (void)bound;
    t->unk_id = (int32_t)u;
    if (u < 0) {
        free(score);
        return emb_fail(err, "tokenizer.json: Unigram model without an unk_id");
    }
    int rc = tok_unigram_build(&p->ug, t->vocab, score, n, (int32_t)u, err);
    free(score);
    return rc;
}

static int parse_bpe(emb_tokenizer *t, tok_pipe *p, const cJSON *model, int64_t bound, char err[EMB_ERR_LEN]) {
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(vocab)) return emb_fail(err, "tokenizer.json: BPE model without a vocab object");
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < (double)bound) ||
            e->valuedouble != (double)(int64_t)e->valuedouble)
            return emb_fail(err, "tokenizer.json: model.vocab id of '%.40s' is out of range 0 to %lld (ids are bounded "
                            "by the %lld entries present)", e->string ? e->string : "", (long long)bound - 1, (long long)bound);
        if (bad_utf8(e->string, "a BPE vocab token", err)) return -1;
        if (emb_vocab_add(t->vocab, e->string, strlen(e->string), (int32_t)e->valuedouble)) return emb_fail(err, "out of memory");
    }
    static const char *unsupported[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, unsupported[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !*v->valuestring))
            return emb_fail(err, "tokenizer.json: BPE %s is not supported", unsupported[i]);
    }
    if (jbool(model, "byte_fallback", 0)) return emb_fail(err, "tokenizer.json: BPE byte_fallback is not supported");
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    t->unk_id = cJSON_IsString(unk) ? emb_vocab_find(t->vocab, unk->valuestring, strlen(unk->valuestring)) : -1;
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsArray(merges)) return emb_fail(err, "tokenizer.json: BPE model without a merges array");
    char e2[EMB_ERR_LEN];
    if (tok_bpe_build(&p->bpe, t->vocab, merges, e2)) return emb_fail(err, "tokenizer.json: %s", e2);
    p->bpe.ignore_merges = jbool(model, "ignore_merges", 0);
    return 0;
}

/* normalizer and pre_tokenizer hold strings and booleans only, so their printed JSON does not
 * depend on the locale (numbers would: cJSON prints them with printf) */
static int hash_json(XXH3_state_t *st, const cJSON *j) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    if (j && !s) return -1; /* out of memory: hashing nothing would give another fingerprint */
    uint64_t n = s ? strlen(s) : 0;
    XXH3_64bits_update(st, &n, sizeof n);
    if (s) XXH3_64bits_update(st, s, n);
    free(s);
    return 0;
}

/* the model beyond its vocabulary (hashed by the loader): Unigram scores as bits, BPE merges */
static void hash_model(XXH3_state_t *st, const tok_pipe *p, const cJSON *model, int kind) {
    if (kind == TOK_UNIGRAM) {
        for (int32_t i = 0; i < p->ug.n; i++) {
            uint64_t b;
            memcpy(&b, &p->ug.score[i], sizeof b);
            XXH3_64bits_update(st, &b, sizeof b);
        }
        return;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(model, "merges")) {
        const cJSON *x = cJSON_IsString(e) ? e : NULL;
        for (int side = 0; side < (x ? 1 : 2); side++) {
            const char *v = x ? x->valuestring : cJSON_GetArrayItem(e, side)->valuestring;
            uint64_t n = strlen(v);
            XXH3_64bits_update(st, &n, sizeof n);
            XXH3_64bits_update(st, v, n);
        }
    }
    uint64_t im = (uint64_t)p->bpe.ignore_merges;
    XXH3_64bits_update(st, &im, sizeof im);
}

int tok_pipe_parse(emb_tokenizer *t, const cJSON *j, const char *kind, int64_t bound, char err[EMB_ERR_LEN]) {
    tok_pipe *p = calloc(1, sizeof *p);
    if (!p) return emb_fail(err, "out of memory");
    t->pipe = p;
    t->kind = strcmp(kind, "Unigram") == 0 ? TOK_UNIGRAM : TOK_BPE;
    t->prefix_len = 0;
    t->prefix[0] = 0;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    if (norm && !cJSON_IsNull(norm) && parse_norm(p, norm, err)) return -1;
    if (parse_pre(p, pre, t->kind, err)) return -1;
    if (t->kind == TOK_UNIGRAM ? parse_unigram(t, p, model, bound, err) : parse_bpe(t, p, model, bound, err)) return -1;
    XXH3_state_t *st = XXH3_createState();
    if (!st) return emb_fail(err, "out of memory");
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, kind, strlen(kind));
    if (hash_json(st, norm) || hash_json(st, pre)) {
        XXH3_freeState(st);
        return emb_fail(err, "out of memory");
    }
    hash_model(st, p, model, t->kind);
    p->fp = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* encoding */

size_t tok_match_added(const emb_tokenizer *t, const char *p, size_t rem, size_t *idx) {
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
            if (sp_precompiled(&st->cm, &sc->a, &sc->b, &sc->tl)) swap_n(&sc->a, &sc->b);
        } else if (st->kind == N_STRIP) {
            nstr_strip(&sc->a, st->left, st->right);
        } else if (nstr_has_run(&sc->a, st->rc, st->min_run)) {
            nstr_replace_run(&sc->b, &sc->a, st->rc, st->min_run, st->single, st->rs, st->rlen);
            swap_n(&sc->a, &sc->b);
        }
    }
    if (p->pre == P_METASPACE) {
        int want = p->prepend == PREPEND_ALWAYS || (p->prepend == PREPEND_FIRST && at_start);
        nstr_metaspace(&sc->b, &sc->a, p->repl, p->repl_len, want);
        swap_n(&sc->a, &sc->b);
    } else if (p->prefix_space && sc->a.n && sc->a.b[0] != ' ') {
        nstr_prepend(&sc->b, &sc->a, " ", 1);
        swap_n(&sc->a, &sc->b);
    }
}

/* end of the pre-token that starts at i */
static size_t next_pre(const tok_pipe *p, const nstr *s, size_t i) {
    if (p->pre == P_BYTELEVEL) return p->use_regex ? i + bpe_split_next(s->b, s->n, i) : s->n;
    if (!p->split) return s->n;
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
    nstr_from_raw(&sc->a, text + a, b - a, (int32_t)a);
    normalize(p, sc, a == 0);
    if (sc->a.oom || sc->tl.oom) return -1;
    const nstr *n = &sc->a;
    size_t i = 0;
    while (i < n->n && !rs->stop) {
        size_t e = next_pre(p, n, i);
        sc->pl.n = 0;
        uint64_t h;
        int rc = sc->cache ? tok_cache_get(sc->cache, n->b + i, e - i, &h, &sc->pl) : 0;
        if (rc < 0) return -1;
        if (rc == 0) {
            rc = t->kind == TOK_UNIGRAM ? tok_unigram_encode(&p->ug, t->vocab, &sc->us, n->b + i, e - i, &sc->pl)
                                        : tok_bpe_encode(&p->bpe, t->vocab, &sc->bs, n->b + i, e - i, &sc->pl);
            if (rc) return -1;
            if (sc->cache) tok_cache_put(sc->cache, n->b + i, e - i, h, sc->pl.t, sc->pl.n);
        }
        int32_t word = rs->word++;
        for (size_t k = 0; k < sc->pl.n; k++) {
            int32_t s, en;
            nstr_span(n, i + sc->pl.t[k].a, i + sc->pl.t[k].b, &s, &en);
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

static size_t ws_left(const char *s, size_t lo, size_t i) { /* start of the whitespace run ending at i */
    while (i > lo) {
        size_t q = i - 1;
        while (q > lo && ((unsigned char)s[q] & 0xC0) == 0x80) q--;
        int k;
        if (!tok_is_ws(tok_get_utf8((const unsigned char *)s + q, &k))) break;
        i = q;
    }
    return i;
}

static size_t ws_right(const char *s, size_t len, size_t i) {
    while (i < len) {
        int k;
        if (!tok_is_ws(tok_get_utf8((const unsigned char *)s + i, &k))) break;
        i += (size_t)k;
    }
    return i;
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

int tok_pipe_seq(const emb_tokenizer *t, void **scratch, const char *text, size_t len, int seq, size_t cap,
                 toklist *out) {
    pipe_scratch *sc = *scratch;
    if (!sc) {
        sc = calloc(1, sizeof *sc);
        if (!sc) return -1;
        *scratch = sc;
    }
    sc->seen += len;
    if (!sc->cache && sc->seen > CACHE_AFTER && !(sc->cache = tok_cache_new())) return -1;
    if (sc->cache) tok_cache_bind(sc->cache, t, t->fp);
    out->n = out->ntt = out->text_n = 0;
    run_state rs = {0, 0, cap, 0};
    size_t pos = 0, i = 0;
    while (pos < len && !rs.stop) {
        /* the leftmost (then longest) added token from i */
        size_t m = 0, k = 0;
        while (i < len) {
            if (t->added_first[(unsigned char)text[i]] && (m = tok_match_added(t, text + i, len - i, &k))) break;
            i++;
        }
        size_t ms = i, me = i + m;
        if (m) {
            const added_tok *a = &t->added[k];
            if (a->lstrip) ms = ws_left(text, pos, ms);
            if (a->rstrip) me = ws_right(text, len, me);
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
