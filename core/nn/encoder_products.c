/* The forward pass's products and attention, as the layer schedules (encoder_layers.c,
 * encoder_decoder_layers.c) run them: float32 on our kernels or OpenBLAS, int8 and bf16 packed
 * weights, Q / K / V of any width (grouped-query heads), and one layer's attention over the
 * helper threads. */
#include "nn/encoder_internal.h"
#include "math/int8_gemm.h"
#include "math/sgemm_bcast.h"
#include <cblas.h>
#include <string.h>

/* Layer l's attention settings: its rotary table and its window. */
void emb_encoder_layer_attention(emb_fwd_ctx *fc, const emb_workspace *ws, int l) {
    const emb_encoder_config *c = &fc->e->cfg;
    int local = emb_encoder_config_layer_is_local(c, l);
    fc->att.half_window = local ? c->half_window : -1;
    const float *rope = ws->rope + (local ? (size_t)ws->rope_T * c->rope_dims : 0);
    /* a decoder's heads share keys: a row step rotates q and k before attention (rope_rows) */
    if (c->pos_kind == EMB_POS_ROTARY && c->decoder) fc->rope_rows = rope;
    else if (c->pos_kind == EMB_POS_ROTARY) fc->att.rope = rope;
}

/* OpenBLAS 0.3.21 splits a product over its own threads above 65536 * 4 multiply-adds and has no
 * per-call thread count. For the products of a short batch that split costs more than it saves
 * (16 rows, 2 threads on the shared 2-core VM: 1.2-1.4x slower than one thread, and its idle
 * threads spin beside ours), so with several threads a product of at most TILE_MAX_ROWS rows runs
 * on the calling thread alone, as tiles small enough that OpenBLAS keeps each there: blocks of
 * TILE_COLS output columns, each block's K slices in order. */
#define OPENBLAS_ONE_THREAD_MNK 262144
#define TILE_COLS 32
static void product_tiles(const float *A, int lda, const float *W, float *C, int ldc, int M, int N, int K) {
    int kb = OPENBLAS_ONE_THREAD_MNK / (M * TILE_COLS) / 16 * 16;
    if (kb > K) kb = K;
    for (int n0 = 0; n0 < N; n0 += TILE_COLS) {
        int n = N - n0 < TILE_COLS ? N - n0 : TILE_COLS;
        for (int k0 = 0; k0 < K; k0 += kb) {
            int k = K - k0 < kb ? K - k0 : kb;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n, k, 1.0f, A + k0, lda,
                        W + (size_t)n0 * K + k0, K, 1.0f, C + n0, ldc);
        }
    }
}

static const emb_int8_gemm_weights *packed_i8(const emb_layer_i8 *p, emb_lin_slot s) {
    return !p                     ? NULL
           : s == EMB_LIN_O       ? p->o
           : s == EMB_LIN_FFN_IN  ? p->ffn_in
           : s == EMB_LIN_FFN_OUT ? p->ffn_out
                                  : NULL;
}
static const emb_bf16w *packed_bf16(const emb_layer_bf16 *p, emb_lin_slot s) {
    return !p                     ? NULL
           : s == EMB_LIN_O       ? p->o
           : s == EMB_LIN_FFN_IN  ? p->ffn_in
           : s == EMB_LIN_FFN_OUT ? p->ffn_out
                                  : NULL;
}
/* float32 on emb_sgemm_bcast: the layer's weight W of K inputs as the products read it, packed at
 * load (*ldw EMB_SGEMM_BCAST_PACKED) or, without packed weights, as stored. */
const float *emb_encoder_f32_weight(const emb_fwd_ctx *fc, emb_lin_slot s, const float *W, int K, int *ldw) {
    const emb_layer_f32p *p = fc->packs && fc->e->LF ? &fc->e->LF[fc->w - fc->e->L] : NULL;
    const float *w = !p                     ? NULL
                     : s == EMB_LIN_Q       ? p->q
                     : s == EMB_LIN_K       ? p->k
                     : s == EMB_LIN_V       ? p->v
                     : s == EMB_LIN_O       ? p->o
                     : s == EMB_LIN_FFN_IN  ? p->ffn_in
                     : s == EMB_LIN_FFN_OUT ? p->ffn_out
                                            : NULL;
    *ldw = w ? EMB_SGEMM_BCAST_PACKED : K;
    return w ? w : W;
}

/* C[M,N] += A[M,K] * W[N,K]^T (W as PyTorch's Linear stores it, [out, in]; row strides lda, ldc):
 * on sgemm, or with the layer's packed int8 or bf16 weight in `slot` when the encoder has them.
 * With a bias, C is the product's own output: the kernels (int8, bf16, float32 on AVX-512) write
 * bias + product in their epilogue (no fill pass, no read of C); float32 on OpenBLAS finds the
 * bias already there (the row tasks preload it, which spares OpenBLAS's zeroing pass). */
void emb_encoder_linear(emb_fwd_ctx *fc, const float *A, int lda, const float *W, emb_lin_slot slot,
                        const float *bias, float *C, int ldc, int M, int N, int K) {
    const emb_int8_gemm_weights *W8 = packed_i8(fc->w8, slot);
    const emb_bf16w *WB = packed_bf16(fc->wb, slot);
    if (WB) {
        if (emb_bf16_gemm(A, lda, M, WB, bias, bias ? 0.0f : 1.0f, C, ldc, fc->bact, fc->gemm_workers))
            fc->failed = 1;
    } else if (!W8 && fc->packs) {
        int ldw;
        const float *Wb = emb_encoder_f32_weight(fc, slot, W, K, &ldw);
        emb_sgemm_bcast(M, N, K, A, lda, Wb, ldw, bias, C, ldc, fc->packs, fc->gemm_workers);
    } else if (!W8 && fc->tile_products) product_tiles(A, lda, W, C, ldc, M, N, K);
    else if (!W8) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, lda, W, K, 1.0f, C, ldc);
    else if (fc->act_of == A
                 ? emb_int8_gemm_q(fc->act, W8, bias, bias ? 0.0f : 1.0f, C, ldc, fc->gemm_workers)
                 : emb_int8_gemm(A, lda, M, W8, bias, bias ? 0.0f : 1.0f, C, ldc, fc->act, fc->gemm_workers))
        fc->failed = 1;
    fc->act_of = NULL;
}

/* C = bias + A W^T, whatever C held: the kernels write it so; OpenBLAS adds onto the bias filled
 * in first (a decoder block's output, which no row task could preload: its rows are still read). */
void emb_encoder_linear_to(emb_fwd_ctx *fc, const float *A, int lda, const float *W, emb_lin_slot slot,
                           const float *bias, float *C, int ldc, int M, int N, int K) {
    if (!fc->bias_in_gemm)
        for (int r = 0; r < M; r++) memcpy(C + (size_t)r * ldc, bias, (size_t)N * sizeof(float));
    emb_encoder_linear(fc, A, lda, W, slot, bias, C, ldc, M, N, K);
}

/* The feed-forward's first product: into inter (FFin wide), one product when its halves lie
 * side by side in one tensor, two otherwise. */
void emb_encoder_ffn_in(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *A) {
    int BT = (int)fc->BT, FF = fc->FF, H = fc->H;
    if (fc->w8 || fc->wb || (fc->packs && fc->e->LF) || fc->FFin == FF || w->w1b == w->w1 + (size_t)FF * H) {
        /* packed as one */
        emb_encoder_linear(fc, A, H, w->w1, EMB_LIN_FFN_IN, w->b1, fc->inter, fc->FFin, BT, fc->FFin, H);
    } else {
        emb_encoder_linear(fc, A, H, w->w1, EMB_LIN_NONE, w->b1, fc->inter, fc->FFin, BT, FF, H);
        emb_encoder_linear(fc, A, H, w->w1b, EMB_LIN_NONE, w->b1 + FF, fc->inter + FF, fc->FFin, BT, FF, H);
    }
}

/* float32 on AVX-512: Q, K and V from one packing of their input; Q and K as panels where
 * attention reads them so (att.qk_panels), else as rows. */
void emb_encoder_qkv_panels(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *P) {
    int BT = (int)fc->BT, H = fc->H, QW = fc->QW, KW = fc->KW;
    emb_workers *gw = fc->gemm_workers;
    int lq, lk, lv;
    const float *wq = emb_encoder_f32_weight(fc, EMB_LIN_Q, w->wq, H, &lq),
                *wk = emb_encoder_f32_weight(fc, EMB_LIN_K, w->wk, H, &lk),
                *wv = emb_encoder_f32_weight(fc, EMB_LIN_V, w->wv, H, &lv);
    if (fc->att.qk_panels) {
        emb_sgemm_bcast_to_panels(BT, H, H, NULL, 0, P, wq, lq, w->bq, EMB_PANELS_SET, fc->q, fc->packs, gw);
        emb_sgemm_bcast_to_panels(BT, H, H, NULL, 0, P, wk, lk, w->bk, EMB_PANELS_SET, fc->k, fc->packs, gw);
    } else {
        emb_sgemm_bcast_panels(BT, QW, H, P, wq, lq, w->bq, fc->q, QW, fc->packs, gw);
        emb_sgemm_bcast_panels(BT, KW, H, P, wk, lk, w->bk, fc->k, KW, fc->packs, gw);
    }
    emb_sgemm_bcast_panels(BT, KW, H, P, wv, lv, w->bv, fc->v, KW, fc->packs, gw);
}

/* Q, K and V from A: int8 quantizes A once for the three products, bf16 rounds it once. */
void emb_encoder_qkv_in(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *A) {
    int BT = (int)fc->BT, H = fc->H, QW = fc->QW, KW = fc->KW;
    const emb_layer_i8 *w8 = fc->w8;
    const emb_layer_bf16 *wb = fc->wb;
    emb_workers *gw = fc->gemm_workers;
    if (wb) {
        if (emb_bf16_convert(A, H, BT, H, fc->bact) ||
            emb_bf16_gemm_q(fc->bact, wb->q, w->bq, 0.0f, fc->q, QW, gw) ||
            emb_bf16_gemm_q(fc->bact, wb->k, w->bk, 0.0f, fc->k, KW, gw) ||
            emb_bf16_gemm_q(fc->bact, wb->v, w->bv, 0.0f, fc->v, KW, gw))
            fc->failed = 1;
        return;
    }
    if (!w8 && fc->qkv_panels) {
        emb_sgemm_bcast_pack_panels(BT, H, A, H, fc->qkv_panels, gw);
        emb_encoder_qkv_panels(fc, w, fc->qkv_panels);
        return;
    }
    if (!w8) {
        emb_encoder_linear(fc, A, H, w->wq, EMB_LIN_Q, w->bq, fc->q, QW, BT, QW, H);
        emb_encoder_linear(fc, A, H, w->wk, EMB_LIN_K, w->bk, fc->k, KW, BT, KW, H);
        emb_encoder_linear(fc, A, H, w->wv, EMB_LIN_V, w->bv, fc->v, KW, BT, KW, H);
        return;
    }
    if ((fc->act_of != A && emb_int8_gemm_quantize(A, H, BT, H, fc->act, gw)) ||
        emb_int8_gemm_q(fc->act, w8->q, w->bq, 0.0f, fc->q, QW, gw) ||
        emb_int8_gemm_q(fc->act, w8->k, w->bk, 0.0f, fc->k, KW, gw) ||
        emb_int8_gemm_q(fc->act, w8->v, w->bv, 0.0f, fc->v, KW, gw))
        fc->failed = 1;
    fc->act_of = NULL;
}

/* Layer l's attention over Q, K and V, its context written into att.ctx (or over Q). */
void emb_encoder_attend(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int l) {
    emb_encoder_layer_attention(fc, ws, l);
    const emb_attention_span *s = fc->span;
    fc->att.capture = s && l + 1 >= s->first_layer && l + 1 <= s->last_layer
                          ? fc->probs + (size_t)(l + 1 - s->first_layer) * fc->att.capture_nh * fc->T * fc->T
                          : NULL;
    emb_workers_run(pl->att, fc->B * fc->NH, emb_attention_task, &fc->att);
}
/* Q, K, V from A (onto the biases the row tasks preloaded), attention, and its output projection
 * added onto the residual stream X. */
void emb_encoder_attention_block(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int l,
                                 const float *A) {
    const emb_layer_weights *w = fc->w;
    int BT = (int)fc->BT, H = fc->H;
    emb_encoder_qkv_in(fc, w, A);
    emb_encoder_attend(fc, ws, pl, l);
    emb_encoder_linear(fc, fc->q, fc->QW, w->wo, EMB_LIN_O, NULL, fc->X, H, BT, H, fc->QW);
}

/* Layer l's weights for the products: float32, and the packed int8 or bf16 ones where loaded. */
const emb_layer_weights *emb_encoder_use_layer(emb_fwd_ctx *fc, int l) {
    const emb_encoder *e = fc->e;
    fc->w = &e->L[l];
    fc->w8 = e->L8 ? &e->L8[l] : NULL;
    fc->wb = e->LB ? &e->LB[l] : NULL;
    return fc->w;
}
