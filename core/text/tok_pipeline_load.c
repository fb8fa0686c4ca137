/* Loading the Unigram / BPE pipeline (see tok_pipeline.h) from tokenizer.json: its
 * normalizers, its pre-tokenizer and its model, every string and id checked, and its fingerprint. */
#include "text/tok_pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "text/tok_nstr.h"
#include "base/utf8.h"

void emb_tok_pipeline_free(tok_pipe *p) {
    if (!p) return;
    for (int i = 0; i < p->n_norm; i++) {
        emb_sp_charsmap_free(&p->norm[i].cm);
        free(p->norm[i].rs);
    }
    emb_tok_unigram_free(&p->ug);
    emb_tok_bpe_free(&p->bpe);
    free(p);
}

uint64_t emb_tok_pipeline_fingerprint(const tok_pipe *p) { return p->fp; }
int emb_tok_pipeline_has_normalizer(const tok_pipe *p) { return p->n_norm > 0; }
void emb_tok_pipeline_set_trim(tok_pipe *p, int trim, int add_prefix_space) {
    p->trim = trim;
    p->trim_prefix = add_prefix_space;
    p->fp = XXH3_64bits_withSeed(&p->fp, sizeof p->fp, (uint64_t)(trim * 2 + add_prefix_space));
}

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
    if (!cJSON_IsString(content))
        return emb_fail(err, "tokenizer.json: Replace normalizer without a content string");
    if (bad_utf8(content->valuestring, "a Replace content", err)) return -1;
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(pat, "String");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
    int64_t c = -1;
    st->min_run = 1;
    st->single = 1;
    if (cJSON_IsString(ps)) {
        c = one_char(ps->valuestring, NULL);
        if (c < 0)
            return emb_fail(err, "tokenizer.json: Replace pattern '%.40s' is not supported (only one character)",
                            ps->valuestring);
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
            return emb_fail(err,
                            "tokenizer.json: Replace regex '%.40s' is not supported (only one character, "
                            "optionally repeated as X+ or X{n,})",
                            r);
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
        cJSON_ArrayForEach(
            e, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) if (parse_norm(p, e, err)) return -1;
        return 0;
    }
    if (p->n_norm == MAX_NORM) return emb_fail(err, "tokenizer.json: more than %d normalizers", MAX_NORM);
    norm_step *st = &p->norm[p->n_norm];
    memset(st, 0, sizeof *st);
    if (ty && strcmp(ty, "Precompiled") == 0) {
        const cJSON *cm = cJSON_GetObjectItemCaseSensitive(n, "precompiled_charsmap");
        if (!cJSON_IsString(cm))
            return emb_fail(err, "tokenizer.json: Precompiled normalizer without a precompiled_charsmap string");
        st->kind = N_PRECOMPILED;
        char e2[EMB_ERR_LEN];
        if (emb_sp_charsmap_load(&st->cm, cm->valuestring, e2)) return emb_fail(err, "tokenizer.json: %s", e2);
    } else if (ty && strcmp(ty, "Strip") == 0) {
        st->kind = N_STRIP;
        st->left = jbool(n, "strip_left", 1);
        st->right = jbool(n, "strip_right", 1);
    } else if (ty && strcmp(ty, "NFC") == 0) {
        st->kind = N_NFC;
    } else if (ty && strcmp(ty, "Replace") == 0) {
        st->kind = N_REPLACE;
        if (parse_replace(st, n, err)) {
            free(st->rs);
            return -1;
        }
    } else {
        return emb_fail(err,
                        "tokenizer.json: normalizer type '%.40s' is not supported with a Unigram or BPE model "
                        "(only Precompiled, Strip, Replace, NFC and Sequence)",
                        ty ? ty : "?");
    }
    p->n_norm++;
    return 0;
}

/* Sequence[Split(a known regex, Isolated), ByteLevel(use_regex false)] as Qwen2 / Llama 3 files
 * have it (or ByteLevel alone): the Split regex cuts the pre-tokens, ByteLevel maps their bytes. */
static int parse_pre_seq(tok_pipe *p, const cJSON *pt, char err[EMB_ERR_LEN]) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
    int n = cJSON_GetArraySize(arr);
    const cJSON *bl = cJSON_GetArrayItem(arr, n - 1), *sp = n == 2 ? cJSON_GetArrayItem(arr, 0) : NULL;
    if (!cJSON_IsArray(arr) || (n != 1 && n != 2) || !type_str(bl) || strcmp(type_str(bl), "ByteLevel") != 0 ||
        (sp && (!type_str(sp) || strcmp(type_str(sp), "Split") != 0)))
        return emb_fail(err,
                        "tokenizer.json: pre_tokenizer Sequence is not supported (only [ByteLevel] or [Split, "
                        "ByteLevel])");
    p->pre = P_BYTELEVEL;
    p->prefix_space = jbool(bl, "add_prefix_space", 1);
    p->pat = jbool(bl, "use_regex", 1) ? SPLIT_GPT2 : 0;
    if (!sp) return 0;
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sp, "pattern"), "Regex");
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(sp, "behavior");
    if (!cJSON_IsString(re))
        return emb_fail(err, "tokenizer.json: pre_tokenizer Split without a Regex pattern is not supported");
    if (!(p->pat = emb_tok_split_kind(re->valuestring)))
        return emb_fail(err,
                        "tokenizer.json: pre_tokenizer Split regex '%.80s' is not supported (only GPT-2's, "
                        "Qwen2's and Llama 3's patterns, written out by hand)",
                        re->valuestring);
    if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") != 0 || jbool(sp, "invert", 0))
        return emb_fail(err, "tokenizer.json: pre_tokenizer Split behavior must be Isolated, not inverted");
    /* HF would cut each Split piece again and give every piece its prefix space */
    if (jbool(bl, "use_regex", 1) || p->prefix_space)
        return emb_fail(err, "tokenizer.json: pre_tokenizer ByteLevel after a Split must have use_regex and "
                             "add_prefix_space false");
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
            else
                return emb_fail(err, "tokenizer.json: Metaspace prepend_scheme '%.20s' is unknown",
                                ps->valuestring);
        } else {
            p->prepend = jbool(pt, "add_prefix_space", 1) ? PREPEND_ALWAYS : PREPEND_NEVER;
        }
        p->split = jbool(pt, "split", 1);
        return 0;
    }
    if (ty && strcmp(ty, "ByteLevel") == 0 && kind == TOK_BPE) {
        p->pre = P_BYTELEVEL;
        p->prefix_space = jbool(pt, "add_prefix_space", 1);
        p->pat = jbool(pt, "use_regex", 1) ? SPLIT_GPT2 : 0;
        return 0;
    }
    if (ty && strcmp(ty, "Sequence") == 0 && kind == TOK_BPE) return parse_pre_seq(p, pt, err);
    if (!ty && (!pt || cJSON_IsNull(pt))) { /* none: each text between added tokens is one word */
        p->pre = P_NONE;
        return 0;
    }
    return emb_fail(err, "tokenizer.json: pre_tokenizer type '%.40s' is not supported with a %s model (only %s)",
                    ty ? ty : "?", kind == TOK_UNIGRAM ? "Unigram" : "BPE",
                    kind == TOK_UNIGRAM ? "Metaspace or none" : "ByteLevel, Sequence[Split, ByteLevel] or none");
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
    if (jbool(model, "byte_fallback", 0))
        return emb_fail(err, "tokenizer.json: Unigram byte_fallback is not supported");
    int n = cJSON_GetArraySize(vocab);
    if (n == 0) return emb_fail(err, "tokenizer.json: the vocabulary is empty");
    double *score = malloc((size_t)n * sizeof *score);
    if (!score) return emb_fail(err, "out of memory");
    int32_t id = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        const cJSON *s = cJSON_GetArrayItem(e, 0), *sc = cJSON_GetArrayItem(e, 1);
        if (cJSON_GetArraySize(e) != 2 || !cJSON_IsString(s) || !cJSON_IsNumber(sc) ||
            !isfinite(sc->valuedouble) || fabs(sc->valuedouble) > 1e300) {
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
        if (!(unk->valuedouble >= 0 && unk->valuedouble < n &&
              unk->valuedouble == (double)(int64_t)unk->valuedouble)) {
            free(score);
            return emb_fail(err, "tokenizer.json: Unigram unk_id %.15g is out of range 0 to %d", unk->valuedouble,
                            n - 1);
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
    int rc = emb_tok_unigram_build(&p->ug, t->vocab, score, n, (int32_t)u, err);
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
            return emb_fail(err,
                            "tokenizer.json: model.vocab id of '%.40s' is out of range 0 to %lld (ids are bounded "
                            "by the %lld entries present)",
                            e->string ? e->string : "", (long long)bound - 1, (long long)bound);
        if (bad_utf8(e->string, "a BPE vocab token", err)) return -1;
        if (emb_vocab_add(t->vocab, e->string, strlen(e->string), (int32_t)e->valuedouble))
            return emb_fail(err, "out of memory");
    }
    static const char *unsupported[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, unsupported[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !*v->valuestring))
            return emb_fail(err, "tokenizer.json: BPE %s is not supported", unsupported[i]);
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    t->unk_id = cJSON_IsString(unk) ? emb_vocab_find(t->vocab, unk->valuestring, strlen(unk->valuestring)) : -1;
    /* after ByteLevel every byte is a token; otherwise the model works on characters */
    p->bpe.byte_level = p->pre == P_BYTELEVEL;
    p->bpe.byte_fallback = jbool(model, "byte_fallback", 0);
    p->bpe.fuse_unk = jbool(model, "fuse_unk", 0);
    p->bpe.unk_id = t->unk_id;
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsArray(merges)) return emb_fail(err, "tokenizer.json: BPE model without a merges array");
    char e2[EMB_ERR_LEN];
    if (emb_tok_bpe_build(&p->bpe, t->vocab, merges, e2)) return emb_fail(err, "tokenizer.json: %s", e2);
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
    /* hashed only when set: the fingerprints of files without them stay as they were */
    uint64_t fb = (uint64_t)(p->bpe.byte_fallback * 2 + p->bpe.fuse_unk);
    if (fb) XXH3_64bits_update(st, &fb, sizeof fb);
}

int emb_tok_pipeline_parse(emb_tokenizer *t, const cJSON *j, const char *kind, int64_t bound,
                           char err[EMB_ERR_LEN]) {
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
    if (t->kind == TOK_UNIGRAM ? parse_unigram(t, p, model, bound, err) : parse_bpe(t, p, model, bound, err))
        return -1;
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
