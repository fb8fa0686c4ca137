/* See gguf_tok_spm.h. A SentencePiece BPE model stores no merges, only each piece's score; llama.cpp's
 * SPM tokenizer merges, among the adjacent pairs whose concatenation is a piece, the one of the best
 * score first. Hugging Face's converter (SentencePieceExtractor) turns the same pieces into BPE
 * merges: every split of a piece into two pieces, ordered by the piece's score (best first), then
 * by the piece's id, then by the two halves' ids. That is done here, so the tokenizer equals the
 * one Hugging Face ships with the model (Gemma's tokenizer.json was made that way):
 *   normalizer Replace(" " -> "▁") (add_space_prefix false, as Gemma; a prefix space, Llama 2's,
 *   is refused), no pre-tokenizer (the whole text is one BPE word), BPE with byte_fallback when the
 *   vocabulary has <0xXX> byte pieces and fuse_unk, control and unknown pieces as special added
 *   tokens, user-defined ones as plain added tokens, <bos> $A <eos> as add_bos_token /
 *   add_eos_token say (llama.cpp's defaults for SPM: bos yes, eos no). */
#include "model/gguf_tok_spm.h"
#include "text/vocab.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_NORMAL = 1, T_UNKNOWN = 2, T_CONTROL = 3, T_USER = 4, T_BYTE = 6 }; /* llama.cpp's token types */

typedef struct {
    float score;
    int32_t piece, left, right;
} merge;

static int cmp_merge(const void *a, const void *b) {
    const merge *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->piece != y->piece) return x->piece < y->piece ? -1 : 1;
    if (x->left != y->left) return x->left < y->left ? -1 : 1;
    return (x->right > y->right) - (x->right < y->right);
}

typedef struct {
    int32_t n;
    char **text; /* NUL-terminated pieces */
    size_t *len;
    int32_t *type;
    float *score;
    emb_vocab *ids;
} pieces;

static void pieces_free(pieces *p) {
    for (int32_t i = 0; p->text && i < p->n; i++) free(p->text[i]);
    free(p->text), free(p->len), free(p->type), free(p->score);
    emb_vocab_free(p->ids);
}

/* An array key of n elements of type t (absent: NULL), or an error naming it. */
static int array_of(const emb_gguf *g, const char *key, uint32_t t, int32_t n, const char *label,
                    const emb_gguf_kv **out, char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *kv = emb_gguf_find(g, key);
    *out = kv;
    if (kv && (kv->type != EMB_GGUF_ARRAY || kv->elem_type != t || kv->n != (uint64_t)n))
        return emb_fail(err, "%s: %s is not %d %s values", label, key, n, t == EMB_GGUF_F32 ? "float32" : "int32");
    return 0;
}

static int read_pieces(const emb_gguf *g, const char *label, pieces *p, char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *toks = emb_gguf_find(g, "tokenizer.ggml.tokens"), *scores, *types;
    if (!toks || toks->type != EMB_GGUF_ARRAY || toks->elem_type != EMB_GGUF_STRING || toks->n < 1 ||
        toks->n > (1u << 24))
        return emb_fail(err, "%s: tokenizer.ggml.tokens is not a list of strings", label);
    p->n = (int32_t)toks->n;
    if (array_of(g, "tokenizer.ggml.scores", EMB_GGUF_F32, p->n, label, &scores, err) ||
        array_of(g, "tokenizer.ggml.token_type", EMB_GGUF_I32, p->n, label, &types, err))
        return -1;
    p->text = calloc((size_t)p->n, sizeof *p->text);
    p->len = calloc((size_t)p->n, sizeof *p->len);
    p->type = calloc((size_t)p->n, sizeof *p->type);
    p->score = calloc((size_t)p->n, sizeof *p->score);
    p->ids = emb_vocab_new();
    if (!p->text || !p->len || !p->type || !p->score || !p->ids) return emb_fail(err, "out of memory");
    size_t cur = 0;
    for (int32_t i = 0; i < p->n; i++) {
        const char *s;
        size_t len;
        emb_gguf_array_next_string(toks, &cur, &s, &len);
        if (len == 0 || len > 1024 || memchr(s, 0, len))
            return emb_fail(err, "%s: token %d is empty, longer than 1024 bytes or holds a NUL byte", label, i);
        if (!(p->text[i] = strndup(s, len)) || emb_vocab_add(p->ids, s, len, i))
            return emb_fail(err, "out of memory");
        p->len[i] = len;
        p->type[i] = T_NORMAL;
        if (types) memcpy(&p->type[i], types->value + 4 * (size_t)i, 4); /* little-endian host */
        if (scores) memcpy(&p->score[i], scores->value + 4 * (size_t)i, 4);
        if (p->score[i] != p->score[i]) return emb_fail(err, "%s: token %d has a NaN score", label, i);
    }
    return 0;
}

/* Every split of every piece into two pieces (at character boundaries), in Hugging Face's order. */
static int make_merges(const pieces *p, cJSON *out, char err[EMB_ERR_LEN]) {
    size_t n = 0, cap = 1024;
    merge *m = malloc(cap * sizeof *m);
    if (!m) return emb_fail(err, "out of memory");
    for (int32_t i = 0; i < p->n; i++) {
        const char *s = p->text[i];
        for (size_t k = 1; k < p->len[i]; k++) {
            if (((unsigned char)s[k] & 0xC0) == 0x80) continue; /* inside a character */
            int32_t l = emb_vocab_find(p->ids, s, k), r = emb_vocab_find(p->ids, s + k, p->len[i] - k);
            if (l < 0 || r < 0) continue;
            if (n == cap) {
                merge *more = realloc(m, 2 * cap * sizeof *m);
                if (!more) {
                    free(m);
                    return emb_fail(err, "out of memory");
                }
                m = more, cap *= 2;
            }
            m[n++] = (merge){p->score[i], i, l, r};
        }
    }
    qsort(m, n, sizeof *m, cmp_merge);
    for (size_t i = 0; i < n; i++) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateStringReference(p->text[m[i].left]));
        cJSON_AddItemToArray(pair, cJSON_CreateStringReference(p->text[m[i].right]));
        cJSON_AddItemToArray(out, pair);
    }
    free(m);
    return 0;
}

static int32_t special(const emb_gguf *g, const char *key, int32_t n) {
    int64_t v;
    return emb_gguf_kv_int(emb_gguf_find(g, key), &v) || v < 0 || v >= n ? -1 : (int32_t)v;
}

static int flag(const emb_gguf *g, const char *key, int dflt) {
    int64_t v;
    return emb_gguf_kv_int(emb_gguf_find(g, key), &v) ? dflt : v != 0;
}

static void add_piece(cJSON *arr, const char *kind, const char *id, int type_id) {
    cJSON *o = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(o, kind);
    cJSON_AddStringToObject(in, "id", id);
    cJSON_AddNumberToObject(in, "type_id", type_id);
    cJSON_AddItemToArray(arr, o);
}

static void add_special(cJSON *sp, const pieces *p, int32_t id) {
    if (id < 0 || cJSON_GetObjectItemCaseSensitive(sp, p->text[id])) return;
    cJSON *o = cJSON_AddObjectToObject(sp, p->text[id]);
    cJSON_AddStringToObject(o, "id", p->text[id]);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "ids"), cJSON_CreateNumber(id));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "tokens"), cJSON_CreateString(p->text[id]));
}

/* [bos] $A [eos] and [bos] $A [eos] $B:1 [eos]:1 (bos, eos: -1 when not added). */
static cJSON *template(const pieces *p, int32_t bos, int32_t eos) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", "TemplateProcessing");
    cJSON *single = cJSON_AddArrayToObject(t, "single"), *pair = cJSON_AddArrayToObject(t, "pair");
    if (bos >= 0)
        add_piece(single, "SpecialToken", p->text[bos], 0), add_piece(pair, "SpecialToken", p->text[bos], 0);
    add_piece(single, "Sequence", "A", 0), add_piece(pair, "Sequence", "A", 0);
    if (eos >= 0)
        add_piece(single, "SpecialToken", p->text[eos], 0), add_piece(pair, "SpecialToken", p->text[eos], 0);
    add_piece(pair, "Sequence", "B", 1);
    if (eos >= 0) add_piece(pair, "SpecialToken", p->text[eos], 1);
    cJSON *sp = cJSON_AddObjectToObject(t, "special_tokens");
    add_special(sp, p, bos);
    add_special(sp, p, eos);
    return t;
}

static void vocab_and_added(const pieces *p, cJSON *voc, cJSON *added, int *has_bytes) {
    *has_bytes = 0;
    for (int32_t i = 0; i < p->n; i++) {
        if (emb_vocab_find(p->ids, p->text[i], p->len[i]) == i) /* a repeated piece: its last id, as a dict */
            cJSON_AddItemToObject(voc, p->text[i], cJSON_CreateNumber(i));
        if (p->type[i] == T_BYTE) *has_bytes = 1;
        if (p->type[i] != T_CONTROL && p->type[i] != T_UNKNOWN && p->type[i] != T_USER) continue;
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", i);
        cJSON_AddStringToObject(a, "content", p->text[i]);
        cJSON_AddBoolToObject(a, "single_word", 0);
        cJSON_AddBoolToObject(a, "lstrip", 0);
        cJSON_AddBoolToObject(a, "rstrip", 0);
        cJSON_AddBoolToObject(a, "normalized", 0);
        cJSON_AddBoolToObject(a, "special", p->type[i] != T_USER);
        cJSON_AddItemToArray(added, a);
    }
}

int emb_gguf_spm_json(const emb_gguf *g, const char *label, char **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    if (flag(g, "tokenizer.ggml.add_space_prefix", 1))
        return emb_fail(err,
                        "%s: tokenizer.ggml.add_space_prefix is true (a SentencePiece vocabulary with a prefix "
                        "space, as Llama 2's): not read from GGUF yet (Gemma's, without one, is)",
                        label);
    pieces p = {0};
    int rc = read_pieces(g, label, &p, err);
    cJSON *root = rc ? NULL : cJSON_CreateObject();
    if (rc == 0 && !root) rc = emb_fail(err, "out of memory");
    if (rc == 0) {
        int32_t unk = special(g, "tokenizer.ggml.unknown_token_id", p.n);
        for (int32_t i = 0; unk < 0 && i < p.n; i++)
            if (p.type[i] == T_UNKNOWN) unk = i;
        int32_t bos =
            flag(g, "tokenizer.ggml.add_bos_token", 1) ? special(g, "tokenizer.ggml.bos_token_id", p.n) : -1;
        int32_t eos =
            flag(g, "tokenizer.ggml.add_eos_token", 0) ? special(g, "tokenizer.ggml.eos_token_id", p.n) : -1;
        if ((flag(g, "tokenizer.ggml.add_bos_token", 1) && bos < 0) ||
            (flag(g, "tokenizer.ggml.add_eos_token", 0) && eos < 0))
            rc = emb_fail(err, "%s: add_bos_token / add_eos_token without a bos / eos token id", label);
        cJSON *added = cJSON_AddArrayToObject(root, "added_tokens"),
              *norm = cJSON_AddObjectToObject(root, "normalizer");
        cJSON_AddStringToObject(norm, "type", "Replace");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(norm, "pattern"), "String", " ");
        cJSON_AddStringToObject(norm, "content", "\xE2\x96\x81");
        cJSON_AddNullToObject(root, "pre_tokenizer");
        if (bos >= 0 || eos >= 0) cJSON_AddItemToObject(root, "post_processor", template(&p, bos, eos));
        cJSON *model = cJSON_AddObjectToObject(root, "model");
        cJSON_AddStringToObject(model, "type", "BPE");
        if (unk >= 0) cJSON_AddStringToObject(model, "unk_token", p.text[unk]);
        else cJSON_AddNullToObject(model, "unk_token");
        cJSON_AddBoolToObject(model, "fuse_unk", 1);
        int has_bytes;
        vocab_and_added(&p, cJSON_AddObjectToObject(model, "vocab"), added, &has_bytes);
        cJSON_AddBoolToObject(model, "byte_fallback", has_bytes);
        if (rc == 0) rc = make_merges(&p, cJSON_AddArrayToObject(model, "merges"), err);
        if (rc == 0 && !(*out = cJSON_PrintUnformatted(root))) rc = emb_fail(err, "out of memory");
    }
    cJSON_Delete(root);
    pieces_free(&p);
    return rc;
}
