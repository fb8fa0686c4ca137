/* The encoder's choice of weights for its linear layers: float32 as loaded, or int8 packed once
 * here (int8_gemm.h). Packing reads the float32 tensors; the forward pass then reads only the
 * packed copies of these layers (the float32 ones stay mapped but untouched). */
#include "encoder_internal.h"
#include <stdlib.h>
#include <string.h>

static const char *const weight_names[] = {"f32", "int8"};

const char *emb_weights_name(emb_weights w) {
    return (unsigned)w < sizeof weight_names / sizeof *weight_names ? weight_names[w] : NULL;
}

int emb_weights_parse(const char *name, emb_weights *out) {
    for (unsigned i = 0; i < sizeof weight_names / sizeof *weight_names; i++)
        if (strcmp(name, weight_names[i]) == 0) {
            *out = (emb_weights)i;
            return 0;
        }
    return -1;
}

emb_weights emb_encoder_weights(const emb_encoder *e) { return e->weights; }

static void free_layers_i8(emb_layer_i8 *L8, int n) {
    if (!L8) return;
    for (int l = 0; l < n; l++) {
        emb_i8w *all[] = {L8[l].q, L8[l].k, L8[l].v, L8[l].o, L8[l].ffn_in, L8[l].ffn_out};
        for (unsigned i = 0; i < sizeof all / sizeof *all; i++) emb_i8w_free(all[i]);
    }
    free(L8);
}

void emb_encoder_free_weights(emb_encoder *e) {
    free_layers_i8(e->L8, e->cfg.dims.layers);
    e->L8 = NULL;
}

/* The feed-forward's first weight: one [I, H] tensor, or a gated layer's two halves (apart, or
 * one fused [2I, H] tensor) stacked as [2I, H]. */
static emb_i8w *pack_ffn_in(const emb_encoder *e, const emb_layer_weights *w, char err[EMB_ERR_LEN]) {
    const int H = e->cfg.dims.hidden, I = e->cfg.dims.intermediate;
    if (!e->cfg.gated) return emb_i8w_pack(w->w1, I, H, H, err);
    emb_i8w *p = emb_i8w_new(2 * I, H, err);
    if (p && (emb_i8w_set_rows(p, 0, I, w->w1, H, err) || emb_i8w_set_rows(p, I, I, w->w1b, H, err))) {
        emb_i8w_free(p);
        p = NULL;
    }
    return p;
}

static int pack_layer(const emb_encoder *e, int l, emb_layer_i8 *out, char err[EMB_ERR_LEN]) {
    const emb_layer_weights *w = &e->L[l];
    const int H = e->cfg.dims.hidden, I = e->cfg.dims.intermediate;
    char why[EMB_ERR_LEN];
    if (!(out->q = emb_i8w_pack(w->wq, H, H, H, why)) || !(out->k = emb_i8w_pack(w->wk, H, H, H, why)) ||
        !(out->v = emb_i8w_pack(w->wv, H, H, H, why)) || !(out->o = emb_i8w_pack(w->wo, H, H, H, why)) ||
        !(out->ffn_in = pack_ffn_in(e, w, why)) || !(out->ffn_out = emb_i8w_pack(w->w2, H, I, I, why)))
        return emb_fail(err, "int8 weights of layer %d: %s", l + 1, why);
    return 0;
}

int emb_encoder_set_weights(emb_encoder *e, emb_weights w, char err[EMB_ERR_LEN]) {
    if (!emb_weights_name(w)) return emb_fail(err, "unknown weight type %d", (int)w);
    if (w == e->weights) return 0;
    const emb_model_dims *d = &e->cfg.dims;
    if (w == EMB_WEIGHTS_F32) {
        emb_encoder_free_weights(e);
    } else {
        if (d->hidden > EMB_I8_MAX_K || d->intermediate > EMB_I8_MAX_K)
            return emb_fail(err, "int8 weights: layers wider than %d inputs are not supported", EMB_I8_MAX_K);
        emb_layer_i8 *L8 = calloc((size_t)(d->layers > 0 ? d->layers : 1), sizeof *L8);
        if (!L8) return emb_fail(err, "out of memory");
        size_t bytes = 0;
        for (int l = 0; l < d->layers; l++) {
            if (pack_layer(e, l, &L8[l], err)) {
                free_layers_i8(L8, d->layers);
                return -1;
            }
            emb_i8w *all[] = {L8[l].q, L8[l].k, L8[l].v, L8[l].o, L8[l].ffn_in, L8[l].ffn_out};
            for (unsigned i = 0; i < sizeof all / sizeof *all; i++) bytes += emb_i8w_bytes(all[i]);
        }
        emb_encoder_free_weights(e);
        e->L8 = L8;
        e->info.packed_bytes = bytes;
    }
    if (w == EMB_WEIGHTS_F32) e->info.packed_bytes = 0;
    size_t linear = (size_t)d->layers * ((size_t)4 * d->hidden + (size_t)(e->cfg.gated ? 3 : 2) * d->intermediate) *
                    (size_t)d->hidden * sizeof(float);
    e->info.used_bytes = e->info.weight_bytes - (w == EMB_WEIGHTS_F32 ? 0 : linear) + e->info.packed_bytes;
    e->weights = w;
    /* a model that multiplies with other weights gives other vectors: its own fingerprint
     * (float32's stays the one applications stored) */
    uint64_t parts[3] = {e->fingerprint_f32, (uint64_t)w, 0x696e7438u /* "int8" format 1 */};
    e->fingerprint = w == EMB_WEIGHTS_F32 ? e->fingerprint_f32 : XXH3_64bits(parts, sizeof parts);
    return 0;
}
