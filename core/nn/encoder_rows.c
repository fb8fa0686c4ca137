/* The forward pass's element-wise row kernels, built as target clones (encoder_kernels.h): the
 * embeddings' sum and LayerNorm, bias fills, bias + LayerNorm, the gated activations. */
#include "nn/encoder_internal.h"
#include "math/half.h"
#include "math/encoder_kernels.h"
#include "nn/relpos.h"
#include <math.h>
#include <string.h>

EMB_KERNELS_BEGIN

/* x[i] = LayerNorm(x[i]) in place, statistics in double */
static inline void ln_inplace(float *x, const float *g, const float *b, int H, float eps) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < H; i++) s += x[i];
    double mean = s / H, v = 0;
#pragma omp simd reduction(+ : v)
    for (int i = 0; i < H; i++) {
        double d = x[i] - mean;
        v += d * d;
    }
    double rstd = 1.0 / sqrt(v / H + (double)eps);
    float m = (float)mean;
    float rs = (float)rstd;
    /* (x - mean) is exact enough in float: x and mean are of similar magnitude */
#pragma omp simd
    for (int i = 0; i < H; i++) x[i] = (float)((double)(x[i] - m) * rstd) * g[i] + b[i];
    (void)rs;
}

EMB_SIMD_DEFINE(void, emb_encoder_embed_ln_row,
                (float *dst, const float *w, const float *p, const float *ty, const float *g, const float *b,
                 int H, float eps),
                (dst, w, p, ty, g, b, H, eps)) {
    /* The test of ty stays outside the loops: inside, GCC reads ty with AVX2's masked loads (a null
     * ty masked off), which real CPUs allow and QEMU 7.2 (make check-haswell) faults on. */
    if (!p && ty) { /* positions applied in attention */
#pragma omp simd
        for (int i = 0; i < H; i++) dst[i] = w[i] + ty[i];
    } else if (!p) {
#pragma omp simd
        for (int i = 0; i < H; i++) dst[i] = w[i];
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
EMB_SIMD_DEFINE(void, emb_encoder_fill_bias, (float *C, const float *bias, size_t rows, int n),
                (C, bias, rows, n)) {
    for (size_t r = 0; r < rows; r++) {
        float *x = C + r * (size_t)n;
#pragma omp simd
        for (int i = 0; i < n; i++) x[i] = bias[i];
    }
}

/* x = LayerNorm(x + bias) row by row (x already holds residual + product) */
EMB_SIMD_DEFINE(void, emb_encoder_bias_ln,
                (float *X, const float *bias, const float *g, const float *b, size_t rows, int H, float eps),
                (X, bias, g, b, rows, H, eps)) {
    for (size_t r = 0; r < rows; r++) {
        float *x = X + r * H;
#pragma omp simd
        for (int i = 0; i < H; i++) x[i] += bias[i];
        ln_inplace(x, g, b, H, eps);
    }
}

/* Gated feed-forward: each row holds [a | b] (2n wide); its first n become act(a) * b (GELU as
 * emb_gelu_quick where `quick`). */
EMB_SIMD_DEFINE(void, emb_encoder_glu_rows, (float *Y, size_t rows, int n, emb_activation act, int quick),
                (Y, rows, n, act, quick)) {
    for (size_t r = 0; r < rows; r++) {
        float *y = Y + r * 2 * (size_t)n;
        if (act == EMB_ACT_GELU && quick) {
#pragma omp simd
            for (int i = 0; i < n; i++) y[i] = emb_gelu_quick_of(y[i]) * y[n + i];
        } else if (act == EMB_ACT_GELU) {
#pragma omp simd
            for (int i = 0; i < n; i++) y[i] = emb_gelu_of(y[i]) * y[n + i];
        } else if (act == EMB_ACT_GELU_TANH) {
#pragma omp simd
            for (int i = 0; i < n; i++) y[i] = emb_gelu_tanh_of(y[i]) * y[n + i];
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
EMB_SIMD_DEFINE(void, emb_encoder_bias_norm_to,
                (float *X, float *dst, const float *bias, const float *g, const float *b, size_t rows, int H,
                 float eps),
                (X, dst, bias, g, b, rows, H, eps)) {
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

/* dst = RMSNorm(x) * g, the mean square in double (the references' float64 forward); in place
 * when dst == x. */
static inline void rms_norm(const float *x, float *dst, const float *g, int n, float eps) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    double rstd = 1.0 / sqrt(s / n + (double)eps);
#pragma omp simd
    for (int i = 0; i < n; i++) dst[i] = (float)(x[i] * rstd) * g[i];
}

/* A decoder's token row times its scale (Gemma's sqrt(hidden); 1: a copy). */
EMB_SIMD_DEFINE(void, emb_encoder_scale_row, (float *dst, const float *w, float scale, int H),
                (dst, w, scale, H)) {
    if (scale == 1.0f) {
        if (dst != w) memcpy(dst, w, (size_t)H * sizeof(float)); /* w may be dst: a widened F16 row */
        return;
    }
#pragma omp simd
    for (int i = 0; i < H; i++) dst[i] = w[i] * scale;
}

EMB_SIMD_DEFINE(void, emb_encoder_rms_to, (const float *x, float *dst, const float *g, int H, float eps),
                (x, dst, g, H, eps)) {
    rms_norm(x, dst, g, H, eps);
}

/* q_norm / k_norm over each of n heads, then the rotation of the head by its position's row. */
EMB_SIMD_DEFINE(void, emb_encoder_heads_norm_rope,
                (float *x, int n, int dh, const float *g, const float *rope, int rot, float eps),
                (x, n, dh, g, rope, rot, eps)) {
    for (int h = 0; h < n; h++) {
        float *xh = x + (size_t)h * dh;
        if (g) rms_norm(xh, xh, g, dh, eps);
        if (rope) emb_relpos_rope_rotate(xh, rope, rot);
    }
}

EMB_KERNELS_END

/* Here, below the steps that read rows, so that encoder.c and encoder_steps.c both call down. */
const float *emb_encoder_word_row(const emb_encoder *e, int32_t id, float *buf) {
    if (id < 0 || id >= e->cfg.dims.vocab_size) return NULL;
    size_t H = (size_t)e->cfg.dims.hidden;
    if (e->word) return e->word + (size_t)id * H;
    const unsigned char *row = (const unsigned char *)e->word_half + (size_t)id * H * 2;
    if (e->word_half_bf16) emb_bf16_to_f32_n(row, buf, H);
    else emb_f16_to_f32_n(row, buf, H);
    return buf;
}
