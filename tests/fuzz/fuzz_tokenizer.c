/* libFuzzer harness over the WordPiece tokenizer: arbitrary bytes (invalid UTF-8 included), as a
 * single text or split into a pair, with and without truncation, through bert-base-uncased and
 * bert-base-cased. Checks the invariants of every encoding: ids in the vocabulary, offsets on
 * UTF-8 boundaries inside their own text and non-decreasing, word indices non-decreasing,
 * length within max_len, and that the error for invalid UTF-8 says so.
 * Run from the repository root (fixtures are loaded by relative path) or set EMB_FIXTURES. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

static emb_tokenizer *tok[2];
static emb_encoding enc;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *fx = getenv("EMB_FIXTURES");
    if (!fx) fx = "tests/fixtures";
    static const char *names[2] = {"bert-base-uncased", "bert-base-cased"};
    for (int i = 0; i < 2; i++) {
        char path[1024], err[EMB_ERR_LEN];
        snprintf(path, sizeof path, "%s/tokenizers/vocab/%s", fx, names[i]);
        if (emb_tokenizer_load(path, &tok[i], err)) {
            fprintf(stderr, "fuzz_tokenizer: %s\n", err);
            abort();
        }
    }
    emb_encoding_init(&enc);
    return 0;
}

static int is_boundary(const uint8_t *s, size_t len, int32_t off) {
    return off >= 0 && (size_t)off <= len && ((size_t)off == len || (s[off] & 0xC0) != 0x80);
}

static void check(const emb_tokenizer *t, const uint8_t *a, size_t la, const uint8_t *b, size_t lb, size_t max_len,
                  int pair) {
    char err[EMB_ERR_LEN];
    err[0] = 0;
    int rc = emb_tokenize(t, (const char *)a, la, pair ? (const char *)b : NULL, lb, max_len, &enc, err);
    if (rc) {
        if (!strstr(err, "invalid UTF-8") && !strstr(err, "max length")) __builtin_trap();
        return;
    }
    if (max_len && enc.n > max_len) __builtin_trap();
    int32_t vs = emb_tokenizer_vocab_size(t);
    int32_t last_end[2] = {0, 0}, last_word[2] = {-1, -1};
    for (size_t i = 0; i < enc.n; i++) {
        const emb_token *k = &enc.tok[i];
        if (k->id < 0 || k->id >= vs) __builtin_trap();
        if (k->seq < 0) {
            if (k->start != -1 || k->end != -1 || k->word != -1) __builtin_trap();
            continue;
        }
        if (k->seq > 1 || (k->seq == 1 && !pair)) __builtin_trap();
        const uint8_t *s = k->seq ? b : a;
        size_t l = k->seq ? lb : la;
        if (!is_boundary(s, l, k->start) || !is_boundary(s, l, k->end) || k->start >= k->end) __builtin_trap();
        /* pieces of one decomposed character share its span, so starts may repeat */
        if (k->start < last_end[k->seq] && !(k->word == last_word[k->seq])) __builtin_trap();
        if (k->word < last_word[k->seq]) __builtin_trap();
        last_end[k->seq] = k->end;
        last_word[k->seq] = k->word;
        if (k->type_id != k->seq) __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    const emb_tokenizer *t = tok[mode & 1];
    static const size_t lens[8] = {0, 0, 2, 3, 5, 16, 17, 64};
    size_t max_len = lens[(mode >> 1) & 7];
    int pair = (mode >> 4) & 1;
    size_t split = size ? (size_t)((mode >> 5) * size / 7) : 0;
    if (split > size) split = size;
    if (pair) check(t, data, split, data + split, size - split, max_len, 1);
    else check(t, data, size, NULL, 0, max_len, 0);
    return 0;
}
