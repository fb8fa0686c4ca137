/* Float32 products with the weight read in place (core/sgemm_bcast.h): small-integer inputs, whose
 * products and sums are exact in float32, give exactly the integer sums computed here in 64-bit
 * integers; random inputs agree with double-precision sums to float rounding. Shapes cover each
 * kernel (blocks of 25 to 32 rows, 16 rows in pairs of k, 17 to 24 rows as 16 + the rest, fewer
 * than 16 rows), ragged tails of rows, columns (12-column tiles), K (16 lanes, odd K for the
 * pairs), row strides wider than the rows, unaligned matrices and scratch, and nothing written
 * outside C. With a bias, C = bias + A W^T is written without being read (C starts as NaN). Split
 * over 1, 2 and 3 helper threads, by row blocks or by columns, the results are the same bits as on
 * one thread. Inputs packed once as panels (Q, K, V's shared input) give bias + product within float
 * rounding, the same bits as emb_sgemm_bcast where every block is a 32-row tile, and the same
 * bits on three threads as on one. A feed-forward through panels (GELU(A W1^T + b1) W2^T + C) agrees with double sums and
 * libm's erf, on one thread and on three; where every row block is a 32-row tile, its panels hold
 * exactly emb_gelu of emb_sgemm_bcast's output. Products written as panels (bias + A W^T set,
 * or added onto panels holding C) agree with double sums, from A's rows or its panels, with the
 * same bits either way and on three threads; panels unpack to the very rows packed, leaving the
 * columns past N untouched. All of it runs again with the weight packed once
 * (emb_sgemm_bcast_pack_weight, ldw EMB_SGEMM_BCAST_PACKED), whose results are also the same bits
 * as the weight as stored wherever no block has fewer than 16 rows. Every kernel set runs the
 * products (EMBED_SIMD=avx2 or generic forces the others); the panels only AVX-512, and below it
 * each row's bits are checked to be its own, whatever the batch around it. */
#include "check.h"
#include "math/gelu.h"
#include "math/sgemm_bcast.h"
#include "base/workers.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 0x2545F4914F6CDD1Dull;
static float draw(int ints) {
    unsigned long long r = check_rng(&rng);
    return ints ? (float)((int)(r % 15) - 7) : (float)((double)(r >> 11) / 4503599627370496.0 - 1.0);
}

/* On one thread, 2 to 8 row blocks run by column chunks of 96 (250 x 200), more by row blocks. */
typedef struct {
    int M, N, K;
} shape;
static const shape shapes[] = {{1, 1, 1},     {15, 13, 17},   {16, 24, 16},    {16, 25, 33},   {17, 12, 15},
                               {31, 11, 100}, {32, 12, 16},   {32, 23, 384},   {33, 37, 31},   {40, 50, 64},
                               {48, 97, 129}, {64, 384, 384}, {100, 61, 1000}, {16, 384, 384}, {130, 1536, 96},
                               {56, 29, 47},  {20, 40, 384},  {60, 13, 18},    {250, 200, 40}, {257, 200, 40}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

typedef struct {
    int M, N, K, lda, ldw, ldc;
    float *A, *W, *C, *C0, *scratch, *bias; /* A, W, C, scratch start one float past 64-byte alignment */
    float *Wp; /* W packed */
    void *blocks[4];
} problem;

/* The second run: every product reads W packed. */
static int packed_w;
static const float *wt(const problem *p) { return packed_w ? p->Wp : p->W; }
static int ldw(const problem *p) { return packed_w ? EMB_SGEMM_BCAST_PACKED : p->ldw; }

/* aligned_alloc wants a size that is a multiple of the alignment (ASan refuses others) */
static float *floats64(size_t n) { return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64); }

static void problem_new(problem *p, shape s, int ints, int threads) {
    p->M = s.M, p->N = s.N, p->K = s.K, p->lda = s.K + 3, p->ldw = s.K + 1, p->ldc = s.N + 5;
    size_t nA = (size_t)p->M * p->lda, nW = (size_t)p->N * p->ldw,
           nC = (size_t)(p->M + 1) * p->ldc; /* + a guard row */
    size_t nS = (size_t)threads * emb_sgemm_bcast_scratch(p->K);
    size_t sizes[4] = {nA + 1, nW + 1, nC + 1, nS + 1};
    for (int i = 0; i < 4; i++) p->blocks[i] = floats64(sizes[i]);
    p->A = (float *)p->blocks[0] + 1, p->W = (float *)p->blocks[1] + 1, p->C = (float *)p->blocks[2] + 1;
    p->scratch = (float *)p->blocks[3] + 1;
    p->C0 = malloc(nC * sizeof(float));
    p->bias = malloc((size_t)p->N * sizeof(float));
    for (int n = 0; n < p->N; n++) p->bias[n] = ints ? (float)((int)(check_rng(&rng) % 41) - 20) : draw(0);
    for (size_t i = 0; i < nA; i++) p->A[i] = draw(ints);
    for (size_t i = 0; i < nW; i++) p->W[i] = draw(ints);
    for (size_t i = 0; i < nC; i++) p->C0[i] = ints ? (float)((int)(check_rng(&rng) % 101) - 50) : 0.25f;
    memcpy(p->C, p->C0, nC * sizeof(float));
    p->Wp = floats64(emb_sgemm_bcast_weight_floats(p->N, p->K));
    emb_sgemm_bcast_pack_weight(p->N, p->K, p->W, p->ldw, p->Wp);
}
static void problem_free(problem *p) {
    for (int i = 0; i < 4; i++) free(p->blocks[i]);
    free(p->C0);
    free(p->bias);
    free(p->Wp);
}

/* One shape: small integers (exact) or uniform floats in [-1, 1), on the caller alone, adding onto
 * C or (with_bias) writing bias + product over NaNs. */
static void run_shape(shape s, int ints, int with_bias) {
    problem p;
    problem_new(&p, s, ints, 1);
    if (with_bias)
        for (int m = 0; m < p.M; m++)
            for (int n = 0; n < p.N; n++) p.C[(size_t)m * p.ldc + n] = p.C0[(size_t)m * p.ldc + n] = NAN;
    emb_sgemm_bcast(p.M, p.N, p.K, p.A, p.lda, wt(&p), ldw(&p), with_bias ? p.bias : NULL, p.C, p.ldc, p.scratch,
                    NULL);
    int bad = 0, outside = 0;
    double worst = 0;
    for (int m = 0; m <= p.M; m++)
        for (int n = 0; n < p.ldc; n++) {
            size_t at = (size_t)m * p.ldc + n;
            if (m == p.M || n >= p.N) { /* the guard row and the columns past N */
                outside += memcmp(&p.C[at], &p.C0[at], sizeof(float)) != 0; /* bit patterns: NaN too */
                continue;
            }
            double sum = with_bias ? p.bias[n] : p.C0[at], mag = 0;
            int64_t isum = (int64_t)sum;
            for (int k = 0; k < p.K; k++) {
                double t = (double)p.A[(size_t)m * p.lda + k] * p.W[(size_t)n * p.ldw + k];
                sum += t;
                mag += t < 0 ? -t : t;
                isum += (int64_t)p.A[(size_t)m * p.lda + k] * (int64_t)p.W[(size_t)n * p.ldw + k];
            }
            double err = (double)p.C[at] - (ints ? (double)isum : sum);
            err = err < 0 ? -err : err;
            if (!(ints ? err == 0 : err <= (p.K + 1) * 2.4e-7 * (mag + 1.0))) bad++; /* NaN: bad */
            if (err > worst) worst = err;
        }
    CHECK(bad == 0, "%d x %d x %d (%s, %s): %d results off, worst |error| %.3g", p.M, p.N, p.K,
          ints ? "integers, exact" : "floats", with_bias ? "bias + product" : "C += product", bad, worst);
    CHECK(outside == 0, "%d x %d x %d: %d values written outside C's %d rows and %d columns", p.M, p.N, p.K,
          outside, p.M, p.N);
    int r = p.M % 32;
    if (packed_w && (r == 0 || r == 16 || r > 24)) { /* no block below 16 rows: as W as stored */
        size_t nC = (size_t)p.M * p.ldc;
        float *asis = malloc(nC * sizeof(float));
        memcpy(asis, p.C0, nC * sizeof(float));
        emb_sgemm_bcast(p.M, p.N, p.K, p.A, p.lda, p.W, p.ldw, with_bias ? p.bias : NULL, asis, p.ldc, p.scratch,
                        NULL);
        CHECK(memcmp(asis, p.C, nC * sizeof(float)) == 0,
              "%d x %d x %d: packed W gives the same bits as W as stored", p.M, p.N, p.K);
        free(asis);
    }
    problem_free(&p);
}

/* The same product on 1 thread and on 1 + helpers threads: the same bits. */
static void run_threads(shape s, int helpers) {
    emb_workers *w = emb_workers_new(helpers);
    problem p;
    problem_new(&p, s, 0, helpers + 1);
    float *one = malloc((size_t)p.M * p.ldc * sizeof(float));
    const float *bias = helpers == 2 ? p.bias : NULL; /* one of the three counts with a bias */
    emb_sgemm_bcast(p.M, p.N, p.K, p.A, p.lda, wt(&p), ldw(&p), bias, p.C, p.ldc, p.scratch, NULL);
    memcpy(one, p.C, (size_t)p.M * p.ldc * sizeof(float));
    memcpy(p.C, p.C0, (size_t)p.M * p.ldc * sizeof(float));
    emb_sgemm_bcast(p.M, p.N, p.K, p.A, p.lda, wt(&p), ldw(&p), bias, p.C, p.ldc, p.scratch, w);
    CHECK(w && emb_workers_helpers(w) == helpers, "%d helper threads started", helpers);
    CHECK(memcmp(one, p.C, (size_t)p.M * p.ldc * sizeof(float)) == 0,
          "%d x %d x %d on %d threads: the same bits as on one", p.M, p.N, p.K, helpers + 1);
    free(one);
    problem_free(&p);
    emb_workers_free(w);
}

/* GELU(A W1^T + b1) W2^T added onto C, through panels, against double sums and libm's erf. */
static void run_ffn(int M, int F, int K, int N, int helpers) {
    emb_workers *w = helpers ? emb_workers_new(helpers) : NULL;
    float *A = malloc(sizeof(float) * M * K), *W1 = malloc(sizeof(float) * F * K), *b1 = malloc(sizeof(float) * F),
          *W2 = malloc(sizeof(float) * N * F), *C = malloc(sizeof(float) * M * N),
          *C0 = malloc(sizeof(float) * M * N), *C1 = malloc(sizeof(float) * M * F),
          *panels = floats64(emb_sgemm_bcast_panel_floats(M, F)),
          *scratch = malloc(sizeof(float) * (helpers + 1) * emb_sgemm_bcast_scratch(K > F ? K : F));
    double *inner = malloc(sizeof(double) * M * F);
    for (int i = 0; i < M * K; i++) A[i] = draw(0);
    for (int i = 0; i < F * K; i++) W1[i] = draw(0);
    for (int i = 0; i < F; i++) b1[i] = draw(0);
    for (int i = 0; i < N * F; i++) W2[i] = draw(0);
    for (int i = 0; i < M * N; i++) C[i] = C0[i] = draw(0);
    emb_sgemm_bcast_to_panels(M, F, K, A, K, NULL, W1, K, b1, EMB_PANELS_GELU, panels, scratch, w);
    emb_sgemm_bcast_panels(M, N, F, panels, W2, F, NULL, C, N, scratch, w);
    for (int m = 0; m < M; m++)
        for (int f = 0; f < F; f++) {
            double x = b1[f];
            for (int k = 0; k < K; k++) x += (double)A[m * K + k] * W1[f * K + k];
            inner[m * F + f] = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
        }
    int bad = 0;
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double want = C0[m * N + n], mag = fabs(want);
            for (int f = 0; f < F; f++) {
                want += inner[m * F + f] * W2[n * F + f];
                mag += fabs(inner[m * F + f] * W2[n * F + f]);
            }
            double err = fabs(C[m * N + n] - want);
            if (!(err <= 1e-5 * (mag + 1.0))) bad++;
            if (err > worst) worst = err;
        }
    CHECK(bad == 0,
          "feed-forward %d x %d x %d -> %d through panels, %d threads: %d results off, worst |error| %.3g", M, K,
          F, N, helpers + 1, bad, worst);
    if (M % 32 == 0 || M % 32 > 24) { /* every block a 32-row tile: the same sums as emb_sgemm_bcast */
        emb_sgemm_bcast(M, F, K, A, K, W1, K, b1, C1, F, scratch, NULL);
        emb_gelu(C1, (size_t)M * F);
        int differ = 0;
        for (int m = 0; m < M; m++)
            for (int f = 0; f < F; f++)
                differ +=
                    memcmp(&C1[m * F + f], &panels[(size_t)m / 32 * 32 * F + (size_t)f * 32 + m % 32], 4) != 0;
        CHECK(differ == 0, "panels of %d x %d: %d values differ from emb_gelu(emb_sgemm_bcast)", M, F, differ);
    }
    free(A), free(W1), free(b1), free(W2), free(C), free(C0), free(C1), free(panels), free(scratch), free(inner);
    emb_workers_free(w);
}

/* bias + A W^T from A packed once as panels. */
static void run_packed(int M, int N, int K) {
    emb_workers *w = emb_workers_new(2);
    problem p;
    problem_new(&p, (shape){M, N, K}, 0, 3);
    float *panels = floats64(emb_sgemm_bcast_panel_floats(M, K)), *direct = malloc(sizeof(float) * M * p.ldc),
          *one = malloc(sizeof(float) * M * p.ldc);
    emb_sgemm_bcast_pack_panels(M, K, p.A, p.lda, panels, NULL);
    emb_sgemm_bcast_panels(M, N, K, panels, wt(&p), ldw(&p), p.bias, p.C, p.ldc, p.scratch, NULL);
    memcpy(one, p.C, sizeof(float) * M * p.ldc);
    emb_sgemm_bcast(M, N, K, p.A, p.lda, wt(&p), ldw(&p), p.bias, direct, p.ldc, p.scratch, NULL);
    emb_sgemm_bcast_pack_panels(M, K, p.A, p.lda, panels, w);
    emb_sgemm_bcast_panels(M, N, K, panels, wt(&p), ldw(&p), p.bias, p.C, p.ldc, p.scratch, w);
    int bad = 0, differ = 0, threads_differ = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            size_t at = (size_t)m * p.ldc + n;
            double sum = p.bias[n], mag = 0;
            for (int k = 0; k < K; k++) {
                double t = (double)p.A[(size_t)m * p.lda + k] * p.W[(size_t)n * p.ldw + k];
                sum += t;
                mag += fabs(t);
            }
            if (!(fabs(one[at] - sum) <= (K + 1) * 2.4e-7 * (mag + 1.0))) bad++;
            differ += memcmp(&one[at], &direct[at], sizeof(float)) != 0;
            threads_differ += memcmp(&one[at], &p.C[at], sizeof(float)) != 0;
        }
    CHECK(bad == 0, "%d x %d x %d from packed panels: %d results off", M, N, K, bad);
    if (M % 32 == 0 || M % 32 > 24)
        CHECK(differ == 0, "%d x %d x %d from packed panels: %d values differ from emb_sgemm_bcast", M, N, K,
              differ);
    CHECK(threads_differ == 0, "%d x %d x %d from packed panels on 3 threads: %d values differ from 1", M, N, K,
          threads_differ);
    free(panels), free(direct), free(one);
    problem_free(&p);
    emb_workers_free(w);
}

/* Rows packed as panels and unpacked again: the same bits, nothing written past N in a row. */
static void run_roundtrip(int M, int N) {
    emb_workers *w = emb_workers_new(2);
    problem p;
    problem_new(&p, (shape){M, N, 1}, 0, 1);
    float *panels = floats64(emb_sgemm_bcast_panel_floats(M, N));
    for (int helpers = 0; helpers <= 2; helpers += 2) {
        for (size_t i = 0; i < (size_t)M * p.ldc; i++) p.C[i] = -1.0f;
        emb_sgemm_bcast_pack_panels(M, N, p.C0, p.ldc, panels, helpers ? w : NULL);
        emb_sgemm_bcast_unpack_panels(M, N, panels, p.C, p.ldc, helpers ? w : NULL);
        int differ = 0, past = 0;
        for (int m = 0; m < M; m++) {
            differ += memcmp(p.C + (size_t)m * p.ldc, p.C0 + (size_t)m * p.ldc, sizeof(float) * N) != 0;
            for (int n = N; n < p.ldc; n++) past += p.C[(size_t)m * p.ldc + n] != -1.0f;
        }
        CHECK(differ == 0 && past == 0,
              "%d x %d packed and unpacked on %d threads: %d rows differ, %d floats past N", M, N, helpers + 1,
              differ, past);
    }
    free(panels);
    problem_free(&p);
    emb_workers_free(w);
}

/* bias + A W^T as panels, set or added onto panels holding C0, against double sums; from A's
 * rows and from its panels, on one thread and on three: the same bits all three ways. */
static void run_to_panels(int M, int N, int K, emb_panels_out mode) {
    emb_workers *w = emb_workers_new(2);
    problem p;
    problem_new(&p, (shape){M, N, K}, 0, 3);
    float *a_panels = floats64(emb_sgemm_bcast_panel_floats(M, K)),
          *out = floats64(emb_sgemm_bcast_panel_floats(M, N)), *rows[3];
    emb_sgemm_bcast_pack_panels(M, K, p.A, p.lda, a_panels, NULL);
    for (int v = 0; v < 3; v++) { /* A's rows; its panels; its panels on 3 threads */
        rows[v] = malloc(sizeof(float) * M * p.ldc);
        if (mode == EMB_PANELS_ADD) emb_sgemm_bcast_pack_panels(M, N, p.C0, p.ldc, out, NULL);
        else
            for (size_t i = 0; i < emb_sgemm_bcast_panel_floats(M, N); i++) out[i] = NAN;
        emb_sgemm_bcast_to_panels(M, N, K, v ? NULL : p.A, p.lda, v ? a_panels : NULL, wt(&p), ldw(&p), p.bias,
                                  mode, out, p.scratch, v == 2 ? w : NULL);
        emb_sgemm_bcast_unpack_panels(M, N, out, rows[v], p.ldc, NULL);
    }
    int bad = 0, differ = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            size_t at = (size_t)m * p.ldc + n;
            double sum = p.bias[n], mag = fabs(p.bias[n]);
            for (int k = 0; k < K; k++) {
                double t = (double)p.A[(size_t)m * p.lda + k] * p.W[(size_t)n * p.ldw + k];
                sum += t;
                mag += fabs(t);
            }
            if (mode == EMB_PANELS_ADD) sum += p.C0[at], mag += fabs(p.C0[at]);
            if (!(fabs(rows[0][at] - sum) <= (K + 2) * 2.4e-7 * (mag + 1.0))) bad++;
            differ += memcmp(&rows[0][at], &rows[1][at], 4) != 0 || memcmp(&rows[0][at], &rows[2][at], 4) != 0;
        }
    const char *how = mode == EMB_PANELS_ADD ? "added onto panels" : "written as panels";
    CHECK(bad == 0, "%d x %d x %d %s: %d results off", M, N, K, how, bad);
    CHECK(differ == 0, "%d x %d x %d %s: %d values differ between rows, panels and 3 threads", M, N, K, how,
          differ);
    for (int v = 0; v < 3; v++) free(rows[v]);
    free(a_panels), free(out);
    problem_free(&p);
    emb_workers_free(w);
}

/* Below AVX-512 (sgemm_tiles): each row of C is the same bits whatever the rows around it, i.e.
 * row m of an M-row product equals that row computed alone (M = 1), with and without a bias, so
 * a text's vector does not depend on its batch; and, the sums being in k order, the weight as
 * stored and packed give the same bits. */
static void run_row_invariance(shape s) {
    problem p;
    problem_new(&p, s, 0, 1);
    float *alone = malloc(sizeof(float) * (size_t)p.ldc);
    int differ = 0;
    for (int b = 0; b < 2; b++) {
        const float *bias = b ? p.bias : NULL;
        memcpy(p.C, p.C0, (size_t)p.M * p.ldc * sizeof(float));
        emb_sgemm_bcast(p.M, p.N, p.K, p.A, p.lda, wt(&p), ldw(&p), bias, p.C, p.ldc, p.scratch, NULL);
        for (int m = 0; m < p.M; m++) {
            memcpy(alone, p.C0 + (size_t)m * p.ldc, sizeof(float) * (size_t)p.N);
            emb_sgemm_bcast(1, p.N, p.K, p.A + (size_t)m * p.lda, p.lda, wt(&p), ldw(&p), bias, alone, p.ldc,
                            p.scratch, NULL);
            differ += memcmp(alone, p.C + (size_t)m * p.ldc, sizeof(float) * (size_t)p.N) != 0;
        }
    }
    CHECK(differ == 0, "%d x %d x %d (%s): %d rows differ from the same row alone", p.M, p.N, p.K,
          packed_w ? "packed" : "as stored", differ);
    free(alone);
    problem_free(&p);
}

int main(void) {
    CHECK(emb_sgemm_bcast_supported(), "emb_sgemm_bcast runs on every kernel set");
    int panels = emb_sgemm_bcast_panels_supported();
    for (packed_w = 0; packed_w <= 1; packed_w++) {
        if (!panels)
            for (size_t i = 0; i < NSHAPES; i++) run_row_invariance(shapes[i]);
        for (size_t i = 0; i < NSHAPES; i++) {
            for (int b = 0; b < 2; b++) {
                run_shape(shapes[i], 1, b);
                run_shape(shapes[i], 0, b);
            }
        }
        /* split by columns, each task every row block of its columns, up to 2 row blocks per thread:
     * 16 rows; 8 rows and 40 rows (a block of 8 on the dot-product kernels); 128 rows (4 blocks,
     * on 2 threads); 130 rows on 3 and 4 threads (5 blocks), by row blocks on 2 */
        static const shape par[] = {
            {16, 384, 384}, {130, 384, 384}, {40, 1536, 64}, {8, 3072, 384}, {128, 768, 96}};
        for (size_t i = 0; i < sizeof par / sizeof par[0]; i++)
            for (int h = 1; h <= 3; h++) run_threads(par[i], h);
        if (!panels) continue; /* the panels below are AVX-512's */
        static const int packed[][3] = {{1, 5, 3}, {20, 37, 64}, {64, 384, 384}, {90, 50, 129}, {130, 24, 40}};
        for (size_t i = 0; i < sizeof packed / sizeof packed[0]; i++)
            run_packed(packed[i][0], packed[i][1], packed[i][2]);
        static const int ffn[][4] = {
            {1, 13, 17, 11}, {20, 48, 40, 24}, {33, 50, 19, 12}, {64, 96, 64, 40}, {94, 37, 70, 13}};
        for (size_t i = 0; i < sizeof ffn / sizeof ffn[0]; i++)
            for (int h = 0; h <= 2; h += 2) run_ffn(ffn[i][0], ffn[i][1], ffn[i][2], ffn[i][3], h);
        static const int to_panels[][3] = {
            {1, 5, 3}, {20, 37, 64}, {56, 384, 384}, {90, 50, 129}, {130, 24, 1536}};
        for (size_t i = 0; i < sizeof to_panels / sizeof to_panels[0]; i++)
            for (int add = 0; add <= 1; add++)
                run_to_panels(to_panels[i][0], to_panels[i][1], to_panels[i][2],
                              add ? EMB_PANELS_ADD : EMB_PANELS_SET);
        static const int roundtrip[][2] = {{1, 1}, {17, 20}, {32, 16}, {100, 384}};
        for (size_t i = 0; i < sizeof roundtrip / sizeof roundtrip[0]; i++)
            run_roundtrip(roundtrip[i][0], roundtrip[i][1]);
    }
    return check_report();
}
