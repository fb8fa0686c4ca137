/* C side of the embed_index benchmark (bench/index.sh drives it with bench/bench_index.py).
 *
 *   bench_index membw N D [REPS]      time to read N*D float32 once (the bound a scan cannot beat):
 *                                     1 and 2 threads, median of REPS passes; and one cblas_sgemv
 *                                     over the same array
 *   bench_index make-model DIR        writes a random-weight sentence-transformers model at the
 *                                     all-MiniLM-L6-v2 size (384 hidden, 6 layers, 12 heads, 1536
 *                                     intermediate; mean pooling, normalised), with the tokenizer
 *                                     files of tests/fixtures/models/minilm-tiny-st
 *   bench_index encode DIR TEXTS      the encoder's throughput on the texts (one per line) in
 *                                     batches of 32: in the file's order, and length-sorted
 *   bench_index encode-one-call DIR TEXTS   all the texts in one emb_model_embed call, once
 *
 * Prints "RESULT key value" lines for the driver. */
#include "sqlite-embed/model.h"
#include "random_model.h"
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---------- memory bandwidth ---------- */

typedef struct {
    const float *p;
    size_t n;
    float sum;
} part;

#if defined(__x86_64__)
#include <immintrin.h>
/* 8 independent AVX-512 accumulators: the loads, not the adds, set the pace */
__attribute__((target("avx512f"))) static float sum_avx512(const float *p, size_t n) {
    __m512 a[8];
    for (int j = 0; j < 8; j++) a[j] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 128 <= n; i += 128)
        for (int j = 0; j < 8; j++) a[j] = _mm512_add_ps(a[j], _mm512_load_ps(p + i + 16 * j));
    for (int j = 1; j < 8; j++) a[0] = _mm512_add_ps(a[0], a[j]);
    float s = _mm512_reduce_add_ps(a[0]);
    for (; i < n; i++) s += p[i];
    return s;
}
#endif

static void *sum_part(void *arg) {
    part *t = arg;
    const float *p = t->p;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && ((uintptr_t)p % 64) == 0) {
        t->sum = sum_avx512(p, t->n);
        return NULL;
    }
#endif
    float acc[16] = {0};
    size_t i = 0;
    for (; i + 16 <= t->n; i += 16) {
#pragma omp simd
        for (int j = 0; j < 16; j++) acc[j] += p[i + j];
    }
    float s = 0;
    for (; i < t->n; i++) s += p[i];
    for (int j = 0; j < 16; j++) s += acc[j];
    t->sum = s;
    return NULL;
}

static double read_once(const float *a, size_t n, int threads, float *sink) {
    pthread_t th[8];
    part parts[8];
    double t0 = now();
    size_t per = (n / (size_t)threads + 127) / 128 * 128;
    for (int k = 0; k < threads; k++) {
        size_t lo = per * (size_t)k < n ? per * (size_t)k : n;
        size_t hi = lo + per < n ? lo + per : n;
        parts[k] = (part){a + lo, hi - lo, 0};
        if (k) pthread_create(&th[k], NULL, sum_part, &parts[k]);
    }
    sum_part(&parts[0]);
    for (int k = 1; k < threads; k++) pthread_join(th[k], NULL);
    double dt = now() - t0;
    for (int k = 0; k < threads; k++) *sink += parts[k].sum;
    return dt;
}

static int membw(size_t rows, size_t d, int reps) {
    size_t n = rows * d;
    /* allocated as embed_index allocates its cache: 2 MB aligned, transparent huge pages */
    size_t bytes = (n * sizeof(float) + ((size_t)2 << 20) - 1) / ((size_t)2 << 20) * ((size_t)2 << 20);
    float *a = aligned_alloc((size_t)2 << 20, bytes);
#ifdef MADV_HUGEPAGE
    if (a) madvise(a, bytes, MADV_HUGEPAGE);
#endif
    float *x = malloc(d * sizeof *x), *y = malloc(rows * sizeof *y);
    if (!a || !x || !y) return 1;
    for (size_t i = 0; i < n; i++) a[i] = (float)(i % 1000) * 0.001f;
    for (size_t i = 0; i < d; i++) x[i] = 1.0f / (float)(i + 1);
    double *t = malloc((size_t)reps * sizeof *t), best = 1e9;
    float sink = 0;
    int best_threads = 1;
    for (int threads = 1; threads <= 2; threads++) {
        read_once(a, n, threads, &sink); /* warm */
        for (int r = 0; r < reps; r++) t[r] = read_once(a, n, threads, &sink);
        double m = median(t, reps);
        printf("read %.1f MB once, %d thread%s: median %.2f ms (%.1f GB/s)\n", n * 4 / 1e6, threads,
               threads > 1 ? "s" : "", m * 1e3, n * 4 / m / 1e9);
        printf("RESULT membw_ms_%dt %.4f\n", threads, m * 1e3);
        if (m < best) best = m, best_threads = threads;
    }
    printf("RESULT membw_ms %.4f\nRESULT membw_threads %d\n", best * 1e3, best_threads);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)rows, (int)d, 1.0f, a, (int)d, x, 1, 0.0f, y, 1);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)rows, (int)d, 1.0f, a, (int)d, x, 1, 0.0f, y, 1);
        t[r] = now() - t0;
        sink += y[r % rows];
    }
    double m = median(t, reps);
    printf("cblas_sgemv over the same array: median %.2f ms\nRESULT sgemv_ms %.4f\n", m * 1e3, m * 1e3);
    if (sink == 12345.678f) printf(" ");
    free(t);
    free(a);
    free(x);
    free(y);
    return 0;
}

/* ---------- encoder throughput ---------- */

static const char *const *sort_texts;
static const size_t *sort_lens;
static int by_length(const void *a, const void *b) {
    size_t x = sort_lens[*(const size_t *)a], y = sort_lens[*(const size_t *)b];
    return (x > y) - (x < y);
}

/* modes: 0 batches of 32 in file order, 1 length-sorted batches of 32, 2 one call; `only` >= 0
 * times that mode alone, once (a peer alternated with another by the caller). */
static int encode(const char *dir, const char *file, int only) {
    FILE *f = fopen(file, "rb");
    if (!f) return 1;
    size_t cap = 1024, n = 0;
    char **texts = malloc(cap * sizeof *texts);
    size_t *lens = malloc(cap * sizeof *lens);
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    while ((got = getline(&line, &lcap, f)) > 0) {
        if (line[got - 1] == '\n') line[--got] = 0;
        if (n == cap) {
            cap *= 2;
            texts = realloc(texts, cap * sizeof *texts);
            lens = realloc(lens, cap * sizeof *lens);
        }
        texts[n] = strdup(line);
        lens[n++] = (size_t)got;
    }
    free(line);
    fclose(f);
    emb_model *m;
    char err[EMB_ERR_LEN];
    if (emb_model_load("bench", dir, &m, err)) {
        fprintf(stderr, "encode: %s\n", err);
        return 1;
    }
    size_t h = (size_t)emb_model_get_info(m)->dims->hidden;
    float *out = malloc(32 * h * sizeof *out);
    /* warm-up batch */
    emb_model_embed(m, (const char *const *)texts, lens, n < 32 ? n : 32, NULL, out, err);
    size_t *order = malloc(n * sizeof *order);
    const char **st = malloc(n * sizeof *st);
    size_t *sl = malloc(n * sizeof *sl);
    for (size_t i = 0; i < n; i++) order[i] = i;
    sort_texts = (const char *const *)texts;
    sort_lens = lens;
    qsort(order, n, sizeof *order, by_length);
    for (size_t i = 0; i < n; i++) st[i] = texts[order[i]], sl[i] = lens[order[i]];
    /* best of 3 for each way of calling the encoder: the machine may be shared */
    static const char *const names[3] = {"batches of 32 in file order", "length-sorted batches of 32",
                                         "all texts in one emb_model_embed call"};
    static const char *const keys[3] = {"unsorted", "sorted", "one_call"};
    float *all = malloc(n * h * sizeof *all);
    for (int mode = only >= 0 ? only : 0; mode < (only >= 0 ? only + 1 : 3); mode++) {
        double best = 1e30;
        for (int rep = 0; rep < (only >= 0 ? 1 : 3); rep++) {
            double t0 = now();
            if (mode == 2) {
                if (emb_model_embed(m, (const char *const *)texts, lens, n, NULL, all, err)) {
                    fprintf(stderr, "encode: %s\n", err);
                    return 1;
                }
            }
            for (size_t at = 0; mode < 2 && at < n; at += 32) {
                size_t b = n - at < 32 ? n - at : 32;
                const char *const *tx = mode ? st + at : (const char *const *)texts + at;
                if (emb_model_embed(m, tx, (mode ? sl : lens) + at, b, NULL, out, err)) {
                    fprintf(stderr, "encode: %s\n", err);
                    return 1;
                }
            }
            double dt = now() - t0;
            if (dt < best) best = dt;
        }
        printf("encoder alone, %s: %.0f texts/s (%s)\n", names[mode], n / best, only >= 0 ? "once" : "best of 3");
        printf("RESULT encode_%s_per_s %.2f\n", keys[mode], n / best);
    }
    free(all);
    emb_model_release(m);
    for (size_t i = 0; i < n; i++) free(texts[i]);
    free(texts);
    free(lens);
    free(order);
    free(st);
    free(sl);
    free(out);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "membw"))
        return membw((size_t)atol(argv[2]), (size_t)atol(argv[3]), argc > 4 ? atoi(argv[4]) : 20);
    if (argc == 3 && !strcmp(argv[1], "make-model"))
        return bench_random_model_write(argv[2], 384, 6, 12, 1536, 1) ? 1 : 0;
    if (argc == 4 && !strcmp(argv[1], "encode")) return encode(argv[2], argv[3], -1);
    if (argc == 4 && !strcmp(argv[1], "encode-one-call")) return encode(argv[2], argv[3], 2);
    fprintf(stderr,
            "usage: bench_index membw N D [REPS] | make-model DIR | encode DIR TEXTS | encode-one-call DIR "
            "TEXTS\n");
    return 2;
}
