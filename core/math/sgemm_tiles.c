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
    for (int i = 0; i < TILE_ROWS; i++)
        if (i < mr)
            for (int k = 0; k < K; k++) P[(size_t)k * TILE_ROWS + i] = A[(size_t)i * lda + k];
        else
            for (int k = 0; k < K; k++) P[(size_t)k * TILE_ROWS + i] = 0.0f;
}

/* Where the weight element of column j (< 6) at k lies: packed tiles hold 12 columns as two
 * halves of 6 (sgemm_bcast.h), each pair of k's 12 values together (column c's two at 2c, 2c + 1). */
typedef struct {
    const float *w[TILE_COLS]; /* as stored: the 6 rows (a short tile repeats its last) */
    const float *packed; /* packed: the tile's first pair, offset to the half */
} wsrc;

static wsrc weight_src(const float *W, int ldw, int n0, int nr, int K) {
    wsrc s = {{0}, 0};
    if (ldw == EMB_SGEMM_BCAST_PACKED) {
        s.packed = W + (size_t)(n0 / 12) * ((K + 1) / 2) * 24 + (n0 % 12 ? (size_t)(K + 1) / 2 * 12 : 0);
    } else {
        for (int j = 0; j < TILE_COLS; j++) s.w[j] = W + (size_t)(n0 + (j < nr ? j : nr - 1)) * ldw;
    }
    return s;
}

static inline float w_at(const wsrc *s, int j, int k) {
    return s->packed ? s->packed[(size_t)(k / 2) * 12 + 2 * j + k % 2] : s->w[j][k];
}

/* The tile's sums S[j][i] (column j, row i) written to C: bias + sum, or C + sum. */
static void store_tile(const float S[TILE_COLS][TILE_ROWS], int mr, int nr, const float *bias, float *C, int ldc) {
    if (bias)
        for (int i = 0; i < mr; i++)
            for (int j = 0; j < nr; j++) C[(size_t)i * ldc + j] = S[j][i] + bias[j];
    else
        for (int i = 0; i < mr; i++)
            for (int j = 0; j < nr; j++) C[(size_t)i * ldc + j] += S[j][i];
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

/* pack_rows16 by 8 x 8 transposes: the copy costs a tenth of a 16-row product's time at MiniLM's
 * widths when done element by element. */
T_AVX2 static inline __attribute__((always_inline)) void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}
T_AVX2 static void pack_rows16_avx2(int mr, int K, const float *A, int lda, float *P) {
    int k0 = 0;
    for (; k0 + 8 <= K; k0 += 8)
        for (int g = 0; g < TILE_ROWS; g += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = g + i < mr ? _mm256_loadu_ps(A + (size_t)(g + i) * lda + k0) : _mm256_setzero_ps();
            transpose8(r);
            for (int j = 0; j < 8; j++) _mm256_store_ps(P + (size_t)(k0 + j) * TILE_ROWS + g, r[j]);
        }
    for (int k = k0; k < K; k++)
        for (int i = 0; i < TILE_ROWS; i++) P[(size_t)k * TILE_ROWS + i] = i < mr ? A[(size_t)i * lda + k] : 0.0f;
}

/* Columns r[0..nr-1] (8 rows each) written as rows 0..rows-1 of C: bias + sum, or C + sum. A
 * whole tile's 6 columns as 4 + 2 floats (AMD microcodes masked stores); fewer one by one. */
T_AVX2 static void store_rows_avx2(__m256 r[8], int rows, int nr, const float *bias, float *C, int ldc) {
    transpose8(r);
    if (nr < TILE_COLS) {
        float S[8][8];
        for (int i = 0; i < rows; i++) _mm256_storeu_ps(S[i], r[i]);
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < nr; j++) {
                float *c = C + (size_t)i * ldc + j;
                *c = bias ? S[i][j] + bias[j] : S[i][j] + *c;
            }
        return;
    }
    __m128 b4 = bias ? _mm_loadu_ps(bias) : _mm_setzero_ps();
    __m128 b2 = bias ? _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(bias + 4))) : _mm_setzero_ps();
    for (int i = 0; i < rows; i++) {
        float *c = C + (size_t)i * ldc;
        __m128 lo = _mm256_castps256_ps128(r[i]), hi = _mm256_extractf128_ps(r[i], 1);
        __m128 c4 = bias ? b4 : _mm_loadu_ps(c),
               c2 = bias ? b2 : _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(c + 4)));
        _mm_storeu_ps(c, _mm_add_ps(lo, c4));
        _mm_storel_epi64((__m128i *)(c + 4), _mm_castps_si128(_mm_add_ps(hi, c2)));
    }
}

/* AVX2: the same sums as fused multiply-adds, the order of AVX-512's 32-row tile. The 12
 * accumulators are named registers (arrays indexed in loops went to the stack). */
#define W_AHEAD (32 * 12)
#define T6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ACC_ZERO(j) __m256 lo##j = _mm256_setzero_ps(), hi##j = _mm256_setzero_ps();
#define ACC_FMA(j)                                                                                                \
    {                                                                                                             \
        __m256 b = _mm256_broadcast_ss(wk##j);                                                                    \
        lo##j = _mm256_fmadd_ps(a0, b, lo##j);                                                                    \
        hi##j = _mm256_fmadd_ps(a1, b, hi##j);                                                                    \
    }
/* one k: A's 16 values at a, the 6 weights at wk0..wk5 */
#define STEP(a)                                                                                                   \
    {                                                                                                             \
        __m256 a0 = _mm256_load_ps(a), a1 = _mm256_load_ps((a) + 8);                                              \
        T6(ACC_FMA)                                                                                               \
    }

T_AVX2 static void tile_avx2(int mr, int nr, int K, const float *P, const wsrc *s, const float *bias, float *C,
                             int ldc) {
    T6(ACC_ZERO)
    if (s->packed) {
        const float *w = s->packed;
        int k = 0;
        for (; k + 2 <= K; k += 2, w += 12) {
            __builtin_prefetch(w + W_AHEAD, 0, 3); /* the stream's lines asked for early (48 bytes a step) */
            const float *wk0 = w, *wk1 = w + 2, *wk2 = w + 4, *wk3 = w + 6, *wk4 = w + 8, *wk5 = w + 10;
            STEP(P + (size_t)k * 16)
            wk0++, wk1++, wk2++, wk3++, wk4++, wk5++;
            STEP(P + (size_t)k * 16 + 16)
        }
        if (k < K) {
            const float *wk0 = w, *wk1 = w + 2, *wk2 = w + 4, *wk3 = w + 6, *wk4 = w + 8, *wk5 = w + 10;
            STEP(P + (size_t)k * 16)
        }
    } else {
        const float *r0 = s->w[0], *r1 = s->w[1], *r2 = s->w[2], *r3 = s->w[3], *r4 = s->w[4], *r5 = s->w[5];
        for (int k = 0; k < K; k++) {
            const float *wk0 = r0 + k, *wk1 = r1 + k, *wk2 = r2 + k, *wk3 = r3 + k, *wk4 = r4 + k, *wk5 = r5 + k;
            STEP(P + (size_t)k * 16)
        }
    }
    __m256 r[8] = {lo0, lo1, lo2, lo3, lo4, lo5, _mm256_setzero_ps(), _mm256_setzero_ps()};
    store_rows_avx2(r, mr < 8 ? mr : 8, nr, bias, C, ldc);
    if (mr > 8) {
        __m256 h[8] = {hi0, hi1, hi2, hi3, hi4, hi5, _mm256_setzero_ps(), _mm256_setzero_ps()};
        store_rows_avx2(h, mr - 8, nr, bias, C + (size_t)8 * ldc, ldc);
    }
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
#ifdef HAVE_TILE_AVX2
        if (avx2) pack_rows16_avx2(rows, K, A + (size_t)m0 * lda, lda, P);
        else
#endif
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
