/* File and JSONL readers and a golden-ids comparison shared by the tokenizer suites
 * (test_wordpiece, test_unigram_bpe). */
#ifndef EMBED_TEST_TOKEN_FILES_H
#define EMBED_TEST_TOKEN_FILES_H
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite-embed/token.h"

/* the whole file, NUL-terminated; NULL if unreadable */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[n] = 0;
    if (len) *len = (size_t)n;
    return b;
}

/* all lines of a JSONL file, parsed */
static cJSON **read_jsonl(const char *path, size_t *n) {
    char *buf = slurp(path, NULL);
    *n = 0;
    if (!buf) return NULL;
    size_t cap = 4096;
    cJSON **v = malloc(cap * sizeof *v);
    char *p = buf;
    while (*p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        if (*p) {
            if (*n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
            v[(*n)++] = cJSON_Parse(p);
        }
        if (!nl) break;
        p = nl + 1;
    }
    free(buf);
    return v;
}

static const char *str_of(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
/* the ids of e equal the JSON array ids; else why says where they differ */
static int same_ids(const emb_encoding *e, const cJSON *ids, char *why, size_t wn) {
    size_t n = (size_t)cJSON_GetArraySize(ids);
    if (n != e->n) {
        snprintf(why, wn, "length %zu, expected %zu", e->n, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (e->tok[i].id != cJSON_GetArrayItem(ids, (int)i)->valueint) {
            snprintf(why, wn, "token %zu: id %d, expected %d", i, e->tok[i].id,
                     cJSON_GetArrayItem(ids, (int)i)->valueint);
            return 0;
        }
    return 1;
}
#endif
