/* Float32 products C = alpha A B with B row-major ([K][N], N contiguous), for attention's small
 * products (scores against the keys transposed, context against the values) on AVX-512F: each
 * element of A is broadcast against up to 64 columns of B read in place, in register tiles of
 * 6 x 64 to 24 x 16; C is overwritten, never read. OpenBLAS's small-matrix path copied both
 * operands at every call, and its kernels follow OPENBLAS_CORETYPE. Internal to the encoder. */
#ifndef EMBED_NN_GEMM_H
#define EMBED_NN_GEMM_H

/* Whether the kernels run here: always (AVX-512F's tiles, else rows in k order on AVX2 or in
 * plain C); emb_nn_gemm_panel_a only where the panels are (AVX-512). */
int emb_nn_gemm_supported(void);
/* C[M][N] (row stride ldc) = alpha * A[M][K] (lda) * B[K][N] (ldb); M, N, K >= 1. Call only when
 * supported. */
void emb_nn_gemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float *C,
                 int ldc);
/* C[i][j] = row_scale[i] * (A B)[i][j]: the context of unnormalised softmax weights, scaled
 * by each row's 1 / sum. */
void emb_nn_gemm_scaled(int M, int N, int K, const float *row_scale, const float *A, int lda, const float *B,
                        int ldb, float *C, int ldc);
/* T[d][n] = X[n][d] for n < N, d < D (X's row stride ldx, T's row stride N): a head's keys for
 * the scores. */
void emb_transpose(int N, int D, const float *X, int ldx, float *T);

/* The same with rows kept as 32-row panels of ldp columns (sgemm_bcast.h: each column's 32 floats
 * together), row r being lane r % 32 of panel r / 32: emb_nn_gemm with A's row i the panels' row
 * row0 + i from column col0 (a head's queries); and T[d][n] = row row0 + n's column col0 + d for
 * n < N, d < D (a head's keys transposed: copies of runs of a panel's column, no transpose). */
void emb_nn_gemm_panel_a(int M, int N, int K, float alpha, const float *panels, int ldp, int row0, int col0,
                         const float *B, int ldb, float *C, int ldc);
void emb_panel_columns_t(int N, int D, const float *panels, int ldp, int row0, int col0, float *T);

#endif
