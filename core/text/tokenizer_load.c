/* Loading a tokenizer's settings: tokenizer.json (its model when WordPiece, else by
 * tok_pipeline_load.c; its added tokens, post-processor and padding), or vocab.txt with
 * tokenizer_config.json; every id bounded by the entries present and every template token
 * checked. tokenizer_finish.c then builds the tables the encoding uses and the fingerprint. */
#include "text/tokenizer_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/emb_json.h"
#include "base/file.h"
#include "text/tok_pipeline.h"

#define MAX_TYPE_ID 255 /* token type ids of a template */
#define TOKENIZER_MAX_BYTES (256u << 20) /* tokenizer.json or vocab.txt */

static emb_tokenizer *tok_new(void) {
    emb_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->vocab = emb_vocab_new();
    t->cont = emb_vocab_new();
    if (!t->vocab || !t->cont) {
        emb_vocab_free(t->vocab);
        emb_vocab_free(t->cont);
        free(t);
        return NULL;
    }
    t->lowercase = t->strip = t->chinese = t->clean = 1;
    t->max_chars = 100;
    memcpy(t->prefix, "##", 3);
    t->prefix_len = 2;
    t->unk_id = t->cls_id = t->sep_id = t->pad_id = t->mask_id = -1;
    return t;
}

void emb_tokenizer_free(emb_tokenizer *t) {
    if (!t) return;
    emb_vocab_free(t->vocab);
    emb_vocab_free(t->cont);
    emb_tok_pipeline_free(t->pipe);
    for (size_t i = 0; i < t->n_added; i++) free(t->added[i].s);
    free(t->added);
    free(t);
}

static int add_vocab(emb_tokenizer *t, const char *s, size_t len, int32_t id) {
    return emb_vocab_add(t->vocab, s, len, id);
}

static int add_added(emb_tokenizer *t, const char *s, size_t len, int32_t id, int lstrip, int rstrip,
                     char err[EMB_ERR_LEN]) {
    if (len == 0) return 0;
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].len == len && memcmp(t->added[i].s, s, len) == 0) {
            t->added[i].id = id;
            t->added[i].lstrip = (uint8_t)lstrip;
            t->added[i].rstrip = (uint8_t)rstrip;
            return 0;
        }
    added_tok *na = realloc(t->added, (t->n_added + 1) * sizeof *na);
    if (!na) return emb_fail(err, "out of memory");
    t->added = na;
    char *c = malloc(len + 1);
    if (!c) return emb_fail(err, "out of memory");
    memcpy(c, s, len);
    c[len] = 0;
    t->added[t->n_added++] = (added_tok){c, len, id, (uint8_t)lstrip, (uint8_t)rstrip};
    return 0;
}

static void default_template(emb_tokenizer *t) {
    t->n_single = 3;
    t->single[0] = (tmpl_item){0, t->cls_id, 0};
    t->single[1] = (tmpl_item){1, -1, 0};
    t->single[2] = (tmpl_item){0, t->sep_id, 0};
    t->n_pair = 5;
    t->pair[0] = (tmpl_item){0, t->cls_id, 0};
    t->pair[1] = (tmpl_item){1, -1, 0};
    t->pair[2] = (tmpl_item){0, t->sep_id, 0};
    t->pair[3] = (tmpl_item){2, -1, 1};
    t->pair[4] = (tmpl_item){0, t->sep_id, 1};
}

static int32_t lookup_cstr(const emb_tokenizer *t, const char *s) {
    return s ? emb_vocab_find(t->vocab, s, strlen(s)) : -1;
}

/* A special-token entry of tokenizer_config.json: "[UNK]" or {"content": "[UNK]", ...}. */
static const char *config_token(const cJSON *cfg, const char *key, const char *dflt) {
    const cJSON *v = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, key) : NULL;
    if (!v) return dflt;
    if (cJSON_IsNull(v)) return NULL;
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "content") : NULL;
    return cJSON_IsString(c) ? c->valuestring : dflt;
}

static int json_bool(const cJSON *o, const char *key, int dflt) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

/* lstrip and rstrip (not single_word); Unigram / BPE (t->pipe): normalized=true when there is no
 * normalizer (the raw text is then the normalized text). */
static int check_added_flags(const emb_tokenizer *t, const cJSON *a, const char *what, const char *content,
                             char err[EMB_ERR_LEN]) {
    if (json_bool(a, "single_word", 0))
        return emb_fail(err, "%s: added token '%.40s' with single_word=true is not supported", what, content);
    if (json_bool(a, "normalized", 0) && !(t->pipe && !emb_tok_pipeline_has_normalizer(t->pipe)))
        return emb_fail(err, "%s: added token '%.40s' with normalized=true is not supported%s", what, content,
                        t->pipe ? " with a normalizer" : "");
    return 0;
}

/* model_max_length (and, for vocab.txt, the settings) from tokenizer_config.json */
static int read_config(const char *path, cJSON **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    if (!path) return 0;
    cJSON *j;
    if (emb_json_read_file(path, EMB_CONFIG_MAX_BYTES, &j, err)) return -1;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return emb_fail(err, "%s: not a JSON object", path);
    }
    *out = j;
    return 0;
}

static void config_max_length(emb_tokenizer *t, const cJSON *cfg) {
    int64_t v; /* larger values (transformers writes 1e30) mean "no limit" */
    if (cfg && emb_json_int(cJSON_GetObjectItemCaseSensitive(cfg, "model_max_length"), 1, 1000000000, &v) == 0)
        t->model_max_length = v;
}

/* An added_tokens_decoder key: a decimal id below bound (digits only, no sign or spaces). */
static int parse_id_key(const char *s, int64_t bound, int32_t *out) {
    int64_t v = 0;
    size_t n = strlen(s);
    if (n == 0 || n > 10) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v >= bound) return -1;
    *out = (int32_t)v;
    return 0;
}

static int load_vocab_txt(emb_tokenizer *t, const char *vocab_path, const cJSON *cfg, char err[EMB_ERR_LEN]) {
    size_t len;
    char *buf;
    if (emb_read_file(vocab_path, TOKENIZER_MAX_BYTES, &buf, &len, err)) return -1;
    int32_t id = 0;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - buf) : len;
        size_t l = e - i;
        if (l && buf[i + l - 1] == '\r') l--;
        if (add_vocab(t, buf + i, l, id++)) {
            free(buf);
            return emb_fail(err, "out of memory");
        }
        i = e + 1;
    }
    free(buf);

    if (cfg) {
        const cJSON *cls = cJSON_GetObjectItemCaseSensitive(cfg, "tokenizer_class");
        if (cJSON_IsString(cls)) {
            static const char *ok[] = {"BertTokenizer",           "BertTokenizerFast",      "DistilBertTokenizer",
                                       "DistilBertTokenizerFast", "ElectraTokenizer",       "ElectraTokenizerFast",
                                       "MobileBertTokenizer",     "MobileBertTokenizerFast"};
            int found = 0;
            for (size_t k = 0; k < sizeof ok / sizeof *ok; k++) found |= strcmp(cls->valuestring, ok[k]) == 0;
            if (!found)
                return emb_fail(err,
                                "tokenizer_config.json: tokenizer_class '%.60s' is not supported with vocab.txt "
                                "(only BERT WordPiece)",
                                cls->valuestring);
        }
    }
    t->lowercase = json_bool(cfg, "do_lower_case", 1);
    const cJSON *sa = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "strip_accents") : NULL;
    t->strip = cJSON_IsBool(sa) ? cJSON_IsTrue(sa) : t->lowercase;
    t->chinese = json_bool(cfg, "tokenize_chinese_chars", 1);
    t->clean = 1;
    const char *names[5] = {config_token(cfg, "unk_token", "[UNK]"), config_token(cfg, "sep_token", "[SEP]"),
                            config_token(cfg, "pad_token", "[PAD]"), config_token(cfg, "cls_token", "[CLS]"),
                            config_token(cfg, "mask_token", "[MASK]")};
    t->unk_id = lookup_cstr(t, names[0]);
    t->sep_id = lookup_cstr(t, names[1]);
    t->pad_id = lookup_cstr(t, names[2]);
    t->cls_id = lookup_cstr(t, names[3]);
    t->mask_id = lookup_cstr(t, names[4]);
    if (t->cls_id < 0 || t->sep_id < 0)
        return emb_fail(err, "%s: no [CLS]/[SEP] token in the vocabulary", vocab_path);
    for (int k = 0; k < 5; k++) {
        int32_t kid = lookup_cstr(t, names[k]);
        if (kid >= 0 && add_added(t, names[k], strlen(names[k]), kid, 0, 0, err)) return -1;
    }
    const cJSON *atd = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "added_tokens_decoder") : NULL;
    /* ids are bounded by the entries present: the lines of vocab.txt and these tokens */
    int64_t bound = (int64_t)id + cJSON_GetArraySize(atd);
    const cJSON *a;
    cJSON_ArrayForEach(a, atd) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content");
        if (!cJSON_IsString(c) || !a->string) continue;
        int32_t aid;
        if (parse_id_key(a->string, bound, &aid))
            return emb_fail(
                err,
                "tokenizer_config.json: added_tokens_decoder id '%.20s' is not a number from 0 to %lld "
                "(ids are bounded by the %lld entries present)",
                a->string, (long long)bound - 1, (long long)bound);
        if (check_added_flags(t, a, "tokenizer_config.json", c->valuestring, err)) return -1;
        if (emb_vocab_token(t->vocab, aid, NULL) == NULL &&
            add_vocab(t, c->valuestring, strlen(c->valuestring), aid))
            return emb_fail(err, "out of memory");
        if (add_added(t, c->valuestring, strlen(c->valuestring), aid, 0, 0, err)) return -1;
    }
    default_template(t);
    return 0;
}

/* The ids of a special token of a TemplateProcessing ("special_tokens": {"[CLS]": {"ids": [101]}}). */
static int special_ids(const cJSON *specials, const char *name, int32_t ids[MAX_TMPL], int *n,
                       char err[EMB_ERR_LEN]) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(specials, name);
    const cJSON *arr = s ? cJSON_GetObjectItemCaseSensitive(s, "ids") : NULL;
    if (!cJSON_IsArray(arr))
        return emb_fail(err, "tokenizer.json: template special token '%.40s' not defined", name);
    *n = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        int64_t v;
        if (*n >= MAX_TMPL) return emb_fail(err, "tokenizer.json: template too long");
        if (emb_json_int(x, 0, INT32_MAX - 1, &v))
            return emb_fail(err,
                            "tokenizer.json: post_processor special_tokens '%.40s' has an id that is not a "
                            "non-negative integer",
                            name);
        ids[(*n)++] = (int32_t)v;
    }
    return 0;
}

/* A template: items in order; `pair` says which sequences it must hold, each exactly once (the
 * truncation budget counts every sequence once, so a repeated one would exceed max_len). */
static int parse_template(const cJSON *arr, const cJSON *specials, int pair, tmpl_item *items, int *n,
                          char err[EMB_ERR_LEN]) {
    int seen[3] = {0, 0, 0};
    *n = 0;
    const cJSON *it;
    if (!cJSON_IsArray(arr)) return emb_fail(err, "tokenizer.json: TemplateProcessing without a template");
    cJSON_ArrayForEach(it, arr) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        const cJSON *sq = cJSON_GetObjectItemCaseSensitive(it, "Sequence");
        const cJSON *o = sp ? sp : sq;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type_id");
        if (!o || !cJSON_IsString(id)) return emb_fail(err, "tokenizer.json: bad TemplateProcessing item");
        int64_t type_id = 0;
        if (ty && emb_json_int(ty, 0, MAX_TYPE_ID, &type_id))
            return emb_fail(err, "tokenizer.json: post_processor type_id is not an integer from 0 to %d",
                            MAX_TYPE_ID);
        if (sq) {
            if (*n >= MAX_TMPL) return emb_fail(err, "tokenizer.json: template too long");
            int kind = strcmp(id->valuestring, "A") == 0 ? 1 : strcmp(id->valuestring, "B") == 0 ? 2 : 0;
            if (!kind) return emb_fail(err, "tokenizer.json: bad template sequence '%.20s'", id->valuestring);
            seen[kind]++;
            items[(*n)++] = (tmpl_item){kind, -1, (int32_t)type_id};
        } else {
            int32_t ids[MAX_TMPL];
            int k = 0;
            if (special_ids(specials, id->valuestring, ids, &k, err)) return -1;
            for (int i = 0; i < k; i++) {
                if (*n >= MAX_TMPL) return emb_fail(err, "tokenizer.json: template too long");
                items[(*n)++] = (tmpl_item){0, ids[i], (int32_t)type_id};
            }
        }
    }
    if (seen[1] != 1 || seen[2] != (pair ? 1 : 0))
        return emb_fail(err, "tokenizer.json: post_processor's %s template must hold sequence A%s exactly once",
                        pair ? "pair" : "single", pair ? " and sequence B each" : " (and no B)");
    return 0;
}

static const char *type_of(const cJSON *o) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : NULL;
}

/* A BertProcessing entry: ["[SEP]", 102]. */
static int processing_id(const cJSON *pp, const char *key, int32_t *out, char err[EMB_ERR_LEN]) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(pp, key);
    int64_t v;
    if (cJSON_GetArraySize(a) != 2 || emb_json_int(cJSON_GetArrayItem(a, 1), 0, INT32_MAX - 1, &v))
        return emb_fail(err, "tokenizer.json: BertProcessing '%s' is not [token, id]", key);
    *out = (int32_t)v;
    return 0;
}

/* An id of field `what` (for token `tok`) that is not an integer in [0, bound). */
static int bad_id(const char *what, const char *tok, const cJSON *id, int64_t bound, char err[EMB_ERR_LEN]) {
    char shown[32] = "that is not a number";
    if (cJSON_IsNumber(id)) snprintf(shown, sizeof shown, "%.15g", id->valuedouble);
    return emb_fail(err,
                    "tokenizer.json: %s id %s of '%.40s' is out of range 0 to %lld (ids are bounded by the "
                    "%lld entries present)",
                    what, shown, tok, (long long)bound - 1, (long long)bound);
}

/* The WordPiece model, BertNormalizer and BertPreTokenizer of a tokenizer.json. */
static int parse_wordpiece(emb_tokenizer *t, const cJSON *j, const cJSON *model, const cJSON *vocab, int64_t bound,
                           char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(vocab)) return emb_fail(err, "tokenizer.json: WordPiece model without a vocab object");
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int64_t id;
        if (emb_json_int(e, 0, bound - 1, &id) || !e->string)
            return bad_id("model.vocab", e->string ? e->string : "", e, bound, err);
        if (add_vocab(t, e->string, strlen(e->string), (int32_t)id)) return emb_fail(err, "out of memory");
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word");
    t->unk_id = lookup_cstr(t, cJSON_IsString(unk) ? unk->valuestring : "[UNK]");
    if (cJSON_IsString(pre)) {
        size_t pl = strlen(pre->valuestring);
        if (pl >= MAX_PREFIX) return emb_fail(err, "tokenizer.json: continuing_subword_prefix too long");
        memcpy(t->prefix, pre->valuestring, pl + 1);
        t->prefix_len = pl;
    }
    if (mx && !cJSON_IsNull(mx)) {
        if (!cJSON_IsNumber(mx) || !(mx->valuedouble >= 0))
            return emb_fail(err, "tokenizer.json: bad max_input_chars_per_word");
        t->max_chars = mx->valuedouble > 1e9 ? 1000000000 : (int)mx->valuedouble;
    }

    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
    if (cJSON_IsNull(norm) || !norm) {
        t->clean = t->chinese = t->strip = t->lowercase = 0;
    } else {
        const char *nt = type_of(norm);
        if (!nt || strcmp(nt, "BertNormalizer") != 0)
            return emb_fail(err, "tokenizer.json: normalizer type '%.40s' is not supported (only BertNormalizer)",
                            nt ? nt : "?");
        t->clean = json_bool(norm, "clean_text", 1);
        t->chinese = json_bool(norm, "handle_chinese_chars", 1);
        t->lowercase = json_bool(norm, "lowercase", 1);
        const cJSON *sa = cJSON_GetObjectItemCaseSensitive(norm, "strip_accents");
        t->strip = cJSON_IsBool(sa) ? cJSON_IsTrue(sa) : t->lowercase;
    }
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    const char *ptt = type_of(pt);
    if (!ptt || strcmp(ptt, "BertPreTokenizer") != 0)
        return emb_fail(err, "tokenizer.json: pre_tokenizer type '%.40s' is not supported (only BertPreTokenizer)",
                        ptt ? ptt : "null");

    return 0;
}

/* The settings of a tokenizer.json (j, an object) into t. */
static int parse_json(emb_tokenizer *t, const cJSON *j, char err[EMB_ERR_LEN]) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!cJSON_IsObject(model)) return emb_fail(err, "tokenizer.json: no model");
    const char *mt = type_of(model);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!mt) { /* older files omit the type: recognise it by its fields */
        if (cJSON_GetObjectItemCaseSensitive(model, "merges")) mt = "BPE";
        else if (cJSON_IsArray(vocab)) mt = "Unigram";
        else if (cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix") ||
                 cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word"))
            mt = "WordPiece";
        else mt = "WordLevel";
    }
    if (strcmp(mt, "WordPiece") != 0 && strcmp(mt, "Unigram") != 0 && strcmp(mt, "BPE") != 0)
        return emb_fail(
            err, "tokenizer.json: model type '%.40s' is not supported (only WordPiece, Unigram and BPE)", mt);
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
    /* ids are bounded by the entries present, checked before anything is sized by them */
    int64_t bound = (int64_t)cJSON_GetArraySize(vocab) + cJSON_GetArraySize(added);
    if (strcmp(mt, "WordPiece") == 0 ? parse_wordpiece(t, j, model, vocab, bound, err)
                                     : emb_tok_pipeline_parse(t, j, mt, bound, err))
        return -1;

    const cJSON *a;
    cJSON_ArrayForEach(a, added) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        int64_t aid;
        if (!cJSON_IsString(c)) return emb_fail(err, "tokenizer.json: an added token has no content string");
        if (emb_json_int(id, 0, bound - 1, &aid)) return bad_id("added_tokens", c->valuestring, id, bound, err);
        if (check_added_flags(t, a, "tokenizer.json", c->valuestring, err)) return -1;
        if (!emb_vocab_token(t->vocab, (int32_t)aid, NULL) &&
            add_vocab(t, c->valuestring, strlen(c->valuestring), (int32_t)aid))
            return emb_fail(err, "out of memory");
        if (add_added(t, c->valuestring, strlen(c->valuestring), (int32_t)aid, json_bool(a, "lstrip", 0),
                      json_bool(a, "rstrip", 0), err))
            return -1;
    }

    t->cls_id = lookup_cstr(t, t->pipe ? "<s>" : "[CLS]");
    t->sep_id = lookup_cstr(t, t->pipe ? "</s>" : "[SEP]");
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(j, "post_processor");
    if (!pp || cJSON_IsNull(pp)) {
        t->n_single = 1;
        t->single[0] = (tmpl_item){1, -1, 0};
        t->n_pair = 2;
        t->pair[0] = (tmpl_item){1, -1, 0};
        t->pair[1] = (tmpl_item){2, -1, 1};
    } else {
        const char *ppt = type_of(pp);
        if (ppt && strcmp(ppt, "TemplateProcessing") == 0) {
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(pp, "special_tokens");
            if (parse_template(cJSON_GetObjectItemCaseSensitive(pp, "single"), sp, 0, t->single, &t->n_single,
                               err) ||
                parse_template(cJSON_GetObjectItemCaseSensitive(pp, "pair"), sp, 1, t->pair, &t->n_pair, err))
                return -1;
            int first = -1, last = -1;
            for (int i = 0; i < t->n_single; i++)
                if (t->single[i].kind == 0) {
                    if (first < 0) first = i;
                    last = i;
                }
            if (first >= 0 && last > first) {
                t->cls_id = t->single[first].id;
                t->sep_id = t->single[last].id;
            }
        } else if (ppt && strcmp(ppt, "BertProcessing") == 0) {
            if (processing_id(pp, "sep", &t->sep_id, err) || processing_id(pp, "cls", &t->cls_id, err)) return -1;
            default_template(t);
        } else if (ppt && strcmp(ppt, "RobertaProcessing") == 0 && t->pipe) {
            /* <s> A </s> and <s> A </s> </s> B </s>, every type id 0 */
            if (processing_id(pp, "sep", &t->sep_id, err) || processing_id(pp, "cls", &t->cls_id, err)) return -1;
            default_template(t);
            t->pair[3] = (tmpl_item){0, t->sep_id, 0};
            t->pair[4] = (tmpl_item){2, -1, 0};
            t->pair[5] = (tmpl_item){0, t->sep_id, 0};
            t->n_pair = 6;
            emb_tok_pipeline_set_trim(t->pipe, json_bool(pp, "trim_offsets", 1),
                                      json_bool(pp, "add_prefix_space", 1));
        } else {
            return emb_fail(
                err,
                "tokenizer.json: post_processor type '%.40s' is not supported "
                "(only TemplateProcessing, BertProcessing and, for BPE and Unigram, RobertaProcessing)",
                ppt ? ppt : "?");
        }
    }
    t->pad_id = lookup_cstr(t, t->pipe ? "<pad>" : "[PAD]");
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(j, "padding");
    const cJSON *pid = pad ? cJSON_GetObjectItemCaseSensitive(pad, "pad_id") : NULL;
    int64_t v;
    if (pid && !cJSON_IsNull(pid)) {
        if (emb_json_int(pid, 0, INT32_MAX - 1, &v))
            return emb_fail(err, "tokenizer.json: padding pad_id is not an id");
        t->pad_id = (int32_t)v;
    }
    t->mask_id = lookup_cstr(t, t->pipe ? "<mask>" : "[MASK]");
    return 0;
}

/* Reads the settings files into t (json_path, or vocab_path with config_path), then finishes it. */
static int load_into(emb_tokenizer *t, const char *json_path, const char *vocab_path, const char *config_path,
                     char err[EMB_ERR_LEN]) {
    cJSON *cfg = NULL, *j = NULL;
    int rc = read_config(config_path, &cfg, err);
    if (rc == 0 && json_path) {
        rc = emb_json_read_file(json_path, TOKENIZER_MAX_BYTES, &j, err);
        if (rc == 0 && !cJSON_IsObject(j)) rc = emb_fail(err, "%s: not a JSON object", json_path);
        if (rc == 0) rc = parse_json(t, j, err);
    } else if (rc == 0) {
        rc = load_vocab_txt(t, vocab_path, cfg, err);
    }
    if (rc == 0) {
        config_max_length(t, cfg);
        rc = emb_tokenizer_finish(t, json_path ? "tokenizer.json" : "vocab.txt", err);
    }
    cJSON_Delete(cfg);
    cJSON_Delete(j);
    return rc;
}

static int done(emb_tokenizer *t, int rc, emb_tokenizer **out) {
    if (rc) {
        emb_tokenizer_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int emb_tokenizer_load_files(const char *json_path, const char *vocab_path, const char *config_path,
                             emb_tokenizer **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    if (!json_path == !vocab_path) return emb_fail(err, "give either tokenizer.json or vocab.txt");
    emb_tokenizer *t = tok_new();
    if (!t) return emb_fail(err, "out of memory");
    return done(t, load_into(t, json_path, vocab_path, config_path, err), out);
}

int emb_tokenizer_from_json(const char *json, size_t len, emb_tokenizer **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_tokenizer *t = tok_new();
    if (!t) return emb_fail(err, "out of memory");
    cJSON *j = cJSON_ParseWithLength(json, len);
    int rc = cJSON_IsObject(j) ? parse_json(t, j, err) : emb_fail(err, "tokenizer.json: not a JSON object");
    cJSON_Delete(j);
    if (rc == 0) rc = emb_tokenizer_finish(t, "tokenizer.json", err);
    return done(t, rc, out);
}

int emb_tokenizer_load(const char *dir, emb_tokenizer **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    if (!dir) return emb_fail(err, "no tokenizer path");
    if (emb_path_kind_of(dir) == EMB_PATH_OTHER) { /* a tokenizer.json or vocab.txt given directly */
        size_t n = strlen(dir);
        int js = n >= 5 && strcmp(dir + n - 5, ".json") == 0;
        return emb_tokenizer_load_files(js ? dir : NULL, js ? NULL : dir, NULL, out, err);
    }
    char p1[PATH_MAX], p2[PATH_MAX], p3[PATH_MAX];
    if (emb_path_join(p1, sizeof p1, dir, "tokenizer.json", err) ||
        emb_path_join(p2, sizeof p2, dir, "vocab.txt", err) ||
        emb_path_join(p3, sizeof p3, dir, "tokenizer_config.json", err))
        return -1;
    const char *cfg = emb_path_exists(p3) ? p3 : NULL;
    if (emb_path_exists(p1)) return emb_tokenizer_load_files(p1, NULL, cfg, out, err);
    if (emb_path_exists(p2)) return emb_tokenizer_load_files(NULL, p2, cfg, out, err);
    return emb_fail(err, "%s: no tokenizer.json or vocab.txt", dir);
}
