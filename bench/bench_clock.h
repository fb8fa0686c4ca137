/* Timing for the C benchmarks: a monotonic clock in seconds and the median of n runs (header
 * only: the Makefile links each bench_*.c with random_model.c and nothing else). */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v. */
static inline double bench_median(double *v, size_t n) {
    qsort(v, n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* OpenBLAS's idle threads spin for 2^28 cycles after each of its calls (its THREAD_TIMEOUT), on
 * the cores that our helper threads need when a benchmark times another way right after an
 * sgemm: int8 products on two threads at M = 16 measured 100 GOPS beside them, 800 without.
 * Asks them to sleep at once (OPENBLAS_THREAD_TIMEOUT=4, the least), which OpenBLAS reads when
 * it loads, hence the re-exec. Call first in main; a variable already set is kept. */
static inline void bench_openblas_sleeps(char **argv) {
    if (getenv("OPENBLAS_THREAD_TIMEOUT")) return;
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    execv("/proc/self/exe", argv); /* returns only if it failed: go on with spinning threads */
}

#endif
