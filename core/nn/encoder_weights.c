/* The encoder's choice of weights for its linear layers: float32 as loaded, or int8 or bf16
 * packed once here (int8_gemm.h, bf16_gemm.h). Packing reads the float32 tensors; the forward
 * pass then reads only the packed copies of these layers (the float32 ones stay mapped but
 * untouched, and their pages are handed back after each layer is packed). A GGUF file's Q8_0
 * tensors (encoder_q8.c) are packed from their blocks as int8 block weights (q8_0), or widened
 * here for the other kinds. */
#include "nn/encoder_internal.h"
#include "math/sgemm_bcast.h"
#include <stdlib.h>
#include <string.h>

/* The pages of n floats at p, read by the packing, dropped if they lie in a mapped weight file
 * (emb_safetensors_release). Qwen3-0.6B with int8 weights: resident 2.7 GB after loading
 * without this (bench/README.md). */
static void release_mapped(const emb_encoder *e, const float *p, size_t n) {
    for (int i = 0; p && i < e->nfiles; i++)
        if (emb_safetensors_release(e->files[i], p, n * sizeof(float))) return;
}
static void release_layer(const emb_encoder *e, int l) {
    const emb_layer_weights *w = &e->L[l];
    const size_t H = (size_t)e->cfg.dims.hidden, I = (size_t)e->cfg.dims.intermediate,
                 QW = (size_t)emb_encoder_config_q_width(&e->cfg),
                 KW = (size_t)emb_encoder_config_kv_width(&e->cfg);
    release_mapped(e, w->wq, QW * H), release_mapped(e, w->wk, KW * H), release_mapped(e, w->wv, KW * H);
    release_mapped(e, w->wo, H * QW), release_mapped(e, w->w2, H * I);
    release_mapped(e, w->w1, I * H * (e->cfg.gated && w->w1b == w->w1 + I * H ? 2 : 1));
    if (e->cfg.gated && w->w1b != w->w1 + I * H) release_mapped(e, w->w1b, I * H);
}

static const char *const weight_names[] = {"f32", "int8", "bf16", "q8_0"};

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

/* The packed kinds behind one handle: int8 (per channel, or q8_0's blocks) and bf16. */
static int is_int8(emb_weights kind) { return kind == EMB_WEIGHTS_INT8 || kind == EMB_WEIGHTS_Q8_0; }
static void *new_w(emb_weights kind, int N, int K, char err[EMB_ERR_LEN]) {
    if (kind == EMB_WEIGHTS_Q8_0 && K % EMB_I8_BLOCK == 0) return emb_int8_gemm_weights_new_blocks(N, K, err);
    return is_int8(kind) ? (void *)emb_int8_gemm_weights_new(N, K, err) : (void *)emb_bf16w_new(N, K, err);
}
/* Rows n0.. of W: a deferred Q8_0 tensor's blocks into block weights, else the float32 rows. */
static int set_rows(const emb_encoder *e, emb_weights kind, void *w, int n0, int rows, const float *W, int ldw,
                    char err[EMB_ERR_LEN]) {
    const unsigned char *q8;
    if (kind == EMB_WEIGHTS_Q8_0 && emb_int8_gemm_weights_blocks(w) && emb_encoder_q8_find(e, W, rows, ldw, &q8))
        return emb_int8_gemm_weights_set_rows_q8_0(w, n0, rows, q8, err);
    return is_int8(kind) ? emb_int8_gemm_weights_set_rows(w, n0, rows, W, ldw, err)
                         : emb_bf16w_set_rows(w, n0, rows, W, ldw, err);
}
static void free_w(emb_weights kind, void *w) {
    if (is_int8(kind)) emb_int8_gemm_weights_free(w);
    else emb_bf16w_free(w);
}
static size_t bytes_w(emb_weights kind, const void *w) {
    return is_int8(kind) ? emb_int8_gemm_weights_bytes(w) : emb_bf16w_bytes(w);
}

/* A layer's six packed weights in the order of emb_layer_i8 / emb_layer_bf16. */
enum { N_LINEAR = 6 };
typedef struct {
    void *w[N_LINEAR];
} packed_layer;

static void free_layer(emb_weights kind, packed_layer *p) {
    for (int i = 0; i < N_LINEAR; i++) free_w(kind, p->w[i]);
}

/* W (N x K, row stride K) packed; with W2, W's N rows and then W2's N rows as one 2N x K weight
 * (a gated layer's two halves). NULL with err. */
static void *pack(const emb_encoder *e, emb_weights kind, const float *W, const float *W2, int N, int K,
                  char err[EMB_ERR_LEN]) {
    void *w = new_w(kind, W2 ? 2 * N : N, K, err);
    if (w && (set_rows(e, kind, w, 0, N, W, K, err) || (W2 && set_rows(e, kind, w, N, N, W2, K, err)))) {
        free_w(kind, w);
        w = NULL;
    }
    return w;
}

/* Layer l's linear weights: W[i] of N[i] x K[i], W2 the gated layer's second half of ffn_in (or NULL). */
static void layer_linear(const emb_encoder *e, int l, const float *W[N_LINEAR], const float **W2, int N[N_LINEAR],
                         int K[N_LINEAR]) {
    const emb_layer_weights *w = &e->L[l];
    const int H = e->cfg.dims.hidden, I = e->cfg.dims.intermediate, QW = emb_encoder_config_q_width(&e->cfg),
              KW = emb_encoder_config_kv_width(&e->cfg);
    /* the feed-forward's first weight: [I, H], or a gated layer's halves (apart, or one fused
     * [2I, H] tensor) stacked as [2I, H] */
    const float *Ws[N_LINEAR] = {w->wq, w->wk, w->wv, w->wo, w->w1, w->w2};
    const int Ns[N_LINEAR] = {QW, KW, KW, H, I, H}, Ks[N_LINEAR] = {H, H, H, QW, H, I};
    memcpy(W, Ws, sizeof Ws), memcpy(N, Ns, sizeof Ns), memcpy(K, Ks, sizeof Ks);
    *W2 = e->cfg.gated ? w->w1b : NULL;
}

static int pack_layer(const emb_encoder *e, emb_weights kind, int l, packed_layer *out, char err[EMB_ERR_LEN]) {
    const float *W[N_LINEAR], *W2;
    int N[N_LINEAR], K[N_LINEAR];
    layer_linear(e, l, W, &W2, N, K);
    char why[EMB_ERR_LEN];
    memset(out, 0, sizeof *out);
    for (int i = 0; i < N_LINEAR; i++)
        if (!(out->w[i] = pack(e, kind, W[i], i == 4 ? W2 : NULL, N[i], K[i], why))) {
            free_layer(kind, out);
            return emb_fail(err, "%s weights of layer %d: %s", emb_weights_name(kind), l + 1, why);
        }
    return 0;
}

static void free_f32p(emb_encoder *e) {
    for (int l = 0; e->LF && l < e->cfg.dims.layers; l++) {
        emb_layer_f32p *p = &e->LF[l];
        free(p->q), free(p->k), free(p->v), free(p->o), free(p->ffn_in), free(p->ffn_out);
    }
    free(e->LF);
    e->LF = NULL;
}

/* W (N x K), with W2's N rows after W's when given (N a multiple of 12, so that W2 starts a
 * tile), packed for emb_sgemm_bcast; NULL when out of memory. */
static float *pack_f32(const float *W, const float *W2, int N, int K) {
    size_t half = emb_sgemm_bcast_weight_floats(N, K);
    float *P = emb_alloc_large((W2 ? 2 : 1) * half * sizeof(float));
    if (!P) return NULL;
    emb_sgemm_bcast_pack_weight(N, K, W, K, P);
    if (W2) emb_sgemm_bcast_pack_weight(N, K, W2, K, P + half);
    return P;
}

int emb_encoder_pack_f32(emb_encoder *e) {
    const int L = e->cfg.dims.layers, H = e->cfg.dims.hidden, I = e->cfg.dims.intermediate,
              QW = emb_encoder_config_q_width(&e->cfg), KW = emb_encoder_config_kv_width(&e->cfg);
    if (!emb_sgemm_bcast_supported() || (e->cfg.gated && I % 12) || L < 1) return 0;
    e->LF = calloc((size_t)L, sizeof *e->LF);
    int ok = e->LF != NULL;
    for (int l = 0; ok && l < L; l++) {
        const emb_layer_weights *w = &e->L[l];
        emb_layer_f32p *p = &e->LF[l];
        p->q = pack_f32(w->wq, NULL, QW, H), p->k = pack_f32(w->wk, NULL, KW, H),
        p->v = pack_f32(w->wv, NULL, KW, H);
        p->o = pack_f32(w->wo, NULL, H, QW), p->ffn_out = pack_f32(w->w2, NULL, H, I);
        p->ffn_in = pack_f32(w->w1, e->cfg.gated ? w->w1b : NULL, I, H);
        ok = p->q && p->k && p->v && p->o && p->ffn_in && p->ffn_out;
        if (ok) release_layer(e, l);
    }
    if (!ok) free_f32p(e);
    return ok ? 0 : -1;
}

void emb_encoder_free_weights(emb_encoder *e) {
    free_f32p(e);
    for (int l = 0; e->L8 && l < e->cfg.dims.layers; l++) {
        packed_layer p = {{e->L8[l].q, e->L8[l].k, e->L8[l].v, e->L8[l].o, e->L8[l].ffn_in, e->L8[l].ffn_out}};
        free_layer(EMB_WEIGHTS_INT8, &p);
    }
    for (int l = 0; e->LB && l < e->cfg.dims.layers; l++) {
        packed_layer p = {{e->LB[l].q, e->LB[l].k, e->LB[l].v, e->LB[l].o, e->LB[l].ffn_in, e->LB[l].ffn_out}};
        free_layer(EMB_WEIGHTS_BF16, &p);
    }
    free(e->L8);
    free(e->LB);
    e->L8 = NULL;
    e->LB = NULL;
}

/* Every layer packed as kind into e (whose packed weights it replaces); -1 with err, e unchanged. */
static int pack_all(emb_encoder *e, emb_weights kind, char err[EMB_ERR_LEN]) {
    const int L = e->cfg.dims.layers;
    packed_layer *P = calloc((size_t)(L > 0 ? L : 1), sizeof *P);
    emb_layer_i8 *L8 = is_int8(kind) ? calloc((size_t)(L > 0 ? L : 1), sizeof *L8) : NULL;
    emb_layer_bf16 *LB = kind == EMB_WEIGHTS_BF16 ? calloc((size_t)(L > 0 ? L : 1), sizeof *LB) : NULL;
    int rc = !P || (!L8 && !LB) ? emb_fail(err, "out of memory") : 0;
    int done = 0;
    for (; rc == 0 && done < L; done++)
        if ((rc = pack_layer(e, kind, done, &P[done], err)) == 0) release_layer(e, done);
    if (rc) {
        for (int l = 0; l < done - 1; l++) free_layer(kind, &P[l]);
        free(P), free(L8), free(LB);
        return -1;
    }
    size_t bytes = 0;
    for (int l = 0; l < L; l++) {
        void **w = P[l].w;
        for (int i = 0; i < N_LINEAR; i++) bytes += bytes_w(kind, w[i]);
        if (L8) L8[l] = (emb_layer_i8){w[0], w[1], w[2], w[3], w[4], w[5]};
        else LB[l] = (emb_layer_bf16){w[0], w[1], w[2], w[3], w[4], w[5]};
    }
    free(P);
    emb_encoder_free_weights(e);
    e->L8 = L8;
    e->LB = LB;
    e->info.packed_bytes = bytes;
    return 0;
}

/* Counts the linear weights' parts that are rows of deferred Q8_0 tensors (*q8) and all parts
 * (*all); with mark, records the rows as packed (their tensors then need no widening). */
static void q8_linear(const emb_encoder *e, int mark, int *q8, int *all) {
    *q8 = *all = 0;
    for (int l = 0; l < e->cfg.dims.layers; l++) {
        const float *W[N_LINEAR], *W2;
        int N[N_LINEAR], K[N_LINEAR];
        layer_linear(e, l, W, &W2, N, K);
        for (int i = 0; i <= N_LINEAR; i++) {
            const float *p = i < N_LINEAR ? W[i] : W2;
            int n = i < N_LINEAR ? N[i] : N[4], k = i < N_LINEAR ? K[i] : K[4];
            const unsigned char *rows;
            if (!p) continue;
            emb_q8_tensor *t = emb_encoder_q8_find(e, p, n, k, &rows);
            ++*all;
            *q8 += t != NULL;
            if (t && mark) t->rows_packed += n;
        }
    }
}

int emb_encoder_set_weights(emb_encoder *e, emb_weights w, char err[EMB_ERR_LEN]) {
    int q8 = 0, all = 0;
    q8_linear(e, 0, &q8, &all);
    if (w == EMB_WEIGHTS_DEFAULT) w = q8 > 0 && q8 == all ? EMB_WEIGHTS_Q8_0 : EMB_WEIGHTS_F32;
    if (!emb_weights_name(w)) return emb_fail(err, "unknown weight type %d", (int)w);
    if (w == e->weights && !e->f32_pending) return 0;
    if (e->weights == EMB_WEIGHTS_Q8_0 && !e->f32_pending)
        return emb_fail(err, "q8_0 weights: the float32 values were never made; load the model again for %s",
                        emb_weights_name(w));
    if (w == EMB_WEIGHTS_Q8_0 && q8 == 0)
        return emb_fail(err, "q8_0 weights: the linear layers hold no Q8_0 tensor (a GGUF file's, rows of whole "
                             "blocks): use \"int8\" or \"f32\"");
    /* every other kind reads float32: the Q8_0 tensors widened first */
    if (w != EMB_WEIGHTS_Q8_0 && emb_encoder_q8_finish(e)) return emb_fail(err, "out of memory");
    const emb_model_dims *d = &e->cfg.dims;
    if (is_int8(w) && (d->hidden > EMB_I8_MAX_K || d->intermediate > EMB_I8_MAX_K))
        return emb_fail(err, "int8 weights: layers wider than %d inputs are not supported", EMB_I8_MAX_K);
    if (w == EMB_WEIGHTS_BF16 && !emb_bf16_fast())
        return emb_fail(err, "bf16 weights need AVX2 with FMA or AVX512_BF16, and the kernels in use have "
                             "neither (the CPU, or EMBED_SIMD=generic): use \"int8\" or \"f32\"");
    if (w == EMB_WEIGHTS_F32) { /* packed before the others are freed: a failure keeps them */
        /* out of memory is an error, not the mapped weights: their kernels round otherwise */
        if (emb_encoder_pack_f32(e)) return emb_fail(err, "out of memory");
        emb_layer_f32p *lf = e->LF;
        e->LF = NULL;
        emb_encoder_free_weights(e);
        e->LF = lf;
        e->info.packed_bytes = 0;
    } else if (pack_all(e, w, err)) {
        return -1;
    }
    if (w == EMB_WEIGHTS_Q8_0) { /* the tensors no packing took (an embedding table) widened */
        q8_linear(e, 1, &q8, &all);
        if (emb_encoder_q8_finish(e)) return emb_fail(err, "out of memory");
    }
    size_t linear = (size_t)d->layers * emb_encoder_config_linear_weights(&e->cfg) * sizeof(float);
    e->info.used_bytes = e->info.weight_bytes - (w == EMB_WEIGHTS_F32 ? 0 : linear) + e->info.packed_bytes;
    e->weights = w;
    e->f32_pending = 0;
    /* a model that multiplies with other weights gives other vectors: its own fingerprint
     * (float32's stays the one applications stored) */
    uint64_t parts[3] = {e->fingerprint_f32, (uint64_t)w, 0x706b6431u /* packing format 1 */};
    e->fingerprint = w == EMB_WEIGHTS_F32 ? e->fingerprint_f32 : XXH3_64bits(parts, sizeof parts);
    return 0;
}
