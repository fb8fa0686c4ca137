/* Static embedding models against their tokenizer and against a transformer, one thread:
 *   tokenize  emb_model_tokenize over every text (the static model's own tokenizer)
 *   static    emb_model_embed of the same texts: tokens, the table's rows, the mean, the norm
 *   minilm    emb_model_embed of the same texts by a random-weight MiniLM-L6 (384 hidden, 6 layers)
 * The static tables are random, of potion-base-8M's shape (30522 x 256), of
 * static-retrieval-mrl-en-v1's (30522 x 1024), and one of 32 dimensions that fits in the caches
 * (what the lookup costs when the rows do not come from memory); all use bert-base-uncased's
 * pieces (the tokenizer of tests/fixtures/models/minilm-tiny-st), as MiniLM does.
 * usage: bench_static TEXTS_FILE [OUT_DIR [ROUNDS]]   (one text per line; run from the repo root)
 * Prints one line per measure and "RESULT name texts/s tokens/s". */
#include "bench_clock.h"
#include "random_model.h"
#include "sqlite-embed/model.h"
#include <cblas.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    char **text;
    size_t *len, n, tokens;
} texts;

static int read_texts(const char *path, texts *t) {
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "bench_static: cannot open %s\n", path), 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    memset(t, 0, sizeof *t);
    while ((got = getline(&line, &cap, f)) > 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        if (!got) continue;
        t->text = realloc(t->text, (t->n + 1) * sizeof *t->text);
        t->len = realloc(t->len, (t->n + 1) * sizeof *t->len);
        if (!t->text || !t->len) return fprintf(stderr, "bench_static: out of memory\n"), 1;
        t->text[t->n] = strdup(line);
        t->len[t->n++] = (size_t)got;
    }
    free(line);
    fclose(f);
    return t->n ? 0 : (fprintf(stderr, "bench_static: no texts in %s\n", path), 1);
}

static int write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) return fprintf(stderr, "bench_static: cannot write %s\n", path), 1;
    return fclose(f) != 0;
}

static int copy_tokenizer(const char *dir) {
    FILE *f = fopen("tests/fixtures/models/minilm-tiny-st/tokenizer.json", "rb");
    if (!f) return fprintf(stderr, "bench_static: run from the repository root\n"), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n);
    int rc = !b || fread(b, 1, (size_t)n, f) != (size_t)n || write_file(dir, "tokenizer.json", b, (size_t)n);
    free(b);
    fclose(f);
    return rc;
}

/* A StaticEmbedding folder with a Normalize module: rows x dims uniform random floats. */
static int write_static(const char *dir, int rows, int dims) {
    if (mkdir(dir, 0755) && errno != EEXIST) return 1;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/1_Normalize", dir);
    if (mkdir(sub, 0755) && errno != EEXIST) return 1;
    const char *mods =
        "[{\"idx\":0,\"name\":\"0\",\"path\":\"\",\"type\":\"sentence_transformers.sentence_transformer."
        "modules.static_embedding.StaticEmbedding\"},{\"idx\":1,\"name\":\"1\",\"path\":\"1_Normalize\","
        "\"type\":\"sentence_transformers.base.modules.normalize.Normalize\"}]";
    char head[256];
    size_t bytes = (size_t)rows * (size_t)dims * sizeof(float);
    int hl = snprintf(head, sizeof head,
                      "{\"embedding.weight\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]}}",
                      rows, dims, bytes);
    while (hl % 8) head[hl++] = ' ';
    size_t total = 8 + (size_t)hl + bytes;
    unsigned char *st = malloc(total);
    if (!st) return 1;
    uint64_t h64 = (uint64_t)hl;
    memcpy(st, &h64, 8);
    memcpy(st + 8, head, (size_t)hl);
    float *w = (float *)(void *)(st + 8 + hl);
    uint32_t x = 12345;
    for (size_t i = 0; i < (size_t)rows * dims; i++) {
        x = x * 1664525u + 1013904223u;
        w[i] = (float)((x >> 8) * (1.0 / 16777216.0) - 0.5);
    }
    int rc = write_file(dir, "model.safetensors", st, total) ||
             write_file(dir, "modules.json", mods, strlen(mods)) || copy_tokenizer(dir);
    free(st);
    return rc;
}

static double time_tokenize(emb_model *m, const texts *t, size_t *tokens) {
    emb_encoding enc;
    char err[EMB_ERR_LEN];
    emb_model_encoding_init(&enc);
    double t0 = bench_now();
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (emb_model_tokenize(m, t->text[i], t->len[i], NULL, 0, &enc, err)) fprintf(stderr, "%s\n", err);
        n += enc.n;
    }
    double dt = bench_now() - t0;
    emb_model_encoding_free(&enc);
    *tokens = n;
    return dt;
}

static double time_embed(emb_model *m, const texts *t, size_t n, float *out) {
    char err[EMB_ERR_LEN];
    double t0 = bench_now();
    for (size_t at = 0; at < n; at += 256) {
        size_t k = n - at < 256 ? n - at : 256;
        if (emb_model_embed(m, (const char *const *)t->text + at, t->len + at, k, NULL, out, err))
            fprintf(stderr, "%s\n", err);
    }
    return bench_now() - t0;
}

static emb_model *load(const char *name, const char *dir) {
    emb_model *m;
    char err[EMB_ERR_LEN];
    if (emb_model_load(name, dir, &m, err)) return fprintf(stderr, "bench_static: %s\n", err), NULL;
    return m;
}

int main(int argc, char **argv) {
    bench_openblas_sleeps(argv);
    if (argc < 2) return fprintf(stderr, "usage: bench_static TEXTS_FILE [OUT_DIR [ROUNDS]]\n"), 2;
    const char *out = argc > 2 ? argv[2] : "bench/out";
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    texts t;
    if (rounds < 1 || read_texts(argv[1], &t)) return 1;
    openblas_set_num_threads(1);
    char d32[4096], d256[4096], d1024[4096], dmini[4096];
    snprintf(d32, sizeof d32, "%s/static-32", out);
    snprintf(d256, sizeof d256, "%s/static-256", out);
    snprintf(d1024, sizeof d1024, "%s/static-1024", out);
    snprintf(dmini, sizeof dmini, "%s/minilm-l6", out);
    mkdir(out, 0755);
    if (write_static(d32, 30522, 32) || write_static(d256, 30522, 256) || write_static(d1024, 30522, 1024) ||
        bench_random_model_write(dmini, 384, 6, 12, 1536, 1))
        return 1;
    emb_model *m[5] = {NULL, load("s32", d32), load("s256", d256), load("s1024", d1024), load("mini", dmini)};
    m[0] = m[2];
    float *vec = malloc(256 * 1024 * sizeof(float));
    for (int i = 1; i < 5; i++)
        if (!m[i]) return 1;
    if (!vec) return 1;
    size_t n_mini = t.n < 2000 ? t.n : 2000, tokens = 0, count[5] = {t.n, t.n, t.n, t.n, n_mini};
    double best[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < rounds; r++) /* best of rounds, the five interleaved */
        for (int i = 0; i < 5; i++) {
            double dt = i == 0 ? time_tokenize(m[0], &t, &tokens) : time_embed(m[i], &t, count[i], vec);
            best[i] = dt < best[i] ? dt : best[i];
        }
    double per_text = (double)tokens / (double)t.n;
    printf("%zu texts, %.1f tokens each (specials included), one thread, best of %d\n", t.n, per_text, rounds);
    printf("%-34s %12s %14s %10s\n", "", "texts/s", "tokens/s", "x tokenize");
    const char *names[5] = {"tokenize (bert-base-uncased)", "static 30522 x 32 (in cache)",
                            "static 30522 x 256 (potion-8M)", "static 30522 x 1024 (mrl-en-v1)",
                            "MiniLM-L6 (random weights)"};
    double rate[5];
    for (int i = 0; i < 5; i++) {
        rate[i] = (double)count[i] / best[i];
        printf("%-34s %12.0f %14.0f %10.2f\n", names[i], rate[i], rate[i] * per_text, rate[i] / rate[0]);
        printf("RESULT %d %.1f %.1f\n", i, rate[i], rate[i] * per_text);
    }
    printf("static 256 / MiniLM-L6: %.0fx; static 1024 / MiniLM-L6: %.0fx\n", rate[2] / rate[4],
           rate[3] / rate[4]);
    for (int i = 1; i < 5; i++) emb_model_release(m[i]);
    free(vec);
    return 0;
}
