/* The scans of core/quant (emb_code_candidates, keep 40, cosine) over int8, f16 and bit
 * records of 384 dimensions, against the time to read the same bytes once (a sum of 64-bit
 * words: the bound a scan cannot beat), measured in the same run, 1 and 2 threads; and, for
 * comparison, scoring into one array of n floats and selecting from it afterwards (what the
 * fused scan avoids), and the other kernel sets on one thread.
 *
 *   bench_quant_kernels [ROWS ...]      default 100000 1000000; REPS (default 11) runs, median
 *
 * Prints a table and "RESULT key value" lines. */
#include "bench_clock.h"
#include "search/quant.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define D 384
#define KEEP 40

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float uniform(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 2685821657736338717ull) >> 11) / 4503599627370496.0 - 1.0);
}

/* ---------- the read bound ---------- */

typedef struct {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} part;

#if defined(__x86_64__)
#include <immintrin.h>
/* 8 independent accumulators: the loads, not the adds, set the pace */
__attribute__((target("avx512f"))) static uint64_t sum_avx512(const uint64_t *p, size_t n) {
    __m512i a[8];
    for (int j = 0; j < 8; j++) a[j] = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int j = 0; j < 8; j++) a[j] = _mm512_add_epi64(a[j], _mm512_loadu_si512(p + i + 8 * j));
    for (int j = 1; j < 8; j++) a[0] = _mm512_add_epi64(a[0], a[j]);
    uint64_t s = (uint64_t)_mm512_reduce_add_epi64(a[0]);
    for (; i < n; i++) s += p[i];
    return s;
}
#endif

static void *sum_part(void *arg) {
    part *t = arg;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) {
        t->sum = sum_avx512(t->p, t->n);
        return NULL;
    }
#endif
    uint64_t s = 0;
    for (size_t i = 0; i < t->n; i++) s += t->p[i];
    t->sum = s;
    return NULL;
}

static uint64_t sink;

static double read_once(const void *a, size_t bytes, int threads) {
    pthread_t th[2];
    part parts[2];
    size_t n = bytes / 8;
    double t0 = bench_now();
    for (int k = 0; k < threads; k++) {
        size_t lo = n * (size_t)k / (size_t)threads, hi = n * (size_t)(k + 1) / (size_t)threads;
        parts[k] = (part){(const uint64_t *)a + lo, hi - lo, 0};
        if (k) pthread_create(&th[k], NULL, sum_part, &parts[k]);
    }
    sum_part(&parts[0]);
    for (int k = 1; k < threads; k++) pthread_join(th[k], NULL);
    double dt = bench_now() - t0;
    for (int k = 0; k < threads; k++) sink += parts[k].sum;
    return dt;
}

/* ---------- the scans ---------- */

typedef struct {
    emb_storage s;
    size_t rows, bytes;
    unsigned char *rec;
    float *aux;
    float q[D];
} array;

static int make_array(array *a, emb_storage s, size_t rows) {
    a->s = s;
    a->rows = rows;
    size_t rb = emb_code_bytes(s, D), huge = (size_t)2 << 20;
    a->bytes = rows * rb;
    /* as a cache would allocate it: 2 MB aligned, transparent huge pages */
    a->rec = aligned_alloc(huge, (a->bytes + huge - 1) / huge * huge);
    a->aux = malloc(rows * sizeof *a->aux);
    if (!a->rec || !a->aux) return -1;
#ifdef MADV_HUGEPAGE
    madvise(a->rec, (a->bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    float x[D];
    for (size_t i = 0; i < rows; i++) {
        for (int j = 0; j < D; j++) x[j] = uniform();
        emb_encode(s, x, D, a->rec + i * rb);
        a->aux[i] = emb_code_aux(s, EMB_METRIC_COSINE, a->rec + i * rb, D);
    }
    for (int j = 0; j < D; j++) a->q[j] = uniform();
    return 0;
}

static double time_candidates(const array *a, int threads, int reps, emb_code_scratch *scratch) {
    emb_code_query q;
    if (emb_code_query_init(&q, a->s, EMB_METRIC_COSINE, a->q, D)) return -1;
    size_t out[KEEP];
    double *t = malloc((size_t)reps * sizeof *t);
    emb_code_candidates(&q, a->rec, a->aux, NULL, a->rows, KEEP, threads, scratch, out); /* warm */
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        emb_code_candidates(&q, a->rec, a->aux, NULL, a->rows, KEEP, threads, scratch, out);
        t[r] = bench_now() - t0;
        sink += out[0];
    }
    double m = bench_median(t, (size_t)reps);
    free(t);
    emb_code_query_free(&q);
    return m;
}

/* Scores into an array of n floats, then the best KEEP picked from it by a bound check and a
 * partial insertion sort: the unfused way, one thread. */
static double time_unfused(const array *a, int reps) {
    emb_code_query q;
    float *score = malloc(a->rows * sizeof *score);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!score || !t || emb_code_query_init(&q, a->s, EMB_METRIC_COSINE, a->q, D)) return -1;
    for (int r = 0; r <= reps; r++) {
        double t0 = bench_now();
        emb_code_scores(&q, a->rec, a->aux, NULL, a->rows, score);
        float best[KEEP];
        size_t n = 0;
        for (size_t i = 0; i < a->rows; i++) {
            if (n == KEEP && score[i] >= best[KEEP - 1]) continue;
            size_t j = n < KEEP ? n++ : KEEP - 1;
            for (; j > 0 && best[j - 1] > score[i]; j--) best[j] = best[j - 1];
            best[j] = score[i];
        }
        if (r) t[r - 1] = bench_now() - t0; /* the first run warms */
        sink += (uint64_t)best[0];
    }
    double m = bench_median(t, (size_t)reps);
    free(t);
    free(score);
    emb_code_query_free(&q);
    return m;
}

int main(int argc, char **argv) {
    size_t sizes[8] = {100000, 1000000};
    int nsizes = 2;
    if (argc > 1) {
        nsizes = argc - 1 < 8 ? argc - 1 : 8;
        for (int i = 0; i < nsizes; i++) sizes[i] = (size_t)strtoull(argv[i + 1], NULL, 10);
    }
    int reps = getenv("REPS") ? atoi(getenv("REPS")) : 11;
    if (reps < 1) reps = 1;
    printf("kernel set %s; d = %d, keep %d, cosine; median of %d; ms\n", emb_quant_path(), D, KEEP, reps);
    printf("%-5s %8s %8s | %8s %8s | %8s %8s | %6s %6s | %8s\n", "type", "rows", "MB", "read 1t", "read 2t",
           "scan 1t", "scan 2t", "x1t", "x2t", "unfused");
    static const emb_storage kinds[] = {EMB_STORAGE_INT8, EMB_STORAGE_F16, EMB_STORAGE_BIT};
    emb_code_scratch scratch = {0};
    for (int si = 0; si < nsizes; si++)
        for (int k = 0; k < 3; k++) {
            array a;
            if (make_array(&a, kinds[k], sizes[si])) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            double rd[2], sc[2];
            for (int th = 1; th <= 2; th++) {
                double *t = malloc((size_t)reps * sizeof *t);
                read_once(a.rec, a.bytes, th);
                for (int r = 0; r < reps; r++) t[r] = read_once(a.rec, a.bytes, th);
                rd[th - 1] = bench_median(t, (size_t)reps) * 1e3;
                free(t);
                sc[th - 1] = time_candidates(&a, th, reps, &scratch) * 1e3;
            }
            double unfused = time_unfused(&a, reps) * 1e3;
            const char *name = emb_storage_name(kinds[k]);
            printf("%-5s %8zu %8.1f | %8.2f %8.2f | %8.2f %8.2f | %6.2f %6.2f | %8.2f\n", name, a.rows,
                   a.bytes / 1e6, rd[0], rd[1], sc[0], sc[1], sc[0] / rd[0], sc[1] / rd[1], unfused);
            printf("RESULT %s_%zu_read_ms_1t %.3f\nRESULT %s_%zu_read_ms_2t %.3f\n", name, a.rows, rd[0], name,
                   a.rows, rd[1]);
            printf(
                "RESULT %s_%zu_scan_ms_1t %.3f\nRESULT %s_%zu_scan_ms_2t %.3f\nRESULT %s_%zu_unfused_ms_1t %.3f\n",
                name, a.rows, sc[0], name, a.rows, sc[1], name, a.rows, unfused);
            if (si == 0) { /* the other kernel sets, one thread */
                static const char *const sets[] = {"avx2", "scalar"};
                for (int p = 0; p < 2; p++) {
                    if (emb_quant_force_path(sets[p])) continue;
                    double ms = time_candidates(&a, 1, reps < 3 ? reps : 3, &scratch) * 1e3;
                    printf("      %s kernels, 1 thread: %.2f ms\nRESULT %s_%zu_scan_ms_1t_%s %.3f\n", sets[p], ms,
                           name, a.rows, sets[p], ms);
                }
                emb_quant_force_path(NULL);
            }
            free(a.rec);
            free(a.aux);
        }
    emb_code_scratch_free(&scratch);
    if (sink == 42) printf(" ");
    return 0;
}
