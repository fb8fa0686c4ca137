/* Float32 products with the weight read in place, on AVX-512: C[M,N] += A[M,K] W[N,K]^T, W as
 * PyTorch's Linear stores it ([out][in]), optionally + bias. A block of 32 rows of A is copied transposed (32 floats
 * per k, cheap: it is reused by all N columns); each weight element is then broadcast against
 * those 32 rows, so W is never copied or repacked, whatever its alignment (OpenBLAS repacks W at
 * every call, and with OPENBLAS_CORETYPE=Haswell runs 256-bit kernels at about half this rate).
 * Every element of C is one float32 sum in k order, so splitting rows or columns over threads
 * gives the same bits as one thread. Internal to the encoder's files. */
#ifndef EMBED_SGEMM_BCAST_H
#define EMBED_SGEMM_BCAST_H

#include "base/workers.h"
#include <stddef.h>

/* Below this many multiply-adds a product stays on the calling thread (a wake-up costs more). */
#define EMB_SGEMM_BCAST_PAR_MACS 1000000.0

/* A weight may be packed once (emb_sgemm_bcast_pack_weight into emb_sgemm_bcast_weight_floats
 * floats) and passed with ldw EMB_SGEMM_BCAST_PACKED: tiles of 12 rows, each k pair's 24 values
 * together, so that a product reads it as one stream in order instead of 12 rows at a time (the
 * same sums, the same bits; rows below 16 then run the 16-row tile rather than sgemm_rows). Below
 * AVX-512 each tile is two halves of 6 rows, one after the other, for sgemm_tiles' 6-column
 * tiles (the kernel set is fixed per process, so a weight is read as it was packed). */
#define EMB_SGEMM_BCAST_PACKED 0
size_t emb_sgemm_bcast_weight_floats(int N, int K);
void emb_sgemm_bcast_pack_weight(int N, int K, const float *W, int ldw, float *Wp);

/* Whether emb_sgemm_bcast runs on this CPU: always (AVX-512's kernels, else sgemm_tiles' AVX2
 * or plain C tiles, with the same sums in k order per element); whether the panel functions
 * below do (AVX-512 only: call them only then). */
int emb_sgemm_bcast_supported(void);
int emb_sgemm_bcast_panels_supported(void);
/* Floats of scratch each thread needs for a given K (the callee aligns it to 64 bytes). */
size_t emb_sgemm_bcast_scratch(int K);
/* C = A W^T + bias (bias[N]; C is not read), or without a bias C += A W^T. Any M, N, K >= 1; row
 * strides lda, ldw, ldc (floats); scratch holds (helpers + 1) threads'
 * scratch; split over the workers (NULL: the caller alone) above EMB_SGEMM_BCAST_PAR_MACS, with the
 * same bits as one thread. Rows below 16 of a 32-row block go to emb_sgemm_rows. Call only when
 * supported. */
void emb_sgemm_bcast(int M, int N, int K, const float *A, int lda, const float *W, int ldw, const float *bias,
                     float *C, int ldc, float *scratch, emb_workers *workers);

/* Products that share an input read it as panels: 32 rows per panel, each column's 32 floats
 * together (64-byte aligned, emb_sgemm_bcast_panel_floats(M, K) floats for M rows of K; the lanes
 * past M are padding, computed like the others and never read back). Every row block then runs
 * the 32-row tile. emb_sgemm_bcast_pack_panels writes A's panels, emb_sgemm_bcast_unpack_panels
 * turns panels back into rows; emb_sgemm_bcast_panels computes C = panels W^T + bias (or C +=
 * without a bias). emb_sgemm_bcast_to_panels writes its output as panels of N columns, from A's
 * rows (lda) or, when a_panels is given, from its panels: A W^T + bias (EMB_PANELS_SET), that
 * added onto what the panels hold (EMB_PANELS_ADD: a residual stream kept as panels), or GELU of
 * it (EMB_PANELS_GELU, exact GELU as emb_gelu: a feed-forward's inner rows never stored as rows).
 * bias may be NULL. */
typedef enum { EMB_PANELS_SET, EMB_PANELS_ADD, EMB_PANELS_GELU } emb_panels_out;
size_t emb_sgemm_bcast_panel_floats(int M, int N);
void emb_sgemm_bcast_pack_panels(int M, int K, const float *A, int lda, float *panels, emb_workers *workers);
void emb_sgemm_bcast_unpack_panels(int M, int N, const float *panels, float *C, int ldc, emb_workers *workers);
void emb_sgemm_bcast_panels(int M, int N, int K, const float *panels, const float *W, int ldw, const float *bias,
                            float *C, int ldc, float *scratch, emb_workers *workers);
void emb_sgemm_bcast_to_panels(int M, int N, int K, const float *A, int lda, const float *a_panels, const float *W,
                               int ldw, const float *bias, emb_panels_out out, float *panels, float *scratch,
                               emb_workers *workers);

#endif
