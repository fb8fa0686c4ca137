/* The forward pass's workspace (emb_workspace_*): its buffers, grown as batches need, its rotary
 * tables and its helper threads. */
#include "nn/encoder_internal.h"
#include "nn/relpos.h"
#include <stdlib.h>

emb_workspace *emb_workspace_new(void) { return calloc(1, sizeof(emb_workspace)); }
void emb_workspace_free(emb_workspace *w) {
    if (!w) return;
    emb_workers_free(w->workers);
    for (int i = 0; i < EMB_ENCODER_MAX_THREADS; i++) emb_workspace_free(w->share[i]);
    free(w->arena);
    free(w->scores);
    free(w->xn);
    free(w->rope);
    free(w->pos_ids);
    free(w->packs);
    free(w->panels);
    emb_int8_gemm_act_free(&w->act);
    emb_bf16_act_free(&w->bact);
    free(w);
}
size_t emb_workspace_bytes(const emb_workspace *w) {
    size_t n = (w->arena_n + w->scores_n + w->xn_n + w->rope_n + w->packs_n + w->panels_n) * sizeof(float) +
               w->pos_n * sizeof(int32_t);
    for (int i = 0; i < EMB_ENCODER_MAX_THREADS; i++)
        if (w->share[i]) n += emb_workspace_bytes(w->share[i]);
    return n;
}

/* Grows by at least half again, so that batches of slowly increasing size (length-sorted
 * input) do not reallocate, and fault in fresh pages, at every call. */
int emb_workspace_grow(float **p, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    if (n < *cap + *cap / 2) n = *cap + *cap / 2;
    void *q = emb_alloc_large(n * sizeof(float));
    if (!q) return -1;
    free(*p);
    *p = q;
    *cap = n;
    return 0;
}

/* The rotary tables of positions 0..T-1 for both bases, kept while T does not grow. */
int emb_workspace_rope_tables(const emb_encoder_config *c, emb_workspace *ws, int T) {
    int rot = c->rope_dims;
    if (ws->rope && ws->rope_T >= T && ws->rope_rot == rot && ws->rope_theta[0] == c->rope_theta &&
        ws->rope_theta[1] == c->rope_theta_local && ws->rope_f32 == c->decoder)
        return 0;
    if (emb_workspace_grow(&ws->rope, &ws->rope_n, 2 * (size_t)T * rot)) return -1;
    /* the decoders' tables as transformers computes them (relpos.h), the encoders' in double */
    void (*table)(double, int, int, float *) = c->decoder ? emb_relpos_rope_table_f32 : emb_relpos_rope_table;
    table(c->rope_theta, rot, T, ws->rope);
    table(c->rope_theta_local, rot, T, ws->rope + (size_t)T * rot);
    ws->rope_f32 = c->decoder;
    ws->rope_T = T;
    ws->rope_rot = rot;
    ws->rope_theta[0] = c->rope_theta;
    ws->rope_theta[1] = c->rope_theta_local;
    return 0;
}

/* The workspace's helper threads: as many as OpenBLAS has threads, minus the caller (started if
 * wanted and not yet there; NULL if they could not be: everything then runs on the caller). */
void emb_workspace_use_workers(emb_workspace *ws, int nthr, int wanted) {
    if (ws->workers && emb_workers_helpers(ws->workers) != nthr - 1) { /* OpenBLAS's count changed */
        emb_workers_free(ws->workers);
        ws->workers = NULL;
    }
    if (wanted && !ws->workers) ws->workers = emb_workers_new(nthr - 1);
}
