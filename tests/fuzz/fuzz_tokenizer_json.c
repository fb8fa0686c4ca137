/* libFuzzer harness over tokenizer.json loading (emb_tokenizer_from_json): the input is the file's
 * text. A failure has a message; a tokenizer that loads must tokenize fixed texts (single, pair,
 * truncated) into ids that all name a token of its vocabulary, within max_len. */
#include "text/tokenizer.h"
#include "base/utf8.h"
#include <stdint.h>
#include <string.h>

/* the last two: combining marks that NFD reorders (strip_accents), and characters that are
 * unknown to most vocabularies (U+E0001 U+E0041, fused by Unigram) */
static const char *texts[] = {
    "Hello, world! The bus is late.",
    "héllo WORLD 中文 [CLS] ##ing don't",
    "",
    "a\tb\nc \xe2\x80\x8b d",
    "\xf0\x9d\x85\xa5\xcc\xb4 e\xcc\x81\xe3\x80\xae\xcc\x96 \xd8\xa8\xe0\xa3\x94\xd9\x8e",
    "tag\xf3\xa0\x80\x81\xf3\xa0\x81\x81 x"};
#define NTEXTS (sizeof texts / sizeof *texts)

static void check(const emb_tokenizer *t, emb_encoding *enc, const char *a, const char *b, size_t max_len) {
    char err[EMB_ERR_LEN];
    if (emb_tokenize(t, a, strlen(a), b, b ? strlen(b) : 0, max_len, enc, err) != 0) {
        if (!strstr(err, "max length")) __builtin_trap(); /* the texts are valid UTF-8 */
        return;
    }
    if (max_len && enc->n > max_len) __builtin_trap();
    for (size_t i = 0; i < enc->n; i++) {
        size_t len;
        if (!emb_tokenizer_token(t, enc->tok[i].id, &len)) __builtin_trap();
        if (enc->tok[i].type_id < 0 || enc->tok[i].type_id > emb_tokenizer_max_type_id(t, b != NULL))
            __builtin_trap();
        size_t nl, bad;
        const char *name = emb_encoding_token_text(enc, i, &nl); /* a Unigram unknown's own text */
        if (name && (enc->tok[i].id != emb_tokenizer_unk_id(t) || nl == 0 || !emb_utf8_valid(name, nl, &bad)))
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    emb_tokenizer *t;
    char err[EMB_ERR_LEN];
    err[0] = 0;
    if (emb_tokenizer_from_json((const char *)data, size, &t, err) != 0) {
        if (!memchr(err, 0, sizeof err) || !err[0]) __builtin_trap();
        return 0;
    }
    emb_encoding enc;
    emb_encoding_init(&enc);
    for (size_t i = 0; i < NTEXTS; i++) {
        check(t, &enc, texts[i], NULL, 0);
        check(t, &enc, texts[i], texts[(i + 1) % NTEXTS], 0);
        check(t, &enc, texts[i], texts[(i + 1) % NTEXTS], 7);
        check(t, &enc, texts[i], NULL, 4);
    }
    emb_encoding_free(&enc);
    /* -1: none (a byte-level BPE needs none) */
    if (emb_tokenizer_unk_id(t) < -1 || emb_tokenizer_unk_id(t) >= emb_tokenizer_vocab_size(t)) __builtin_trap();
    emb_tokenizer_free(t);
    return 0;
}
