/* Chunking throughput (emb_model_chunks) against tokenizing the same text in the same run, one
 * thread, for a WordPiece (bert-base-uncased), a Unigram (xlmr-style-ml8k) and a byte-level BPE
 * (roberta-base) tokenizer. The text: the English texts of tests/fixtures/tokenizers/public/
 * cases.jsonl as paragraphs, repeated (in a shuffled order each time) to MB x 10^6 bytes.
 * Baselines: the whole text tokenized in one call, and in 64 KiB pieces (the chunker's own
 * planning pieces). Each measurement is the best of 3; ROUNDS rounds alternate the four.
 *
 * usage: bench_chunks [FIXTURES_DIR [MB [MAX_TOKENS [ROUNDS]]]]   (defaults tests/fixtures 10 256 2)
 * Prints lines "RESULT <vocab> <what> <MB/s>". */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "sqlite-embed/chunk.h"

typedef struct {
    char *s;
    size_t n, cap;
} buf;

static void append(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        if (!(b->s = realloc(b->s, b->cap))) exit(1);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

/* The English texts of cases.jsonl, joined into paragraphs of 6 and repeated to `target` bytes. */
static buf english(const char *fx, size_t target) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizers/public/cases.jsonl", fx);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    char *line = NULL, **docs = NULL;
    size_t lcap = 0, nd = 0;
    while (getline(&line, &lcap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        const char *cat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "cat"));
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "text"));
        if (cat && s && strlen(s) > 20 &&
            (!strcmp(cat, "man_en") || !strcmp(cat, "debian_doc_prose") || !strcmp(cat, "lang_en"))) {
            docs = realloc(docs, (nd + 1) * sizeof *docs);
            docs[nd++] = strdup(s);
        }
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);
    buf b = {0};
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (size_t k = 0; b.n < target; k++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17; /* a new order of the texts each time */
        const char *s = docs[r % nd];
        append(&b, s, strlen(s));
        append(&b, k % 6 == 5 ? "\n\n" : " ", k % 6 == 5 ? 2 : 1);
    }
    for (size_t i = 0; i < nd; i++) free(docs[i]);
    free(docs);
    return b;
}

enum { WHOLE, PIECES, CHUNKS, CHUNKS_OVERLAP, N_WHAT };
static const char *what_name[N_WHAT] = {"tokenize-whole", "tokenize-64KiB", "chunks", "chunks-overlap"};

/* Seconds for one pass of `what` over the text; *count: tokens or chunks made. */
static double run(const emb_model *m, const buf *t, int what, int max_tokens, size_t *count) {
    char err[EMB_ERR_LEN];
    emb_encoding enc;
    emb_model_encoding_init(&enc);
    double t0 = bench_now();
    *count = 0;
    if (what == WHOLE || what == PIECES) {
        size_t piece = what == WHOLE ? t->n : 64 * 1024;
        for (size_t off = 0; off < t->n; off += piece) {
            size_t len = t->n - off < piece ? t->n - off : piece;
            if (emb_model_tokenize_limit(m, t->s + off, len, NULL, 0, 0, &enc, err)) {
                fprintf(stderr, "%s\n", err);
                exit(1);
            }
            *count += enc.n;
        }
    } else {
        emb_chunk_options o = {max_tokens, what == CHUNKS_OVERLAP ? max_tokens / 8 : 0};
        emb_chunk *c;
        if (emb_model_chunks(m, t->s, t->n, &o, &c, count, err)) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        free(c);
    }
    double dt = bench_now() - t0;
    emb_model_encoding_free(&enc);
    return dt;
}

int main(int argc, char **argv) {
    const char *fx = argc > 1 ? argv[1] : "tests/fixtures";
    double mb = argc > 2 ? atof(argv[2]) : 10.0;
    int max_tokens = argc > 3 ? atoi(argv[3]) : 256;
    int rounds = argc > 4 ? atoi(argv[4]) : 2;
    buf text = english(fx, (size_t)(mb * 1e6));
    static const char *vocabs[] = {"tokenizers/vocab/bert-base-uncased", "tokenizers2/vocab/xlmr-style-ml8k",
                                   "tokenizers2/vocab/roberta-base"};
    enum { NV = sizeof vocabs / sizeof *vocabs };
    emb_model *models[NV];
    char path[1024], err[EMB_ERR_LEN];
    for (int v = 0; v < NV; v++) {
        snprintf(path, sizeof path, "%s/%s", fx, vocabs[v]);
        if (emb_model_load(strrchr(vocabs[v], '/') + 1, path, &models[v], err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    }
    printf("%.2f MB of English, max_tokens %d (overlap %d), one thread, best of 3 per round\n", text.n / 1e6,
           max_tokens, max_tokens / 8);
    double best[NV][N_WHAT] = {{0}};
    size_t count[NV][N_WHAT];
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < NV; v++)
            for (int w = 0; w < N_WHAT; w++) {
                double mbs = 0;
                for (int rep = 0; rep < 3; rep++) {
                    double x = text.n / 1e6 / run(models[v], &text, w, max_tokens, &count[v][w]);
                    if (x > mbs) mbs = x;
                }
                printf("round %d %-20s %-15s %7.1f MB/s (%zu %s)\n", r + 1, emb_model_get_info(models[v])->name,
                       what_name[w], mbs, count[v][w], w >= CHUNKS ? "chunks" : "tokens");
                if (mbs > best[v][w]) best[v][w] = mbs;
            }
    printf("\n%-20s %9s %9s %9s %9s %12s\n", "vocabulary", "whole", "64KiB", "chunks", "overlap", "chunks/64KiB");
    for (int v = 0; v < NV; v++) {
        const char *name = emb_model_get_info(models[v])->name;
        printf("%-20s %9.1f %9.1f %9.1f %9.1f %12.2f\n", name, best[v][WHOLE], best[v][PIECES], best[v][CHUNKS],
               best[v][CHUNKS_OVERLAP], best[v][CHUNKS] / best[v][PIECES]);
        for (int w = 0; w < N_WHAT; w++) printf("RESULT %s %s %.2f\n", name, what_name[w], best[v][w]);
        emb_model_release(models[v]);
    }
    free(text.s);
    return 0;
}
