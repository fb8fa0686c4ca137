/* See workloads.h. */
#include "workloads.h"
#include "bench_clock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

static uint64_t rs = 0x9E3779B97F4A7C15ull;
void bench_work_seed(uint64_t seed) { rs = seed; }
uint32_t bench_work_draw(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

static void alloc_batches(bench_workload *w, int nb) {
    w->nbatch = nb;
    w->B = malloc(sizeof(int) * nb);
    w->T = malloc(sizeof(int) * nb);
    w->ids = malloc(sizeof(int32_t *) * nb);
    w->lens = malloc(sizeof(int32_t *) * nb);
    w->tokens = 0;
}
void bench_work_fill_sequence(int32_t *ids, int L) {
    for (int t = 0; t < L; t++)
        ids[t] = t == 0 ? 101 : t == L - 1 ? 102 : 1000 + (int32_t)(bench_work_draw() % 29000);
}
bench_workload bench_work_fixed(int B, int T) {
    bench_workload w;
    snprintf(w.name, sizeof w.name, "%d x %d", B, T);
    alloc_batches(&w, 1);
    w.B[0] = B;
    w.T[0] = T;
    w.ids[0] = malloc(sizeof(int32_t) * B * T);
    w.lens[0] = malloc(sizeof(int32_t) * B);
    for (int b = 0; b < B; b++) {
        w.lens[0][b] = T;
        bench_work_fill_sequence(w.ids[0] + (size_t)b * T, T);
    }
    w.tokens = (long)B * T;
    return w;
}
static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
bench_workload bench_work_sentences(int n) {
    bench_workload w;
    snprintf(w.name, sizeof w.name, "%d sent. 8-128, b32", n);
    int *len = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) len[i] = 8 + (int)(bench_work_draw() % 121); /* 8..128 */
    qsort(len, (size_t)n, sizeof(int), cmp_int);
    alloc_batches(&w, (n + 31) / 32);
    for (int k = 0; k < w.nbatch; k++) {
        int B = n - k * 32 < 32 ? n - k * 32 : 32, T = len[k * 32 + B - 1];
        w.B[k] = B;
        w.T[k] = T;
        w.ids[k] = calloc((size_t)B * T, sizeof(int32_t));
        w.lens[k] = malloc(sizeof(int32_t) * B);
        for (int b = 0; b < B; b++) {
            w.lens[k][b] = len[k * 32 + b];
            w.tokens += w.lens[k][b];
            bench_work_fill_sequence(w.ids[k] + (size_t)b * T, w.lens[k][b]);
        }
    }
    free(len);
    return w;
}
void bench_work_free(bench_workload *w) {
    for (int k = 0; k < w->nbatch; k++) {
        free(w->ids[k]);
        free(w->lens[k]);
    }
    free(w->B);
    free(w->T);
    free(w->ids);
    free(w->lens);
}

int bench_work_write(const char *dir, const bench_workload *wl, const char *const *keys, int n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/workloads.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    for (int w = 0; w < n; w++) {
        fprintf(f, "workload %s %d %ld\n", keys[w], wl[w].nbatch, wl[w].tokens);
        for (int k = 0; k < wl[w].nbatch; k++) {
            fprintf(f, "batch %d %d\nlens", wl[w].B[k], wl[w].T[k]);
            for (int b = 0; b < wl[w].B[k]; b++) fprintf(f, " %d", wl[w].lens[k][b]);
            fprintf(f, "\nids");
            for (int i = 0; i < wl[w].B[k] * wl[w].T[k]; i++) fprintf(f, " %d", wl[w].ids[k][i]);
            fprintf(f, "\n");
        }
    }
    return fclose(f);
}

static int more_reps(int reps, double best, double elapsed, double min_time) {
    if (reps < 1) return 1;
    if (best > 2.0) return 0;
    return reps < 2 || elapsed < min_time;
}
static double one_pass(bench_pass_fn fn, void *ctx, const bench_workload *w) {
    double s = bench_now();
    for (int k = 0; k < w->nbatch; k++)
        if (fn(ctx, w, k)) return -1;
    return bench_now() - s;
}
#define WARM_PASS_S 0.5
int bench_time_ways(int n, bench_pass_fn const fn[], void *const ctx[], const bench_workload *w, double min_time,
                    double best[]) {
    for (int i = 0; i < n; i++) {
        best[i] = 1e30;
        if (fn[i](ctx[i], w, w->nbatch - 1)) return -1;
    }
    double start = bench_now(), slowest;
    int reps = 0;
    do {
        slowest = 0;
        for (int i = 0; i < n; i++) {
            if (best[i] < WARM_PASS_S && one_pass(fn[i], ctx[i], w) < 0) return -1;
            double t = one_pass(fn[i], ctx[i], w);
            if (t < 0) return -1;
            if (t < best[i]) best[i] = t;
            if (best[i] > slowest) slowest = best[i];
        }
        reps++;
    } while (more_reps(reps, slowest, (bench_now() - start) / n, min_time));
    return 0;
}

void bench_print_load(const char *when) {
    FILE *f = fopen("/proc/loadavg", "r");
    double l1 = -1;
    if (f) {
        if (fscanf(f, "%lf", &l1) != 1) l1 = -1;
        fclose(f);
    }
    if (l1 >= 0) printf("load average (1 min) %s: %.2f on %ld CPUs\n", when, l1, sysconf(_SC_NPROCESSORS_ONLN));
}

long bench_peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int bench_child_ok(int p) {
    int st;
    return p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
