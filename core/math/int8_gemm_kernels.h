/* The inner loops of core/int8_gemm: one block of output rows and 16-channel panels per call,
 * per kernel set. Internal to int8_gemm.c. */
#ifndef EMBED_INT8_GEMM_KERNELS_H
#define EMBED_INT8_GEMM_KERNELS_H
#include "math/int8_gemm.h"
#include <string.h>

typedef struct {
    const uint8_t *u; /* activation codes, rows of Kp */
    const float *sa;
    const int32_t *zp;
    const int8_t *wp; /* packed codes: panel p at wp + p * 16 * Kp */
    const float *sw; /* Np entries (zero past N) */
    const int32_t *colsum; /* Np entries */
    const float *bs; /* block weights (int8_gemm.h): panel p's block b's 16 scales at bs + (p * nb + b) * 16;
                      * NULL: per channel */
    const float *wcorr; /* block weights: Np entries */
    int nb;
    int Kp, N;
    const float *bias; /* NULL: none */
    int beta; /* 1: add onto C */
    float *C;
    int ldc;
    int32_t *P; /* not NULL: store the exact products here instead (row stride ldp) */
    int ldp;
} emb_int8_gemm_kernels_args;

/* Rows m0..m1-1, panels p0..p1-1 (columns 16 p0 .. min(16 p1, N) - 1). When the panels' codes
 * exceed EMB_I8K_L2_WEIGHTS bytes, rows go in chunks of emb_int8_gemm_kernels_row_chunk(Kp) (their codes stay in
 * L2) and each chunk sweeps the panels: the weights are read once per chunk. */
#define EMB_I8K_L2_WEIGHTS (512 * 1024)
int emb_int8_gemm_kernels_row_chunk(int Kp);
void emb_int8_gemm_kernels_run(emb_int8_gemm_path p, const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0,
                               int p1);
/* The same for block weights (int8_gemm_blocks.c); g->P must be NULL. */
void emb_int8_gemm_blocks_run(emb_int8_gemm_path p, const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0,
                              int p1);
/* The order of the tiles (int8_gemm_kernels.c): tile(g, m, p, mr, np) over rows m0..m1-1 in tiles of
 * 6 rows and panels p0..p1-1 in groups of `width`, in blocks of rows that stay in L2 when the
 * panels' codes do not. */
typedef void (*emb_int8_gemm_tile_fn)(const emb_int8_gemm_kernels_args *g, int m, int p, int mr, int np);
void emb_int8_gemm_kernels_blocked(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1, int width,
                                   emb_int8_gemm_tile_fn tile);

/* 4 bytes at p, as one int32 (no alignment needed). */
static inline int32_t emb_int8_gemm_kernels_load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The epilogue of one value (the reference every vector epilogue equals): P = acc - zp colsum
 * (wrapping: acc and zp colsum each fit int32, and so does their difference), stored in g->P, or
 * C = beta C + P sa sw + bias. */
static inline void emb_int8_gemm_kernels_epilogue1(const emb_int8_gemm_kernels_args *g, int m, int n,
                                                   int32_t acc) {
    int32_t P = (int32_t)((uint32_t)acc - (uint32_t)g->zp[m] * (uint32_t)g->colsum[n]);
    if (g->P) {
        g->P[(size_t)m * g->ldp + n] = P;
        return;
    }
    float s = g->sa[m] * g->sw[n];
    float t = (float)P * s;
    t = t + (g->bias ? g->bias[n] : 0.0f);
    float *c = g->C + (size_t)m * g->ldc + n;
    *c = g->beta ? *c + t : t;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* AVX2 without VNNI (int8_gemm_avx2.c): rows m0..m1-1, panels p0..p1-1, as
 * emb_int8_gemm_kernels_run; -1 (nothing done) when out of memory for the widened rows. */
int emb_int8_gemm_avx2_run(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1);
/* The AVX2 driver both weight layouts share: rows in chunks of about 256 KB of widened codes, each
 * panel widened once per chunk, row_tiles[r - 1] computing r (<= tile_rows) rows x one panel.
 * -1 when out of memory. */
typedef void (*emb_int8_gemm_avx2_tile)(const emb_int8_gemm_kernels_args *g, const int16_t *a, const int16_t *w,
                                        int m, int p);
int emb_int8_gemm_avx2_chunks(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1, int tile_rows,
                              const emb_int8_gemm_avx2_tile *row_tiles);
/* AVX-VNNI (int8_gemm_avx2.c): one tile of mr (<= 6) rows x panel p (np is 1). */
void emb_int8_gemm_avxvnni_tile(const emb_int8_gemm_kernels_args *g, int m, int p, int mr, int np);
/* AVX2 (int8_gemm_avx2.c): n activation codes (a multiple of 4) widened to int16; n packed weight
 * codes (a multiple of 64, 16-byte aligned) sign-extended to int16 (out 32-byte aligned). */
void emb_int8_gemm_avx2_widen_u8(const uint8_t *u, int n, int16_t *out);
void emb_int8_gemm_avx2_widen_s8(const int8_t *q, size_t n, int16_t *out);
#endif

/* One row's codes: u[k] for k < K from x, zeros up to Kp; *sa, *zp as int8_gemm.h says. The
 * same on every set (AVX-512 and AVX2 loops, the C loop). */
void emb_int8_gemm_kernels_quantize_row(emb_int8_gemm_path p, const float *x, int K, int Kp, uint8_t *u, float *sa,
                                        int32_t *zp);

#endif
