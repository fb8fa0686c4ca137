/* int8 matrix products for the linear layers: C[M,N] (+)= dequant(A[M,K] * W[N,K]^T) (+ bias),
 * the same product as the encoder's linear_acc (W as PyTorch's Linear stores it, [out][in]).
 *
 * Weights: quantized once (emb_int8_gemm_weights_pack), symmetric per output channel:
 *   q[n,k] = round(W[n,k] / sw[n]) in [-127, 127], sw[n] = max_k |W[n,k]| / 127.
 * Activations: quantized per row at each call (emb_int8_gemm_quantize), asymmetric u8:
 *   u[m,k] = round(A[m,k] / sa[m]) + zp[m] in [0, 255], sa[m] = (max - min) / 255 over the row
 *   with 0 inside [min, max] (so zero is exact), zp[m] = round(-min / sa[m]).
 * vpdpbusd multiplies u8 by s8, so the exact product is
 *   P[m,n] = sum_k u[m,k] q[n,k] - zp[m] * colsum[n],   colsum[n] = sum_k q[n,k]  (at pack time)
 * accumulated in int32 (exact while K <= EMB_I8_MAX_K), then
 *   C[m,n] = beta * C[m,n] + P[m,n] * sa[m] * sw[n] + bias[n]          (beta 0 or 1)
 * in float. Asymmetric activations use all 256 levels over a row's range: a row of GELU outputs
 * (nearly all >= -0.17) gets twice the resolution that symmetric s8 (+128) would give it.
 *
 * Every kernel set computes P exactly, so C is the same bit for bit on every set.
 *
 * Block weights (emb_int8_gemm_weights_new_blocks: GGUF's Q8_0 tensors, read as they are): codes
 * q[n,k] in [-128, 127] with one scale d[n,b] per channel and block b of 32 inputs, value d q.
 * Per block the sum P_b[m,n] = sum_{k in b} u[m,k] q[n,k] is exact in int32 (32 terms), then
 *   acc = fma((float)P_b, d[n,b], acc)                     (blocks in order, acc from 0)
 *   C[m,n] = beta * C[m,n] + (acc - zp[m] * wcorr[n]) * sa[m] + bias[n]
 * with wcorr[n] = sum_b d[n,b] colsum_b[n] (colsum_b: the codes' sum in block b), computed in
 * double at pack time and rounded once. Every kernel set does these float operations in this
 * order (fma where written), so C is again the same bit for bit on every set. */
#ifndef EMBED_INT8_GEMM_H
#define EMBED_INT8_GEMM_H
#include <stddef.h>
#include <stdint.h>
#include "base/emb_common.h"
#include "base/workers.h"

/* |u * q| <= 255 * 127 per term: K terms stay inside int32 up to this K. */
#define EMB_I8_MAX_K 65536

/* Below this many multiply-adds (M * N * K) a product stays on the calling thread. Measured
 * (bench_int8_gemm --threshold, the shared 2-core Zen 5 VM, a helper woken from its condition
 * variable): two halves on two threads pay from about 30 M (M = 64, K = 384, N = 1536: 1.06x;
 * M = 32: 0.91x; M = 16: 0.75x), so MiniLM's products of 16 tokens never split. */
#define EMB_I8_PAR_MIN_MACS 2000000.0

/* Kernel sets, slowest first. AVX2 (no VNNI): u8 and s8 widened to int16, vpmaddwd. */
typedef enum { EMB_I8_SCALAR, EMB_I8_AVX2, EMB_I8_AVX_VNNI, EMB_I8_AVX512_VNNI, EMB_I8_NPATHS } emb_int8_gemm_path;

/* Whether this CPU runs set p. */
int emb_int8_gemm_path_supported(emb_int8_gemm_path p);
/* The set products use: the best one this CPU runs under the cap that EMBED_SIMD sets (generic:
 * scalar; avx2: avx2 or avx_vnni; avx512: any). Read once. */
emb_int8_gemm_path emb_int8_gemm_path_default(void);
/* Whether the default set has int8 dot-product instructions (VNNI): without them int8 products
 * are exact but slower than float32 sgemm. */
int emb_int8_gemm_path_fast(void);
const char *emb_int8_gemm_path_name(emb_int8_gemm_path p);

/* Packed weights (per channel, or in blocks). Layout: panels of 16 output channels; in a panel, for each group of 4 inputs
 * k..k+3, 64 bytes: channel c's 4 codes at bytes 4c..4c+3 (one vpdpbusd operand). K is padded
 * to Kp = K rounded up to 4, N to Np = N rounded up to 16, with zero codes: Np * Kp bytes of
 * codes, plus sw and colsum (4 bytes each per channel). Immutable once packed. */
typedef struct emb_int8_gemm_weights emb_int8_gemm_weights;

/* Rows n0..n0+rows-1 of a packed N x K weight from float rows W (row stride ldw floats):
 * emb_int8_gemm_weights_new then emb_int8_gemm_weights_set_rows once per part builds one packed weight from several
 * tensors (Q, K and V side by side). Fails on a non-finite weight. */
emb_int8_gemm_weights *emb_int8_gemm_weights_new(int N, int K, char err[EMB_ERR_LEN]);
int emb_int8_gemm_weights_set_rows(emb_int8_gemm_weights *w, int n0, int rows, const float *W, int ldw,
                                   char err[EMB_ERR_LEN]);
/* emb_int8_gemm_weights_new + emb_int8_gemm_weights_set_rows(w, 0, N, W, ldw): NULL with err on failure. */
emb_int8_gemm_weights *emb_int8_gemm_weights_pack(const float *W, int N, int K, int ldw, char err[EMB_ERR_LEN]);
/* From codes already quantized (q[n*K + k] in [-127, 127], -128 refused) and their scales. */
emb_int8_gemm_weights *emb_int8_gemm_weights_pack_codes(const int8_t *q, const float *scale, int N, int K,
                                                        char err[EMB_ERR_LEN]);
void emb_int8_gemm_weights_free(emb_int8_gemm_weights *w);
int emb_int8_gemm_weights_n(const emb_int8_gemm_weights *w);
int emb_int8_gemm_weights_k(const emb_int8_gemm_weights *w);
size_t emb_int8_gemm_weights_bytes(const emb_int8_gemm_weights *w); /* everything the object holds */
int8_t emb_int8_gemm_weights_code(const emb_int8_gemm_weights *w, int n, int k);
float emb_int8_gemm_weights_scale(const emb_int8_gemm_weights *w, int n); /* block weights: 0 */

/* Block weights (see the top): N x K with K a multiple of EMB_I8_BLOCK; every row set by
 * emb_int8_gemm_weights_set_rows_q8_0 (ggml Q8_0 rows: K / 32 blocks of an f16 scale, little-
 * endian, then 32 int8 codes; -128 taken as it is) or emb_int8_gemm_weights_set_rows (float rows
 * quantized per channel as emb_int8_gemm_weights_pack does, the channel's scale given to each of
 * its blocks), so that tensors of both kinds can sit side by side in one weight. A non-finite
 * block scale is refused. On top of the codes, 4 bytes per channel and block. */
#define EMB_I8_BLOCK 32
emb_int8_gemm_weights *emb_int8_gemm_weights_new_blocks(int N, int K, char err[EMB_ERR_LEN]);
int emb_int8_gemm_weights_set_rows_q8_0(emb_int8_gemm_weights *w, int n0, int rows, const void *q8_0,
                                        char err[EMB_ERR_LEN]);
/* new_blocks + set_rows_q8_0(w, 0, N, q8_0): NULL with err on failure. */
emb_int8_gemm_weights *emb_int8_gemm_weights_pack_blocks(const void *q8_0, int N, int K, char err[EMB_ERR_LEN]);
int emb_int8_gemm_weights_blocks(const emb_int8_gemm_weights *w); /* 1 for block weights */
float emb_int8_gemm_weights_block_scale(const emb_int8_gemm_weights *w, int n, int b);

/* Quantized activations (and their buffer, reused from call to call). Zero it, or use
 * EMB_I8_ACT_INIT; emb_int8_gemm_act_free releases the buffers. */
typedef struct {
    uint8_t *u; /* M rows of Kp codes (zero codes past K), 64-byte aligned */
    float *scale; /* sa per row */
    int32_t *zp; /* zp per row */
    int M, K, Kp;
    size_t cap_u, cap_rows;
} emb_int8_gemm_act;
#define EMB_I8_ACT_INIT                                                                                           \
    { 0 }
void emb_int8_gemm_act_free(emb_int8_gemm_act *a);

/* Quantizes A (M rows of K floats, row stride lda) into a. Rows are split over the workers
 * (may be NULL) when large. -1 when out of memory. A non-finite value gives a row of NaN
 * results (its scale is NaN), never a crash. */
int emb_int8_gemm_quantize(const float *A, int lda, int M, int K, emb_int8_gemm_act *a, emb_workers *workers);
/* The same with kernel set p (supported): the same codes on every set. */
int emb_int8_gemm_quantize_path(emb_int8_gemm_path p, const float *A, int lda, int M, int K, emb_int8_gemm_act *a,
                                emb_workers *workers);
/* The same in two steps, for a caller that quantizes rows inside its own pass over them (while
 * they are in cache): room for M rows of K codes (-1 when out of memory), then rows m0..m1-1 of
 * A, from any thread, each row once. */
int emb_int8_gemm_act_reserve(emb_int8_gemm_act *a, int M, int K);
void emb_int8_gemm_quantize_rows(emb_int8_gemm_act *a, const float *A, int lda, int m0, int m1);
/* Codes given directly (tests, other quantizers): rows of K codes, stride ldu bytes. */
int emb_int8_gemm_act_set_codes(emb_int8_gemm_act *a, const uint8_t *u, int ldu, const float *scale,
                                const int32_t *zp, int M, int K);

/* C (row stride ldc) = beta * C + dequantized a * w^T + bias (bias NULL: none; beta 0 or 1).
 * Split over the workers (may be NULL) above a measured size. -1 (C untouched) when a's K is
 * not w's K. */
int emb_int8_gemm_q(const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w, const float *bias, float beta,
                    float *C, int ldc, emb_workers *workers);
/* emb_int8_gemm_quantize + emb_int8_gemm_q: -1 when out of memory (C untouched). */
int emb_int8_gemm(const float *A, int lda, int M, const emb_int8_gemm_weights *w, const float *bias, float beta,
                  float *C, int ldc, emb_int8_gemm_act *scratch, emb_workers *workers);

/* The exact products P (int32, row stride ldp) with kernel set p (one thread): what the tests
 * compare on every set. p must be supported. -1 when the Ks differ or w holds blocks. */
int emb_int8_gemm_s32(emb_int8_gemm_path p, const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w, int32_t *P,
                      int ldp);
/* emb_int8_gemm_q with kernel set p on one thread. */
int emb_int8_gemm_q_path(emb_int8_gemm_path p, const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w,
                         const float *bias, float beta, float *C, int ldc);

#endif
