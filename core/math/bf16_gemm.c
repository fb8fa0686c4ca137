/* bfloat16 products (bf16_gemm.h): rounding, packing, the AVX512_BF16 tiles, the C loop that gives
 * the same sums, the choice of kernels and the split over the helper threads. The kernels that
 * widen bf16 to float32 (AVX2, AVX-512F) are bf16_gemm_wide.c. */
/* The register tiles are written as rows of macro calls, which clang-format cannot lay out (it
 * splits them differently at each pass): this file keeps its own layout. */
// clang-format off
#include "math/bf16_gemm.h"
#include "math/bf16_gemm_kernels.h"
#include "base/simd.h"
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define BF16_X86 1
#define T_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
#else
#define BF16_X86 0
#endif

struct emb_bf16w {
    int N, K, Np, Kp;
    uint32_t *pairs; /* Np / 16 panels of 16 * Kp / 2 pairs, 64-byte aligned */
};

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

/* ---------- the CPU ---------- */

static const char *const kernel_names[EMB_BF16_NKERNELS] = {
    "c (a C loop)", "avx2 (bf16 widened to float32, FMA)", "avx512 (bf16 widened to float32, FMA)", "avx512_bf16"};

const char *emb_bf16_kernels_name(emb_bf16_kernels k) {
    return k >= 0 && k < EMB_BF16_NKERNELS ? kernel_names[k] : "?";
}

int emb_bf16_kernels_supported(emb_bf16_kernels k) {
    if (k == EMB_BF16_C) return 1;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (k == EMB_BF16_AVX2) return emb_simd() >= EMB_SIMD_AVX2;
    if (k == EMB_BF16_AVX512) return emb_simd() >= EMB_SIMD_AVX512;
#if BF16_X86
    if (k == EMB_BF16_AVX512_BF16)
        return emb_simd() >= EMB_SIMD_AVX512 && __builtin_cpu_supports("avx512bf16");
#endif
#endif
    return 0;
}

/* The best kernels this CPU runs under the cap of EMBED_SIMD (read once). */
emb_bf16_kernels emb_bf16_kernels_default(void) {
    static atomic_int known = -1; /* the same answer from every thread */
    int f = atomic_load(&known);
    if (f < 0) {
        f = EMB_BF16_NKERNELS - 1;
        while (f > 0 && !emb_bf16_kernels_supported((emb_bf16_kernels)f)) f--;
        atomic_store(&known, f);
    }
    return (emb_bf16_kernels)f;
}

int emb_bf16_fast(void) { return emb_bf16_kernels_default() > EMB_BF16_C; }

/* ---------- rounding ---------- */

uint16_t emb_bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);          /* zero, denormal */
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN, quiet */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float emb_bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* ---------- weights ---------- */

void emb_bf16w_free(emb_bf16w *w) {
    if (!w) return;
    free(w->pairs);
    free(w);
}

emb_bf16w *emb_bf16w_new(int N, int K, char err[EMB_ERR_LEN]) {
    if (N < 1 || K < 1 || K > (1 << 24) || N > (1 << 24)) {
        emb_fail(err, "bf16 weight of %d x %d: sizes must be 1..16777216", N, K);
        return NULL;
    }
    emb_bf16w *w = calloc(1, sizeof *w);
    void *p = NULL;
    if (w) {
        w->N = N;
        w->K = K;
        w->Np = round_up(N, 16);
        w->Kp = round_up(K, 2);
    }
    size_t bytes = w ? (size_t)w->Np * (size_t)w->Kp * 2 : 0;
    if (!w || !(p = emb_alloc_large(bytes))) {
        free(w);
        emb_fail(err, "out of memory for a bf16 weight of %d x %d", N, K);
        return NULL;
    }
    memset(p, 0, bytes);
    w->pairs = p;
    return w;
}

/* Where (n, k) lies: its pair's 32 bits, and which half. */
static uint16_t *value_at(const emb_bf16w *w, int n, int k) {
    size_t pair = (size_t)(n / 16) * 16 * (size_t)(w->Kp / 2) + (size_t)(k / 2) * 16 + (size_t)(n % 16);
    return (uint16_t *)(w->pairs + pair) + (k & 1); /* little-endian: k in the low half */
}

int emb_bf16w_set_rows(emb_bf16w *w, int n0, int rows, const float *W, int ldw, char err[EMB_ERR_LEN]) {
    if (n0 < 0 || rows < 0 || n0 + rows > w->N || ldw < w->K)
        return emb_fail(err, "bf16 weight rows %d..%d (stride %d) outside its %d x %d", n0, n0 + rows - 1, ldw, w->N,
                        w->K);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < w->K; k++) {
            float x = W[(size_t)r * (size_t)ldw + k];
            if (!isfinite(x)) return emb_fail(err, "weight row %d, column %d is not a finite number", n0 + r, k);
            *value_at(w, n0 + r, k) = emb_bf16_round(x);
        }
    return 0;
}

emb_bf16w *emb_bf16w_pack(const float *W, int N, int K, int ldw, char err[EMB_ERR_LEN]) {
    emb_bf16w *w = emb_bf16w_new(N, K, err);
    if (w && emb_bf16w_set_rows(w, 0, N, W, ldw, err)) {
        emb_bf16w_free(w);
        return NULL;
    }
    return w;
}

size_t emb_bf16w_bytes(const emb_bf16w *w) { return sizeof *w + (size_t)w->Np * (size_t)w->Kp * 2; }
float emb_bf16w_value(const emb_bf16w *w, int n, int k) { return emb_bf16_to_float(*value_at(w, n, k)); }

/* ---------- activations ---------- */

void emb_bf16_act_free(emb_bf16_act *a) {
    free(a->pairs);
    memset(a, 0, sizeof *a);
}

int emb_bf16_convert(const float *A, int lda, int M, int K, emb_bf16_act *a) {
    if (M < 1 || K < 1 || lda < K) return -1;
    int Kp = round_up(K, 2);
    size_t need = (size_t)M * (size_t)(Kp / 2);
    if (need > a->cap) {
        void *p = emb_alloc_large(need * 4);
        if (!p) return -1;
        free(a->pairs);
        a->pairs = p;
        a->cap = need;
    }
    a->M = M;
    a->K = K;
    a->Kp = Kp;
    for (int m = 0; m < M; m++) {
        const float *x = A + (size_t)m * (size_t)lda;
        uint32_t *row = a->pairs + (size_t)m * (size_t)(Kp / 2);
        for (int j = 0; j < K / 2; j++)
            row[j] = emb_bf16_round(x[2 * j]) | (uint32_t)emb_bf16_round(x[2 * j + 1]) << 16;
        if (K & 1) row[K / 2] = emb_bf16_round(x[K - 1]);
    }
    return 0;
}

/* ---------- products ---------- */

typedef emb_bf16_args args;

/* A result below float32's normal range becomes a signed zero, as vdpbf16ps leaves it. */
static inline float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

static void tile_c(const args *g, int m, int p, int mr, int np) {
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < np; v++) {
            const uint32_t *a = g->a + (size_t)(m + r) * g->kp2, *b = g->b + (size_t)(p + v) * 16 * g->kp2;
            float s[16] = {0};
            for (int j = 0; j < g->kp2; j++) {
                float alo = emb_bf16_to_float((uint16_t)a[j]), ahi = emb_bf16_to_float((uint16_t)(a[j] >> 16));
                for (int c = 0; c < 16; c++) {
                    uint32_t w = b[16 * (size_t)j + c];
                    s[c] = ftz(s[c] + ahi * emb_bf16_to_float((uint16_t)(w >> 16)));
                    s[c] = ftz(s[c] + alo * emb_bf16_to_float((uint16_t)w));
                }
            }
            emb_bf16_epilogue(g, m + r, 16 * (p + v), s);
        }
}

#if BF16_X86
#define FOR_NP(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3)
#define FOR_TILE(X) FOR_NP(X, 0) FOR_NP(X, 1) FOR_NP(X, 2) FOR_NP(X, 3) FOR_NP(X, 4) FOR_NP(X, 5)
#define ACC_ZERO(r, v) __m512 c##r##v = _mm512_setzero_ps();
#define ACC_DP(r, v) \
    if (MR > r && NP > v) c##r##v = _mm512_dpbf16_ps(c##r##v, (__m512bh)x##r, (__m512bh)w##v);
#define ACC_ROW(r)                                                  \
    if (MR > r) {                                                   \
        __m512i x##r = _mm512_set1_epi32((int)a[r * kp2 + j]);      \
        FOR_NP(ACC_DP, r)                                           \
    }
#define ACC_STORE(r, v) \
    if (MR > r && NP > v) _mm512_store_ps(sums + 16 * (4 * r + v), c##r##v);

T_BF16 static inline __attribute__((always_inline)) void tile_bf16(const args *g, int m, int p, const int MR,
                                                                   const int NP) {
    const size_t kp2 = (size_t)g->kp2, ps = 16 * kp2;
    const uint32_t *a = g->a + (size_t)m * kp2, *b = g->b + (size_t)p * ps;
    FOR_TILE(ACC_ZERO)
    for (size_t j = 0; j < kp2; j++) {
        const uint32_t *bj = b + 16 * j;
        __m512i w0 = _mm512_load_si512(bj);
        __m512i w1 = NP > 1 ? _mm512_load_si512(bj + ps) : w0;
        __m512i w2 = NP > 2 ? _mm512_load_si512(bj + 2 * ps) : w0;
        __m512i w3 = NP > 3 ? _mm512_load_si512(bj + 3 * ps) : w0;
        ACC_ROW(0) ACC_ROW(1) ACC_ROW(2) ACC_ROW(3) ACC_ROW(4) ACC_ROW(5)
    }
    __attribute__((aligned(64))) float sums[6 * 4 * 16];
    FOR_TILE(ACC_STORE)
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NP; v++) emb_bf16_epilogue(g, m + r, 16 * (p + v), sums + 16 * (4 * r + v));
}

/* One function per tile shape, so that the 24 accumulators stay in registers. */
#define TILE(mr, np) \
    T_BF16 __attribute__((noinline)) static void tile_##mr##_##np(const args *g, int m, int p) { tile_bf16(g, m, p, mr, np); }
#define TILES(mr) TILE(mr, 1) TILE(mr, 2) TILE(mr, 3) TILE(mr, 4)
TILES(1) TILES(2) TILES(3) TILES(4) TILES(5) TILES(6)
#define NAMES(mr) {tile_##mr##_1, tile_##mr##_2, tile_##mr##_3, tile_##mr##_4}
static void (*const tiles[6][4])(const args *g, int m, int p) = {NAMES(1), NAMES(2), NAMES(3), NAMES(4), NAMES(5), NAMES(6)};

#endif

/* Rows m0..m1-1, panels p0..p1-1 with kernels k (supported): blocks of rows that stay in L2 while
 * every group of 4 panels meets them, in tiles of 6 rows x 4 panels. */
static void run(emb_bf16_kernels k, const args *g, int m0, int m1, int p0, int p1) {
    (void)k; /* elsewhere than x86-64, the C loop alone */
#if defined(__x86_64__) && defined(__GNUC__)
    if ((k == EMB_BF16_AVX2 || k == EMB_BF16_AVX512) && emb_bf16_wide_run(k == EMB_BF16_AVX512, g, m0, m1, p0, p1) == 0)
        return; /* else out of memory: the C loop */
#endif
    int mc = (int)(256 * 1024 / (8 * (size_t)g->kp2)) / 6 * 6;
    if (mc < 48) mc = 48;
    for (int c0 = m0; c0 < m1; c0 += mc) {
        int c1 = m1 - c0 < mc ? m1 : c0 + mc;
        for (int p = p0; p < p1; p += 4)
            for (int m = c0; m < c1; m += 6) {
                int mr = c1 - m < 6 ? c1 - m : 6, np = p1 - p < 4 ? p1 - p : 4;
#if BF16_X86
                if (k == EMB_BF16_AVX512_BF16) {
                    tiles[mr - 1][np - 1](g, m, p);
                    continue;
                }
#endif
                tile_c(g, m, p, mr, np);
            }
    }
}

static args make_args(const emb_bf16_act *a, const emb_bf16w *w, const float *bias, float beta, float *C, int ldc) {
    args g = {a->pairs, w->pairs, w->Kp / 2, w->N, bias, beta != 0.0f, C, ldc};
    return g;
}

int emb_bf16_gemm_path(emb_bf16_kernels k, const emb_bf16_act *a, const emb_bf16w *w, const float *bias, float beta, float *C,
                       int ldc) {
    if (a->K != w->K) return -1;
    args g = make_args(a, w, bias, beta, C, ldc);
    run(k, &g, 0, a->M, 0, w->Np / 16);
    return 0;
}

/* Tasks: blocks of 4 panels, times blocks of rows when there are fewer panel blocks than
 * twice the threads. */
typedef struct {
    const args *g;
    emb_bf16_kernels k;
    int M, panels, row_step, panel_blocks;
} job;

static void task(void *ctx, int t, int worker) {
    (void)worker;
    const job *j = ctx;
    int m0 = t / j->panel_blocks * j->row_step, p0 = t % j->panel_blocks * 4;
    int m1 = m0 + j->row_step < j->M ? m0 + j->row_step : j->M, p1 = p0 + 4 < j->panels ? p0 + 4 : j->panels;
    run(j->k, j->g, m0, m1, p0, p1);
}

int emb_bf16_gemm_q(const emb_bf16_act *a, const emb_bf16w *w, const float *bias, float beta, float *C, int ldc,
                    emb_workers *workers) {
    if (a->K != w->K) return -1;
    args g = make_args(a, w, bias, beta, C, ldc);
    int threads = emb_workers_helpers(workers) + 1, M = a->M, panels = w->Np / 16;
    if (threads < 2 || (double)M * w->N * w->K < EMB_BF16_PAR_MIN_MACS) {
        run(emb_bf16_kernels_default(), &g, 0, M, 0, panels);
        return 0;
    }
    job j = {&g, emb_bf16_kernels_default(), M, panels, M, (panels + 3) / 4};
    int row_blocks = (2 * threads + j.panel_blocks - 1) / j.panel_blocks;
    j.row_step = ((M + row_blocks - 1) / row_blocks + 5) / 6 * 6;
    row_blocks = (M + j.row_step - 1) / j.row_step;
    emb_workers_run(workers, row_blocks * j.panel_blocks, task, &j);
    return 0;
}

int emb_bf16_gemm(const float *A, int lda, int M, const emb_bf16w *w, const float *bias, float beta, float *C, int ldc,
                  emb_bf16_act *scratch, emb_workers *workers) {
    if (emb_bf16_convert(A, lda, M, w->K, scratch)) return -1;
    return emb_bf16_gemm_q(scratch, w, bias, beta, C, ldc, workers);
}
// clang-format on
