/* Fork-join helper threads for the encoder's work between matrix products (attention per
 * head, LayerNorm, GELU), sized by the caller to OpenBLAS's thread count: while OpenBLAS
 * works they sleep. A set of workers belongs to one emb_workspace, so to one thread at a time. */
#ifndef EMBED_WORKERS_H
#define EMBED_WORKERS_H

typedef struct emb_workers emb_workers;

/* One task of a run: task in 0..ntasks-1, worker in 0..helpers (0 is the calling thread), so
 * that a task can use per-worker scratch. */
typedef void (*emb_task_fn)(void *ctx, int task, int worker);

/* n helper threads, or NULL when none could be started (then everything runs on the caller). */
emb_workers *emb_workers_new(int n);
/* Stops and joins the helpers. NULL is allowed. */
void emb_workers_free(emb_workers *w);
/* Helper threads running (the caller is not counted). */
int emb_workers_helpers(const emb_workers *w);
/* Runs fn(ctx, 0..ntasks-1, worker) on the caller and the helpers, and returns when all are
 * done. w NULL, or fewer than 2 tasks: all on the caller, in order. */
void emb_workers_run(emb_workers *w, int ntasks, emb_task_fn fn, void *ctx);

#endif
