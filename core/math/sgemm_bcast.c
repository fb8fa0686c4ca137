/* See sgemm_bcast.h. The kernel keeps a tile of C transposed in registers: 12 columns x 32 rows
 * (24 accumulators of 16 rows each); per k it loads the 32 packed values of A and broadcasts one
 * element of each of the 12 weight rows. A block of 16 rows takes k in pairs instead of leaving
 * half the registers empty. Tiles go back to C through 16 x 16 transposes. */
#include "math/sgemm_bcast.h"
#include "math/gelu.h"
#include "math/sgemm_rows.h"
#include "math/sgemm_tiles.h"
#include "base/simd.h"
#include <stdint.h>
#include <string.h>

size_t emb_sgemm_bcast_scratch(int K) { return 32 * (size_t)K + 16; }
size_t emb_sgemm_bcast_panel_floats(int M, int N) { return (size_t)(M + 31) / 32 * 32 * (size_t)N; }
size_t emb_sgemm_bcast_weight_floats(int N, int K) { return (size_t)((N + 11) / 12) * (size_t)((K + 1) / 2) * 24; }

void emb_sgemm_bcast_pack_weight(int N, int K, const float *W, int ldw, float *Wp) {
    size_t kh = (size_t)(K + 1) / 2;
    int halves = !emb_sgemm_bcast_panels_supported(); /* below AVX-512: two 6-column halves (sgemm_tiles.h) */
    for (int t = 0; t < (N + 11) / 12; t++)
        for (int k = 0; k < (K + 1) / 2 * 2; k++)
            for (int j = 0; j < 12; j++) { /* a short last tile repeats its last row, an odd K ends in 0 */
                int n = t * 12 + j < N ? t * 12 + j : N - 1;
                size_t at = halves ? (size_t)(j / 6) * kh * 12 + (size_t)(k / 2) * 12 + 2 * (j % 6) + k % 2
                                   : (size_t)(k / 2) * 24 + 2 * j + k % 2;
                Wp[(size_t)t * kh * 24 + at] = k < K ? W[(size_t)n * ldw + k] : 0.0f;
            }
}

int emb_sgemm_bcast_supported(void) { return 1; }
int emb_sgemm_bcast_panels_supported(void) { return emb_simd() == EMB_SIMD_AVX512; }

/* Columns n0.. of W: rows n0.. of W as stored, or packed tile n0 / 12 (n0 a multiple of 12). */
static const float *w_cols(const float *W, int ldw, int n0, int K) {
    return ldw == EMB_SGEMM_BCAST_PACKED ? W + (size_t)(n0 / 12) * ((K + 1) / 2) * 24 : W + (size_t)n0 * ldw;
}

/* Where a 32-row tile's sums go: into C's rows (OUT_ROWS), or, as an emb_panels_out says, into
 * 32-row panel columns (32 floats per column, every lane: those past mr hold padding, never read
 * back into C) as bias + sums, that added onto what the panel holds (bias + sums first, then the
 * panel's value), or GELU of it. */
#define OUT_ROWS (-1)

#if defined(__x86_64__) && defined(__GNUC__)
#define SB_X86 1
#include "math/transpose16.h"
#define T_AVX512 __attribute__((target("avx512f")))

/* P[k * 32 + m] = A[m][k] for m < mr (zeros up to 32), k < K. */
T_AVX512 static void pack_rows(int mr, int K, const float *A, int lda, float *P) {
    emb_transpose_rows(mr, 32, K, A, lda, P, 32);
}

/* C[i][j] = bias[j] + cols[j] lane i, or without a bias C[i][j] += cols[j] lane i, for i < rows,
 * j < ncols (ncols <= 16 vectors given). */
T_AVX512 static void add_transposed(const __m512 *cols, int ncols, int rows, const float *bias, float *C,
                                    int ldc) {
    __m512 r[16];
    for (int j = 0; j < 16; j++) r[j] = j < ncols ? cols[j] : _mm512_setzero_ps();
    emb_transpose16(r);
    __mmask16 m = (__mmask16)((1u << ncols) - 1u);
    if (bias) {
        __m512 b = _mm512_maskz_loadu_ps(m, bias);
        for (int i = 0; i < rows; i++) _mm512_mask_storeu_ps(C + (size_t)i * ldc, m, _mm512_add_ps(r[i], b));
        return;
    }
    for (int i = 0; i < rows; i++) {
        float *c = C + (size_t)i * ldc;
        _mm512_mask_storeu_ps(c, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, c), r[i]));
    }
}

/* Accumulating into C: its tile's rows are fetched while the tile is computed. */
static inline void prefetch_rows(const float *bias, int rows, const float *C, int ldc) {
    if (!bias && C)
        for (int i = 0; i < rows; i++) __builtin_prefetch(C + (size_t)i * ldc, 1, 3);
}

/* Weight row j of a tile of nr (short tiles repeat their last row, whose sums are dropped). */
#define WROW(j) (W + (size_t)((j) < nr ? (j) : nr - 1) * ldw)

/* Columns n0..n0+nr-1 (nr <= 12) of rows 0..mr-1 (mr <= 32), from A packed 32 wide; W as stored
 * (12 rows of stride ldw) or packed (ldw EMB_SGEMM_BCAST_PACKED: one stream read in order, its
 * lines asked for 16 pairs of k ahead). The same sums in the same order either way. */
#define W_AHEAD (16 * 24)
T_AVX512 static void kernel_32x12(int mr, int nr, int K, const float *P, const float *W, int ldw,
                                  const float *bias, float *C, int ldc, int out) {
    if (out == OUT_ROWS) prefetch_rows(bias, mr, C, ldc);
    __m512 lo[12], hi[12];
#pragma GCC unroll 12
    for (int j = 0; j < 12; j++) lo[j] = hi[j] = _mm512_setzero_ps();
    if (ldw == EMB_SGEMM_BCAST_PACKED) {
        int k = 0;
        for (; k + 2 <= K; k += 2) {
            const float *w = W + (size_t)k * 12;
            __builtin_prefetch(w + W_AHEAD, 0, 3);
            __builtin_prefetch(w + W_AHEAD + 16, 0, 3);
            __m512 a0 = _mm512_load_ps(P + (size_t)k * 32), a1 = _mm512_load_ps(P + (size_t)k * 32 + 16);
            __m512 a2 = _mm512_load_ps(P + (size_t)k * 32 + 32), a3 = _mm512_load_ps(P + (size_t)k * 32 + 48);
#pragma GCC unroll 12
            for (int j = 0; j < 12; j++) {
                __m512 b = _mm512_set1_ps(w[2 * j]), b1 = _mm512_set1_ps(w[2 * j + 1]);
                lo[j] = _mm512_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm512_fmadd_ps(a1, b, hi[j]);
                lo[j] = _mm512_fmadd_ps(a2, b1, lo[j]);
                hi[j] = _mm512_fmadd_ps(a3, b1, hi[j]);
            }
        }
        if (k < K) {
            const float *w = W + (size_t)k * 12;
            __m512 a0 = _mm512_load_ps(P + (size_t)k * 32), a1 = _mm512_load_ps(P + (size_t)k * 32 + 16);
#pragma GCC unroll 12
            for (int j = 0; j < 12; j++) {
                __m512 b = _mm512_set1_ps(w[2 * j]);
                lo[j] = _mm512_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm512_fmadd_ps(a1, b, hi[j]);
            }
        }
    } else {
        const float *w[12];
        for (int j = 0; j < 12; j++) w[j] = WROW(j);
        for (int k = 0; k < K; k++) {
            __m512 a0 = _mm512_load_ps(P + (size_t)k * 32), a1 = _mm512_load_ps(P + (size_t)k * 32 + 16);
#pragma GCC unroll 12
            for (int j = 0; j < 12; j++) {
                __m512 b = _mm512_set1_ps(w[j][k]);
                lo[j] = _mm512_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm512_fmadd_ps(a1, b, hi[j]);
            }
        }
    }
    if (out == OUT_ROWS) {
        add_transposed(lo, nr, mr < 16 ? mr : 16, bias, C, ldc);
        if (mr > 16) add_transposed(hi, nr, mr - 16, bias, C + (size_t)16 * ldc, ldc);
        return;
    }
    for (int j = 0; j < nr; j++) {
        __m512 b = _mm512_set1_ps(bias ? bias[j] : 0.0f), x0 = _mm512_add_ps(lo[j], b),
               x1 = _mm512_add_ps(hi[j], b);
        if (out == EMB_PANELS_ADD) {
            x0 = _mm512_add_ps(x0, _mm512_load_ps(C + 32 * j));
            x1 = _mm512_add_ps(x1, _mm512_load_ps(C + 32 * j + 16));
        }
        _mm512_store_ps(C + 32 * j, x0);
        _mm512_store_ps(C + 32 * j + 16, x1);
    }
    if (out == EMB_PANELS_GELU) emb_gelu(C, (size_t)nr * 32);
}

/* P[(k / 2) * 32 + 2 m + k % 2] = A[m][k] for m < mr, k < K (zeros elsewhere, up to an even K):
 * 16 rows as pairs of floats, each pair one double, transposed 8 x 8 doubles at a time. */
T_AVX512 static inline void transpose8_pd(__m512d *r) {
    __m512d t[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        r[4 * i] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0x88);
        r[4 * i + 1] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0x88);
        r[4 * i + 2] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0xDD);
        r[4 * i + 3] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0xDD);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f64x2(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f64x2(r[i], r[i + 4], 0xDD);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}
T_AVX512 static void pack_pairs(int mr, int K, const float *A, int lda, float *P) {
    int pairs = (K + 1) / 2;
    for (int g = 0; g < 16; g += 8)
        for (int p0 = 0; p0 < pairs; p0 += 8) {
            int kn = K - 2 * p0 < 16 ? K - 2 * p0 : 16, pn = (kn + 1) / 2;
            __mmask16 km = (__mmask16)((1u << kn) - 1u);
            __m512d r[8];
            for (int i = 0; i < 8; i++)
                r[i] = g + i < mr ? _mm512_castps_pd(_mm512_maskz_loadu_ps(km, A + (size_t)(g + i) * lda + 2 * p0))
                                  : _mm512_setzero_pd();
            transpose8_pd(r);
            for (int i = 0; i < pn; i++) _mm512_store_pd((double *)(P + (size_t)(p0 + i) * 32 + 2 * g), r[i]);
        }
}

/* Columns n0..n0+nr-1 (nr <= 12) of rows 0..mr-1 (mr <= 16), from A packed in pairs: each
 * accumulator holds 8 rows x (even k, odd k), so a step reads 2 vectors of A and 12 pairs of
 * weights for 24 multiply-adds (a 16-row x 24-column tile of single k would read 25 values for
 * 24). Each sum is its even k plus its odd k. */
T_AVX512 static void kernel_16x12(int mr, int nr, int K, const float *P, const float *W, int ldw,
                                  const float *bias, float *C, int ldc) {
    prefetch_rows(bias, mr, C, ldc);
    __m512 lo[12], hi[12];
#pragma GCC unroll 12
    for (int j = 0; j < 12; j++) lo[j] = hi[j] = _mm512_setzero_ps();
    int k = 0;
    if (ldw == EMB_SGEMM_BCAST_PACKED) { /* pairs in order (an odd K's last one ends in 0, as A's) */
        for (; k < K; k += 2) {
            const float *wp = W + (size_t)k * 12;
            __builtin_prefetch(wp + W_AHEAD, 0, 3);
            __builtin_prefetch(wp + W_AHEAD + 16, 0, 3);
            __m512 a0 = _mm512_load_ps(P + (size_t)k * 16), a1 = _mm512_load_ps(P + (size_t)k * 16 + 16);
#pragma GCC unroll 12
            for (int j = 0; j < 12; j++) {
                double pair;
                memcpy(&pair, wp + 2 * j, sizeof pair);
                __m512 b = _mm512_castpd_ps(_mm512_set1_pd(pair));
                lo[j] = _mm512_fmadd_ps(a0, b, lo[j]);
                hi[j] = _mm512_fmadd_ps(a1, b, hi[j]);
            }
        }
        K = k; /* nothing left for the loops below */
    }
    const float *w[12];
    for (int j = 0; j < 12; j++) w[j] = ldw == EMB_SGEMM_BCAST_PACKED ? W : WROW(j);
    for (; k + 2 <= K; k += 2) {
        __m512 a0 = _mm512_load_ps(P + (size_t)k * 16), a1 = _mm512_load_ps(P + (size_t)k * 16 + 16);
        /* At each 16th k the 12 weight rows' lines at k are asked for at once (into L2), before
         * the loads that read them. One-process A/B at 1 x 16: bert-base 0.93-0.97 of the time on
         * one and two threads, MiniLM 0.92-1.00 on one, 0.95-0.96 on two; same bits. Why was not
         * measured (perhaps the loads, queued behind multiply-adds that wait on earlier ones,
         * reached a missing line late). Lines 2 to 8 ahead were slower on MiniLM (whose weights
         * partly stay in L3), and the same in the 32-row kernel cost MiniLM 3-5 % on two threads.
         * Unrolled, or w[] leaves the registers (1.12-1.16). */
        if (k % 16 == 0)
#pragma GCC unroll 12
            for (int j = 0; j < 12; j++) __builtin_prefetch(w[j] + k, 0, 2);
#pragma GCC unroll 12
        for (int j = 0; j < 12; j++) {
            double pair; /* two floats of the weight row, 4-byte aligned: memcpy, not a double load */
            memcpy(&pair, w[j] + k, sizeof pair);
            __m512 b = _mm512_castpd_ps(_mm512_set1_pd(pair));
            lo[j] = _mm512_fmadd_ps(a0, b, lo[j]);
            hi[j] = _mm512_fmadd_ps(a1, b, hi[j]);
        }
    }
    if (k < K) { /* an odd K: its last k, in the even lanes (A's odd lanes are 0 there) */
        __m512 a0 = _mm512_load_ps(P + (size_t)k * 16), a1 = _mm512_load_ps(P + (size_t)k * 16 + 16);
#pragma GCC unroll 12
        for (int j = 0; j < 12; j++) {
            __m512 b = _mm512_maskz_mov_ps(0x5555, _mm512_set1_ps(w[j][k]));
            lo[j] = _mm512_fmadd_ps(a0, b, lo[j]);
            hi[j] = _mm512_fmadd_ps(a1, b, hi[j]);
        }
    }
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    __m512 u[12];
    for (int j = 0; j < 12; j++)
        u[j] = _mm512_permutex2var_ps(_mm512_add_ps(lo[j], _mm512_permute_ps(lo[j], 0xB1)), even,
                                      _mm512_add_ps(hi[j], _mm512_permute_ps(hi[j], 0xB1)));
    add_transposed(u, nr, mr, bias, C, ldc);
}

/* Rows 0..mr-1 (mr <= 32) of A and C. Below 16 rows of a W as stored, the dot-product kernels of
 * sgemm_rows are faster (no packing, no empty lanes); of a packed W, its 16-row tile (the rows
 * past mr zero). 16 to 24 rows run as 16 in pairs of k plus the rest; above 24, one 32-row tile
 * (its empty lanes cost less than a second pass over W). Panels in or out (a_panel: A already
 * packed; out other than OUT_ROWS: C is this block's panel) take the 32-row tile whatever mr. */
static void row_block512(int mr, int N, int K, const float *A, int lda, const float *a_panel, const float *W,
                         int ldw, const float *bias, float *C, int ldc, int out, float *P) {
    if (a_panel || out != OUT_ROWS || mr > 24) {
        if (!a_panel) pack_rows(mr, K, A, lda, P);
        for (int n0 = 0; n0 < N; n0 += 12)
            kernel_32x12(mr, N - n0 < 12 ? N - n0 : 12, K, a_panel ? a_panel : P, w_cols(W, ldw, n0, K), ldw,
                         bias ? bias + n0 : NULL, out == OUT_ROWS ? C + n0 : C + (size_t)n0 * 32, ldc, out);
    } else if (mr < 16 && ldw != EMB_SGEMM_BCAST_PACKED) {
        if (bias)
            for (int i = 0; i < mr; i++) memcpy(C + (size_t)i * ldc, bias, (size_t)N * sizeof(float));
        emb_sgemm_rows(mr, N, K, A, lda, W, ldw, C, ldc);
    } else {
        int m16 = mr < 16 ? mr : 16;
        pack_pairs(m16, K, A, lda, P);
        for (int n0 = 0; n0 < N; n0 += 12)
            kernel_16x12(m16, N - n0 < 12 ? N - n0 : 12, K, P, w_cols(W, ldw, n0, K), ldw, bias ? bias + n0 : NULL,
                         C + n0, ldc);
        if (mr > 16)
            row_block512(mr - 16, N, K, A + (size_t)16 * lda, lda, NULL, W, ldw, bias, C + (size_t)16 * ldc, ldc,
                         OUT_ROWS, P);
    }
}

#else
#define SB_X86 0
#endif

/* Rows 0..mr-1 of a block: AVX-512's kernels, or (rows in and out only) sgemm_tiles' AVX2 or
 * plain C tiles. */
static void row_block(int mr, int N, int K, const float *A, int lda, const float *a_panel, const float *W, int ldw,
                      const float *bias, float *C, int ldc, int out, float *P) {
#if SB_X86
    if (emb_simd() == EMB_SIMD_AVX512) {
        row_block512(mr, N, K, A, lda, a_panel, W, ldw, bias, C, ldc, out, P);
        return;
    }
#endif
    (void)a_panel, (void)out; /* panels are AVX-512's (emb_sgemm_bcast_panels_supported) */
    emb_sgemm_tiles(mr, N, K, A, lda, W, ldw, bias, C, ldc, P);
}

/* A product's input (A's rows, or its panels) and output (C's rows, or panels of N columns). */
typedef struct {
    const float *A, *a_panels, *W, *bias;
    float *C, *scratch;
    int out; /* OUT_ROWS or an emb_panels_out */
    size_t scratch_n;
    int M, N, K, lda, ldw, ldc, nchunks, nstep;
} bcast_job;

/* Row block rb (32 rows from a multiple of 32, so each row meets the same kernel however the work
 * is split), column chunk c. */
static void bcast_block(const bcast_job *j, int rb, int c, int worker) {
    int m0 = rb * 32, n0 = c * j->nstep;
    int mr = j->M - m0 < 32 ? j->M - m0 : 32, nc = j->N - n0 < j->nstep ? j->N - n0 : j->nstep;
    float *P = (float *)(((uintptr_t)(j->scratch + (size_t)worker * j->scratch_n) + 63) & ~(uintptr_t)63);
    float *C = j->out == OUT_ROWS ? j->C + (size_t)m0 * j->ldc + n0 : j->C + (size_t)m0 * j->N + (size_t)n0 * 32;
    if (nc > 0)
        row_block(mr, nc, j->K, j->A ? j->A + (size_t)m0 * j->lda : NULL, j->lda,
                  j->a_panels ? j->a_panels + (size_t)m0 * j->K : NULL, w_cols(j->W, j->ldw, n0, j->K), j->ldw,
                  j->bias ? j->bias + n0 : NULL, C, j->ldc, j->out, P);
}

/* Task t: row block t (nchunks 1), or column chunk t over every row block. */
static void bcast_task(void *cv, int t, int worker) {
    const bcast_job *j = cv;
    if (j->nchunks == 1) {
        bcast_block(j, t, 0, worker);
        return;
    }
    for (int rb = 0; rb < (j->M + 31) / 32; rb++) bcast_block(j, rb, t, worker);
}

static void run(bcast_job *j, emb_workers *workers) {
    int M = j->M, N = j->N, K = j->K;
    int threads = emb_workers_helpers(workers) + 1, mblocks = (M + 31) / 32, nchunks = 1;
    int par = threads > 1 && (double)M * N * K >= EMB_SGEMM_BCAST_PAR_MACS;
    if (par && mblocks <= 2 * threads) {
        /* too few row blocks to share out: split the columns instead, each task all the rows of
         * its chunk, so that each weight row is streamed by one thread (by rows, every thread
         * streamed the whole weight: bert-base 1 x 128 on two threads 4-6 % faster); chunks of >= 96
         * (each task packs A's rows again, a cost that small chunks would not repay) */
        nchunks = 2 * threads;
        if (nchunks > (N + 95) / 96) nchunks = (N + 95) / 96;
    } else if (!par && mblocks > 1 && mblocks <= 8 && emb_sgemm_bcast_panels_supported()) {
        /* one thread, 2 to 8 row blocks: chunks of 96 columns, each over every row block, so that
         * the weight is read from memory once rather than once per row block (the chunk stays in
         * L2 while the blocks pass). bert-base's products alone at 128 rows: 0.96-0.975 of the
         * time in one process, and 1.2x as fast in runs where the row order had lost a fifth of
         * its rate to the host's memory traffic; whole passes, one process: bert-base 1 x 128
         * 0.95-0.97, MiniLM level (0.99-1.01); at 16 blocks bert-base 0.99-1.02, hence 8. Only
         * with panels: below AVX-512 each chunk packs A's rows again, which cost more than the
         * reuse saved (MiniLM 1 x 128 on AVX2: 9 % of the time in the packing) */
        nchunks = (N + 95) / 96;
    }
    j->scratch_n = emb_sgemm_bcast_scratch(K);
    j->nstep = ((N + nchunks - 1) / nchunks + 23) / 24 * 24;
    j->nchunks = (N + j->nstep - 1) / j->nstep;
    emb_workers_run(par ? workers : NULL, j->nchunks == 1 ? mblocks : j->nchunks, bcast_task, j);
}

void emb_sgemm_bcast(int M, int N, int K, const float *A, int lda, const float *W, int ldw, const float *bias,
                     float *C, int ldc, float *scratch, emb_workers *workers) {
    bcast_job j = {.A = A,
                   .W = W,
                   .bias = bias,
                   .C = C,
                   .scratch = scratch,
                   .out = OUT_ROWS,
                   .M = M,
                   .N = N,
                   .K = K,
                   .lda = lda,
                   .ldw = ldw,
                   .ldc = ldc};
    run(&j, workers);
}

void emb_sgemm_bcast_to_panels(int M, int N, int K, const float *A, int lda, const float *a_panels, const float *W,
                               int ldw, const float *bias, emb_panels_out out, float *panels, float *scratch,
                               emb_workers *workers) {
    bcast_job j = {.A = a_panels ? NULL : A,
                   .a_panels = a_panels,
                   .W = W,
                   .bias = bias,
                   .C = panels,
                   .scratch = scratch,
                   .out = (int)out,
                   .M = M,
                   .N = N,
                   .K = K,
                   .lda = lda,
                   .ldw = ldw};
    run(&j, workers);
}

/* Packs (to_rows 0) or unpacks one 32-row panel per task. */
typedef struct {
    const float *src;
    float *dst;
    int M, K, ld, to_rows;
} pack_job;
static void pack_task(void *cv, int t, int worker) {
    (void)worker;
    const pack_job *j = cv;
    int m0 = t * 32, mr = j->M - m0 < 32 ? j->M - m0 : 32;
#if SB_X86
    if (j->to_rows) /* the panel's K columns of 32 floats become mr rows of K */
        emb_transpose_rows(j->K, j->K, mr, j->src + (size_t)m0 * j->K, 32, j->dst + (size_t)m0 * j->ld, j->ld);
    else pack_rows(mr, j->K, j->src + (size_t)m0 * j->ld, j->ld, j->dst + (size_t)m0 * j->K);
#else
    (void)j, (void)mr; /* panels are AVX-512's */
#endif
}

static void run_packing(pack_job *j, emb_workers *workers) {
    emb_workers_run((double)j->M * j->K >= 65536.0 ? workers : NULL, (j->M + 31) / 32, pack_task, j);
}

void emb_sgemm_bcast_pack_panels(int M, int K, const float *A, int lda, float *panels, emb_workers *workers) {
    pack_job j = {A, panels, M, K, lda, 0};
    run_packing(&j, workers);
}

void emb_sgemm_bcast_unpack_panels(int M, int N, const float *panels, float *C, int ldc, emb_workers *workers) {
    pack_job j = {panels, C, M, N, ldc, 1};
    run_packing(&j, workers);
}

void emb_sgemm_bcast_panels(int M, int N, int K, const float *panels, const float *W, int ldw, const float *bias,
                            float *C, int ldc, float *scratch, emb_workers *workers) {
    bcast_job j = {.a_panels = panels,
                   .W = W,
                   .bias = bias,
                   .C = C,
                   .scratch = scratch,
                   .out = OUT_ROWS,
                   .M = M,
                   .N = N,
                   .K = K,
                   .ldw = ldw,
                   .ldc = ldc};
    run(&j, workers);
}
