/* The float32 products of emb_sgemm_bcast on AVX2 and in plain C (sgemm_bcast.c runs them when
 * emb_simd() is below AVX-512): one block of at most 32 rows of C = A W^T (+ bias), computed as
 * tiles of 16 rows x 6 columns. Every element is one float32 sum in k order (fused multiply-adds
 * on AVX2, as AVX-512's 32-row tile; multiplies and adds in plain C), whatever the row count,
 * the tile a row falls in or the thread: so a text gets the same vector alone or in any batch.
 * Internal to the encoder's files. */
#ifndef EMBED_SGEMM_TILES_H
#define EMBED_SGEMM_TILES_H

/* Rows 0..mr-1 (mr <= 32) of C (row stride ldc) = A W^T + bias (bias NULL: C += A W^T), for N
 * columns; W as stored (row stride ldw) or packed (ldw EMB_SGEMM_BCAST_PACKED, sgemm_bcast.h:
 * its first tile at W). P: scratch of 16 * K floats, 32-byte aligned. */
void emb_sgemm_tiles(int mr, int N, int K, const float *A, int lda, const float *W, int ldw, const float *bias,
                     float *C, int ldc, float *P);

#endif
