/* Qwen2-style (NFC, Split(Qwen's regex) + ByteLevel, byte-level BPE, "$A <|endoftext|>") and
 * Gemma-style (Replace " " -> "▁", no pre-tokenizer, BPE over characters with byte_fallback and
 * fuse_unk, "<bos> $A <eos>") tokenizers against Hugging Face tokenizers 0.23.2
 * (tests/fixtures/tokenizers3, GOLDEN_README3.md); hostile variants of their files.
 * Run from the repository root: build/tests/test_tokenizers3 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "token_files.h"
#include "text/tokenizer.h"

static const char *NAMES[] = {"qwen-style", "gemma-style"};
#define NNAMES 2
#define MAX_DETAIL 5

static int item_int(const cJSON *arr, int i) { return cJSON_GetArrayItem(arr, i)->valueint; }

/* ids, tokens, offsets, type ids and special-tokens mask of a golden record */
static int same_as_golden(const emb_tokenizer *t, const emb_encoding *e, const cJSON *g, char *why, size_t wn) {
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(g, "ids"),
                *toks = cJSON_GetObjectItemCaseSensitive(g, "tokens");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(g, "offsets"),
                *tys = cJSON_GetObjectItemCaseSensitive(g, "type_ids");
    const cJSON *msk = cJSON_GetObjectItemCaseSensitive(g, "special_tokens_mask");
    size_t n = (size_t)cJSON_GetArraySize(ids);
    if (n != e->n) {
        snprintf(why, wn, "length %zu, expected %zu", e->n, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        int id = item_int(ids, (int)i), ty = item_int(tys, (int)i), mk = item_int(msk, (int)i);
        const char *tok = cJSON_GetArrayItem(toks, (int)i)->valuestring;
        const cJSON *o = cJSON_GetArrayItem(offs, (int)i);
        int s = item_int(o, 0), en = item_int(o, 1);
        const emb_token *k = &e->tok[i];
        int ks = k->start < 0 ? 0 : k->start, ke = k->end < 0 ? 0 : k->end;
        size_t tl;
        const char *ts = emb_encoding_token_text(e, i, &tl);
        if (!ts) ts = emb_tokenizer_token(t, k->id, &tl);
        int tok_ok = ts && strlen(tok) == tl && memcmp(ts, tok, tl) == 0;
        if (k->id != id || !tok_ok || ks != s || ke != en || k->type_id != ty || (k->seq < 0) != mk) {
            snprintf(why, wn,
                     "token %zu: got id %d '%.*s' [%d,%d) type %d special %d, expected id %d '%s' [%d,%d) type %d "
                     "special %d",
                     i, k->id, ts ? (int)tl : 0, ts ? ts : "", ks, ke, k->type_id, k->seq < 0, id, tok, s, en, ty,
                     mk);
            return 0;
        }
    }
    return 1;
}

static emb_tokenizer *load(const char *name) {
    char path[512], err[EMB_ERR_LEN];
    snprintf(path, sizeof path, FIXTURES "/tokenizers3/vocab/%s", name);
    emb_tokenizer *t = NULL;
    int rc = emb_tokenizer_load(path, &t, err);
    CHECK(rc == 0, "load %s: %s", path, err);
    return t;
}

/* one golden record, whole and truncated to 16; 1 when both equal */
static int check_case(const emb_tokenizer *t, emb_encoding *e, const char *name, const cJSON *c, const cJSON *g,
                      size_t line, int *shown) {
    char err[EMB_ERR_LEN], why[1024];
    const char *text = str_of(c, "text"), *tb = str_of(c, "text_b");
    int ok_all = 1;
    for (int pass = 0; pass < 2; pass++) {
        int rc = emb_tokenize(t, text, strlen(text), tb, tb ? strlen(tb) : 0, pass ? 16 : 0, e, err);
        int ok =
            rc == 0 && (pass ? same_ids(e, cJSON_GetObjectItemCaseSensitive(g, "ids_trunc16"), why, sizeof why)
                             : same_as_golden(t, e, g, why, sizeof why));
        if (rc) snprintf(why, sizeof why, "error: %s", err);
        CHECK(ok, "%s line %zu (%s)%s: %s", name, line, str_of(c, "cat"), pass ? " max_len 16" : "", why);
        if (!ok && (*shown)++ < MAX_DETAIL)
            fprintf(stderr, "  text: %s%s%s\n", text, tb ? " | text_b: " : "", tb ? tb : "");
        ok_all &= ok;
    }
    return ok_all;
}

static void test_golden(cJSON **cases, size_t ncases) {
    char path[512];
    for (int v = 0; v < NNAMES; v++) {
        emb_tokenizer *t = load(NAMES[v]);
        if (!t) continue;
        snprintf(path, sizeof path, FIXTURES "/tokenizers3/public/%s.jsonl", NAMES[v]);
        size_t ng;
        cJSON **gold = read_jsonl(path, &ng);
        CHECK(gold && ng == ncases, "%s: %zu records for %zu cases", path, ng, ncases);
        emb_encoding e;
        emb_encoding_init(&e);
        int shown = 0;
        size_t good = 0;
        for (size_t i = 0; gold && ng == ncases && i < ncases; i++)
            good += (size_t)check_case(t, &e, NAMES[v], cases[i], gold[i], i + 1, &shown);
        printf("%s: %zu of %zu records equal (whole and truncated to 16)\n", NAMES[v], good, ncases);
        emb_encoding_free(&e);
        for (size_t i = 0; gold && i < ng; i++) cJSON_Delete(gold[i]);
        free(gold);
        emb_tokenizer_free(t);
    }
}

int main(void) {
    size_t ncases;
    cJSON **cases = read_jsonl(FIXTURES "/tokenizers3/public/cases.jsonl", &ncases);
    CHECK(cases && ncases == 2004, "cases.jsonl: %zu cases", ncases);
    if (cases) test_golden(cases, ncases);
    for (size_t i = 0; i < ncases; i++) cJSON_Delete(cases[i]);
    free(cases);
    return check_report();
}
