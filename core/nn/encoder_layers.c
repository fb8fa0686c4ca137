/* One pass over a checked batch: its buffers and context, and the encoders' layer schedules
 * (BERT's post-norm, as rows or as panels; ModernBERT's pre-norm), which run the row steps
 * between the products (encoder_products.c); decoder stacks run encoder_decoder_layers.c's. */
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

/* BERT's layers with the residual stream kept as 32-row panels, the layout the products read
 * (float32 on AVX-512, over 24 rows): the output projection and the feed-forward add (bias +
 * product) onto the panels, the norms run down their columns, and Q, K, V and the feed-forward
 * read them in place; the stream is packed once after the embeddings and unpacked once at the
 * end, instead of two packings and two transposed write-backs in every layer. */
static void layers_post_norm_panels(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl,
                                    int n_layers) {
    int BT = (int)fc->BT, H = fc->H, FF = fc->FF, panels = (BT + 31) / 32;
    float *X = fc->stream_panels;
    emb_workers *gw = fc->gemm_workers;
    if (n_layers == 0) return;
    emb_sgemm_bcast_pack_panels(BT, H, fc->X, H, X, gw);
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = emb_encoder_use_layer(fc, l);
        emb_encoder_qkv_panels(fc, w, X);
        emb_encoder_attend(fc, ws, pl, l);
        const float *ctx = fc->att.ctx ? fc->att.ctx : fc->q;
        int lo, l1, l2;
        const float *wo = emb_encoder_f32_weight(fc, EMB_LIN_O, w->wo, H, &lo),
                    *w1 = emb_encoder_f32_weight(fc, EMB_LIN_FFN_IN, w->w1, H, &l1),
                    *w2 = emb_encoder_f32_weight(fc, EMB_LIN_FFN_OUT, w->w2, FF, &l2);
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
static void layers_post_norm(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = emb_encoder_use_layer(fc, l);
        fc->next = l + 1 < n_layers ? &e->L[l + 1] : NULL;
        /* every product accumulates onto what its output already holds: the bias
         * (preloaded by the row tasks) or the residual */
        emb_encoder_attention_block(fc, ws, pl, l, fc->X);
        emb_encoder_quantize_in_tasks(fc, fc->X, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_ln1, fc);
        emb_encoder_ffn_in(fc, w, fc->X);
        emb_encoder_quantize_in_tasks(fc, fc->inter, fc->FFin, fc->FF);
        emb_workers_run(pl->rows, pl->ffn_tasks, emb_encoder_step_gelu, fc);
        emb_encoder_linear(fc, fc->inter, fc->FFin, w->w2, EMB_LIN_FFN_OUT, NULL, fc->X, fc->H, (int)fc->BT, fc->H,
                           fc->FF);
        emb_encoder_quantize_in_tasks(fc, fc->next ? fc->X : NULL, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_ln2, fc);
    }
}

/* ModernBERT's layers: a norm before attention (none in layer 0) and before the MLP, whose
 * outputs are added to the un-normed stream; the final norm once all layers have run. */
static void layers_pre_norm(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int n_layers) {
    const emb_encoder *e = fc->e;
    for (int l = 0; l < n_layers; l++) {
        const emb_layer_weights *w = emb_encoder_use_layer(fc, l);
        fc->next = w;
        fc->res_bias = l > 0 && e->L[l - 1].b2 != e->zeros ? e->L[l - 1].b2 : NULL;
        fc->norm_g = w->ln1_g;
        fc->norm_b = w->ln1_b;
        const float *attn_in = w->ln1_g ? fc->xn : fc->X;
        emb_encoder_quantize_in_tasks(fc, attn_in, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_pn_attn_in, fc);
        emb_encoder_attention_block(fc, ws, pl, l, attn_in);
        fc->res_bias = w->bo != e->zeros ? w->bo : NULL;
        emb_encoder_quantize_in_tasks(fc, fc->xn, fc->H, fc->H);
        emb_workers_run(pl->rows, pl->row_tasks, emb_encoder_step_pn_mlp_in, fc);
        emb_encoder_ffn_in(fc, w, fc->xn);
        emb_encoder_quantize_in_tasks(fc, fc->inter, fc->FFin, fc->FF);
        emb_workers_run(pl->rows, pl->ffn_tasks, emb_encoder_step_gelu, fc);
        emb_encoder_linear(fc, fc->inter, fc->FFin, w->w2, EMB_LIN_FFN_OUT, NULL, fc->X, fc->H, (int)fc->BT, fc->H,
                           fc->FF);
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
    const int H = c->dims.hidden, FF = c->dims.intermediate, NH = c->dims.heads, dh = c->head_dim;
    const int FFin = c->gated ? 2 * FF : FF, QW = NH * dh, KW = c->kv_heads * dh;
    const size_t BT = (size_t)B * T;
    int bcast = !e->L8 && !e->LB && emb_sgemm_bcast_supported(); /* float32 products on emb_sgemm_bcast */
    int want_workers =
        nthr > 1 && ((size_t)BT * H >= PAR_MIN_ELEMS || (double)B * NH * T * T * dh >= PAR_MIN_ATT_MNK ||
                     (double)BT * H * H >= EMB_SGEMM_BCAST_PAR_MACS);
    emb_workspace_use_workers(ws, nthr, want_workers);
    int n_workers = emb_workers_helpers(ws->workers) + 1;
    size_t need = BT * (size_t)(QW + 2 * KW > FFin ? QW + 2 * KW : FFin); /* q, k, v; later the FFN's inner rows */
    int widest_k = H > FF ? H : FF; /* the products' inputs: the scratch of emb_sgemm_bcast */
    if (QW > widest_k) widest_k = QW;
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
        (bcast &&
         emb_workspace_grow(&ws->packs, &ws->packs_n, (size_t)n_workers * emb_sgemm_bcast_scratch(widest_k))) ||
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
    fc.QW = QW;
    fc.KW = KW;
    fc.q = ws->arena; /* floats of q and of k: panels, or rows QW and KW wide */
    fc.k = fc.q + (qk_panels ? qk_floats : BT * QW);
    fc.v = fc.k + (qk_panels ? qk_floats : BT * KW);
    fc.inter = ws->arena;
    fc.xn = ws->xn;
    fc.eps = c->ln_eps;
    fc.att = (emb_attention_job){.NH = NH,
                                 .T = T,
                                 .H = QW,
                                 .dh = dh,
                                 .kv_ld = KW,
                                 .kv_group = NH / c->kv_heads,
                                 .causal = c->causal,
                                 .softcap = c->attn_softcap,
                                 .lens = lens,
                                 .q = fc.q,
                                 .k = fc.k,
                                 .v = fc.v,
                                 .qk_panels = qk_panels,
                                 .ctx = qk_panels ? fc.v + BT * H : NULL,
                                 .scores = ws->scores,
                                 .scale = c->attn_scale,
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
    emb_fwd_plan pl = {(size_t)BT * H >= PAR_MIN_ELEMS ? ws->workers : NULL,
                       (double)B * NH * T * T * dh >= PAR_MIN_ATT_MNK ? ws->workers : NULL, row_tasks, ffn_tasks};
    fc.next = n_layers > 0 && !c->pre_norm ? &e->L[0] : NULL;
    fc.bias_in_gemm = e->L8 || e->LB || bcast;
    fc.packs = bcast ? ws->packs : NULL;
    fc.stream_panels = stream_panels ? ws->panels : NULL;
    fc.qkv_panels = panels_ok && !stream_panels ? ws->panels : NULL;
    /* without AVX-512, a short batch's products stay on one of OpenBLAS's threads */
    fc.tile_products = !bcast && BT <= EMB_ENCODER_TILE_MAX_ROWS && nthr > 1;
    fc.act = &ws->act;
    fc.bact = &ws->bact;
    emb_encoder_quantize_in_tasks(&fc, fc.next ? fc.X : NULL, H, H);
    emb_workers_run(pl.rows, row_tasks, emb_encoder_step_embed, &fc);
    fc.gemm_workers = ws->workers;
    if (c->decoder) emb_encoder_layers_decoder(&fc, ws, &pl, n_layers);
    else if (c->pre_norm) layers_pre_norm(&fc, ws, &pl, n_layers);
    else if (fc.stream_panels) layers_post_norm_panels(&fc, ws, &pl, n_layers);
    else layers_post_norm(&fc, ws, &pl, n_layers);
    if (fc.failed) return emb_fail(err, "out of memory for a batch of %d x %d tokens", B, T);
    return 0;
}
