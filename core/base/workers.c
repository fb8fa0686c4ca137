/* Tasks are claimed from one atomic ticket (generation << 32 | next task), so a helper that
 * wakes late finds the generation gone and claims nothing: the caller never waits for a
 * helper that is not running (a busy machine), only for tasks in progress. A helper that has
 * run tasks watches for the next run for SPIN_NS before it sleeps: a forward pass starts runs
 * every few microseconds, and a wake-up through the condition variable costs tens of them. */
#include "base/workers.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define SPIN_NS 100000L

struct emb_workers {
    int n; /* helper threads (the caller is worker 0) */
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t start;
    _Atomic uint32_t gen; /* changed under mu, with fn, ctx, ntasks; spinning helpers watch it */
    int stop;
    emb_task_fn fn;
    void *ctx;
    int ntasks;
    _Atomic uint64_t ticket;
    atomic_int done;
};

typedef struct {
    emb_workers *p;
    int id;
} helper_arg;

static long elapsed_ns(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* After a run: wait up to SPIN_NS for a run other than seen (or stop), without sleeping. */
static void spin_for_next(emb_workers *p, uint32_t seen) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&p->gen, memory_order_acquire) != seen) return;
        if (i % 64 == 0 && elapsed_ns(&t0) > SPIN_NS) return;
        CPU_RELAX();
    }
}

/* Claim and run tasks of generation gen until none is left. */
static void run_tasks(emb_workers *p, uint32_t gen, emb_task_fn fn, void *ctx, int ntasks, int worker) {
    uint64_t cur = atomic_load(&p->ticket);
    while ((uint32_t)(cur >> 32) == gen && (uint32_t)cur < (uint32_t)ntasks) {
        if (atomic_compare_exchange_weak(&p->ticket, &cur, cur + 1)) {
            fn(ctx, (int)(uint32_t)cur, worker);
            atomic_fetch_add(&p->done, 1);
            cur = atomic_load(&p->ticket);
        }
    }
}

static void *helper_main(void *a) {
    helper_arg *ha = a;
    emb_workers *p = ha->p;
    int id = ha->id;
    free(ha);
    uint32_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen && !p->stop) pthread_cond_wait(&p->start, &p->mu);
        if (p->stop) break;
        seen = p->gen;
        emb_task_fn fn = p->fn;
        void *ctx = p->ctx;
        int ntasks = p->ntasks;
        pthread_mutex_unlock(&p->mu);
        run_tasks(p, seen, fn, ctx, ntasks, id);
        spin_for_next(p, seen);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void emb_workers_free(emb_workers *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++) pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    free(p->th);
    free(p);
}

emb_workers *emb_workers_new(int n) {
    emb_workers *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->th = calloc((size_t)n, sizeof *p->th);
    if (!p->th) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    atomic_store(&p->ticket, 0);
    atomic_store(&p->done, 0);
    for (int i = 0; i < n; i++) {
        helper_arg *ha = malloc(sizeof *ha);
        if (!ha) break;
        ha->p = p;
        ha->id = i + 1;
        if (pthread_create(&p->th[i], NULL, helper_main, ha) != 0) {
            free(ha);
            break;
        }
        p->n++;
    }
    if (p->n == 0) {
        emb_workers_free(p);
        return NULL;
    }
    return p;
}

int emb_workers_helpers(const emb_workers *p) { return p ? p->n : 0; }

void emb_workers_run(emb_workers *p, int ntasks, emb_task_fn fn, void *ctx) {
    if (!p || ntasks < 2) {
        for (int t = 0; t < ntasks; t++) fn(ctx, t, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    uint32_t gen = ++p->gen;
    if (gen == 0) gen = ++p->gen; /* 0 is the helpers' initial "seen" */
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store(&p->done, 0);
    atomic_store(&p->ticket, (uint64_t)gen << 32);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, gen, fn, ctx, ntasks, 0);
    /* every task is claimed; wait for those still running on helpers (short) */
    while (atomic_load(&p->done) < ntasks) sched_yield();
}
