/* The inner loops of core/math/bf16_gemm.c that widen bfloat16 to float32 (bf16_gemm_wide.c).
 * Internal to bf16_gemm.c. */
#ifndef EMBED_BF16_GEMM_KERNELS_H
#define EMBED_BF16_GEMM_KERNELS_H
#include "math/bf16_gemm.h"

typedef struct {
    const uint32_t *a, *b; /* activation pairs (rows of kp2), packed panels (16 * kp2 each) */
    int kp2, N;
    const float *bias;
    int beta;
    float *C;
    int ldc;
} emb_bf16_args;

/* Sums s of row m, columns n0.. (up to 16) into C: C = (beta ? C : 0) + (s + bias). */
static inline void emb_bf16_epilogue(const emb_bf16_args *g, int m, int n0, const float *s) {
    int nn = g->N - n0 < 16 ? g->N - n0 : 16;
    float *c = g->C + (size_t)m * (size_t)g->ldc + n0;
    for (int i = 0; i < nn; i++) {
        float v = g->bias ? s[i] + g->bias[n0 + i] : s[i];
        c[i] = g->beta ? c[i] + v : v;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Rows m0..m1-1, panels p0..p1-1 with each weight pair widened to float32 in registers and
 * vdpbf16ps's sums as fused multiply-adds (the k + 1 term, then the k term), MXCSR's FTZ set
 * around them: avx512 0 with AVX2 and FMA (tiles of 6 rows x 16 channels), 1 with AVX-512F (6 rows
 * x 64 channels). -1 (nothing done) when out of memory for the widened rows. */
int emb_bf16_wide_run(int avx512, const emb_bf16_args *g, int m0, int m1, int p0, int p1);
#endif

#endif
