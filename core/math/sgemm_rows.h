/* Float32 products of a few rows against a weight read in place: C[M,N] += A[M,K] W[N,K]^T, W as
 * PyTorch's Linear stores it ([out][in]). OpenBLAS packs all of W at every call, which for a short
 * batch (16 rows) took 39% of the forward pass; these kernels read each row of W once, straight
 * from the tensor, with 16-lane partial sums along K reduced at the end (float32 sums in another
 * order than sgemm's: the same values to rounding). Internal to the encoder's files. */
#ifndef EMBED_SGEMM_ROWS_H
#define EMBED_SGEMM_ROWS_H

/* Whether this CPU runs the kernels (AVX-512F). */
int emb_sgemm_rows_supported(void);
/* Any M (faster than sgemm_bcast below 16 rows); row strides lda, ldw, ldc (floats). Call only when
 * supported. */
void emb_sgemm_rows(int M, int N, int K, const float *A, int lda, const float *W, int ldw, float *C, int ldc);

#endif
