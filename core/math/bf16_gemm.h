/* bfloat16 matrix products for the linear layers: C[M,N] = beta C + A[M,K] W[N,K]^T (+ bias),
 * the product of the encoder's linear_acc with both operands rounded to bfloat16 (8 significant
 * bits, float32's range) and the sums kept in float32.
 *
 * Weights are rounded once (emb_bf16w_pack), activations at each call (emb_bf16_convert), both
 * to nearest even, a float32 denormal to zero. The sums are those of AVX-512 BF16's vdpbf16ps:
 * per output, for each pair of inputs k, k+1 in order, s = s + a[k+1] w[k+1], then
 * s = s + a[k] w[k], each rounded to nearest even with a denormal result flushed to zero.
 * A product of two bfloat16 values is exact in float32, so the C loop that does the same gives
 * the same bits (tests/c/test_bf16_gemm.c compares them), apart from products below float32's
 * normal range (1e-38), which the instruction keeps exactly and the loop rounds first.
 *
 * The kernels: AVX512_BF16's vdpbf16ps (AMD Zen 4 and later, Intel Cooper Lake and Sapphire
 * Rapids), else, with AVX-512F or with AVX2 and FMA, bf16 widened to float32 in registers and fused
 * multiply-adds (the same sums: the products are exact), else the C loop, several times slower
 * than float32. */
#ifndef EMBED_BF16_GEMM_H
#define EMBED_BF16_GEMM_H
#include <stddef.h>
#include <stdint.h>
#include "base/emb_common.h"
#include "base/workers.h"

/* Below this many multiply-adds (M * N * K) a product stays on the calling thread. */
#define EMB_BF16_PAR_MIN_MACS 16000000.0

/* The kernels, slowest first: the C loop; bf16 widened to float32 in AVX2 or AVX-512F registers
 * (CPUs without AVX512_BF16); AVX512_BF16's vdpbf16ps. Each gives the same bits. */
typedef enum {
    EMB_BF16_C,
    EMB_BF16_AVX2,
    EMB_BF16_AVX512,
    EMB_BF16_AVX512_BF16,
    EMB_BF16_NKERNELS
} emb_bf16_kernels;
/* Whether this CPU runs kernels k under the cap of EMBED_SIMD (emb_simd). */
int emb_bf16_kernels_supported(emb_bf16_kernels k);
/* The best of them (read once): what products use. */
emb_bf16_kernels emb_bf16_kernels_default(void);
const char *emb_bf16_kernels_name(emb_bf16_kernels k);
/* Whether the default has vector kernels (the C loop is several times slower than float32). */
int emb_bf16_fast(void);

/* x rounded to bfloat16 (nearest even; a denormal to a signed zero; NaN stays NaN). */
uint16_t emb_bf16_round(float x);
float emb_bf16_to_float(uint16_t h);

/* Packed weights: panels of 16 output channels; in a panel, for each pair of inputs k, k + 1,
 * 64 bytes: channel c's two values at bytes 4c (k) and 4c + 2 (k + 1). K padded to even and N
 * to a multiple of 16 with zeros. Immutable once packed. */
typedef struct emb_bf16w emb_bf16w;

/* As int8_gemm.h's emb_int8_gemm_weights_new / _set_rows / _pack; a non-finite weight is refused. */
emb_bf16w *emb_bf16w_new(int N, int K, char err[EMB_ERR_LEN]);
int emb_bf16w_set_rows(emb_bf16w *w, int n0, int rows, const float *W, int ldw, char err[EMB_ERR_LEN]);
emb_bf16w *emb_bf16w_pack(const float *W, int N, int K, int ldw, char err[EMB_ERR_LEN]);
void emb_bf16w_free(emb_bf16w *w);
size_t emb_bf16w_bytes(const emb_bf16w *w);
/* The weight (n, k) as packed, back in float32. */
float emb_bf16w_value(const emb_bf16w *w, int n, int k);

/* Activations rounded to bfloat16, in pairs (the buffer is reused from call to call). */
typedef struct {
    uint32_t *pairs; /* M rows of Kp / 2 pairs: k in the low half, k + 1 in the high half */
    int M, K, Kp;
    size_t cap;
} emb_bf16_act;
void emb_bf16_act_free(emb_bf16_act *a);
/* A (M rows of K floats, row stride lda) into a. -1 when out of memory. */
int emb_bf16_convert(const float *A, int lda, int M, int K, emb_bf16_act *a);

/* C (row stride ldc) = beta * C + a * w^T + bias (bias NULL: none; beta 0 or 1), with kernels k
 * (emb_bf16_kernels_supported must say yes), on one thread. -1 (C untouched) when a's K is not
 * w's K. */
int emb_bf16_gemm_path(emb_bf16_kernels k, const emb_bf16_act *a, const emb_bf16w *w, const float *bias,
                       float beta, float *C, int ldc);
/* The product with the CPU's kernels, split over the workers (may be NULL) above
 * EMB_BF16_PAR_MIN_MACS. -1 (C untouched) when the Ks differ. */
int emb_bf16_gemm_q(const emb_bf16_act *a, const emb_bf16w *w, const float *bias, float beta, float *C, int ldc,
                    emb_workers *workers);
/* emb_bf16_convert + emb_bf16_gemm_q: -1 when out of memory or the Ks differ (C untouched). */
int emb_bf16_gemm(const float *A, int lda, int M, const emb_bf16w *w, const float *bias, float beta, float *C,
                  int ldc, emb_bf16_act *scratch, emb_workers *workers);

#endif
