/* See sgemm_rows.h. Tiles of 4 rows of A x 4 rows of W: 16 accumulators of 16 lanes over K, then
 * one transposing reduction gives the tile's 16 sums. */
/* The register tiles are written as rows of macro calls, which clang-format cannot lay out (it
 * splits them differently at each pass): this file keeps its own layout. */
// clang-format off
#include "math/sgemm_rows.h"
#include "base/simd.h"
#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T_AVX512 __attribute__((target("avx512f")))

int emb_sgemm_rows_supported(void) {
    return emb_simd() >= EMB_SIMD_AVX512;
}

/* v[4 j + i] (row i, column j of a tile) -> lane 4 i + j holds the sum of v[4 j + i]'s lanes. */
T_AVX512 static inline __m512 reduce16(const __m512 *v) {
    __m512 a[8], b[4], c[2];
    for (int i = 0; i < 8; i++)
        a[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
    for (int i = 0; i < 4; i++)
        b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xDD));
    for (int i = 0; i < 2; i++)
        c[i] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0x44), _mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xDD));
}

#define ACC(i, j) __m512 c##i##j = _mm512_setzero_ps();
#define FMA_ROW(i) \
    c##i##0 = _mm512_fmadd_ps(x##i, w0, c##i##0); c##i##1 = _mm512_fmadd_ps(x##i, w1, c##i##1); \
    c##i##2 = _mm512_fmadd_ps(x##i, w2, c##i##2); c##i##3 = _mm512_fmadd_ps(x##i, w3, c##i##3);

/* Rows m0..m0+mr-1 of C, columns n0..n0+nr-1 (mr, nr <= 4; short tiles repeat their last row). */
T_AVX512 static void tile4x4(int mr, int nr, int K, const float *A, int lda, const float *W, int ldw, float *C, int ldc) {
    const float *a0 = A, *a1 = A + (size_t)(mr > 1) * lda, *a2 = A + (size_t)(mr > 2 ? 2 : mr - 1) * lda,
                *a3 = A + (size_t)(mr > 3 ? 3 : mr - 1) * lda;
    const float *p0 = W, *p1 = W + (size_t)(nr > 1) * ldw, *p2 = W + (size_t)(nr > 2 ? 2 : nr - 1) * ldw,
                *p3 = W + (size_t)(nr > 3 ? 3 : nr - 1) * ldw;
    ACC(0, 0) ACC(0, 1) ACC(0, 2) ACC(0, 3) ACC(1, 0) ACC(1, 1) ACC(1, 2) ACC(1, 3)
    ACC(2, 0) ACC(2, 1) ACC(2, 2) ACC(2, 3) ACC(3, 0) ACC(3, 1) ACC(3, 2) ACC(3, 3)
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 w0 = _mm512_loadu_ps(p0 + k), w1 = _mm512_loadu_ps(p1 + k), w2 = _mm512_loadu_ps(p2 + k),
               w3 = _mm512_loadu_ps(p3 + k);
        __m512 x0 = _mm512_loadu_ps(a0 + k), x1 = _mm512_loadu_ps(a1 + k), x2 = _mm512_loadu_ps(a2 + k),
               x3 = _mm512_loadu_ps(a3 + k);
        FMA_ROW(0) FMA_ROW(1) FMA_ROW(2) FMA_ROW(3)
    }
    if (k < K) { /* the last K % 16: zeros past K add nothing */
        __mmask16 m = (__mmask16)((1u << (K - k)) - 1u);
        __m512 w0 = _mm512_maskz_loadu_ps(m, p0 + k), w1 = _mm512_maskz_loadu_ps(m, p1 + k),
               w2 = _mm512_maskz_loadu_ps(m, p2 + k), w3 = _mm512_maskz_loadu_ps(m, p3 + k);
        __m512 x0 = _mm512_maskz_loadu_ps(m, a0 + k), x1 = _mm512_maskz_loadu_ps(m, a1 + k),
               x2 = _mm512_maskz_loadu_ps(m, a2 + k), x3 = _mm512_maskz_loadu_ps(m, a3 + k);
        FMA_ROW(0) FMA_ROW(1) FMA_ROW(2) FMA_ROW(3)
    }
    const __m512 v[16] = {c00, c10, c20, c30, c01, c11, c21, c31, c02, c12, c22, c32, c03, c13, c23, c33};
    float s[16];
    _mm512_storeu_ps(s, reduce16(v));
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) C[(size_t)i * ldc + j] += s[4 * i + j];
}

void emb_sgemm_rows(int M, int N, int K, const float *A, int lda, const float *W, int ldw, float *C, int ldc) {
    for (int n0 = 0; n0 < N; n0 += 4)
        for (int m0 = 0; m0 < M; m0 += 4)
            tile4x4(M - m0 < 4 ? M - m0 : 4, N - n0 < 4 ? N - n0 : 4, K, A + (size_t)m0 * lda, lda,
                    W + (size_t)n0 * ldw, ldw, C + (size_t)m0 * ldc + n0, ldc);
}
#else
int emb_sgemm_rows_supported(void) { return 0; }
void emb_sgemm_rows(int M, int N, int K, const float *A, int lda, const float *W, int ldw, float *C, int ldc) {
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)W, (void)ldw, (void)C, (void)ldc;
}
#endif
// clang-format on
