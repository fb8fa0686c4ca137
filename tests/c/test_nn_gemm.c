/* Attention's small products (core/nn_gemm.h): C = alpha A B with B row-major. Small-integer
 * inputs and alpha a power of two give exact float32 sums, compared with 64-bit integer sums;
 * random inputs agree with double sums to float rounding. Shapes cover each register tile (1 to
 * 4 vectors of columns, 24 to 6 rows), ragged rows and columns (masked at N's end), widths past
 * 64 columns, strides wider than the rows, and nothing written outside C (C is never read:
 * it starts as NaN); the same with a scale per row (emb_nn_gemm_scaled). emb_transpose against
 * its definition, on blocks of 16 and ragged edges, writing nothing past its output. With the
 * rows in 32-row panels (a head's queries and keys in place), from rows that start mid-panel and
 * span several: the products give the same bits as from the same rows stored as rows, and the
 * keys' copy matches its definition, writing nothing past its output. The panel checks are
 * skipped, saying so, where the panels do not exist: below the AVX-512 set
 * (emb_sgemm_bcast_panels_supported; emb_nn_gemm_panel_a runs AVX-512 code). */
#include "check.h"
#include "math/nn_gemm.h"
#include "math/sgemm_bcast.h"
#include "base/simd.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static float draw(int ints) {
    unsigned long long r = check_rng(&rng);
    return ints ? (float)((int)(r % 15) - 7) : (float)((double)(r >> 11) / 4503599627370496.0 - 1.0);
}

typedef struct {
    int M, N, K;
} shape;
static const shape shapes[] = {{1, 1, 1},      {5, 16, 3},     {24, 16, 32}, {25, 17, 7},  {12, 32, 128},
                               {13, 33, 16},   {8, 48, 20},    {9, 47, 64},  {6, 64, 32},  {7, 63, 5},
                               {128, 128, 32}, {128, 32, 128}, {30, 130, 9}, {16, 200, 64}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* scaled: emb_nn_gemm_scaled with a scale per row (powers of two with integer inputs) */
static void run_shape(shape s, int ints, int scaled) {
    int M = s.M, N = s.N, K = s.K, lda = K + 2, ldb = N + 3, ldc = N + 5;
    float *A = malloc(sizeof(float) * M * lda), *B = malloc(sizeof(float) * K * ldb),
          *C = malloc(sizeof(float) * (M + 1) * ldc), *rs = malloc(sizeof(float) * M);
    for (int i = 0; i < M * lda; i++) A[i] = draw(ints);
    for (int i = 0; i < K * ldb; i++) B[i] = draw(ints);
    for (int i = 0; i < (M + 1) * ldc; i++) C[i] = NAN;
    for (int i = 0; i < M; i++)
        rs[i] = !scaled ? (ints ? 0.5f : 0.37f) : ints ? ldexpf(1.0f, i % 5 - 2) : 0.1f + 0.05f * (i % 7);
    if (scaled) emb_nn_gemm_scaled(M, N, K, rs, A, lda, B, ldb, C, ldc);
    else emb_nn_gemm(M, N, K, rs[0], A, lda, B, ldb, C, ldc);
    int bad = 0, outside = 0;
    double worst = 0;
    for (int m = 0; m <= M; m++)
        for (int n = 0; n < ldc; n++) {
            float got = C[(size_t)m * ldc + n];
            if (m == M || n >= N) {
                outside += !isnan(got);
                continue;
            }
            double sum = 0, mag = 0;
            int64_t isum = 0;
            for (int k = 0; k < K; k++) {
                double t = (double)A[m * lda + k] * B[k * ldb + n];
                sum += t;
                mag += fabs(t);
                isum += (int64_t)A[m * lda + k] * (int64_t)B[k * ldb + n];
            }
            double alpha = rs[m], want = ints ? (double)isum * alpha : sum * alpha, err = fabs((double)got - want);
            if (!(ints ? err == 0 : err <= (K + 2) * 2.4e-7 * (mag * alpha + 1e-30))) bad++;
            if (err > worst) worst = err;
        }
    CHECK(bad == 0, "%d x %d x %d (%s%s): %d results off, worst |error| %.3g", M, N, K,
          ints ? "integers, exact" : "floats", scaled ? ", a scale per row" : "", bad, worst);
    CHECK(outside == 0, "%d x %d x %d: %d values written outside C's %d rows and %d columns", M, N, K, outside, M,
          N);
    free(A);
    free(B);
    free(C);
    free(rs);
}

/* T is followed by 16 NaN sentinels, which must stay */
static void check_transpose(int N, int D, int ldx) {
    float *X = malloc(sizeof(float) * N * ldx), *T = malloc(sizeof(float) * (D * N + 16));
    for (int i = 0; i < N * ldx; i++) X[i] = (float)i;
    for (int i = 0; i < D * N + 16; i++) T[i] = NAN;
    emb_transpose(N, D, X, ldx, T);
    int bad = 0, outside = 0;
    for (int d = 0; d < D; d++)
        for (int n = 0; n < N; n++) bad += T[d * N + n] != X[n * ldx + d];
    for (int i = 0; i < 16; i++) outside += !isnan(T[D * N + i]);
    CHECK(bad == 0 && outside == 0, "emb_transpose %d x %d (stride %d): %d values misplaced, %d written past T", N,
          D, ldx, bad, outside);
    free(X);
    free(T);
}

/* R rows of P columns as 32-row panels: row r, column c at [(r / 32) * 32 * P + c * 32 + r % 32]. */
static float *to_panels(const float *X, int R, int P) {
    float *panels = calloc((size_t)(R + 31) / 32 * 32 * P, sizeof(float));
    for (int r = 0; r < R; r++)
        for (int c = 0; c < P; c++)
            panels[(size_t)(r / 32) * 32 * P + (size_t)c * 32 + r % 32] = X[(size_t)r * P + c];
    return panels;
}

/* Rows row0.. of a head's columns col0.. read from panels: the same products (integer inputs:
 * exact) as from the rows themselves, and the transposed copy of the columns. */
static void check_panels(int M, int N, int K, int row0, int col0, int P) {
    int R = row0 + (M > N ? M : N) + 3;
    float *X = malloc(sizeof(float) * R * P), *B = malloc(sizeof(float) * K * N),
          *C = malloc(sizeof(float) * M * N), *C1 = malloc(sizeof(float) * M * N),
          *T = malloc(sizeof(float) * (K * N + 16));
    for (int i = 0; i < R * P; i++) X[i] = draw(1);
    for (int i = 0; i < K * N; i++) B[i] = draw(1);
    float *panels = to_panels(X, R, P);
    emb_nn_gemm(M, N, K, 0.25f, X + (size_t)row0 * P + col0, P, B, N, C, N);
    emb_nn_gemm_panel_a(M, N, K, 0.25f, panels, P, row0, col0, B, N, C1, N);
    CHECK(memcmp(C, C1, sizeof(float) * M * N) == 0, "%d x %d x %d from panels (row %d, column %d of %d): %s", M,
          N, K, row0, col0, P, "the same bits as from rows");
    for (int i = 0; i < K * N + 16; i++) T[i] = NAN;
    emb_panel_columns_t(N, K, panels, P, row0, col0, T);
    int bad = 0, outside = 0;
    for (int d = 0; d < K; d++)
        for (int n = 0; n < N; n++) bad += T[d * N + n] != X[(size_t)(row0 + n) * P + col0 + d];
    for (int i = 0; i < 16; i++) outside += !isnan(T[K * N + i]);
    CHECK(bad == 0 && outside == 0,
          "columns %d.. of rows %d..%d from panels: %d values misplaced, %d written past T", col0, row0,
          row0 + N - 1, bad, outside);
    free(X), free(B), free(C), free(C1), free(T), free(panels);
}

int main(void) {
    if (!emb_nn_gemm_supported()) {
        CHECK_SKIP("emb_nn_gemm is not built here: attention's products run on OpenBLAS");
        return check_report();
    }
    check_transpose(37, 20, 23);
    check_transpose(1, 1, 1);
    check_transpose(16, 16, 16);
    check_transpose(128, 32, 384);
    check_transpose(33, 17, 40);
    check_transpose(5, 64, 64);
    if (emb_sgemm_bcast_panels_supported()) {
        check_panels(128, 128, 32, 0, 32, 384);
        check_panels(37, 50, 16, 5, 16, 64);
        check_panels(7, 9, 8, 60, 0, 8);
        check_panels(100, 70, 24, 33, 40, 72);
    } else {
        CHECK_SKIP("products from panels: the kernel set is %s, not avx512, so the encoder keeps no panels",
                   emb_simd_name(emb_simd()));
    }
    for (size_t i = 0; i < NSHAPES; i++) {
        run_shape(shapes[i], 1, 0);
        run_shape(shapes[i], 0, 0);
        run_shape(shapes[i], 1, 1);
        run_shape(shapes[i], 0, 1);
    }
    return check_report();
}
