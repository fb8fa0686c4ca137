/* Float32 products of a few rows (core/sgemm_rows.h): small-integer inputs, whose products and
 * sums are exact in float32, give exactly the integer sums computed here in 64-bit integers;
 * random inputs agree with double-precision sums to float rounding (|error| <= K * 2^-22 * sum
 * of |terms|); every shape with ragged tails (M not a multiple of the 4-row tile, N of the
 * 4-column tile, K of 16 lanes), row strides wider than the rows, and nothing written outside C's
 * rows and columns. Skipped, saying so, below the AVX-512 set: the encoder never calls it there. */
#include "check.h"
#include "base/simd.h"
#include "math/sgemm_rows.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static unsigned long long next_u64(void) { return check_rng(&rng_state); }

typedef struct {
    int M, N, K;
} shape;
static const shape shapes[] = {{1, 1, 1},  {1, 5, 16},     {2, 4, 17},    {3, 7, 15},     {4, 4, 32},
                               {5, 9, 33}, {16, 384, 384}, {13, 37, 100}, {32, 66, 1536}, {31, 3, 7}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* One shape: small integers (exact) or uniform floats in [-1, 1). */
static void run_shape(shape s, int ints) {
    int M = s.M, N = s.N, K = s.K, lda = K + 3, ldw = K + 1, ldc = N + 5;
    float *A = malloc(sizeof(float) * M * lda), *W = malloc(sizeof(float) * N * ldw),
          *C = malloc(sizeof(float) * M * ldc), *C0 = malloc(sizeof(float) * M * ldc);
    for (int i = 0; i < M * lda; i++)
        A[i] = ints ? (float)((int)(next_u64() % 15) - 7)
                    : (float)((double)(next_u64() >> 11) / 4503599627370496.0 - 1.0);
    for (int i = 0; i < N * ldw; i++)
        W[i] = ints ? (float)((int)(next_u64() % 15) - 7)
                    : (float)((double)(next_u64() >> 11) / 4503599627370496.0 - 1.0);
    for (int i = 0; i < M * ldc; i++) C0[i] = ints ? (float)((int)(next_u64() % 101) - 50) : 0.25f;
    memcpy(C, C0, sizeof(float) * M * ldc);
    emb_sgemm_rows(M, N, K, A, lda, W, ldw, C, ldc);
    int bad = 0, outside = 0;
    double worst = 0;
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            double sum = C0[m * ldc + n], mag = 0;
            int64_t isum = (int64_t)C0[m * ldc + n];
            for (int k = 0; k < K; k++) {
                double t = (double)A[m * lda + k] * W[n * ldw + k];
                sum += t;
                mag += t < 0 ? -t : t;
                isum += (int64_t)A[m * lda + k] * (int64_t)W[n * ldw + k];
            }
            double err = (double)C[m * ldc + n] - (ints ? (double)isum : sum);
            err = err < 0 ? -err : err;
            if (ints ? err != 0 : err > (K + 1) * 2.4e-7 * (mag + 1.0)) bad++;
            if (err > worst) worst = err;
        }
        for (int n = N; n < ldc; n++) outside += memcmp(&C[m * ldc + n], &C0[m * ldc + n], sizeof(float)) != 0;
    }
    CHECK(bad == 0, "%d x %d x %d (%s): %d results off, worst |error| %.3g", M, N, K,
          ints ? "integers, exact" : "floats", bad, worst);
    CHECK(outside == 0, "%d x %d x %d: %d values written past column %d", M, N, K, outside, N);
    free(A);
    free(W);
    free(C);
    free(C0);
}

int main(void) {
    if (!emb_sgemm_rows_supported()) {
        CHECK_SKIP("emb_sgemm_rows: the kernel set is %s, not avx512, so the encoder never calls it",
                   emb_simd_name(emb_simd()));
        return check_report();
    }
    for (size_t i = 0; i < NSHAPES; i++) {
        run_shape(shapes[i], 1);
        run_shape(shapes[i], 0);
    }
    return check_report();
}
