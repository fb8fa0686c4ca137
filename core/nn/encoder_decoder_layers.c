/* The layers of decoder stacks used as embedders (Qwen3, Gemma3): pre-norm blocks with RMSNorm,
 * q_norm / k_norm and rotary positions on each head before attention (grouped-query heads, a
 * causal mask or none, sliding windows), a gated MLP, and where the arch has them (Gemma) the
 * sandwich norms of each block's output; the final norm after the last layer. The products and
 * attention are the encoders' (encoder_products.c), the row steps encoder_steps.c's. */
#include "nn/encoder_internal.h"

/* The block's output (in A's product) onto the stream X: added at once, or into xn for the row
 * step to norm (post_g) before it joins X; bias b (the encoder's zeros: none) with it. */
static void block_out(emb_fwd_ctx *fc, const float *A, int lda, int K, const float *W, emb_lin_slot slot,
                      const float *b, const float *post_g) {
    const emb_encoder *e = fc->e;
    int BT = (int)fc->BT, H = fc->H;
    if (post_g) emb_encoder_linear_to(fc, A, lda, W, slot, b, fc->xn, H, BT, H, K);
    else emb_encoder_linear(fc, A, lda, W, slot, NULL, fc->X, H, BT, H, K);
    fc->post_g = post_g;
    fc->res_bias = !post_g && b != e->zeros ? b : NULL;
}

/* The row step that ends one block and starts the next: X takes the block's output, xn the norm
 * g of X; with next, Q, K and V are next's products. */
static void norm_step(emb_fwd_ctx *fc, const emb_fwd_plan *pl, const float *g, const emb_layer_weights *next) {
    fc->next = next;
    fc->norm_g = g;
    fc->norm_dst = fc->xn;
    emb_encoder_quantize_in_tasks(fc, fc->xn, fc->H, fc->H);
    emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_dec_norm, fc);
}

void emb_encoder_layers_decoder(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    fc->post_g = NULL;
    fc->res_bias = NULL;
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = emb_encoder_use_layer(fc, l);
        norm_step(fc, pl, w->ln1_g, w);
        emb_encoder_qkv_in(fc, w, fc->xn);
        emb_encoder_layer_attention(fc, ws, l); /* this layer's rotary table for the q / k step */
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_qk, fc);
        emb_encoder_attend(fc, ws, pl, l);
        block_out(fc, fc->q, fc->QW, fc->QW, w->wo, EMB_LIN_O, w->bo, w->post1_g);
        norm_step(fc, pl, w->ln2_g, NULL);
        emb_encoder_ffn_in(fc, w, fc->xn);
        emb_encoder_quantize_in_tasks(fc, fc->inter, fc->FFin, fc->FF);
        emb_workers_run(pl->rows, pl->ffn_tasks, emb_encoder_step_gelu, fc);
        block_out(fc, fc->inter, fc->FFin, fc->FF, w->w2, EMB_LIN_FFN_OUT, w->b2, w->post2_g);
    }
    /* the last block's output, then (all layers run) the final norm, in place */
    fc->next = NULL;
    fc->norm_g = n_layers == e->cfg.dims.layers ? e->final_g : NULL;
    fc->norm_dst = fc->X;
    emb_encoder_quantize_in_tasks(fc, NULL, 0, 0);
    if (fc->post_g || fc->res_bias || fc->norm_g)
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_dec_norm, fc);
}
