/* See nn_gemm.h. One kernel per width in vectors (1 to 4 x 16 columns), rows per tile chosen so
 * that the accumulators fill 24 registers; the last vector of a tile is masked at N's end, and
 * the rows past M repeat the last row, whose sums are dropped. */
#include "math/nn_gemm.h"
#include "base/simd.h"
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include "math/transpose16.h"
#include "math/vexp512.h"
#define T_AVX512 __attribute__((target("avx512f")))

T_AVX512 static void transpose512(int N, int D, const float *X, int ldx, float *T) {
    emb_transpose_rows(N, N, D, X, ldx, T, N);
}

/* Row i of A (i < mr) starts at arow[i], its element k at arow[i][k * ak]. */
#define NN_KERNEL(NV, MR)                                                                                         \
    T_AVX512 static void tile_##NV(int mr, int K, float alpha, const float *rs, const float *const *arow, int ak, \
                                   const float *B, int ldb, __mmask16 last, float *C, int ldc) {                  \
        const float *a[MR];                                                                                       \
        for (int i = 0; i < MR; i++) a[i] = arow[i < mr ? i : mr - 1];                                            \
        __m512 acc[MR][NV];                                                                                       \
        _Pragma("GCC unroll 24") for (int i = 0; i < MR; i++)                                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_ps();                 \
        for (int k = 0; k < K; k++) {                                                                             \
            __m512 b[NV];                                                                                         \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) b[v] =                                           \
                _mm512_maskz_loadu_ps(v == NV - 1 ? last : (__mmask16)0xFFFF, B + (size_t)k * ldb + 16 * v);      \
            _Pragma("GCC unroll 24") for (int i = 0; i < MR; i++) {                                               \
                __m512 x = _mm512_set1_ps(a[i][(size_t)k * ak]);                                                  \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[i][v] =                                  \
                    _mm512_fmadd_ps(x, b[v], acc[i][v]);                                                          \
            }                                                                                                     \
        }                                                                                                         \
        __m512 s = _mm512_set1_ps(alpha);                                                                         \
        _Pragma("GCC unroll 24") for (int i = 0; i < MR; i++) /* constant indices: acc stays in registers */      \
            if (i < mr) {                                                                                         \
            __m512 si = rs ? _mm512_set1_ps(rs[i]) : s;                                                           \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                                  \
                _mm512_mask_storeu_ps(C + (size_t)i * ldc + 16 * v, v == NV - 1 ? last : (__mmask16)0xFFFF,       \
                                      _mm512_mul_ps(acc[i][v], si));                                              \
        }                                                                                                         \
    }
NN_KERNEL(1, 24)
NN_KERNEL(2, 12)
NN_KERNEL(3, 8)
NN_KERNEL(4, 6)

/* Where A's rows lie: rows of stride lda (panels NULL), or lanes of 32-row panels of ldp columns,
 * A's row i being lane (row0 + i) % 32 of panel (row0 + i) / 32 from its column col0. */
typedef struct {
    const float *A, *panels;
    int lda, ldp, row0, col0;
} a_rows;

static void nn_gemm(int M, int N, int K, float alpha, const float *rs, const a_rows *A, const float *B, int ldb,
                    float *C, int ldc) {
    const float *arow[24];
    int ak = A->panels ? 32 : 1;
    for (int n0 = 0; n0 < N; n0 += 64) {
        int n = N - n0 < 64 ? N - n0 : 64, nv = (n + 15) / 16, mrows = 24 / nv;
        __mmask16 last = (__mmask16)(0xFFFFu >> (16 * nv - n));
        for (int m0 = 0; m0 < M; m0 += mrows) {
            int mr = M - m0 < mrows ? M - m0 : mrows;
            for (int i = 0; i < mr; i++) {
                int r = A->row0 + m0 + i;
                arow[i] = A->panels ? A->panels + (size_t)(r / 32) * 32 * A->ldp + (size_t)A->col0 * 32 + r % 32
                                    : A->A + (size_t)(m0 + i) * A->lda;
            }
            const float *b = B + n0;
            const float *r = rs ? rs + m0 : NULL;
            float *c = C + (size_t)m0 * ldc + n0;
            switch (nv) {
            case 1: tile_1(mr, K, alpha, r, arow, ak, b, ldb, last, c, ldc); break;
            case 2: tile_2(mr, K, alpha, r, arow, ak, b, ldb, last, c, ldc); break;
            case 3: tile_3(mr, K, alpha, r, arow, ak, b, ldb, last, c, ldc); break;
            default: tile_4(mr, K, alpha, r, arow, ak, b, ldb, last, c, ldc); break;
            }
        }
    }
}

void emb_nn_gemm_panel_a(int M, int N, int K, float alpha, const float *panels, int ldp, int row0, int col0,
                         const float *B, int ldb, float *C, int ldc) {
    a_rows a = {.panels = panels, .ldp = ldp, .row0 = row0, .col0 = col0};
    nn_gemm(M, N, K, alpha, NULL, &a, B, ldb, C, ldc);
}

#define NN_X86 1
#else
#define NN_X86 0
void emb_nn_gemm_panel_a(int M, int N, int K, float alpha, const float *panels, int ldp, int row0, int col0,
                         const float *B, int ldb, float *C, int ldc) {
    (void)M, (void)N, (void)K, (void)alpha, (void)panels, (void)ldp, (void)row0, (void)col0, (void)B, (void)ldb;
    (void)C, (void)ldc;
}
#endif

/* Plain C: row i of C is A's row i times B, each element one sum in k order (multiplies then
 * adds, which the compiler vectorizes along the row), then scaled. */
static void nn_rows(int M, int N, int K, float alpha, const float *rs, const float *A, int lda, const float *B,
                    int ldb, float *C, int ldc) {
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc, s = rs ? rs[i] : alpha;
        for (int n = 0; n < N; n++) c[n] = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = A[(size_t)i * lda + k];
            const float *b = B + (size_t)k * ldb;
#pragma omp simd
            for (int n = 0; n < N; n++) c[n] += a * b[n];
        }
#pragma omp simd
        for (int n = 0; n < N; n++) c[n] *= s;
    }
}

#if NN_X86
/* AVX2: two rows of C at a time, V vectors of 8 columns a step, each element one fused sum in k
 * order; the columns past the last whole vector by scalar fused multiply-adds (the same sums).
 * No masked loads or stores: AMD's are microcoded. */
#define T_AVX2 __attribute__((target("avx2,fma")))
#define NN_AVX2_STEP(V)                                                                                           \
    T_AVX2 static void nn_avx2_##V(int two, int K, const float *a0, const float *a1, const float *B, int ldb,     \
                                   __m256 s0, __m256 s1, float *r0, float *r1) {                                  \
        __m256 c0[V], c1[V];                                                                                      \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) c0[v] = c1[v] = _mm256_setzero_ps();                  \
        for (int k = 0; k < K; k++) {                                                                             \
            __m256 x0 = _mm256_set1_ps(a0[k]), x1 = _mm256_set1_ps(a1[k]);                                        \
            const float *b = B + (size_t)k * ldb;                                                                 \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                                 \
                __m256 bv = _mm256_loadu_ps(b + 8 * v);                                                           \
                c0[v] = _mm256_fmadd_ps(x0, bv, c0[v]);                                                           \
                c1[v] = _mm256_fmadd_ps(x1, bv, c1[v]);                                                           \
            }                                                                                                     \
        }                                                                                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                                     \
            _mm256_storeu_ps(r0 + 8 * v, _mm256_mul_ps(c0[v], s0));                                               \
            if (two) _mm256_storeu_ps(r1 + 8 * v, _mm256_mul_ps(c1[v], s1));                                      \
        }                                                                                                         \
    }
NN_AVX2_STEP(4)
NN_AVX2_STEP(1)

T_AVX2 static void nn_rows_avx2(int M, int N, int K, float alpha, const float *rs, const float *A, int lda,
                                const float *B, int ldb, float *C, int ldc) {
    for (int i = 0; i < M; i += 2) {
        int two = i + 1 < M;
        const float *a0 = A + (size_t)i * lda, *a1 = A + (size_t)(two ? i + 1 : i) * lda;
        float f0 = rs ? rs[i] : alpha, f1 = rs && two ? rs[i + 1] : alpha;
        __m256 s0 = _mm256_set1_ps(f0), s1 = _mm256_set1_ps(f1);
        float *r0 = C + (size_t)i * ldc, *r1 = C + (size_t)(two ? i + 1 : i) * ldc;
        int n = 0;
        for (; n + 32 <= N; n += 32) nn_avx2_4(two, K, a0, a1, B + n, ldb, s0, s1, r0 + n, r1 + n);
        for (; n + 8 <= N; n += 8) nn_avx2_1(two, K, a0, a1, B + n, ldb, s0, s1, r0 + n, r1 + n);
        for (; n < N; n++) {
            float c0 = 0.0f, c1 = 0.0f;
            for (int k = 0; k < K; k++) {
                c0 = __builtin_fmaf(a0[k], B[(size_t)k * ldb + n], c0);
                c1 = __builtin_fmaf(a1[k], B[(size_t)k * ldb + n], c1);
            }
            r0[n] = c0 * f0;
            if (two) r1[n] = c1 * f1;
        }
    }
}
#endif

/* Below AVX-512: AVX2's kernel, or the plain rows above. */
static void nn_rows_any(int M, int N, int K, float alpha, const float *rs, const float *A, int lda, const float *B,
                        int ldb, float *C, int ldc) {
#if NN_X86
    if (emb_simd() == EMB_SIMD_AVX2) {
        nn_rows_avx2(M, N, K, alpha, rs, A, lda, B, ldb, C, ldc);
        return;
    }
#endif
    nn_rows(M, N, K, alpha, rs, A, lda, B, ldb, C, ldc);
}

int emb_nn_gemm_supported(void) { return 1; }

void emb_nn_gemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float *C,
                 int ldc) {
#if NN_X86
    if (emb_simd() == EMB_SIMD_AVX512) {
        a_rows a = {.A = A, .lda = lda};
        nn_gemm(M, N, K, alpha, NULL, &a, B, ldb, C, ldc);
        return;
    }
#endif
    nn_rows_any(M, N, K, alpha, NULL, A, lda, B, ldb, C, ldc);
}

void emb_nn_gemm_scaled(int M, int N, int K, const float *row_scale, const float *A, int lda, const float *B,
                        int ldb, float *C, int ldc) {
#if NN_X86
    if (emb_simd() == EMB_SIMD_AVX512) {
        a_rows a = {.A = A, .lda = lda};
        nn_gemm(M, N, K, 1.0f, row_scale, &a, B, ldb, C, ldc);
        return;
    }
#endif
    nn_rows_any(M, N, K, 1.0f, row_scale, A, lda, B, ldb, C, ldc);
}

void emb_transpose(int N, int D, const float *X, int ldx, float *T) {
#if NN_X86
    if (emb_simd() == EMB_SIMD_AVX512) {
        transpose512(N, D, X, ldx, T);
        return;
    }
#endif
    for (int n = 0; n < N; n++)
        for (int d = 0; d < D; d++) T[(size_t)d * N + n] = X[(size_t)n * ldx + d];
}

void emb_panel_columns_t(int N, int D, const float *panels, int ldp, int row0, int col0, float *T) {
    for (int d = 0; d < D; d++) {
        const float *col = panels + (size_t)(col0 + d) * 32;
        for (int n = 0; n < N;) { /* the rows' run in one panel */
            int r = row0 + n, run = 32 - r % 32 < N - n ? 32 - r % 32 : N - n;
            memcpy(T + (size_t)d * N + n, col + (size_t)(r / 32) * 32 * ldp + r % 32, (size_t)run * sizeof(float));
            n += run;
        }
    }
}
