/* Token workloads, alternating timing and process helpers shared by the model benchmarks
 * (bench_encoder, bench_decoder): batches of token ids, the same on every run, written for the peers as
 * workloads.txt; and the best pass of several ways of doing one workload, timed in turns. */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H
#include <stdint.h>

typedef struct {
    char name[48];
    int nbatch;
    int *B, *T;
    int32_t **ids, **lens;
    long tokens;
} bench_workload;

/* The generator behind every id (xorshift); bench_work_seed fixes what follows. */
void bench_work_seed(uint64_t seed);
uint32_t bench_work_draw(void);
/* a sequence of L tokens: 101, random ids in [1000, 30000), 102 (valid in every vocabulary here) */
void bench_work_fill_sequence(int32_t *ids, int L);
/* B sequences of T tokens */
bench_workload bench_work_fixed(int B, int T);
/* n sequences of 8-128 tokens, sorted by length, in padded batches of 32 */
bench_workload bench_work_sentences(int n);
void bench_work_free(bench_workload *w);
/* DIR/workloads.txt: "workload KEY NBATCH TOKENS", then per batch "batch B T", "lens ..." and
 * "ids ..." (B*T, padding 0), for each of the n workloads (keys[i] names wl[i]). */
int bench_work_write(const char *dir, const bench_workload *wl, const char *const *keys, int n);

/* One batch (k) of a workload done one way; nonzero on error. */
typedef int (*bench_pass_fn)(void *ctx, const bench_workload *w, int k);
/* n ways of doing one workload, timed in alternating passes so that all see the same load on a
 * shared machine: the last (largest) batch of each once to warm up, then the best pass of each
 * (at least min_time seconds and 2 passes; one is enough when the slowest takes over 2 s). A
 * pass shorter than 0.5 s is timed after an untimed one of the same way (bench/README.md:
 * another way's weights in the caches slowed bert-base's 1 x 128 by 16 %). best[] gets the n
 * times; returns -1 on error. */
int bench_time_ways(int n, bench_pass_fn const fn[], void *const ctx[], const bench_workload *w, double min_time,
                    double best[]);
/* This process's peak resident set (getrusage), in KiB. */
long bench_peak_rss_kb(void);
/* 1 when child p (a fork) exits with status 0. */
int bench_child_ok(int p);
/* "load average (1 min) WHEN: L on N CPUs" (the machine may be shared) */
void bench_print_load(const char *when);
#endif
