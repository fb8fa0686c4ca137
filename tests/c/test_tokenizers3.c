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
#include "token_golden.h"
#include "text/tokenizer.h"

static const char *NAMES[] = {"qwen-style", "gemma-style"};
#define NNAMES 2
#define MAX_DETAIL 5

static emb_tokenizer *load(const char *name) { return load_vocab("tokenizers3", name); }

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

/* models3's references: the encodings transformers 5.17 fed the Qwen3 / Gemma3 models (the
 * Gemma long_text case is one 1,409-token BPE word), whose folders hold these same files */
static void test_model_refs(void) {
    static const char *refs[] = {"qwen3-tiny", "gemma3-tiny"};
    char path[512], err[EMB_ERR_LEN];
    for (int v = 0; v < 2; v++) {
        emb_tokenizer *t = load(NAMES[v]);
        snprintf(path, sizeof path, FIXTURES "/models3/refs/%s.json", refs[v]);
        char *txt = slurp(path, NULL);
        cJSON *j = txt ? cJSON_Parse(txt) : NULL;
        free(txt);
        CHECK(t && j, "%s and %s", NAMES[v], path);
        const cJSON *c;
        emb_encoding e;
        emb_encoding_init(&e);
        int n = 0;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "cases")) {
            const char *text = str_of(c, "text");
            const cJSON *ids = cJSON_GetObjectItemCaseSensitive(c, "input_ids"),
                        *offs = cJSON_GetObjectItemCaseSensitive(c, "offsets");
            if (!t || !text || !ids) continue;
            int ok = emb_tokenize(t, text, strlen(text), NULL, 0, 0, &e, err) == 0 &&
                     e.n == (size_t)cJSON_GetArraySize(ids);
            for (size_t i = 0; ok && i < e.n; i++) {
                const cJSON *o = cJSON_GetArrayItem(offs, (int)i);
                int s = e.tok[i].start < 0 ? 0 : e.tok[i].start, en = e.tok[i].end < 0 ? 0 : e.tok[i].end;
                ok = e.tok[i].id == item_int(ids, (int)i) && (!o || (s == item_int(o, 0) && en == item_int(o, 1)));
            }
            CHECK(ok, "%s case %s: %zu ids, expected %d", refs[v], c->string, e.n, cJSON_GetArraySize(ids));
            n++;
        }
        CHECK(n >= 20, "%s: %d cases", refs[v], n);
        emb_encoding_free(&e);
        cJSON_Delete(j);
        emb_tokenizer_free(t);
    }
}

/* a tokenizer.json of tokenizers3 with one substring replaced (NULL when it is not there) */
static char *patched(const char *name, const char *from, const char *to) {
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/tokenizers3/vocab/%s/tokenizer.json", name);
    size_t len;
    char *s = slurp(path, &len);
    char *p = s ? strstr(s, from) : NULL;
    if (!p) {
        free(s);
        return NULL;
    }
    size_t fl = strlen(from), tl = strlen(to);
    char *o = malloc(len - fl + tl + 1);
    memcpy(o, s, (size_t)(p - s));
    memcpy(o + (p - s), to, tl);
    memcpy(o + (p - s) + tl, p + fl, len - (size_t)(p - s) - fl + 1);
    free(s);
    return o;
}

static emb_tokenizer *from_patched(const char *name, const char *from, const char *to, char err[EMB_ERR_LEN]) {
    char *j = patched(name, from, to);
    CHECK(j != NULL, "%s: no '%s' to patch", name, from);
    emb_tokenizer *t = NULL;
    if (j && emb_tokenizer_from_json(j, strlen(j), &t, err)) t = NULL;
    free(j);
    return t;
}

static void expect_error(const char *name, const char *from, const char *to, const char *want) {
    char err[EMB_ERR_LEN] = "";
    emb_tokenizer *t = from_patched(name, from, to, err);
    CHECK(t == NULL && strstr(err, want), "%s with '%.30s' -> '%.30s': error '%s' (want '%s')", name, from, to,
          err, want);
    emb_tokenizer_free(t);
}

static const char *QWEN_DIGIT = "\\\\p{N}|";

static void test_hostile(void) {
    const char *q = "qwen-style", *g = "gemma-style";
    expect_error(q, QWEN_DIGIT, "\\\\p{N}+|", "Split regex '(?i:'s|'t|'re|'ve|'m|'ll|'d)|");
    expect_error(q, QWEN_DIGIT, "\\\\p{N}+|", "is not supported");
    expect_error(q, "\"Isolated\"", "\"Removed\"", "Isolated");
    expect_error(q, "\"invert\": false", "\"invert\": true", "Isolated");
    expect_error(q, "\"use_regex\": false", "\"use_regex\": true", "use_regex and add_prefix_space false");
    expect_error(q, "\"type\": \"NFC\"", "\"type\": \"NFKC\"", "normalizer type 'NFKC' is not supported");
    expect_error(q, "\"pretokenizers\": [", "\"pretokenizers\": [{\"type\": \"Digits\"},",
                 "Sequence is not supported");
    expect_error(q, "\"pretokenizers\": [", "\"pretokenizers\": 7, \"x\": [", "Sequence is not supported");
    expect_error(q, "\"Regex\": \"(?i:", "\"String\": \"(?i:", "without a Regex");
    expect_error(g, "\"pre_tokenizer\": null", "\"pre_tokenizer\": {\"type\": \"Whitespace\"}", "not supported");
    expect_error(g, "\"pre_tokenizer\": null", "\"pre_tokenizer\": 5", "not supported");
    /* a byte-level file needs every byte's character: ByteLevel in front of Gemma's vocabulary */
    expect_error(g, "\"pre_tokenizer\": null", "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}", "byte 0x");
}

/* "start-end/word ..." of one text */
static void words_of(const emb_tokenizer *t, const char *text, char *out, size_t on) {
    char err[EMB_ERR_LEN];
    emb_encoding e;
    emb_encoding_init(&e);
    out[0] = 0;
    if (emb_tokenize(t, text, strlen(text), NULL, 0, 0, &e, err)) snprintf(out, on, "error: %.200s", err);
    size_t o = 0;
    for (size_t i = 0; i < e.n && o + 40 < on; i++)
        if (e.tok[i].seq >= 0)
            o += (size_t)snprintf(out + o, on - o, "%s%d-%d/%d", o ? " " : "", e.tok[i].start, e.tok[i].end,
                                  e.tok[i].word);
    emb_encoding_free(&e);
}

/* Expected values from the regexes' definitions: Llama 3's \p{N}{1,3} groups digits by three
 * where Qwen2's \p{N} takes one; a byte-level BPE token never spans two pre-tokens. */
static void test_digit_groups(void) {
    char err[EMB_ERR_LEN], got[512];
    emb_tokenizer *l3 = from_patched("qwen-style", QWEN_DIGIT, "\\\\p{N}{1,3}|", err);
    CHECK(l3 != NULL, "Llama 3 pattern: %s", l3 ? "" : err);
    if (l3) {
        words_of(l3, "12345", got, sizeof got);
        CHECK(strncmp(got, "0-", 2) == 0 && strstr(got, "/0") && strstr(got, "-5/1") && !strstr(got, "/2") &&
                  strstr(got, "-3/0"),
              "Llama 3 '12345' is 123 | 45: %s", got);
    }
    emb_tokenizer *qw = load("qwen-style");
    if (qw) {
        words_of(qw, "12345", got, sizeof got);
        CHECK(strcmp(got, "0-1/0 1-2/1 2-3/2 3-4/3 4-5/4") == 0, "Qwen2 '12345' is one digit a word: %s", got);
        /* \s+(?!\S) leaves the last space to " b"; 'S is one word of two tokens */
        words_of(qw, "a  b'S", got, sizeof got);
        CHECK(strcmp(got, "0-1/0 1-2/1 2-4/2 4-5/3 5-6/3") == 0, "Qwen2 'a  b'S': %s", got);
    }
    CHECK(l3 && qw && emb_tokenizer_fingerprint(l3) != emb_tokenizer_fingerprint(qw),
          "the Split regex is in the fingerprint");
    emb_tokenizer_free(l3);
    emb_tokenizer_free(qw);
}

/* byte_fallback off: a character missing from Gemma's vocabulary is the unknown token, fused
 * with its unknown neighbours; on, its bytes. The fingerprint follows the setting. */
static void test_byte_fallback(void) {
    char err[EMB_ERR_LEN];
    emb_tokenizer *on = load("gemma-style");
    emb_tokenizer *off = from_patched("gemma-style", "\"byte_fallback\": true", "\"byte_fallback\": false", err);
    CHECK(on && off, "gemma-style without byte_fallback: %s", off ? "" : err);
    if (!on || !off) goto out;
    const char *text = "\xe4\xb8\x96\xe7\x95\x8c!"; /* 世界! */
    emb_encoding e;
    emb_encoding_init(&e);
    int rc = emb_tokenize(off, text, strlen(text), NULL, 0, 0, &e, err);
    int32_t unk = emb_tokenizer_unk_id(off);
    CHECK(rc == 0 && e.n == 4 && unk == 3 && e.tok[1].id == unk && e.tok[1].start == 0 && e.tok[1].end == 6 &&
              e.tok[2].start == 6,
          "no byte_fallback: one fused <unk> over both characters (%zu tokens)", e.n);
    rc = emb_tokenize(on, text, strlen(text), NULL, 0, 0, &e, err);
    CHECK(rc == 0 && e.n >= 8 && e.tok[1].start == 0 && e.tok[1].end == 3, "byte_fallback: bytes (%zu tokens)",
          e.n);
    CHECK(emb_tokenizer_fingerprint(on) != emb_tokenizer_fingerprint(off), "byte_fallback is in the fingerprint");
    emb_encoding_free(&e);
out:
    emb_tokenizer_free(on);
    emb_tokenizer_free(off);
}

int main(void) {
    size_t ncases;
    cJSON **cases = read_jsonl(FIXTURES "/tokenizers3/public/cases.jsonl", &ncases);
    CHECK(cases && ncases == 2004, "cases.jsonl: %zu cases", ncases);
    if (cases) test_golden(cases, ncases);
    test_model_refs();
    test_hostile();
    test_digit_groups();
    test_byte_fallback();
    for (size_t i = 0; i < ncases; i++) cJSON_Delete(cases[i]);
    free(cases);
    return check_report();
}
