/* The encoder's forward pass, its entry points and its policy: the checks of a batch, how it
 * runs (split by sequences over the threads, as sub-batches on one thread, or whole with each
 * step split over the threads: encoder_layers.c), its rows, its pooler and its FLOPs. One pass
 * serves every architecture; what varies is read from the config: positions added to the input
 * (a table, RoBERTa's from an offset) or applied in attention (rotary, ALiBi), full or
 * sliding-window attention, plain or gated feed-forward, post-norm (BERT) or pre-norm with a final
 * norm (ModernBERT). Absent biases are the encoder's zeros, so they cost no branch. */
#include "nn/encoder_internal.h"
#include "math/half.h"
#include "math/sgemm_bcast.h"
#include "math/sgemm_rows.h"
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const float *emb_encoder_position_row(const emb_encoder *e, int32_t pos) {
    if (!e->pos || pos < 0 || pos >= emb_encoder_max_tokens(e)) return NULL;
    return e->pos + (size_t)(pos + e->cfg.pos_offset) * e->cfg.dims.hidden;
}
int emb_encoder_max_tokens(const emb_encoder *e) { return e->cfg.dims.max_positions - e->cfg.pos_offset; }
const float *emb_encoder_type_row(const emb_encoder *e, int32_t type) {
    if (!e->type || type < 0 || type >= e->cfg.dims.type_vocab) return NULL;
    return e->type + (size_t)type * e->cfg.dims.hidden;
}

int emb_encoder_pooler(const emb_encoder *e, const float *cls, float *out) {
    if (!e->pool_w) return -1;
    int H = e->cfg.dims.hidden;
    memcpy(out, e->pool_b, (size_t)H * sizeof(float));
    if (emb_sgemm_rows_supported()) /* one row: no OpenBLAS threads woken for it */
        emb_sgemm_rows(1, H, H, cls, H, e->pool_w, H, out, H);
    else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, H, H, 1.0f, cls, H, e->pool_w, H, 1.0f, out, H);
    for (int i = 0; i < H; i++) out[i] = tanhf(out[i]);
    return 0;
}

double emb_encoder_flops(const emb_encoder *e, int B, int T, const int32_t *lens, int n_layers) {
    const emb_encoder_config *c = &e->cfg;
    double QW = emb_encoder_config_q_width(c), BT = (double)B * T;
    double proj = 2.0 * BT * (double)emb_encoder_config_linear_weights(c), total = 0;
    for (int l = 0; l < n_layers; l++) {
        double att = 0;
        for (int b = 0; b < B; b++) {
            double keys = lens ? lens[b] : T;
            if (emb_encoder_config_layer_is_local(c, l) && keys > 2.0 * c->half_window + 1)
                keys = 2.0 * c->half_window + 1;
            att += 2.0 * 2.0 * T * keys * QW;
        }
        total += proj + att;
    }
    return total;
}

/* A model whose activations for SUB_BATCH_ROWS rows fit SUB_BATCH_BYTES (MiniLM's width: 256
 * rows of its 1,536-wide feed-forward are 1.5 MiB) runs a batch of SUB_BATCH_MIN rows or more on
 * one thread as sub-batches of whole sequences, SUB_BATCH_ROWS to 3 x SUB_BATCH_ROWS rows each:
 * a layer's activations then stay in the core's caches instead of a batch-sized buffer that
 * spills to memory (4,096 rows of MiniLM are about 40 MB a layer). A layer's weights are read
 * once per sub-batch instead of once per batch, which these models' small layers afford and
 * bert-base's do not (float32 3-6 % slower). The sequences are independent, so the result is
 * the batch's, bit for bit. */
#define SUB_BATCH_ROWS 256
#define SUB_BATCH_MIN 1024
#define SUB_BATCH_BYTES ((size_t)3 << 19)
/* Whether the products run on our kernels (int8, bf16, or float32 on AVX-512F): the cuts below
 * were measured there, not on OpenBLAS. */
static int own_kernels(const emb_encoder *e) { return e->L8 || e->LB || emb_sgemm_bcast_supported(); }
static int small_layers(const emb_encoder *e) {
    const emb_encoder_config *c = &e->cfg;
    size_t widest = (size_t)3 * c->dims.hidden, ffin = (size_t)(c->gated ? 2 : 1) * c->dims.intermediate;
    if (ffin > widest) widest = ffin;
    return own_kernels(e) && SUB_BATCH_ROWS * widest * sizeof(float) <= SUB_BATCH_BYTES;
}

/* Sequences per sub-batch on one thread: the products compute 32-row blocks, so the size chosen
 * is the one that pads the fewest rows (sub-batches of 200 rows, 2 x 100, cost 11 % more than
 * one batch of 300), and a batch is cut only if that pads under 8 % more rows than the batch
 * whole (4 % rather than 2 % cut 20 more shapes from 32 x 35 to 32 x 125: one-process A/B
 * medians 0.87-0.98 of the time, but one 1.03, 32 x 49, which measured 0.94 when repeated;
 * 8 % rather than 4 % cuts 32 x 97, 32 x 123, 24 x 65, 16 x 97 and a few more, each 4.1-5.2 %
 * more rows: int8 0.85-0.92, float32 0.95-1.01). */
static size_t padded_rows(size_t rows) { return emb_sgemm_bcast_panel_floats((int)rows, 1); }
static int sub_batch_sequences(const emb_encoder *e, int B, int T) {
    size_t BT = (size_t)B * T;
    if (BT < SUB_BATCH_MIN || !small_layers(e)) return B;
    int best = B;
    size_t best_rows = padded_rows(BT) + padded_rows(BT) * 2 / 25; /* a split must pad under 8 % more */
    for (int g = 1; g < B && (size_t)g * T <= 3 * SUB_BATCH_ROWS; g++) {
        if ((size_t)g * T < SUB_BATCH_ROWS && (size_t)(g + 1) * T <= 3 * SUB_BATCH_ROWS) continue;
        size_t rows = (size_t)(B / g) * padded_rows((size_t)g * T) + padded_rows((size_t)(B % g) * T);
        if (rows < best_rows) best = g, best_rows = rows;
    }
    return best;
}

/* A batch on one thread, as sub-batches where they pay. */
static int forward_sub_batches(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                               const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                               char err[EMB_ERR_LEN]) {
    int g = sub_batch_sequences(e, B, T);
    for (int b = 0; b < B; b += g) {
        size_t r0 = (size_t)b * T;
        int rc =
            emb_encoder_forward_batch(e, ws, B - b < g ? B - b : g, T, ids + r0, type_ids ? type_ids + r0 : NULL,
                                      lens + b, n_layers, out + r0 * e->cfg.dims.hidden, NULL, NULL, 1, err);
        if (rc) return rc;
    }
    return 0;
}

/* On several threads, a batch of SHARE_MIN_ROWS rows or more a thread, of a model whose layers'
 * weights take SHARE_MAX_WEIGHTS or less as the products read them, is split by sequences
 * instead of splitting every step: an equal share of the sequences for each thread, run there
 * alone (as sub-batches where they pay) with a workspace of its own, so that no thread waits for
 * another between the steps of a layer, but each streams every weight. One-process A/B on two
 * threads against every product and step split over both, 2 x 64 to 32 x 128: MiniLM float32
 * (6.8 MiB a layer) 0.86-0.94 of the time, int8 0.78-0.84; bert-base int8 (6.8 MiB) 0.77-0.96,
 * ModernBERT-base int8 (4.8 MiB) 0.79-0.86; bert-base float32 (27 MiB) 0.92-1.27, as much slower
 * as faster. */
#define SHARE_MIN_ROWS 32
#define SHARE_MAX_WEIGHTS ((size_t)8 << 20)
static int shares_pay(const emb_encoder *e, int B, int T, int nthr) {
    size_t layer = e->L8 || e->LB ? e->info.packed_bytes / (size_t)e->cfg.dims.layers
                                  : emb_encoder_config_linear_weights(&e->cfg) * sizeof(float);
    return nthr > 1 && own_kernels(e) && B >= nthr && (size_t)B * T >= (size_t)nthr * SHARE_MIN_ROWS &&
           layer <= SHARE_MAX_WEIGHTS;
}
typedef struct {
    const emb_encoder *e;
    emb_workspace *ws;
    int B, T, n_layers, shares;
    const int32_t *ids, *type_ids, *lens;
    float *out;
    int rc[EMB_ENCODER_MAX_THREADS];
    char err[EMB_ENCODER_MAX_THREADS][EMB_ERR_LEN];
} share_job;
static void share_task(void *cv, int t, int worker) {
    share_job *j = cv;
    int b0 = (int)((int64_t)j->B * t / j->shares), b1 = (int)((int64_t)j->B * (t + 1) / j->shares);
    emb_workspace *ws = j->ws->share[worker];
    size_t r0 = (size_t)b0 * j->T;
    if (!ws) j->rc[t] = emb_fail(j->err[t], "out of memory for a batch of %d x %d tokens", j->B, j->T);
    else
        j->rc[t] = forward_sub_batches(j->e, ws, b1 - b0, j->T, j->ids + r0, j->type_ids ? j->type_ids + r0 : NULL,
                                       j->lens + b0, j->n_layers, j->out + r0 * j->e->cfg.dims.hidden, j->err[t]);
}

int emb_encoder_forward(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                        const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                        char err[EMB_ERR_LEN]) {
    return emb_encoder_forward_capture(e, ws, B, T, ids, type_ids, lens, n_layers, out, NULL, NULL, err);
}

int emb_encoder_check_batch(const emb_encoder *e, int B, int T, const int32_t *ids, const int32_t *type_ids,
                            const int32_t *lens, int n_layers, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    if (B < 1 || T < 1) return emb_fail(err, "batch %d x %d tokens: both must be at least 1", B, T);
    if (T > emb_encoder_max_tokens(e))
        return emb_fail(err, "%d tokens exceed the model's maximum of %d positions", T, emb_encoder_max_tokens(e));
    if (n_layers < 0 || n_layers > c->dims.layers)
        return emb_fail(err, "layer %d out of range (the model has %d layers; 0 is the embedding output)",
                        n_layers, c->dims.layers);
    if ((size_t)B * (size_t)T > (size_t)1 << 26) return emb_fail(err, "batch too large");
    for (int b = 0; b < B; b++)
        if (lens[b] < 1 || lens[b] > T)
            return emb_fail(err, "sequence %d has length %d, expected 1..%d", b, lens[b], T);
    for (size_t i = 0; i < (size_t)B * T; i++) {
        if (ids[i] < 0 || ids[i] >= c->dims.vocab_size)
            return emb_fail(err, "token id %d out of range (vocabulary size %d)", ids[i], c->dims.vocab_size);
        if (e->type && type_ids && (type_ids[i] < 0 || type_ids[i] >= c->dims.type_vocab))
            return emb_fail(err, "token type id %d out of range (type vocabulary size %d)", type_ids[i],
                            c->dims.type_vocab);
    }
    return 0;
}

int emb_encoder_forward_capture(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                                const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                                const emb_attention_span *span, float *probs, char err[EMB_ERR_LEN]) {
    if (emb_encoder_check_batch(e, B, T, ids, type_ids, lens, n_layers, err)) return -1;
    return emb_encoder_run_batch(e, ws, B, T, ids, type_ids, lens, n_layers, out, span, probs, err);
}

int emb_encoder_run_batch(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                          const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                          const emb_attention_span *span, float *probs, char err[EMB_ERR_LEN]) {
    /* helpers: as many as OpenBLAS has threads, minus the caller */
    int nthr = openblas_get_num_threads();
    if (nthr < 1) nthr = 1;
    if (nthr > EMB_ENCODER_MAX_THREADS) nthr = EMB_ENCODER_MAX_THREADS;
    if (span || e->steps_only || (nthr > 1 && !shares_pay(e, B, T, nthr)))
        return emb_encoder_forward_batch(e, ws, B, T, ids, type_ids, lens, n_layers, out, span, probs, nthr, err);
    if (nthr == 1) return forward_sub_batches(e, ws, B, T, ids, type_ids, lens, n_layers, out, err);
    emb_workspace_use_workers(ws, nthr, 1);
    share_job j = {.e = e,
                   .ws = ws,
                   .B = B,
                   .T = T,
                   .n_layers = n_layers,
                   .ids = ids,
                   .type_ids = type_ids,
                   .lens = lens,
                   .out = out,
                   .shares = emb_workers_helpers(ws->workers) + 1};
    for (int w = 0; w < j.shares; w++)
        if (!ws->share[w]) ws->share[w] = emb_workspace_new();
    emb_workers_run(ws->workers, j.shares, share_task, &j);
    for (int t = 0; t < j.shares; t++)
        if (j.rc[t]) {
            snprintf(err, EMB_ERR_LEN, "%s", j.err[t]);
            return j.rc[t];
        }
    return 0;
}
