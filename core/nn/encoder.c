/* The encoder's forward pass (embeddings, then the layers on cblas_sgemm with the element-wise
 * work on the helper threads of workers.c), its rows and its pooler. One pass serves every
 * architecture; what varies is read from the config: positions added to the input (a table,
 * RoBERTa's from an offset) or applied in attention (rotary, ALiBi), full or sliding-window
 * attention, plain or gated feed-forward, post-norm (BERT) or pre-norm with a final norm
 * (ModernBERT). Absent biases are the encoder's zeros, so they cost no branch. */
#include "nn/encoder_internal.h"
#include "nn/encoder_attention.h"
#include "math/encoder_kernels.h"
#include "math/int8_gemm.h"
#include "nn/relpos.h"
#include "math/gelu.h"
#include "math/nn_gemm.h"
#include "math/panel_norm.h"
#include "math/sgemm_bcast.h"
#include "math/sgemm_rows.h"
#include "base/workers.h"
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 16 /* helper threads and the caller, whatever OpenBLAS's count */

struct emb_workspace {
    float *arena;
    size_t arena_n;
    float *scores;              /* one EMB_ATTENTION_SCRATCH(T, dh) block per worker */
    size_t scores_n;
    float *xn;                  /* pre-norm: the normed copy of the hidden states a layer reads */
    size_t xn_n;
    float *rope;                /* rotary tables of rope_T positions: global base, then local base */
    size_t rope_n;
    int rope_T, rope_rot;
    double rope_theta[2];
    int32_t *pos_ids;           /* RoBERTa: each token's row of the position table */
    size_t pos_n;
    emb_workers *workers;       /* helper threads, or NULL */
    float *packs;               /* float32 on AVX-512: each thread's scratch for emb_sgemm_bcast */
    size_t packs_n;
    float *panels;              /* float32 on AVX-512, over 24 rows: BERT's residual stream, or the
                                 * hidden states packed for Q, K, V */
    size_t panels_n;
    emb_int8_gemm_act act;             /* int8 weights: the quantized input of the current product */
    emb_bf16_act bact;          /* bf16 weights: the rounded input of the current product */
    emb_workspace *share[MAX_THREADS]; /* a batch split by sequences over the threads: each worker's own */
};

const float *emb_encoder_word_row(const emb_encoder *e, int32_t id) {
    if (id < 0 || id >= e->cfg.dims.vocab_size) return NULL;
    return e->word + (size_t)id * e->cfg.dims.hidden;
}
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
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, H, H, 1.0f, cls, H, e->pool_w, H, 1.0f, out, H);
    for (int i = 0; i < H; i++) out[i] = tanhf(out[i]);
    return 0;
}

/* ------------------------------------------------------------------ kernels */

EMB_KERNELS_BEGIN

/* x[i] = LayerNorm(x[i]) in place, statistics in double */
static inline void ln_inplace(float *x, const float *g, const float *b, int H, float eps) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < H; i++) s += x[i];
    double mean = s / H, v = 0;
#pragma omp simd reduction(+ : v)
    for (int i = 0; i < H; i++) { double d = x[i] - mean; v += d * d; }
    double rstd = 1.0 / sqrt(v / H + (double)eps);
    float m = (float)mean;
    float rs = (float)rstd;
    /* (x - mean) is exact enough in float: x and mean are of similar magnitude */
#pragma omp simd
    for (int i = 0; i < H; i++) x[i] = (float)((double)(x[i] - m) * rstd) * g[i] + b[i];
    (void)rs;
}

EMB_CLONES
static void embed_ln_row(float *dst, const float *w, const float *p, const float *ty, const float *g, const float *b, int H, float eps) {
    if (!p) { /* positions applied in attention */
#pragma omp simd
        for (int i = 0; i < H; i++) dst[i] = ty ? w[i] + ty[i] : w[i];
    } else if (ty) {
#pragma omp simd
        for (int i = 0; i < H; i++) dst[i] = (w[i] + ty[i]) + p[i];
    } else {
#pragma omp simd
        for (int i = 0; i < H; i++) dst[i] = w[i] + p[i];
    }
    ln_inplace(dst, g, b, H, eps);
}

/* rows of C[rows, n] = bias: sgemm then adds the product onto it (beta = 1), which
 * spares OpenBLAS's own zeroing pass of C (slow when C is split over threads) */
EMB_CLONES
static void fill_bias(float *C, const float *bias, size_t rows, int n) {
    for (size_t r = 0; r < rows; r++) {
        float *x = C + r * (size_t)n;
#pragma omp simd
        for (int i = 0; i < n; i++) x[i] = bias[i];
    }
}

/* x = LayerNorm(x + bias) row by row (x already holds residual + product) */
EMB_CLONES
static void bias_ln(float *X, const float *bias, const float *g, const float *b, size_t rows, int H, float eps) {
    for (size_t r = 0; r < rows; r++) {
        float *x = X + r * H;
#pragma omp simd
        for (int i = 0; i < H; i++) x[i] += bias[i];
        ln_inplace(x, g, b, H, eps);
    }
}

/* Gated feed-forward: each row holds [a | b] (2n wide); its first n become act(a) * b (GELU as
 * emb_gelu_quick where `quick`). */
EMB_CLONES
static void glu_rows(float *Y, size_t rows, int n, emb_activation act, int quick) {
    for (size_t r = 0; r < rows; r++) {
        float *y = Y + r * 2 * (size_t)n;
        if (act == EMB_ACT_GELU && quick) {
#pragma omp simd
            for (int i = 0; i < n; i++) y[i] = emb_gelu_quick_of(y[i]) * y[n + i];
        } else if (act == EMB_ACT_GELU) {
#pragma omp simd
            for (int i = 0; i < n; i++) y[i] = emb_gelu_of(y[i]) * y[n + i];
        } else if (act == EMB_ACT_SILU) {
#pragma omp simd
            for (int i = 0; i < n; i++) y[i] = y[i] / (1.0f + emb_expf(-y[i])) * y[n + i];
        } else {
#pragma omp simd
            for (int i = 0; i < n; i++) y[i] = (y[i] > 0 ? y[i] : 0.0f) * y[n + i];
        }
    }
}

/* x = x + bias (the residual stream of a pre-norm layer); then, with g, dst = LayerNorm(x). */
EMB_CLONES
static void bias_norm_to(float *X, float *dst, const float *bias, const float *g, const float *b, size_t rows, int H,
                         float eps) {
    for (size_t r = 0; r < rows; r++) {
        float *x = X + r * H;
        if (bias) {
#pragma omp simd
            for (int i = 0; i < H; i++) x[i] += bias[i];
        }
        if (!g) continue;
        float *d = dst + r * H;
        if (d != x) memcpy(d, x, (size_t)H * sizeof(float));
        ln_inplace(d, g, b, H, eps);
    }
}

EMB_KERNELS_END

/* ------------------------------------------------------------------ forward */

emb_workspace *emb_workspace_new(void) { return calloc(1, sizeof(emb_workspace)); }
void emb_workspace_free(emb_workspace *w) {
    if (!w) return;
    emb_workers_free(w->workers);
    for (int i = 0; i < MAX_THREADS; i++) emb_workspace_free(w->share[i]);
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
    for (int i = 0; i < MAX_THREADS; i++)
        if (w->share[i]) n += emb_workspace_bytes(w->share[i]);
    return n;
}

/* Grows by at least half again, so that batches of slowly increasing size (length-sorted
 * input) do not reallocate, and fault in fresh pages, at every call. */
static int grow(float **p, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    if (n < *cap + *cap / 2) n = *cap + *cap / 2;
    void *q = emb_alloc_large(n * sizeof(float));
    if (!q) return -1;
    free(*p);
    *p = q;
    *cap = n;
    return 0;
}


double emb_encoder_flops(const emb_encoder *e, int B, int T, const int32_t *lens, int n_layers) {
    const emb_encoder_config *c = &e->cfg;
    double H = c->dims.hidden, BT = (double)B * T;
    double proj = 2.0 * BT * (double)emb_encoder_config_linear_weights(c), total = 0;
    for (int l = 0; l < n_layers; l++) {
        double att = 0;
        for (int b = 0; b < B; b++) {
            double keys = lens ? lens[b] : T;
            if (emb_encoder_config_layer_is_local(c, l) && keys > 2.0 * c->half_window + 1) keys = 2.0 * c->half_window + 1;
            att += 2.0 * 2.0 * T * keys * H;
        }
        total += proj + att;
    }
    return total;
}

#define PAR_MIN_ELEMS ((size_t)16384)
#define PAR_MIN_ATT_MNK 1048576.0

typedef struct {
    const emb_encoder *e;
    const emb_layer_weights *w;
    const emb_layer_i8 *w8;               /* int8 weights: this layer's packed weights, else NULL */
    emb_int8_gemm_act *act;                      /* int8 weights: the quantized input of a product */
    const emb_layer_bf16 *wb;             /* bf16 weights: this layer's packed weights, else NULL */
    emb_bf16_act *bact;                   /* bf16 weights: the rounded input of a product */
    emb_workers *gemm_workers;            /* int8 weights: the threads a large product is split over */
    int failed;                           /* an int8 product ran out of memory */
    int bias_in_gemm;                     /* products write bias + A W^T (beta 0): int8, bf16, float32 on
                                           * emb_sgemm_bcast; float32 on OpenBLAS: the row tasks preload
                                           * the biases into the outputs */
    const float *quant_src;               /* int8: the rows (stride quant_ld) a row task quantizes into
                                           * act once it has written them, while they are in cache */
    int quant_ld;
    const float *act_of;                  /* int8: whose rows act holds, ready for a product, or NULL */
    float *packs;                         /* float32 on AVX-512: the products run on emb_sgemm_bcast
                                           * with this scratch; else NULL and OpenBLAS */
    float *stream_panels;                 /* float32 on AVX-512, BERT's layers, over 24 rows: the residual
                                           * stream between the embeddings and the last layer, kept as
                                           * panels (layers_post_norm_panels); else NULL */
    float *qkv_panels;                    /* float32 on AVX-512, over 24 rows: Q, K and V read one
                                           * packing of their input from here; else NULL */
    int tile_products;                    /* float32 on OpenBLAS, a short batch on several threads: the
                                           * products run as tiles on the calling thread */
    const emb_layer_weights *next;        /* layer whose Q/K/V biases the row tasks preload, or NULL */
    int B, T, H, NH, dh, FF;
    size_t BT;
    const int32_t *ids, *type_ids, *lens, *pos_ids;
    float *X, *q, *k, *v, *inter, *xn;
    float eps;
    int rows_per_task, ffn_rows;
    int FFin;                             /* width of the feed-forward's inner rows (2 FF when gated) */
    emb_attention_job att;                /* this layer's attention: rotary table, window, capture */
    const emb_attention_span *span;       /* the layers whose weights are captured into probs, or NULL */
    float *probs;
    const float *res_bias;                /* pre-norm: the bias the residual stream still lacks, or NULL */
    const float *norm_g, *norm_b;         /* pre-norm: the norm the row task applies into xn (NULL: none);
                                           * stream panels: the norm task_panel_ln applies */
} fwd_ctx;

/* Q, K, V rows [r0, r0+n) start as the next layer's biases */
static void preload_qkv(const fwd_ctx *c, size_t r0, size_t n) {
    if (!c->next || c->bias_in_gemm) return;
    size_t o = r0 * c->H;
    fill_bias(c->q + o, c->next->bq, n, c->H);
    fill_bias(c->k + o, c->next->bk, n, c->H);
    fill_bias(c->v + o, c->next->bv, n, c->H);
}

/* int8: the next row tasks quantize their rows of src (K of each row of ld floats) for the
 * product that reads them (src NULL: none; float32: nothing to do). */
static void quantize_in_tasks(fwd_ctx *c, const float *src, int ld, int K) {
    c->quant_src = NULL;
    c->act_of = NULL;
    if (!c->e->L8 || !src) return;
    if (emb_int8_gemm_act_reserve(c->act, (int)c->BT, K)) {
        c->failed = 1;
        return;
    }
    c->quant_src = src;
    c->quant_ld = ld;
    c->act_of = src;
}
static void quantize_rows(const fwd_ctx *c, size_t r0, size_t n) {
    if (c->quant_src) emb_int8_gemm_quantize_rows(c->act, c->quant_src, c->quant_ld, (int)r0, (int)(r0 + n));
}
static void task_embed(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    const emb_encoder *e = c->e;
    size_t r0 = (size_t)t * c->rows_per_task, r1 = r0 + (size_t)c->rows_per_task;
    if (r1 > c->BT) r1 = c->BT;
    for (size_t r = r0; r < r1; r++) {
        int pos = c->pos_ids ? c->pos_ids[r] : (int)(r % (size_t)c->T);
        const float *wr = e->word + (size_t)c->ids[r] * c->H;
        const float *p = e->pos ? e->pos + (size_t)pos * c->H : NULL;
        const float *ty = e->type ? e->type + (size_t)(c->type_ids ? c->type_ids[r] : 0) * c->H : NULL;
        embed_ln_row(c->X + r * c->H, wr, p, ty, e->ln_g, e->ln_b, c->H, e->cfg.ln_eps);
    }
    preload_qkv(c, r0, r1 - r0);
    quantize_rows(c, r0, r1 - r0);
}

static void row_range(const fwd_ctx *c, int t, int per, size_t *r0, size_t *n) {
    *r0 = (size_t)t * per;
    *n = *r0 + (size_t)per > c->BT ? c->BT - *r0 : (size_t)per;
}
static void task_ln1(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    bias_ln(c->X + r0 * c->H, c->w->bo, c->w->ln1_g, c->w->ln1_b, n, c->H, c->eps);
    /* the FFN's inner rows start as its bias (Q/K/V, which share the arena, are consumed) */
    if (!c->bias_in_gemm) fill_bias(c->inter + r0 * c->FFin, c->w->b1, n, c->FFin);
    quantize_rows(c, r0, n);
}
static void task_gelu(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->ffn_rows, &r0, &n);
    /* quantized weights: the GELU's output is quantized or rounded next, which keeps nothing of
     * the exact form's last digits */
    int quick = c->w8 || c->wb;
    if (c->FFin != c->FF) glu_rows(c->inter + r0 * c->FFin, n, c->FF, c->e->cfg.act, quick);
    else if (quick) emb_gelu_quick(c->inter + r0 * c->FF, n * (size_t)c->FF);
    else emb_gelu(c->inter + r0 * c->FF, n * (size_t)c->FF);
    quantize_rows(c, r0, n);
}
/* Pre-norm, before attention: the residual stream gets the previous layer's last bias, xn its
 * attention norm; Q, K, V start as this layer's biases. */
static void task_pn_attn_in(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    bias_norm_to(c->X + r0 * c->H, c->xn + r0 * c->H, c->res_bias, c->norm_g, c->norm_b, n, c->H, c->eps);
    if (c->next) preload_qkv(c, r0, n);
    quantize_rows(c, r0, n);
}
/* Pre-norm, before the MLP: the stream gets the attention output's bias, xn the MLP norm; the
 * inner rows start as their bias. */
static void task_pn_mlp_in(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    bias_norm_to(c->X + r0 * c->H, c->xn + r0 * c->H, c->res_bias, c->w->ln2_g, c->w->ln2_b, n, c->H, c->eps);
    if (!c->bias_in_gemm) fill_bias(c->inter + r0 * c->FFin, c->w->b1, n, c->FFin);
    quantize_rows(c, r0, n);
}
static void task_ln2(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    bias_ln(c->X + r0 * c->H, c->w->b2, c->w->ln2_g, c->w->ln2_b, n, c->H, c->eps);
    preload_qkv(c, r0, n);
    quantize_rows(c, r0, n);
}

/* One 32-row panel of the residual stream through the current norm. */
static void task_panel_ln(void *cv, int t, int worker) {
    (void)worker;
    fwd_ctx *c = cv;
    emb_panel_layernorm(c->stream_panels + (size_t)t * 32 * c->H, c->norm_g, c->norm_b, c->H, c->eps);
}

/* RoBERTa's position ids, as transformers' create_position_ids_from_input_ids: padding_idx plus
 * the count of non-padding tokens so far, padding_idx for padding tokens (and for the rows past
 * each sequence's length, which the caller pads). */
static void roberta_positions(const emb_encoder_config *c, int B, int T, const int32_t *ids, const int32_t *lens,
                              int32_t *out) {
    for (int b = 0; b < B; b++) {
        int n = 0;
        for (int t = 0; t < T; t++) {
            size_t r = (size_t)b * T + t;
            int real = t < lens[b] && ids[r] != c->pad_token_id;
            n += real;
            out[r] = real ? c->pad_token_id + n : c->pad_token_id;
        }
    }
}

/* The rotary tables of positions 0..T-1 for both bases, kept while T does not grow. */
static int rope_tables(const emb_encoder_config *c, emb_workspace *ws, int T) {
    int rot = c->rope_dims;
    if (ws->rope && ws->rope_T >= T && ws->rope_rot == rot && ws->rope_theta[0] == c->rope_theta &&
        ws->rope_theta[1] == c->rope_theta_local)
        return 0;
    if (grow(&ws->rope, &ws->rope_n, 2 * (size_t)T * rot)) return -1;
    emb_relpos_rope_table(c->rope_theta, rot, T, ws->rope);
    emb_relpos_rope_table(c->rope_theta_local, rot, T, ws->rope + (size_t)T * rot);
    ws->rope_T = T;
    ws->rope_rot = rot;
    ws->rope_theta[0] = c->rope_theta;
    ws->rope_theta[1] = c->rope_theta_local;
    return 0;
}

/* Layer l's attention settings: its rotary table and its window. */
static void layer_attention(fwd_ctx *fc, const emb_encoder_config *c, const emb_workspace *ws, int l) {
    int local = emb_encoder_config_layer_is_local(c, l);
    fc->att.half_window = local ? c->half_window : -1;
    if (c->pos_kind == EMB_POS_ROTARY) fc->att.rope = ws->rope + (local ? (size_t)ws->rope_T * c->rope_dims : 0);
}

/* OpenBLAS 0.3.21 splits a product over its own threads above 65536 * 4 multiply-adds and has no
 * per-call thread count. For the products of a short batch that split costs more than it saves
 * (16 rows, 2 threads on the shared 2-core VM: 1.2-1.4x slower than one thread, and its idle
 * threads spin beside ours), so with several threads a product of at most TILE_MAX_ROWS rows runs
 * on the calling thread alone, as tiles small enough that OpenBLAS keeps each there: blocks of
 * TILE_COLS output columns, each block's K slices in order. */
#define OPENBLAS_ONE_THREAD_MNK 262144
#define TILE_MAX_ROWS 32
#define TILE_COLS 32
static void product_tiles(const float *A, int lda, const float *W, float *C, int ldc, int M, int N, int K) {
    int kb = OPENBLAS_ONE_THREAD_MNK / (M * TILE_COLS) / 16 * 16;
    if (kb > K) kb = K;
    for (int n0 = 0; n0 < N; n0 += TILE_COLS) {
        int n = N - n0 < TILE_COLS ? N - n0 : TILE_COLS;
        for (int k0 = 0; k0 < K; k0 += kb) {
            int k = K - k0 < kb ? K - k0 : kb;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n, k, 1.0f, A + k0, lda, W + (size_t)n0 * K + k0, K,
                        1.0f, C + n0, ldc);
        }
    }
}

/* Which of a layer's linear weights a product uses (LIN_NONE: the float32 one given). */
typedef enum { LIN_NONE, LIN_O, LIN_FFN_IN, LIN_FFN_OUT } lin_slot;
static const emb_int8_gemm_weights *packed_i8(const emb_layer_i8 *p, lin_slot s) {
    return !p ? NULL : s == LIN_O ? p->o : s == LIN_FFN_IN ? p->ffn_in : s == LIN_FFN_OUT ? p->ffn_out : NULL;
}
static const emb_bf16w *packed_bf16(const emb_layer_bf16 *p, lin_slot s) {
    return !p ? NULL : s == LIN_O ? p->o : s == LIN_FFN_IN ? p->ffn_in : s == LIN_FFN_OUT ? p->ffn_out : NULL;
}

/* C[M,N] += A[M,K] * W[N,K]^T (W as PyTorch's Linear stores it, [out, in]; row strides lda, ldc):
 * on sgemm, or with the layer's packed int8 or bf16 weight in `slot` when the encoder has them.
 * With a bias, C is the product's own output: the kernels (int8, bf16, float32 on AVX-512) write
 * bias + product in their epilogue (no fill pass, no read of C); float32 on OpenBLAS finds the
 * bias already there (the row tasks preload it, which spares OpenBLAS's zeroing pass). */
static void linear_acc(fwd_ctx *fc, const float *A, int lda, const float *W, lin_slot slot, const float *bias,
                       float *C, int ldc, int M, int N, int K) {
    const emb_int8_gemm_weights *W8 = packed_i8(fc->w8, slot);
    const emb_bf16w *WB = packed_bf16(fc->wb, slot);
    if (WB) {
        if (emb_bf16_gemm(A, lda, M, WB, bias, bias ? 0.0f : 1.0f, C, ldc, fc->bact, fc->gemm_workers)) fc->failed = 1;
    } else if (!W8 && fc->packs)
        emb_sgemm_bcast(M, N, K, A, lda, W, K, bias, C, ldc, fc->packs, fc->gemm_workers);
    else if (!W8 && fc->tile_products)
        product_tiles(A, lda, W, C, ldc, M, N, K);
    else if (!W8)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, lda, W, K, 1.0f, C, ldc);
    else if (fc->act_of == A ? emb_int8_gemm_q(fc->act, W8, bias, bias ? 0.0f : 1.0f, C, ldc, fc->gemm_workers)
                             : emb_int8_gemm(A, lda, M, W8, bias, bias ? 0.0f : 1.0f, C, ldc, fc->act, fc->gemm_workers))
        fc->failed = 1;
    fc->act_of = NULL;
}

/* The feed-forward's first product: into inter (FFin wide), one product when its halves lie
 * side by side in one tensor, two otherwise. */
static void ffn_in(fwd_ctx *fc, const emb_layer_weights *w, const float *A) {
    int BT = (int)fc->BT, FF = fc->FF, H = fc->H;
    if (fc->w8 || fc->wb || fc->FFin == FF || w->w1b == w->w1 + (size_t)FF * H) { /* packed as one */
        linear_acc(fc, A, H, w->w1, LIN_FFN_IN, w->b1, fc->inter, fc->FFin, BT, fc->FFin, H);
    } else {
        linear_acc(fc, A, H, w->w1, LIN_NONE, w->b1, fc->inter, fc->FFin, BT, FF, H);
        linear_acc(fc, A, H, w->w1b, LIN_NONE, w->b1 + FF, fc->inter + FF, fc->FFin, BT, FF, H);
    }
}

/* float32 on AVX-512: Q, K and V from one packing of their input; Q and K as panels where
 * attention reads them so (att.qk_panels), else as rows. */
static void qkv_from_panels(fwd_ctx *fc, const emb_layer_weights *w, const float *P) {
    int BT = (int)fc->BT, H = fc->H;
    emb_workers *gw = fc->gemm_workers;
    if (fc->att.qk_panels) {
        emb_sgemm_bcast_to_panels(BT, H, H, NULL, 0, P, w->wq, H, w->bq, EMB_PANELS_SET, fc->q, fc->packs, gw);
        emb_sgemm_bcast_to_panels(BT, H, H, NULL, 0, P, w->wk, H, w->bk, EMB_PANELS_SET, fc->k, fc->packs, gw);
    } else {
        emb_sgemm_bcast_panels(BT, H, H, P, w->wq, H, w->bq, fc->q, H, fc->packs, gw);
        emb_sgemm_bcast_panels(BT, H, H, P, w->wk, H, w->bk, fc->k, H, fc->packs, gw);
    }
    emb_sgemm_bcast_panels(BT, H, H, P, w->wv, H, w->bv, fc->v, H, fc->packs, gw);
}

/* Q, K and V from A: int8 quantizes A once for the three products, bf16 rounds it once. */
static void qkv_in(fwd_ctx *fc, const emb_layer_weights *w, const float *A) {
    int BT = (int)fc->BT, H = fc->H;
    const emb_layer_i8 *w8 = fc->w8;
    const emb_layer_bf16 *wb = fc->wb;
    emb_workers *gw = fc->gemm_workers;
    if (wb) {
        if (emb_bf16_convert(A, H, BT, H, fc->bact) || emb_bf16_gemm_q(fc->bact, wb->q, w->bq, 0.0f, fc->q, H, gw) ||
            emb_bf16_gemm_q(fc->bact, wb->k, w->bk, 0.0f, fc->k, H, gw) ||
            emb_bf16_gemm_q(fc->bact, wb->v, w->bv, 0.0f, fc->v, H, gw))
            fc->failed = 1;
        return;
    }
    if (!w8 && fc->qkv_panels) {
        emb_sgemm_bcast_pack_panels(BT, H, A, H, fc->qkv_panels, gw);
        qkv_from_panels(fc, w, fc->qkv_panels);
        return;
    }
    if (!w8) {
        linear_acc(fc, A, H, w->wq, LIN_NONE, w->bq, fc->q, H, BT, H, H);
        linear_acc(fc, A, H, w->wk, LIN_NONE, w->bk, fc->k, H, BT, H, H);
        linear_acc(fc, A, H, w->wv, LIN_NONE, w->bv, fc->v, H, BT, H, H);
        return;
    }
    if ((fc->act_of != A && emb_int8_gemm_quantize(A, H, BT, H, fc->act, gw)) ||
        emb_int8_gemm_q(fc->act, w8->q, w->bq, 0.0f, fc->q, H, gw) ||
        emb_int8_gemm_q(fc->act, w8->k, w->bk, 0.0f, fc->k, H, gw) || emb_int8_gemm_q(fc->act, w8->v, w->bv, 0.0f, fc->v, H, gw))
        fc->failed = 1;
    fc->act_of = NULL;
}

/* Where the row tasks and the attention tasks run (helper threads or the caller alone), in how
 * many tasks. */
typedef struct {
    emb_workers *rows, *att;
    int row_tasks, ffn_tasks;
} plan;

/* Layer l's attention over Q, K and V, its context written into att.ctx (or over Q). */
static void attend(fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int l) {
    layer_attention(fc, &fc->e->cfg, ws, l);
    const emb_attention_span *s = fc->span;
    fc->att.capture = s && l + 1 >= s->first_layer && l + 1 <= s->last_layer
                          ? fc->probs + (size_t)(l + 1 - s->first_layer) * fc->att.capture_nh * fc->T * fc->T
                          : NULL;
    emb_workers_run(pl->att, fc->B * fc->NH, emb_attention_task, &fc->att);
}
/* Q, K, V from A (onto the biases the row tasks preloaded), attention, and its output projection
 * added onto the residual stream X. */
static void attention_block(fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int l, const float *A) {
    const emb_layer_weights *w = fc->w;
    int BT = (int)fc->BT, H = fc->H;
    qkv_in(fc, w, A);
    attend(fc, ws, pl, l);
    linear_acc(fc, fc->q, H, w->wo, LIN_O, NULL, fc->X, H, BT, H, H);
}

/* BERT's layers with the residual stream kept as 32-row panels, the layout the products read
 * (float32 on AVX-512, over 24 rows): the output projection and the feed-forward add (bias +
 * product) onto the panels, the norms run down their columns, and Q, K, V and the feed-forward
 * read them in place; the stream is packed once after the embeddings and unpacked once at the
 * end, instead of two packings and two transposed write-backs in every layer. */
static void layers_post_norm_panels(fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    int BT = (int)fc->BT, H = fc->H, FF = fc->FF, panels = (BT + 31) / 32;
    float *X = fc->stream_panels;
    emb_workers *gw = fc->gemm_workers;
    if (n_layers == 0) return;
    emb_sgemm_bcast_pack_panels(BT, H, fc->X, H, X, gw);
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = &e->L[l];
        fc->w = w;
        qkv_from_panels(fc, w, X);
        attend(fc, ws, pl, l);
        const float *ctx = fc->att.ctx ? fc->att.ctx : fc->q;
        emb_sgemm_bcast_to_panels(BT, H, H, ctx, H, NULL, w->wo, H, w->bo, EMB_PANELS_ADD, X, fc->packs, gw);
        fc->norm_g = w->ln1_g, fc->norm_b = w->ln1_b;
        emb_workers_run(pl->rows, panels, task_panel_ln, fc);
        emb_sgemm_bcast_to_panels(BT, FF, H, NULL, 0, X, w->w1, H, w->b1, EMB_PANELS_GELU, fc->inter, fc->packs, gw);
        emb_sgemm_bcast_to_panels(BT, H, FF, NULL, 0, fc->inter, w->w2, FF, w->b2, EMB_PANELS_ADD, X, fc->packs, gw);
        fc->norm_g = w->ln2_g, fc->norm_b = w->ln2_b;
        emb_workers_run(pl->rows, panels, task_panel_ln, fc);
    }
    emb_sgemm_bcast_unpack_panels(BT, H, X, fc->X, H, gw);
}

/* BERT's layers: LayerNorm after attention and after the feed-forward, each with its residual. */
static void layers_post_norm(fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = &e->L[l];
        fc->w = w;
        fc->w8 = e->L8 ? &e->L8[l] : NULL;
        fc->wb = e->LB ? &e->LB[l] : NULL;
        fc->next = l + 1 < n_layers ? &e->L[l + 1] : NULL;
        /* every product accumulates onto what its output already holds: the bias
         * (preloaded by the row tasks) or the residual */
        attention_block(fc, ws, pl, l, fc->X);
        quantize_in_tasks(fc, fc->X, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, task_ln1, fc);
        ffn_in(fc, w, fc->X);
        quantize_in_tasks(fc, fc->inter, fc->FFin, fc->FF);
        emb_workers_run(pl->rows, pl->ffn_tasks, task_gelu, fc);
        linear_acc(fc, fc->inter, fc->FFin, w->w2, LIN_FFN_OUT, NULL, fc->X, fc->H, (int)fc->BT, fc->H, fc->FF);
        quantize_in_tasks(fc, fc->next ? fc->X : NULL, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, task_ln2, fc);
    }
}

/* ModernBERT's layers: a norm before attention (none in layer 0) and before the MLP, whose
 * outputs are added to the un-normed stream; the final norm once all layers have run. */
static void layers_pre_norm(fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = &e->L[l];
        fc->w = w;
        fc->w8 = e->L8 ? &e->L8[l] : NULL;
        fc->wb = e->LB ? &e->LB[l] : NULL;
        fc->next = w;
        fc->res_bias = l > 0 && e->L[l - 1].b2 != e->zeros ? e->L[l - 1].b2 : NULL;
        fc->norm_g = w->ln1_g;
        fc->norm_b = w->ln1_b;
        const float *attn_in = w->ln1_g ? fc->xn : fc->X;
        quantize_in_tasks(fc, attn_in, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, task_pn_attn_in, fc);
        attention_block(fc, ws, pl, l, attn_in);
        fc->res_bias = w->bo != e->zeros ? w->bo : NULL;
        quantize_in_tasks(fc, fc->xn, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, task_pn_mlp_in, fc);
        ffn_in(fc, w, fc->xn);
        quantize_in_tasks(fc, fc->inter, fc->FFin, fc->FF);
        emb_workers_run(pl->rows, pl->ffn_tasks, task_gelu, fc);
        linear_acc(fc, fc->inter, fc->FFin, w->w2, LIN_FFN_OUT, NULL, fc->X, fc->H, (int)fc->BT,
                   fc->H, fc->FF);
    }
    /* the last layer's output bias, then the final norm, in place */
    fc->next = NULL;
    fc->res_bias = n_layers > 0 && e->L[n_layers - 1].b2 != e->zeros ? e->L[n_layers - 1].b2 : NULL;
    fc->norm_g = n_layers == e->cfg.dims.layers ? e->final_g : NULL;
    fc->norm_b = e->final_b;
    fc->xn = fc->X;
    quantize_in_tasks(fc, NULL, 0, 0);
    if (fc->res_bias || fc->norm_g) emb_workers_run(pl->rows, pl->row_tasks, task_pn_attn_in, fc);
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

static int forward_batch(const emb_encoder *, emb_workspace *, int B, int T, const int32_t *, const int32_t *,
                         const int32_t *, int, float *, const emb_attention_span *, float *, int nthr,
                         char err[EMB_ERR_LEN]);

/* The workspace's helper threads: as many as OpenBLAS has threads, minus the caller (started if
 * wanted and not yet there; NULL if they could not be: everything then runs on the caller). */
static void use_workers(emb_workspace *ws, int nthr, int wanted) {
    if (ws->workers && emb_workers_helpers(ws->workers) != nthr - 1) { /* OpenBLAS's count changed */
        emb_workers_free(ws->workers);
        ws->workers = NULL;
    }
    if (wanted && !ws->workers) ws->workers = emb_workers_new(nthr - 1);
}

/* A batch on one thread, as sub-batches where they pay. */
static int forward_sub_batches(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                               const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                               char err[EMB_ERR_LEN]) {
    int g = sub_batch_sequences(e, B, T);
    for (int b = 0; b < B; b += g) {
        size_t r0 = (size_t)b * T;
        int rc = forward_batch(e, ws, B - b < g ? B - b : g, T, ids + r0, type_ids ? type_ids + r0 : NULL, lens + b,
                               n_layers, out + r0 * e->cfg.dims.hidden, NULL, NULL, 1, err);
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
    int rc[MAX_THREADS];
    char err[MAX_THREADS][EMB_ERR_LEN];
} share_job;
static void share_task(void *cv, int t, int worker) {
    share_job *j = cv;
    int b0 = (int)((int64_t)j->B * t / j->shares), b1 = (int)((int64_t)j->B * (t + 1) / j->shares);
    emb_workspace *ws = j->ws->share[worker];
    size_t r0 = (size_t)b0 * j->T;
    if (!ws)
        j->rc[t] = emb_fail(j->err[t], "out of memory for a batch of %d x %d tokens", j->B, j->T);
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
        return emb_fail(err, "layer %d out of range (the model has %d layers; 0 is the embedding output)", n_layers,
                        c->dims.layers);
    if ((size_t)B * (size_t)T > (size_t)1 << 26) return emb_fail(err, "batch too large");
    for (int b = 0; b < B; b++)
        if (lens[b] < 1 || lens[b] > T) return emb_fail(err, "sequence %d has length %d, expected 1..%d", b, lens[b], T);
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
    if (nthr > MAX_THREADS) nthr = MAX_THREADS;
    if (span || e->steps_only || (nthr > 1 && !shares_pay(e, B, T, nthr)))
        return forward_batch(e, ws, B, T, ids, type_ids, lens, n_layers, out, span, probs, nthr, err);
    if (nthr == 1) return forward_sub_batches(e, ws, B, T, ids, type_ids, lens, n_layers, out, err);
    use_workers(ws, nthr, 1);
    share_job j = {.e = e, .ws = ws, .B = B, .T = T, .n_layers = n_layers, .ids = ids, .type_ids = type_ids,
                   .lens = lens, .out = out, .shares = emb_workers_helpers(ws->workers) + 1};
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

/* The pass proper on a batch already checked. */
static int forward_batch(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                         const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                         const emb_attention_span *span, float *probs, int nthr, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int H = c->dims.hidden, FF = c->dims.intermediate, NH = c->dims.heads, dh = H / NH;
    const int FFin = c->gated ? 2 * FF : FF;
    const size_t BT = (size_t)B * T;
    int bcast = !e->L8 && !e->LB && emb_sgemm_bcast_supported(); /* float32 products on emb_sgemm_bcast */
    int want_workers = nthr > 1 && ((size_t)BT * H >= PAR_MIN_ELEMS || (double)B * NH * T * T * dh >= PAR_MIN_ATT_MNK ||
                                    (double)BT * H * H >= EMB_SGEMM_BCAST_PAR_MACS);
    use_workers(ws, nthr, want_workers);
    int n_workers = emb_workers_helpers(ws->workers) + 1;
    size_t need = BT * (size_t)(3 * H > FFin ? 3 * H : FFin); /* q, k, v; later the FFN's inner activations */
    int panels_ok = bcast && BT > 24, stream_panels = panels_ok && FFin == FF && !c->pre_norm; /* see fwd_ctx */
    /* the stream's queries and keys as panels too, which attention reads in place (no rotation
     * to apply to them), its context into rows of its own after the values */
    int own_att = emb_nn_gemm_supported(); /* attention's products on nn_gemm */
    int qk_panels = stream_panels && own_att && c->pos_kind != EMB_POS_ROTARY;
    size_t qk_floats = emb_sgemm_bcast_panel_floats((int)BT, H);
    size_t panels = stream_panels ? emb_sgemm_bcast_panel_floats((int)BT, FF) : 0; /* the inner GELU panels */
    if (need < panels) need = panels;
    if (qk_panels && need < 2 * qk_floats + 2 * BT * H) need = 2 * qk_floats + 2 * BT * H;
    if (grow(&ws->arena, &ws->arena_n, need) ||
        grow(&ws->scores, &ws->scores_n, (size_t)n_workers * EMB_ATTENTION_SCRATCH(T, dh)) ||
        (bcast && grow(&ws->packs, &ws->packs_n, (size_t)n_workers * emb_sgemm_bcast_scratch(H > FF ? H : FF))) ||
        (panels_ok && grow(&ws->panels, &ws->panels_n, emb_sgemm_bcast_panel_floats((int)BT, H))) ||
        (c->pre_norm && grow(&ws->xn, &ws->xn_n, BT * H)) || (c->pos_kind == EMB_POS_ROTARY && rope_tables(c, ws, T)))
        return emb_fail(err, "out of memory for a batch of %d x %d tokens", B, T);
    if (c->pos_offset) {
        if (ws->pos_n < BT) {
            int32_t *p = realloc(ws->pos_ids, BT * sizeof *p);
            if (!p) return emb_fail(err, "out of memory for a batch of %d x %d tokens", B, T);
            ws->pos_ids = p;
            ws->pos_n = BT;
        }
        roberta_positions(c, B, T, ids, lens, ws->pos_ids);
    }
    fwd_ctx fc;
    memset(&fc, 0, sizeof fc);
    fc.e = e;
    fc.B = B; fc.T = T; fc.H = H; fc.NH = NH; fc.dh = dh; fc.FF = FF; fc.FFin = FFin; fc.BT = BT;
    fc.ids = ids; fc.type_ids = type_ids; fc.lens = lens;
    fc.pos_ids = c->pos_offset ? ws->pos_ids : NULL;
    fc.X = out;
    size_t qk_n = qk_panels ? qk_floats : BT * H; /* floats of q and of k */
    fc.q = ws->arena; fc.k = fc.q + qk_n; fc.v = fc.k + qk_n;
    fc.inter = ws->arena;
    fc.xn = ws->xn;
    fc.eps = c->ln_eps;
    fc.att = (emb_attention_job){.NH = NH, .T = T, .H = H, .dh = dh, .lens = lens, .q = fc.q, .k = fc.k, .v = fc.v,
                                 .qk_panels = qk_panels, .ctx = qk_panels ? fc.v + BT * H : NULL,
                                 .scores = ws->scores, .scale = (float)(1.0 / sqrt((double)dh)),
                                 .own_kernels = own_att,
                                 .split = nthr > 1, /* keep every attention product on its calling thread */
                                 .half_window = -1, .rot = c->rope_dims, .slopes = e->alibi_slopes,
                                 .capture_h0 = span ? span->first_head : 0,
                                 .capture_nh = span ? span->last_head - span->first_head + 1 : 0};
    fc.span = span;
    fc.probs = probs;
    fc.rows_per_task = (int)(PAR_MIN_ELEMS / 2 / (size_t)H);
    if (fc.rows_per_task < 4) fc.rows_per_task = 4;
    int row_tasks = (int)((BT + (size_t)fc.rows_per_task - 1) / (size_t)fc.rows_per_task);
    int ffn_rows = (int)(PAR_MIN_ELEMS / 2 / (size_t)FFin);
    if (ffn_rows < 4) ffn_rows = 4;
    int ffn_tasks = (int)((BT + (size_t)ffn_rows - 1) / (size_t)ffn_rows);
    fc.ffn_rows = ffn_rows;
    plan pl = {(size_t)BT * H >= PAR_MIN_ELEMS ? ws->workers : NULL,
               (double)B * NH * T * T * dh >= PAR_MIN_ATT_MNK ? ws->workers : NULL, row_tasks, ffn_tasks};
    fc.next = n_layers > 0 && !c->pre_norm ? &e->L[0] : NULL;
    fc.bias_in_gemm = e->L8 || e->LB || bcast;
    fc.packs = bcast ? ws->packs : NULL;
    fc.stream_panels = stream_panels ? ws->panels : NULL;
    fc.qkv_panels = panels_ok && !stream_panels ? ws->panels : NULL;
    /* without AVX-512, a short batch's products stay on one of OpenBLAS's threads */
    fc.tile_products = !bcast && BT <= TILE_MAX_ROWS && nthr > 1;
    fc.act = &ws->act;
    fc.bact = &ws->bact;
    quantize_in_tasks(&fc, fc.next ? fc.X : NULL, H, H);
    emb_workers_run(pl.rows, row_tasks, task_embed, &fc);
    fc.gemm_workers = ws->workers;
    if (c->pre_norm) layers_pre_norm(&fc, ws, &pl, n_layers);
    else if (fc.stream_panels) layers_post_norm_panels(&fc, ws, &pl, n_layers);
    else layers_post_norm(&fc, ws, &pl, n_layers);
    if (fc.failed) return emb_fail(err, "out of memory for a batch of %d x %d tokens", B, T);
    return 0;
}
