/* See gguf_tok_t5.h. llama.cpp's converter writes an XLM-R style SentencePiece Unigram
 * tokenizer (XLM-R, multilingual E5, BGE-M3) as tokenizer.ggml.model "t5": the pieces by id with
 * their scores and types (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte),
 * add_space_prefix, remove_extra_whitespaces and the precompiled charsmap. Written back as the
 * tokenizer.json Hugging Face makes of such a model: Precompiled, then (extra white space
 * removed) Strip right and " {2,}" replaced by U+2581; Metaspace; Unigram; <s> $A </s> and
 * <s> $A </s> </s> $B </s>. */
#include "model/gguf_tok_t5.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PIECE_UNKNOWN = 2, PIECE_CONTROL = 3, PIECE_USER = 4 };

static char *base64(const unsigned char *p, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *s = malloc((n + 2) / 3 * 4 + 1), *o = s;
    for (size_t i = 0; s && i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = A[v >> 18 & 63], *o++ = A[v >> 12 & 63];
        *o++ = i + 1 < n ? A[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? A[v & 63] : '=';
    }
    if (s) *o = 0;
    return s;
}

static int flag(const emb_gguf *g, const char *key, int dflt) {
    int64_t v = dflt;
    emb_gguf_kv_int(emb_gguf_find(g, key), &v);
    return v != 0;
}

static cJSON *normalizer(const emb_gguf *g, const char *label, char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *cm = emb_gguf_find(g, "tokenizer.ggml.precompiled_charsmap");
    cJSON *norm = cJSON_CreateObject(), *seq = cJSON_AddArrayToObject(norm, "normalizers");
    cJSON_AddStringToObject(norm, "type", "Sequence");
    if (cm) {
        if (cm->type != EMB_GGUF_ARRAY || (cm->elem_type != EMB_GGUF_U8 && cm->elem_type != EMB_GGUF_I8)) {
            cJSON_Delete(norm);
            emb_fail(err, "%s: tokenizer.ggml.precompiled_charsmap is not a list of bytes", label);
            return NULL;
        }
        char *b64 = base64(cm->value, (size_t)cm->n);
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "type", "Precompiled");
        cJSON_AddStringToObject(p, "precompiled_charsmap", b64 ? b64 : "");
        cJSON_AddItemToArray(seq, p);
        free(b64);
    }
    if (flag(g, "tokenizer.ggml.remove_extra_whitespaces", 1)) {
        cJSON *strip = cJSON_CreateObject(), *rep = cJSON_CreateObject(), *pat = cJSON_CreateObject();
        cJSON_AddStringToObject(strip, "type", "Strip");
        cJSON_AddBoolToObject(strip, "strip_left", 0);
        cJSON_AddBoolToObject(strip, "strip_right", 1);
        cJSON_AddStringToObject(rep, "type", "Replace");
        cJSON_AddStringToObject(pat, "Regex", " {2,}");
        cJSON_AddItemToObject(rep, "pattern", pat);
        cJSON_AddStringToObject(rep, "content", "\xE2\x96\x81");
        cJSON_AddItemToArray(seq, strip);
        cJSON_AddItemToArray(seq, rep);
    }
    return norm;
}

static cJSON *metaspace(int prepend) {
    cJSON *pre = cJSON_CreateObject();
    cJSON_AddStringToObject(pre, "type", "Metaspace");
    cJSON_AddStringToObject(pre, "replacement", "\xE2\x96\x81");
    cJSON_AddStringToObject(pre, "prepend_scheme", prepend ? "always" : "never");
    cJSON_AddBoolToObject(pre, "split", 1);
    return pre;
}

static void add_piece(cJSON *arr, const char *kind, const char *id) {
    cJSON *o = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(o, kind);
    cJSON_AddStringToObject(in, "id", id);
    cJSON_AddNumberToObject(in, "type_id", 0);
    cJSON_AddItemToArray(arr, o);
}

static void add_special(cJSON *sp, const char *name, int32_t id) {
    if (cJSON_GetObjectItemCaseSensitive(sp, name)) return;
    cJSON *o = cJSON_AddObjectToObject(sp, name);
    cJSON_AddStringToObject(o, "id", name);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "ids"), cJSON_CreateNumber(id));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "tokens"), cJSON_CreateString(name));
}

/* [bos] $A [eos] and [bos] $A [eos] [eos] $B [eos], as XLM-R's; a missing id leaves its token out. */
static cJSON *roberta_template(const char *bos, int32_t bos_id, const char *eos, int32_t eos_id) {
    cJSON *t = cJSON_CreateObject(), *single = cJSON_AddArrayToObject(t, "single"),
          *pair = cJSON_AddArrayToObject(t, "pair"), *sp = cJSON_AddObjectToObject(t, "special_tokens");
    cJSON_AddStringToObject(t, "type", "TemplateProcessing");
    const char *seq_a[] = {bos, "A", eos}, *seq_b[] = {eos, "B", eos};
    for (int i = 0; i < 3; i++)
        if (seq_a[i]) add_piece(single, i == 1 ? "Sequence" : "SpecialToken", seq_a[i]);
    for (int i = 0; i < 6; i++) {
        const char *s = i < 3 ? seq_a[i] : seq_b[i - 3];
        if (s) add_piece(pair, i == 1 || i == 4 ? "Sequence" : "SpecialToken", s);
    }
    if (bos) add_special(sp, bos, bos_id);
    if (eos) add_special(sp, eos, eos_id);
    return t;
}

static int32_t special(const emb_gguf *g, const char *key, int32_t n) {
    int64_t v;
    return emb_gguf_kv_int(emb_gguf_find(g, key), &v) || v < 0 || v >= n ? -1 : (int32_t)v;
}

/* The pieces with their scores into model.vocab, the control and user-defined ones as added
 * tokens; names[i] gets piece i. */
static int pieces(const emb_gguf *g, const char *label, cJSON *model, cJSON *added, char **names, int32_t n,
                  char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *toks = emb_gguf_find(g, "tokenizer.ggml.tokens"),
                      *scores = emb_gguf_find(g, "tokenizer.ggml.scores"),
                      *types = emb_gguf_find(g, "tokenizer.ggml.token_type");
    if (!scores || scores->type != EMB_GGUF_ARRAY || scores->elem_type != EMB_GGUF_F32 ||
        scores->n != (uint64_t)n ||
        (types && (types->type != EMB_GGUF_ARRAY || types->elem_type != EMB_GGUF_I32 || types->n != (uint64_t)n)))
        return emb_fail(err, "%s: tokenizer.ggml.scores or token_type is not a list of one per token", label);
    cJSON *voc = cJSON_AddArrayToObject(model, "vocab");
    size_t cur = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *t;
        size_t len;
        emb_gguf_array_next_string(toks, &cur, &t, &len);
        if (len >= 4096 || memchr(t, 0, len) || !(names[i] = strndup(t, len)))
            return emb_fail(err, "%s: token %d is too long or holds a NUL byte", label, i);
        float score;
        int32_t type = 1;
        memcpy(&score, scores->value + 4 * (size_t)i, 4); /* little-endian host */
        if (types) memcpy(&type, types->value + 4 * (size_t)i, 4);
        if (!isfinite(score))
            return emb_fail(err, "%s: tokenizer.ggml.scores: token %d's score is not finite", label, i);
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(row, cJSON_CreateString(names[i]));
        char num[32]; /* every digit: cJSON prints 15 where they read back as nearly the same number,
                       * and a score's last bit decides Viterbi's ties */
        snprintf(num, sizeof num, "%.17g", (double)score);
        cJSON_AddItemToArray(row, cJSON_CreateRaw(num));
        cJSON_AddItemToArray(voc, row);
        if (type == PIECE_UNKNOWN) cJSON_AddNumberToObject(model, "unk_id", i);
        if (type == PIECE_CONTROL || type == PIECE_USER || type == PIECE_UNKNOWN) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", i);
            cJSON_AddStringToObject(a, "content", names[i]);
            cJSON_AddBoolToObject(a, "normalized", type == PIECE_USER);
            cJSON_AddBoolToObject(a, "special", type != PIECE_USER);
            cJSON_AddItemToArray(added, a);
        }
    }
    return 0;
}

int emb_gguf_t5_json(const emb_gguf *g, const char *label, char **out, char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *toks = emb_gguf_find(g, "tokenizer.ggml.tokens");
    if (!toks || toks->type != EMB_GGUF_ARRAY || toks->elem_type != EMB_GGUF_STRING || toks->n < 1 ||
        toks->n > (1u << 24))
        return emb_fail(err, "%s: tokenizer.ggml.tokens is not a list of strings", label);
    int32_t n = (int32_t)toks->n;
    char **names = calloc((size_t)n, sizeof *names);
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens"),
          *model = cJSON_CreateObject();
    int rc = !names || !root ? emb_fail(err, "out of memory") : pieces(g, label, model, added, names, n, err);
    cJSON *norm = rc ? NULL : normalizer(g, label, err);
    if (rc == 0 && !norm) rc = -1;
    if (rc == 0) {
        cJSON_AddStringToObject(model, "type", "Unigram");
        cJSON_AddBoolToObject(model, "byte_fallback", 0);
        int32_t bos = special(g, "tokenizer.ggml.bos_token_id", n),
                eos = special(g, "tokenizer.ggml.eos_token_id", n);
        if (!flag(g, "tokenizer.ggml.add_bos_token", 1)) bos = -1;
        if (!flag(g, "tokenizer.ggml.add_eos_token", 1)) eos = -1;
        cJSON_AddItemToObject(root, "normalizer", norm);
        cJSON_AddItemToObject(root, "pre_tokenizer", metaspace(flag(g, "tokenizer.ggml.add_space_prefix", 1)));
        cJSON_AddItemToObject(
            root, "post_processor",
            roberta_template(bos >= 0 ? names[bos] : NULL, bos, eos >= 0 ? names[eos] : NULL, eos));
        cJSON_AddItemToObject(root, "model", model);
        model = NULL;
        if (!(*out = cJSON_PrintUnformatted(root))) rc = emb_fail(err, "out of memory");
    }
    for (int32_t i = 0; names && i < n; i++) free(names[i]);
    free(names);
    cJSON_Delete(root);
    cJSON_Delete(model);
    return rc;
}
