/* Timing for the C benchmarks: a monotonic clock in seconds and the median of n runs (header
 * only: the Makefile links each bench_*.c with random_model.c and nothing else). */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H
#include <stdlib.h>
#include <time.h>

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

#endif
