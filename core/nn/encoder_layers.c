/* One pass over a checked batch: its buffers and context, the layers' products (cblas_sgemm, our
 * float32, int8 and bf16 kernels), attention, and the layer schedules (BERT's post-norm, as rows
 * or as panels; ModernBERT's pre-norm), which run the row steps between the products. */
#include "nn/encoder_internal.h"
#include "math/int8_gemm.h"
#include "math/nn_gemm.h"
#include "math/sgemm_bcast.h"
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PAR_MIN_ELEMS ((size_t)16384)
#define PAR_MIN_ATT_MNK 1048576.0

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

/* Layer l's attention settings: its rotary table and its window. */
static void layer_attention(emb_fwd_ctx *fc, const emb_encoder_config *c, const emb_workspace *ws, int l) {
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
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n, k, 1.0f, A + k0, lda,
                        W + (size_t)n0 * K + k0, K, 1.0f, C + n0, ldc);
        }
    }
}

/* Which of a layer's linear weights a product uses (LIN_NONE: the float32 one given). */
typedef enum { LIN_NONE, LIN_Q, LIN_K, LIN_V, LIN_O, LIN_FFN_IN, LIN_FFN_OUT } lin_slot;
static const emb_int8_gemm_weights *packed_i8(const emb_layer_i8 *p, lin_slot s) {
    return !p ? NULL : s == LIN_O ? p->o : s == LIN_FFN_IN ? p->ffn_in : s == LIN_FFN_OUT ? p->ffn_out : NULL;
}
static const emb_bf16w *packed_bf16(const emb_layer_bf16 *p, lin_slot s) {
    return !p ? NULL : s == LIN_O ? p->o : s == LIN_FFN_IN ? p->ffn_in : s == LIN_FFN_OUT ? p->ffn_out : NULL;
}
/* float32 on emb_sgemm_bcast: the layer's weight W of K inputs as the products read it, packed at
 * load (*ldw EMB_SGEMM_BCAST_PACKED) or, without packed weights, as stored. */
static const float *f32_weight(const emb_fwd_ctx *fc, lin_slot s, const float *W, int K, int *ldw) {
    const emb_layer_f32p *p = fc->packs && fc->e->LF ? &fc->e->LF[fc->w - fc->e->L] : NULL;
    const float *w = !p                 ? NULL
                     : s == LIN_Q       ? p->q
                     : s == LIN_K       ? p->k
                     : s == LIN_V       ? p->v
                     : s == LIN_O       ? p->o
                     : s == LIN_FFN_IN  ? p->ffn_in
                     : s == LIN_FFN_OUT ? p->ffn_out
                                        : NULL;
    *ldw = w ? EMB_SGEMM_BCAST_PACKED : K;
    return w ? w : W;
}

/* C[M,N] += A[M,K] * W[N,K]^T (W as PyTorch's Linear stores it, [out, in]; row strides lda, ldc):
 * on sgemm, or with the layer's packed int8 or bf16 weight in `slot` when the encoder has them.
 * With a bias, C is the product's own output: the kernels (int8, bf16, float32 on AVX-512) write
 * bias + product in their epilogue (no fill pass, no read of C); float32 on OpenBLAS finds the
 * bias already there (the row tasks preload it, which spares OpenBLAS's zeroing pass). */
static void linear_acc(emb_fwd_ctx *fc, const float *A, int lda, const float *W, lin_slot slot, const float *bias,
                       float *C, int ldc, int M, int N, int K) {
    const emb_int8_gemm_weights *W8 = packed_i8(fc->w8, slot);
    const emb_bf16w *WB = packed_bf16(fc->wb, slot);
    if (WB) {
        if (emb_bf16_gemm(A, lda, M, WB, bias, bias ? 0.0f : 1.0f, C, ldc, fc->bact, fc->gemm_workers))
            fc->failed = 1;
    } else if (!W8 && fc->packs) {
        int ldw;
        const float *Wb = f32_weight(fc, slot, W, K, &ldw);
        emb_sgemm_bcast(M, N, K, A, lda, Wb, ldw, bias, C, ldc, fc->packs, fc->gemm_workers);
    } else if (!W8 && fc->tile_products) product_tiles(A, lda, W, C, ldc, M, N, K);
    else if (!W8) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, lda, W, K, 1.0f, C, ldc);
    else if (fc->act_of == A
                 ? emb_int8_gemm_q(fc->act, W8, bias, bias ? 0.0f : 1.0f, C, ldc, fc->gemm_workers)
                 : emb_int8_gemm(A, lda, M, W8, bias, bias ? 0.0f : 1.0f, C, ldc, fc->act, fc->gemm_workers))
        fc->failed = 1;
    fc->act_of = NULL;
}

/* The feed-forward's first product: into inter (FFin wide), one product when its halves lie
 * side by side in one tensor, two otherwise. */
static void ffn_in(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *A) {
    int BT = (int)fc->BT, FF = fc->FF, H = fc->H;
    if (fc->w8 || fc->wb || (fc->packs && fc->e->LF) || fc->FFin == FF || w->w1b == w->w1 + (size_t)FF * H) {
        /* packed as one */
        linear_acc(fc, A, H, w->w1, LIN_FFN_IN, w->b1, fc->inter, fc->FFin, BT, fc->FFin, H);
    } else {
        linear_acc(fc, A, H, w->w1, LIN_NONE, w->b1, fc->inter, fc->FFin, BT, FF, H);
        linear_acc(fc, A, H, w->w1b, LIN_NONE, w->b1 + FF, fc->inter + FF, fc->FFin, BT, FF, H);
    }
}

/* float32 on AVX-512: Q, K and V from one packing of their input; Q and K as panels where
 * attention reads them so (att.qk_panels), else as rows. */
static void qkv_from_panels(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *P) {
    int BT = (int)fc->BT, H = fc->H;
    emb_workers *gw = fc->gemm_workers;
    int lq, lk, lv;
    const float *wq = f32_weight(fc, LIN_Q, w->wq, H, &lq), *wk = f32_weight(fc, LIN_K, w->wk, H, &lk),
                *wv = f32_weight(fc, LIN_V, w->wv, H, &lv);
    if (fc->att.qk_panels) {
        emb_sgemm_bcast_to_panels(BT, H, H, NULL, 0, P, wq, lq, w->bq, EMB_PANELS_SET, fc->q, fc->packs, gw);
        emb_sgemm_bcast_to_panels(BT, H, H, NULL, 0, P, wk, lk, w->bk, EMB_PANELS_SET, fc->k, fc->packs, gw);
    } else {
        emb_sgemm_bcast_panels(BT, H, H, P, wq, lq, w->bq, fc->q, H, fc->packs, gw);
        emb_sgemm_bcast_panels(BT, H, H, P, wk, lk, w->bk, fc->k, H, fc->packs, gw);
    }
    emb_sgemm_bcast_panels(BT, H, H, P, wv, lv, w->bv, fc->v, H, fc->packs, gw);
}

/* Q, K and V from A: int8 quantizes A once for the three products, bf16 rounds it once. */
static void qkv_in(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *A) {
    int BT = (int)fc->BT, H = fc->H;
    const emb_layer_i8 *w8 = fc->w8;
    const emb_layer_bf16 *wb = fc->wb;
    emb_workers *gw = fc->gemm_workers;
    if (wb) {
        if (emb_bf16_convert(A, H, BT, H, fc->bact) ||
            emb_bf16_gemm_q(fc->bact, wb->q, w->bq, 0.0f, fc->q, H, gw) ||
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
        linear_acc(fc, A, H, w->wq, LIN_Q, w->bq, fc->q, H, BT, H, H);
        linear_acc(fc, A, H, w->wk, LIN_K, w->bk, fc->k, H, BT, H, H);
        linear_acc(fc, A, H, w->wv, LIN_V, w->bv, fc->v, H, BT, H, H);
        return;
    }
    if ((fc->act_of != A && emb_int8_gemm_quantize(A, H, BT, H, fc->act, gw)) ||
        emb_int8_gemm_q(fc->act, w8->q, w->bq, 0.0f, fc->q, H, gw) ||
        emb_int8_gemm_q(fc->act, w8->k, w->bk, 0.0f, fc->k, H, gw) ||
        emb_int8_gemm_q(fc->act, w8->v, w->bv, 0.0f, fc->v, H, gw))
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
static void attend(emb_fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int l) {
    layer_attention(fc, &fc->e->cfg, ws, l);
    const emb_attention_span *s = fc->span;
    fc->att.capture = s && l + 1 >= s->first_layer && l + 1 <= s->last_layer
                          ? fc->probs + (size_t)(l + 1 - s->first_layer) * fc->att.capture_nh * fc->T * fc->T
                          : NULL;
    emb_workers_run(pl->att, fc->B * fc->NH, emb_attention_task, &fc->att);
}
/* Q, K, V from A (onto the biases the row tasks preloaded), attention, and its output projection
 * added onto the residual stream X. */
static void attention_block(emb_fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int l, const float *A) {
    const emb_layer_weights *w = fc->w;
    int BT = (int)fc->BT, H = fc->H;
    qkv_in(fc, w, A);
    attend(fc, ws, pl, l);
    linear_acc(fc, fc->q, H, w->wo, LIN_O, NULL, fc->X, H, BT, H, H);
}

/* Layer l's weights for the products: float32, and the packed int8 or bf16 ones where loaded. */
static const emb_layer_weights *use_layer(emb_fwd_ctx *fc, int l) {
    const emb_encoder *e = fc->e;
    fc->w = &e->L[l];
    fc->w8 = e->L8 ? &e->L8[l] : NULL;
    fc->wb = e->LB ? &e->LB[l] : NULL;
    return fc->w;
}

/* BERT's layers with the residual stream kept as 32-row panels, the layout the products read
 * (float32 on AVX-512, over 24 rows): the output projection and the feed-forward add (bias +
 * product) onto the panels, the norms run down their columns, and Q, K, V and the feed-forward
 * read them in place; the stream is packed once after the embeddings and unpacked once at the
 * end, instead of two packings and two transposed write-backs in every layer. */
static void layers_post_norm_panels(emb_fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int n_layers) {
    int BT = (int)fc->BT, H = fc->H, FF = fc->FF, panels = (BT + 31) / 32;
    float *X = fc->stream_panels;
    emb_workers *gw = fc->gemm_workers;
    if (n_layers == 0) return;
    emb_sgemm_bcast_pack_panels(BT, H, fc->X, H, X, gw);
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = use_layer(fc, l);
        qkv_from_panels(fc, w, X);
        attend(fc, ws, pl, l);
        const float *ctx = fc->att.ctx ? fc->att.ctx : fc->q;
        int lo, l1, l2;
        const float *wo = f32_weight(fc, LIN_O, w->wo, H, &lo), *w1 = f32_weight(fc, LIN_FFN_IN, w->w1, H, &l1),
                    *w2 = f32_weight(fc, LIN_FFN_OUT, w->w2, FF, &l2);
        emb_sgemm_bcast_to_panels(BT, H, H, ctx, H, NULL, wo, lo, w->bo, EMB_PANELS_ADD, X, fc->packs, gw);
        fc->norm_g = w->ln1_g, fc->norm_b = w->ln1_b;
        emb_workers_run(pl->rows, panels, emb_encoder_step_panel_ln, fc);
        emb_sgemm_bcast_to_panels(BT, FF, H, NULL, 0, X, w1, l1, w->b1, EMB_PANELS_GELU, fc->inter, fc->packs, gw);
        emb_sgemm_bcast_to_panels(BT, H, FF, NULL, 0, fc->inter, w2, l2, w->b2, EMB_PANELS_ADD, X, fc->packs, gw);
        fc->norm_g = w->ln2_g, fc->norm_b = w->ln2_b;
        emb_workers_run(pl->rows, panels, emb_encoder_step_panel_ln, fc);
    }
    emb_sgemm_bcast_unpack_panels(BT, H, X, fc->X, H, gw);
}

/* BERT's layers: LayerNorm after attention and after the feed-forward, each with its residual. */
static void layers_post_norm(emb_fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = use_layer(fc, l);
        fc->next = l + 1 < n_layers ? &e->L[l + 1] : NULL;
        /* every product accumulates onto what its output already holds: the bias
         * (preloaded by the row tasks) or the residual */
        attention_block(fc, ws, pl, l, fc->X);
        emb_encoder_quantize_in_tasks(fc, fc->X, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_ln1, fc);
        ffn_in(fc, w, fc->X);
        emb_encoder_quantize_in_tasks(fc, fc->inter, fc->FFin, fc->FF);
        emb_workers_run(pl->rows, pl->ffn_tasks, emb_encoder_step_gelu, fc);
        linear_acc(fc, fc->inter, fc->FFin, w->w2, LIN_FFN_OUT, NULL, fc->X, fc->H, (int)fc->BT, fc->H, fc->FF);
        emb_encoder_quantize_in_tasks(fc, fc->next ? fc->X : NULL, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_ln2, fc);
    }
}

/* ModernBERT's layers: a norm before attention (none in layer 0) and before the MLP, whose
 * outputs are added to the un-normed stream; the final norm once all layers have run. */
static void layers_pre_norm(emb_fwd_ctx *fc, const emb_workspace *ws, const plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = use_layer(fc, l);
        fc->next = w;
        fc->res_bias = l > 0 && e->L[l - 1].b2 != e->zeros ? e->L[l - 1].b2 : NULL;
        fc->norm_g = w->ln1_g;
        fc->norm_b = w->ln1_b;
        const float *attn_in = w->ln1_g ? fc->xn : fc->X;
        emb_encoder_quantize_in_tasks(fc, attn_in, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_pn_attn_in, fc);
        attention_block(fc, ws, pl, l, attn_in);
        fc->res_bias = w->bo != e->zeros ? w->bo : NULL;
        emb_encoder_quantize_in_tasks(fc, fc->xn, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_pn_mlp_in, fc);
        ffn_in(fc, w, fc->xn);
        emb_encoder_quantize_in_tasks(fc, fc->inter, fc->FFin, fc->FF);
        emb_workers_run(pl->rows, pl->ffn_tasks, emb_encoder_step_gelu, fc);
        linear_acc(fc, fc->inter, fc->FFin, w->w2, LIN_FFN_OUT, NULL, fc->X, fc->H, (int)fc->BT, fc->H, fc->FF);
    }
    /* the last layer's output bias, then the final norm, in place */
    fc->next = NULL;
    fc->res_bias = n_layers > 0 && e->L[n_layers - 1].b2 != e->zeros ? e->L[n_layers - 1].b2 : NULL;
    fc->norm_g = n_layers == e->cfg.dims.layers ? e->final_g : NULL;
    fc->norm_b = e->final_b;
    fc->xn = fc->X;
    emb_encoder_quantize_in_tasks(fc, NULL, 0, 0);
    if (fc->res_bias || fc->norm_g) emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_pn_attn_in, fc);
}

/* The pass proper on a batch already checked. */
int emb_encoder_forward_batch(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                              const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                              const emb_attention_span *span, float *probs, int nthr, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int H = c->dims.hidden, FF = c->dims.intermediate, NH = c->dims.heads, dh = H / NH;
    const int FFin = c->gated ? 2 * FF : FF;
    const size_t BT = (size_t)B * T;
    int bcast = !e->L8 && !e->LB && emb_sgemm_bcast_supported(); /* float32 products on emb_sgemm_bcast */
    int want_workers =
        nthr > 1 && ((size_t)BT * H >= PAR_MIN_ELEMS || (double)B * NH * T * T * dh >= PAR_MIN_ATT_MNK ||
                     (double)BT * H * H >= EMB_SGEMM_BCAST_PAR_MACS);
    emb_workspace_use_workers(ws, nthr, want_workers);
    int n_workers = emb_workers_helpers(ws->workers) + 1;
    size_t need = BT * (size_t)(3 * H > FFin ? 3 * H : FFin); /* q, k, v; later the FFN's inner activations */
    int panels_ok = bcast && BT > 24 && emb_sgemm_bcast_panels_supported(),
        stream_panels = panels_ok && FFin == FF && !c->pre_norm; /* see emb_fwd_ctx */
    /* the stream's queries and keys as panels too, which attention reads in place (no rotation
     * to apply to them), its context into rows of its own after the values */
    int own_att = emb_nn_gemm_supported(); /* attention's products on nn_gemm */
    int qk_panels = stream_panels && own_att && c->pos_kind != EMB_POS_ROTARY;
    size_t qk_floats = emb_sgemm_bcast_panel_floats((int)BT, H);
    size_t panels = stream_panels ? emb_sgemm_bcast_panel_floats((int)BT, FF) : 0; /* the inner GELU panels */
    if (need < panels) need = panels;
    if (qk_panels && need < 2 * qk_floats + 2 * BT * H) need = 2 * qk_floats + 2 * BT * H;
    if (emb_workspace_grow(&ws->arena, &ws->arena_n, need) ||
        emb_workspace_grow(&ws->scores, &ws->scores_n, (size_t)n_workers * EMB_ATTENTION_SCRATCH(T, dh)) ||
        (bcast && emb_workspace_grow(&ws->packs, &ws->packs_n,
                                     (size_t)n_workers * emb_sgemm_bcast_scratch(H > FF ? H : FF))) ||
        (panels_ok && emb_workspace_grow(&ws->panels, &ws->panels_n, emb_sgemm_bcast_panel_floats((int)BT, H))) ||
        (c->pre_norm && emb_workspace_grow(&ws->xn, &ws->xn_n, BT * H)) ||
        (c->pos_kind == EMB_POS_ROTARY && emb_workspace_rope_tables(c, ws, T)))
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
    emb_fwd_ctx fc;
    memset(&fc, 0, sizeof fc);
    fc.e = e;
    fc.B = B;
    fc.T = T;
    fc.H = H;
    fc.NH = NH;
    fc.dh = dh;
    fc.FF = FF;
    fc.FFin = FFin;
    fc.BT = BT;
    fc.ids = ids;
    fc.type_ids = type_ids;
    fc.lens = lens;
    fc.pos_ids = c->pos_offset ? ws->pos_ids : NULL;
    fc.X = out;
    size_t qk_n = qk_panels ? qk_floats : BT * H; /* floats of q and of k */
    fc.q = ws->arena;
    fc.k = fc.q + qk_n;
    fc.v = fc.k + qk_n;
    fc.inter = ws->arena;
    fc.xn = ws->xn;
    fc.eps = c->ln_eps;
    fc.att = (emb_attention_job){.NH = NH,
                                 .T = T,
                                 .H = H,
                                 .dh = dh,
                                 .lens = lens,
                                 .q = fc.q,
                                 .k = fc.k,
                                 .v = fc.v,
                                 .qk_panels = qk_panels,
                                 .ctx = qk_panels ? fc.v + BT * H : NULL,
                                 .scores = ws->scores,
                                 .scale = (float)(1.0 / sqrt((double)dh)),
                                 .own_kernels = own_att,
                                 .split = nthr > 1, /* keep every attention product on its calling thread */
                                 .half_window = -1,
                                 .rot = c->rope_dims,
                                 .slopes = e->alibi_slopes,
                                 .rel_bias = e->rel_bias,
                                 .rel_span = e->rel_span,
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
    emb_encoder_quantize_in_tasks(&fc, fc.next ? fc.X : NULL, H, H);
    emb_workers_run(pl.rows, row_tasks, emb_encoder_step_embed, &fc);
    fc.gemm_workers = ws->workers;
    if (c->pre_norm) layers_pre_norm(&fc, ws, &pl, n_layers);
    else if (fc.stream_panels) layers_post_norm_panels(&fc, ws, &pl, n_layers);
    else layers_post_norm(&fc, ws, &pl, n_layers);
    if (fc.failed) return emb_fail(err, "out of memory for a batch of %d x %d tokens", B, T);
    return 0;
}
