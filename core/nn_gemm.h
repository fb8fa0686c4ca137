/* Float32 products C = alpha A B with B row-major ([K][N], N contiguous), for attention's small
 * products (scores against the keys transposed, context against the values) on AVX-512F: each
 * element of A is broadcast against up to 64 columns of B read in place, in register tiles of
 * 6 x 64 to 24 x 16; C is overwritten, never read. OpenBLAS's small-matrix path copied both
 * operands at every call, and its kernels follow OPENBLAS_CORETYPE. Internal to the encoder. */
#ifndef EMBED_NN_GEMM_H
#define EMBED_NN_GEMM_H

/* Whether this CPU runs the kernels (AVX-512F, and FMA for the softmax that attention runs
 * beside them). */
int emb_nn_gemm_supported(void);
/* C[M][N] (row stride ldc) = alpha * A[M][K] (lda) * B[K][N] (ldb); M, N, K >= 1. Call only when
 * supported. */
void emb_nn_gemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float *C,
                 int ldc);
/* C[i][j] = row_scale[i] * (A B)[i][j]: the context of unnormalised softmax weights, scaled
 * by each row's 1 / sum. */
void emb_nn_gemm_scaled(int M, int N, int K, const float *row_scale, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc);
/* T[d][n] = X[n][d] for n < N, d < D (X's row stride ldx, T's row stride N): a head's keys for
 * the scores. Call only when supported. */
void emb_transpose(int N, int D, const float *X, int ldx, float *T);

#endif
