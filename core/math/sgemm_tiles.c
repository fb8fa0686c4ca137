/* See sgemm_tiles.h. A block's rows are copied transposed, 16 per k (zeros past mr); each weight
 * element is then broadcast against them: 12 accumulators of 8 rows on AVX2 (of its 16 registers,
 * the rest hold two vectors of A and the broadcast), an array of 16 x 6 sums in plain C. */
#include "math/sgemm_tiles.h"
#include "base/simd.h"
#include "math/sgemm_bcast.h"
#include <stddef.h>

#define TILE_ROWS 16
#define TILE_COLS 6

/* P[k * 16 + i] = A[i][k] for i < mr (mr <= 16), zeros for the rows past it. */
static void pack_rows16(int mr, int K, const float *A, int lda, float *P) {
    for (int k = 0; k < K; k++)
        for (int i = 0; i < TILE_ROWS; i++) P[(size_t)k * TILE_ROWS + i] = i < mr ? A[(size_t)i * lda + k] : 0.0f;
}

/* Where the weight element of column j (< 6) at k lies: packed tiles hold 12 columns, each pair
 * of k's 24 values together (column c's two at 2c, 2c + 1); half h is columns 6h..6h+5. */
typedef struct {
    const float *w[TILE_COLS]; /* as stored: the 6 rows (a short tile repeats its last) */
    const float *packed; /* packed: the tile's first pair, offset to the half */
} wsrc;

static wsrc weight_src(const float *W, int ldw, int n0, int nr, int K) {
    wsrc s = {{0}, 0};
    if (ldw == EMB_SGEMM_BCAST_PACKED) {
        s.packed = W + (size_t)(n0 / 12) * ((K + 1) / 2) * 24 + (n0 % 12 ? 12 : 0);
    } else {
        for (int j = 0; j < TILE_COLS; j++) s.w[j] = W + (size_t)(n0 + (j < nr ? j : nr - 1)) * ldw;
    }
    return s;
}

static inline float w_at(const wsrc *s, int j, int k) {
    return s->packed ? s->packed[(size_t)(k / 2) * 24 + 2 * j + k % 2] : s->w[j][k];
}

/* The tile's sums S[j][i] (column j, row i) written to C: bias + sum, or C + sum. */
static void store_tile(const float S[TILE_COLS][TILE_ROWS], int mr, int nr, const float *bias, float *C, int ldc) {
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float *c = C + (size_t)i * ldc + j;
            *c = bias ? S[j][i] + bias[j] : *c + S[j][i];
        }
}

/* Plain C: each sum a product then an add, in k order. */
static void tile_generic(int mr, int nr, int K, const float *P, const wsrc *s, const float *bias, float *C,
                         int ldc) {
    float S[TILE_COLS][TILE_ROWS] = {{0}};
    for (int k = 0; k < K; k++) {
        const float *a = P + (size_t)k * TILE_ROWS;
        for (int j = 0; j < TILE_COLS; j++) {
            float w = w_at(s, j, k);
#pragma omp simd
            for (int i = 0; i < TILE_ROWS; i++) S[j][i] += a[i] * w;
        }
    }
    store_tile(S, mr, nr, bias, C, ldc);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T_AVX2 __attribute__((target("avx2,fma")))

/* AVX2: the same sums as fused multiply-adds, the order of AVX-512's 32-row tile. */
T_AVX2 static void tile_avx2(int mr, int nr, int K, const float *P, const wsrc *s, const float *bias, float *C,
                             int ldc) {
    __m256 lo[TILE_COLS], hi[TILE_COLS];
#pragma GCC unroll 6
    for (int j = 0; j < TILE_COLS; j++) lo[j] = hi[j] = _mm256_setzero_ps();
    if (s->packed) {
        int k = 0;
        for (; k + 2 <= K; k += 2) {
            const float *w = s->packed + (size_t)(k / 2) * 24;
            __m256 a0 = _mm256_load_ps(P + (size_t)k * 16), a1 = _mm256_load_ps(P + (size_t)k * 16 + 8);
#pragma GCC unroll 6
            for (int j = 0; j < TILE_COLS; j++) {
                __m256 b = _mm256_broadcast_ss(w + 2 * j);
                lo[j] = _mm256_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm256_fmadd_ps(a1, b, hi[j]);
            }
            a0 = _mm256_load_ps(P + (size_t)k * 16 + 16), a1 = _mm256_load_ps(P + (size_t)k * 16 + 24);
#pragma GCC unroll 6
            for (int j = 0; j < TILE_COLS; j++) {
                __m256 b = _mm256_broadcast_ss(w + 2 * j + 1);
                lo[j] = _mm256_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm256_fmadd_ps(a1, b, hi[j]);
            }
        }
        if (k < K) {
            const float *w = s->packed + (size_t)(k / 2) * 24;
            __m256 a0 = _mm256_load_ps(P + (size_t)k * 16), a1 = _mm256_load_ps(P + (size_t)k * 16 + 8);
#pragma GCC unroll 6
            for (int j = 0; j < TILE_COLS; j++) {
                __m256 b = _mm256_broadcast_ss(w + 2 * j);
                lo[j] = _mm256_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm256_fmadd_ps(a1, b, hi[j]);
            }
        }
    } else {
        for (int k = 0; k < K; k++) {
            __m256 a0 = _mm256_load_ps(P + (size_t)k * 16), a1 = _mm256_load_ps(P + (size_t)k * 16 + 8);
#pragma GCC unroll 6
            for (int j = 0; j < TILE_COLS; j++) {
                __m256 b = _mm256_broadcast_ss(s->w[j] + k);
                lo[j] = _mm256_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm256_fmadd_ps(a1, b, hi[j]);
            }
        }
    }
    float S[TILE_COLS][TILE_ROWS] __attribute__((aligned(32)));
    for (int j = 0; j < TILE_COLS; j++) {
        _mm256_store_ps(S[j], lo[j]);
        _mm256_store_ps(S[j] + 8, hi[j]);
    }
    store_tile((const float(*)[TILE_ROWS])S, mr, nr, bias, C, ldc);
}
#define HAVE_TILE_AVX2 1
#endif

void emb_sgemm_tiles(int mr, int N, int K, const float *A, int lda, const float *W, int ldw, const float *bias,
                     float *C, int ldc, float *P) {
#ifdef HAVE_TILE_AVX2
    int avx2 = emb_simd() >= EMB_SIMD_AVX2;
#endif
    for (int m0 = 0; m0 < mr; m0 += TILE_ROWS) {
        int rows = mr - m0 < TILE_ROWS ? mr - m0 : TILE_ROWS;
        pack_rows16(rows, K, A + (size_t)m0 * lda, lda, P);
        for (int n0 = 0; n0 < N; n0 += TILE_COLS) {
            int nr = N - n0 < TILE_COLS ? N - n0 : TILE_COLS;
            wsrc s = weight_src(W, ldw, n0, nr, K);
            float *c = C + (size_t)m0 * ldc + n0;
            const float *b = bias ? bias + n0 : NULL;
#ifdef HAVE_TILE_AVX2
            if (avx2) {
                tile_avx2(rows, nr, K, P, &s, b, c, ldc);
                continue;
            }
#endif
            tile_generic(rows, nr, K, P, &s, b, c, ldc);
        }
    }
}
