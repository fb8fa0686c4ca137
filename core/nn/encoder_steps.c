/* The forward pass's row steps, one task per block of rows on the helper threads (workers.c):
 * embeddings, the norms with their residual biases, the activation; each preloads the biases of
 * the next products and quantizes the rows it wrote for them (int8). */
#include "nn/encoder_internal.h"
#include "math/gelu.h"
#include "math/int8_gemm.h"
#include "math/panel_norm.h"
#include <string.h>

/* Q, K, V rows [r0, r0+n) start as the next layer's biases */
static void preload_qkv(const emb_fwd_ctx *c, size_t r0, size_t n) {
    if (!c->next || c->bias_in_gemm) return;
    emb_encoder_fill_bias(c->q + r0 * c->QW, c->next->bq, n, c->QW);
    emb_encoder_fill_bias(c->k + r0 * c->KW, c->next->bk, n, c->KW);
    emb_encoder_fill_bias(c->v + r0 * c->KW, c->next->bv, n, c->KW);
}

/* int8: the next row tasks quantize their rows of src (K of each row of ld floats) for the
 * product that reads them (src NULL: none; float32: nothing to do). */
void emb_encoder_quantize_in_tasks(emb_fwd_ctx *c, const float *src, int ld, int K) {
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
static void quantize_rows(const emb_fwd_ctx *c, size_t r0, size_t n) {
    if (c->quant_src) emb_int8_gemm_quantize_rows(c->act, c->quant_src, c->quant_ld, (int)r0, (int)(r0 + n));
}
void emb_encoder_step_embed(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    const emb_encoder *e = c->e;
    size_t r0 = (size_t)t * c->rows_per_task, r1 = r0 + (size_t)c->rows_per_task;
    if (r1 > c->BT) r1 = c->BT;
    for (size_t r = r0; r < r1; r++) {
        int pos = c->pos_ids ? c->pos_ids[r] : (int)(r % (size_t)c->T);
        const float *wr = emb_encoder_word_row(e, c->ids[r], c->X + r * c->H); /* may be the row itself */
        const float *p = e->pos ? e->pos + (size_t)pos * c->H : NULL;
        const float *ty = e->type ? e->type + (size_t)(c->type_ids ? c->type_ids[r] : 0) * c->H : NULL;
        if (!e->ln_g) emb_encoder_scale_row(c->X + r * c->H, wr, e->cfg.embed_scale, c->H); /* decoders */
        else emb_encoder_embed_ln_row(c->X + r * c->H, wr, p, ty, e->ln_g, e->ln_b, c->H, e->cfg.ln_eps);
    }
    preload_qkv(c, r0, r1 - r0);
    quantize_rows(c, r0, r1 - r0);
}

static void row_range(const emb_fwd_ctx *c, int t, int per, size_t *r0, size_t *n) {
    *r0 = (size_t)t * per;
    *n = *r0 + (size_t)per > c->BT ? c->BT - *r0 : (size_t)per;
}
void emb_encoder_step_ln1(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    emb_encoder_bias_ln(c->X + r0 * c->H, c->w->bo, c->w->ln1_g, c->w->ln1_b, n, c->H, c->eps);
    /* the FFN's inner rows start as its bias (Q/K/V, which share the arena, are consumed) */
    if (!c->bias_in_gemm) emb_encoder_fill_bias(c->inter + r0 * c->FFin, c->w->b1, n, c->FFin);
    quantize_rows(c, r0, n);
}
void emb_encoder_step_gelu(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->ffn_rows, &r0, &n);
    /* quantized weights: the GELU's output is quantized or rounded next, which keeps nothing of
     * the exact form's last digits */
    int quick = c->w8 || c->wb;
    if (c->FFin != c->FF) emb_encoder_glu_rows(c->inter + r0 * c->FFin, n, c->FF, c->e->cfg.act, quick);
    else if (quick) emb_gelu_quick(c->inter + r0 * c->FF, n * (size_t)c->FF);
    else emb_gelu(c->inter + r0 * c->FF, n * (size_t)c->FF);
    quantize_rows(c, r0, n);
}
/* Pre-norm, before attention: the residual stream gets the previous layer's last bias, xn its
 * attention norm; Q, K, V start as this layer's biases. */
void emb_encoder_step_pn_attn_in(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    emb_encoder_bias_norm_to(c->X + r0 * c->H, c->xn + r0 * c->H, c->res_bias, c->norm_g, c->norm_b, n, c->H,
                             c->eps);
    if (c->next) preload_qkv(c, r0, n);
    quantize_rows(c, r0, n);
}
/* Pre-norm, before the MLP: the stream gets the attention output's bias, xn the MLP norm; the
 * inner rows start as their bias. */
void emb_encoder_step_pn_mlp_in(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    emb_encoder_bias_norm_to(c->X + r0 * c->H, c->xn + r0 * c->H, c->res_bias, c->w->ln2_g, c->w->ln2_b, n, c->H,
                             c->eps);
    if (!c->bias_in_gemm) emb_encoder_fill_bias(c->inter + r0 * c->FFin, c->w->b1, n, c->FFin);
    quantize_rows(c, r0, n);
}
void emb_encoder_step_ln2(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    emb_encoder_bias_ln(c->X + r0 * c->H, c->w->b2, c->w->ln2_g, c->w->ln2_b, n, c->H, c->eps);
    preload_qkv(c, r0, n);
    quantize_rows(c, r0, n);
}

/* One 32-row panel of the residual stream through the current norm. */
void emb_encoder_step_panel_ln(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    emb_panel_layernorm(c->stream_panels + (size_t)t * 32 * c->H, c->norm_g, c->norm_b, c->H, c->eps);
}

/* Decoder stacks, between the products: the block's output joins the residual stream (Gemma:
 * its sandwich norm first), then the next norm into xn; before attention Q, K, V start as their
 * biases and before the MLP the inner rows as theirs (OpenBLAS only). */
void emb_encoder_step_dec_norm(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    int H = c->H;
    for (size_t r = r0; r < r0 + n; r++) {
        float *x = c->X + r * H, *y = c->xn + r * H;
        if (c->post_g) {
            emb_encoder_rms_to(y, y, c->post_g, H, c->eps);
            for (int i = 0; i < H; i++) x[i] += y[i];
        } else if (c->res_bias) {
            for (int i = 0; i < H; i++) x[i] += c->res_bias[i];
        }
        if (c->norm_g) emb_encoder_rms_to(x, c->norm_dst + r * H, c->norm_g, H, c->eps);
    }
    if (c->next) preload_qkv(c, r0, n);
    else if (!c->bias_in_gemm && c->norm_dst != c->X)
        emb_encoder_fill_bias(c->inter + r0 * c->FFin, c->w->b1, n, c->FFin);
    quantize_rows(c, r0, n);
}

/* Decoder stacks, before attention: each head of q and of k through its norm, then rotated by
 * its position (the key heads once, however many query heads share them). */
void emb_encoder_step_qk(void *cv, int t, int worker) {
    (void)worker;
    emb_fwd_ctx *c = cv;
    size_t r0, n;
    row_range(c, t, c->rows_per_task, &r0, &n);
    const emb_encoder_config *cf = &c->e->cfg;
    for (size_t r = r0; r < r0 + n; r++) {
        const float *rope = c->rope_rows ? c->rope_rows + (r % (size_t)c->T) * cf->rope_dims : NULL;
        emb_encoder_heads_norm_rope(c->q + r * c->QW, c->NH, c->dh, c->w->q_norm, rope, cf->rope_dims, c->eps);
        emb_encoder_heads_norm_rope(c->k + r * c->KW, cf->kv_heads, c->dh, c->w->k_norm, rope, cf->rope_dims,
                                    c->eps);
    }
}
