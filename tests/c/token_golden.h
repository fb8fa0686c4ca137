/* The golden-record comparison and the loader shared by the suites of tokenizer.json styles
 * (test_unigram_bpe, test_tokenizers3): a record's ids, tokens, offsets, type ids and
 * special-tokens mask against an encoding. Include after check.h. */
#ifndef EMBED_TEST_TOKEN_GOLDEN_H
#define EMBED_TEST_TOKEN_GOLDEN_H
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "text/tokenizer.h"

static int item_int(const cJSON *arr, int i) { return cJSON_GetArrayItem(arr, i)->valueint; }

/* ids, tokens, offsets, type ids and special-tokens mask of a golden record. A token's string is
 * emb_encoding_token_text where it has one (a Unigram unknown: HF names it by the normalized text
 * it could not segment), else the vocabulary's. */
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

/* FIXTURES/<set>/vocab/<name>'s tokenizer, or NULL after a failed CHECK */
static emb_tokenizer *load_vocab(const char *set, const char *name) {
    char path[512], err[EMB_ERR_LEN];
    snprintf(path, sizeof path, FIXTURES "/%s/vocab/%s", set, name);
    emb_tokenizer *t = NULL;
    int rc = emb_tokenizer_load(path, &t, err);
    CHECK(rc == 0, "load %s: %s", path, err);
    return t;
}
#endif
