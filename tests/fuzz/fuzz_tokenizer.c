/* libFuzzer harness over the tokenizers: arbitrary bytes (invalid UTF-8 included), as a single
 * text or split into a pair, with and without truncation, through bert-base-uncased and
 * bert-base-cased (WordPiece), xlmr-style-ml8k (Unigram), roberta-base (byte-level BPE) and, for
 * single texts, qwen-style (NFC, Split, byte-level BPE) and gemma-style (BPE over characters, one
 * word per text: the heap merge).
 * Checks the invariants of every encoding: ids in the vocabulary, offsets on UTF-8 boundaries
 * inside their own text (WordPiece: non-empty and non-decreasing; a bare 'Ġ' of BPE has an empty
 * span), word indices non-decreasing, type ids (WordPiece: the sequence; XLM-R and RoBERTa: 0),
 * length within max_len, that only a Unigram unknown is named by its own text (valid UTF-8), and
 * that the error for invalid UTF-8 says so.
 * Run from the repository root (fixtures are loaded by relative path) or set EMB_FIXTURES. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"
#include "base/utf8.h"

#define NTOK 6
static emb_tokenizer *tok[NTOK];
static emb_encoding enc;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *fx = getenv("EMB_FIXTURES");
    if (!fx) fx = "tests/fixtures";
    static const char *names[NTOK] = {"tokenizers/vocab/bert-base-uncased", "tokenizers/vocab/bert-base-cased",
                                      "tokenizers2/vocab/xlmr-style-ml8k",  "tokenizers2/vocab/roberta-base",
                                      "tokenizers3/vocab/qwen-style",       "tokenizers3/vocab/gemma-style"};
    for (int i = 0; i < NTOK; i++) {
        char path[1024], err[EMB_ERR_LEN];
        snprintf(path, sizeof path, "%s/%s", fx, names[i]);
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

static void check(const emb_tokenizer *t, int wordpiece, const uint8_t *a, size_t la, const uint8_t *b, size_t lb,
                  size_t max_len, int pair) {
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
        if (!is_boundary(s, l, k->start) || !is_boundary(s, l, k->end) || k->start > k->end) __builtin_trap();
        if (k->word < last_word[k->seq]) __builtin_trap();
        if (wordpiece) {
            if (k->start == k->end) __builtin_trap();
            /* pieces of one decomposed character share its span, so starts may repeat */
            if (k->start < last_end[k->seq] && !(k->word == last_word[k->seq])) __builtin_trap();
        }
        last_end[k->seq] = k->end;
        last_word[k->seq] = k->word;
        if (k->type_id != (wordpiece ? k->seq : 0)) __builtin_trap();
        /* only a Unigram unknown has a name of its own: non-empty valid UTF-8 */
        size_t nl, bad;
        const char *name = emb_encoding_token_text(&enc, i, &nl);
        if (name &&
            (t != tok[2] || k->id != emb_tokenizer_unk_id(t) || nl == 0 || !emb_utf8_valid(name, nl, &bad)))
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    int which = (mode & 1) | (mode >> 7) << 1; /* the top bit picks Unigram / BPE */
    const emb_tokenizer *t = tok[which];
    static const size_t lens[8] = {0, 0, 2, 3, 5, 16, 17, 64};
    size_t max_len = lens[(mode >> 1) & 7];
    int pair = (mode >> 4) & 1;
    if (!pair && (mode >> 5) & 1) which = 4 + ((mode >> 6) & 1); /* bits 5-6 only split pairs */
    t = tok[which];
    size_t split = size ? (size_t)(((mode >> 5) & 3) * size / 3) : 0;
    if (split > size) split = size;
    if (pair) check(t, which < 2, data, split, data + split, size - split, max_len, 1);
    else check(t, which < 2, data, size, NULL, 0, max_len, 0);
    return 0;
}
