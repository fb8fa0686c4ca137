/* int8 products (int8_gemm.h): weight packing, activation quantization, the choice of kernel
 * set and the split over the helper threads. The loops themselves are int8_gemm_kernels.c. */
#include "math/int8_gemm.h"
#include "math/int8_gemm_kernels.h"
#include "math/half.h"
#include "base/simd.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct emb_int8_gemm_weights {
    int N, K, Np, Kp;
    int8_t *codes; /* Np / 16 panels of 16 * Kp bytes, 64-byte aligned */
    float *sw; /* Np scales (0 past N) */
    int32_t *colsum; /* Np sums of codes */
    int nb; /* block weights: K / EMB_I8_BLOCK blocks; 0: per channel */
    float *bs; /* block weights: panel p's 16 scales of block b at bs + (p * nb + b) * 16 (0 past N) */
    float *wcorr; /* block weights: Np sums d[n,b] colsum_b[n] (0 past N) */
};

/* Rows of activations quantized per task. */
#define I8_QUANT_ROWS 64

/* ---------- kernel sets ---------- */

static const char *const path_names[EMB_I8_NPATHS] = {"scalar", "avx2", "avx_vnni", "avx512_vnni"};

const char *emb_int8_gemm_path_name(emb_int8_gemm_path p) {
    return p >= 0 && p < EMB_I8_NPATHS ? path_names[p] : "?";
}

int emb_int8_gemm_path_supported(emb_int8_gemm_path p) {
    if (p == EMB_I8_SCALAR) return 1;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    int avx2 = emb_simd() >= EMB_SIMD_AVX2;
    if (p == EMB_I8_AVX2) return avx2;
    if (p == EMB_I8_AVX_VNNI) { /* CPUID.(7,1):EAX bit 4 (clang 14 has no "avxvnni" for __builtin_cpu_supports) */
        unsigned a = 0, b = 0, c = 0, d = 0;
        return avx2 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1u);
    }
    if (p == EMB_I8_AVX512_VNNI)
        return emb_simd() >= EMB_SIMD_AVX512 && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
#endif
    return 0;
}

static emb_int8_gemm_path path_choose(void) {
    for (int p = EMB_I8_NPATHS - 1; p > 0; p--)
        if (emb_int8_gemm_path_supported((emb_int8_gemm_path)p)) return (emb_int8_gemm_path)p;
    return EMB_I8_SCALAR;
}

emb_int8_gemm_path emb_int8_gemm_path_default(void) {
    static atomic_int chosen = -1; /* the same answer from every thread; computing it twice is harmless */
    int p = atomic_load(&chosen);
    if (p < 0) {
        p = (int)path_choose();
        atomic_store(&chosen, p);
    }
    return (emb_int8_gemm_path)p;
}

int emb_int8_gemm_path_fast(void) { return emb_int8_gemm_path_default() >= EMB_I8_AVX_VNNI; }

/* ---------- weights ---------- */

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

void emb_int8_gemm_weights_free(emb_int8_gemm_weights *w) {
    if (!w) return;
    free(w->codes);
    free(w->sw);
    free(w->colsum);
    free(w->bs);
    free(w->wcorr);
    free(w);
}

/* Per channel (blocks 0) or in blocks of EMB_I8_BLOCK inputs. */
static emb_int8_gemm_weights *weights_new(int N, int K, int blocks, char err[EMB_ERR_LEN]) {
    if (N < 1 || K < 1 || K > EMB_I8_MAX_K || N > (1 << 24)) {
        emb_fail(err, "int8 weight of %d x %d: sizes must be 1..16777216 x 1..%d", N, K, EMB_I8_MAX_K);
        return NULL;
    }
    if (blocks && K % EMB_I8_BLOCK) {
        emb_fail(err, "int8 block weight of %d x %d: K must be a multiple of %d", N, K, EMB_I8_BLOCK);
        return NULL;
    }
    emb_int8_gemm_weights *w = calloc(1, sizeof *w);
    if (!w) goto oom;
    w->N = N;
    w->K = K;
    w->Np = round_up(N, 16);
    w->Kp = round_up(K, 4);
    size_t bytes = (size_t)w->Np * (size_t)w->Kp;
    void *codes = emb_alloc_large(bytes);
    if (!codes) goto oom;
    w->codes = codes;
    memset(w->codes, 0, bytes);
    if (blocks) {
        w->nb = K / EMB_I8_BLOCK;
        w->bs = calloc((size_t)w->Np * (size_t)w->nb, sizeof *w->bs);
        w->wcorr = calloc((size_t)w->Np, sizeof *w->wcorr);
        if (!w->bs || !w->wcorr) goto oom;
        return w;
    }
    w->sw = calloc((size_t)w->Np, sizeof *w->sw);
    w->colsum = calloc((size_t)w->Np, sizeof *w->colsum);
    if (!w->sw || !w->colsum) goto oom;
    return w;
oom:
    emb_int8_gemm_weights_free(w);
    emb_fail(err, "out of memory for an int8 weight of %d x %d", N, K);
    return NULL;
}

emb_int8_gemm_weights *emb_int8_gemm_weights_new(int N, int K, char err[EMB_ERR_LEN]) {
    return weights_new(N, K, 0, err);
}
emb_int8_gemm_weights *emb_int8_gemm_weights_new_blocks(int N, int K, char err[EMB_ERR_LEN]) {
    return weights_new(N, K, 1, err);
}

/* Code of (n, k) in the packed layout. */
static size_t code_at(const emb_int8_gemm_weights *w, int n, int k) {
    return (size_t)(n / 16) * 16 * (size_t)w->Kp + (size_t)(k / 4) * 64 + (size_t)(n % 16) * 4 + (size_t)(k % 4);
}

/* Block weights: row n's block scales d (nb of them) and wcorr, from its codes (placed already). */
static void put_block_scales(emb_int8_gemm_weights *w, int n, const float *d) {
    double corr = 0.0;
    for (int b = 0; b < w->nb; b++) {
        int32_t sum = 0;
        for (int k = b * EMB_I8_BLOCK; k < (b + 1) * EMB_I8_BLOCK; k++) sum += w->codes[code_at(w, n, k)];
        w->bs[((size_t)(n / 16) * (size_t)w->nb + (size_t)b) * 16 + (size_t)(n % 16)] = d[b];
        corr += (double)d[b] * (double)sum;
    }
    w->wcorr[n] = (float)corr;
}

/* Row n from codes q (K of them) and its scale (block weights: the scale of each block). */
static int put_row(emb_int8_gemm_weights *w, int n, const int8_t *q, float scale) {
    if (w->nb) {
        float *d = malloc((size_t)w->nb * sizeof *d);
        if (!d) return -1;
        for (int k = 0; k < w->K; k++) w->codes[code_at(w, n, k)] = q[k];
        for (int b = 0; b < w->nb; b++) d[b] = scale;
        put_block_scales(w, n, d);
        free(d);
        return 0;
    }
    int32_t sum = 0;
    for (int k = 0; k < w->K; k++) {
        w->codes[code_at(w, n, k)] = q[k];
        sum += q[k];
    }
    w->sw[n] = scale;
    w->colsum[n] = sum;
    return 0;
}

int emb_int8_gemm_weights_set_rows(emb_int8_gemm_weights *w, int n0, int rows, const float *W, int ldw,
                                   char err[EMB_ERR_LEN]) {
    if (n0 < 0 || rows < 0 || n0 + rows > w->N || ldw < w->K)
        return emb_fail(err, "int8 weight rows %d..%d (stride %d) outside its %d x %d", n0, n0 + rows - 1, ldw,
                        w->N, w->K);
    int8_t *q = malloc((size_t)w->K);
    if (!q) return emb_fail(err, "out of memory packing an int8 weight");
    for (int r = 0; r < rows; r++) {
        const float *x = W + (size_t)r * (size_t)ldw;
        float amax = 0.0f;
        for (int k = 0; k < w->K; k++) {
            float a = x[k] < 0 ? -x[k] : x[k];
            if (!(a <= 3.0e38f)) {
                free(q);
                return emb_fail(err, "weight row %d, column %d is not a finite number", n0 + r, k);
            }
            amax = a > amax ? a : amax;
        }
        float scale = amax / 127.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
        for (int k = 0; k < w->K; k++) {
            float v = __builtin_roundf(x[k] * inv); /* half away from zero; |v| <= 127 up to rounding */
            q[k] = (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v);
        }
        if (put_row(w, n0 + r, q, scale)) {
            free(q);
            return emb_fail(err, "out of memory packing an int8 weight");
        }
    }
    free(q);
    return 0;
}

int emb_int8_gemm_weights_set_rows_q8_0(emb_int8_gemm_weights *w, int n0, int rows, const void *q8_0,
                                        char err[EMB_ERR_LEN]) {
    if (!w->nb) return emb_fail(err, "Q8_0 rows into an int8 weight packed per channel");
    if (n0 < 0 || rows < 0 || n0 + rows > w->N)
        return emb_fail(err, "int8 weight rows %d..%d outside its %d x %d", n0, n0 + rows - 1, w->N, w->K);
    float *d = malloc((size_t)w->nb * sizeof *d);
    if (!d) return emb_fail(err, "out of memory packing an int8 weight");
    const unsigned char *src = q8_0;
    for (int r = 0; r < rows; r++) {
        int n = n0 + r;
        for (int b = 0; b < w->nb; b++, src += 2 + EMB_I8_BLOCK) {
            d[b] = emb_f16_to_f32((uint16_t)(src[0] | src[1] << 8));
            if (!(d[b] <= 3.0e38f && d[b] >= -3.0e38f)) { /* NaN or infinity */
                free(d);
                return emb_fail(err, "Q8_0 row %d, block %d: the scale is not a finite number", n, b);
            }
            for (int j = 0; j < EMB_I8_BLOCK; j++)
                w->codes[code_at(w, n, b * EMB_I8_BLOCK + j)] = (int8_t)src[2 + j];
        }
        put_block_scales(w, n, d);
    }
    free(d);
    return 0;
}

emb_int8_gemm_weights *emb_int8_gemm_weights_pack_blocks(const void *q8_0, int N, int K, char err[EMB_ERR_LEN]) {
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_new_blocks(N, K, err);
    if (w && emb_int8_gemm_weights_set_rows_q8_0(w, 0, N, q8_0, err)) {
        emb_int8_gemm_weights_free(w);
        return NULL;
    }
    return w;
}

emb_int8_gemm_weights *emb_int8_gemm_weights_pack(const float *W, int N, int K, int ldw, char err[EMB_ERR_LEN]) {
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_new(N, K, err);
    if (w && emb_int8_gemm_weights_set_rows(w, 0, N, W, ldw, err)) {
        emb_int8_gemm_weights_free(w);
        return NULL;
    }
    return w;
}

emb_int8_gemm_weights *emb_int8_gemm_weights_pack_codes(const int8_t *q, const float *scale, int N, int K,
                                                        char err[EMB_ERR_LEN]) {
    for (size_t i = 0; i < (size_t)N * (size_t)(K > 0 ? K : 0); i++)
        if (q[i] == -128) {
            emb_fail(err, "int8 weight code -128 at row %zu (codes are -127..127)", i / (size_t)K);
            return NULL;
        }
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_new(N, K, err);
    if (!w) return NULL;
    for (int n = 0; n < N; n++)
        if (put_row(w, n, q + (size_t)n * (size_t)K, scale[n])) {
            emb_int8_gemm_weights_free(w);
            emb_fail(err, "out of memory packing an int8 weight");
            return NULL;
        }
    return w;
}

int emb_int8_gemm_weights_n(const emb_int8_gemm_weights *w) { return w->N; }
int emb_int8_gemm_weights_k(const emb_int8_gemm_weights *w) { return w->K; }
size_t emb_int8_gemm_weights_bytes(const emb_int8_gemm_weights *w) {
    size_t per_channel = w->nb ? ((size_t)w->nb + 1) * sizeof(float) : sizeof *w->sw + sizeof *w->colsum;
    return sizeof *w + (size_t)w->Np * (size_t)w->Kp + (size_t)w->Np * per_channel;
}
int8_t emb_int8_gemm_weights_code(const emb_int8_gemm_weights *w, int n, int k) {
    return w->codes[code_at(w, n, k)];
}
float emb_int8_gemm_weights_scale(const emb_int8_gemm_weights *w, int n) { return w->nb ? 0.0f : w->sw[n]; }
int emb_int8_gemm_weights_blocks(const emb_int8_gemm_weights *w) { return w->nb > 0; }
float emb_int8_gemm_weights_block_scale(const emb_int8_gemm_weights *w, int n, int b) {
    return w->nb ? w->bs[((size_t)(n / 16) * (size_t)w->nb + (size_t)b) * 16 + (size_t)(n % 16)] : 0.0f;
}

/* ---------- activations ---------- */

void emb_int8_gemm_act_free(emb_int8_gemm_act *a) {
    free(a->u);
    free(a->scale);
    free(a->zp);
    memset(a, 0, sizeof *a);
}

int emb_int8_gemm_act_reserve(emb_int8_gemm_act *a, int M, int K) {
    if (M < 1 || K < 1 || K > EMB_I8_MAX_K) return -1;
    int Kp = round_up(K, 4);
    size_t need = (size_t)M * (size_t)Kp;
    if (need > a->cap_u) {
        void *u = emb_alloc_large(need);
        if (!u) return -1;
        free(a->u);
        a->u = u;
        a->cap_u = need;
    }
    if ((size_t)M > a->cap_rows) {
        float *s = malloc((size_t)M * sizeof *s);
        int32_t *z = malloc((size_t)M * sizeof *z);
        if (!s || !z) {
            free(s);
            free(z);
            return -1;
        }
        free(a->scale);
        free(a->zp);
        a->scale = s;
        a->zp = z;
        a->cap_rows = (size_t)M;
    }
    a->M = M;
    a->K = K;
    a->Kp = Kp;
    return 0;
}

typedef struct {
    emb_int8_gemm_path path;
    const float *A;
    int lda;
    emb_int8_gemm_act *a;
} quant_job;

static void quantize_rows_path(emb_int8_gemm_path p, emb_int8_gemm_act *a, const float *A, int lda, int m0,
                               int m1) {
    for (int m = m0; m < m1; m++)
        emb_int8_gemm_kernels_quantize_row(p, A + (size_t)m * (size_t)lda, a->K, a->Kp,
                                           a->u + (size_t)m * (size_t)a->Kp, &a->scale[m], &a->zp[m]);
}

static void quant_task(void *ctx, int task, int worker) {
    (void)worker;
    quant_job *j = ctx;
    int m1 = (task + 1) * I8_QUANT_ROWS < j->a->M ? (task + 1) * I8_QUANT_ROWS : j->a->M;
    quantize_rows_path(j->path, j->a, j->A, j->lda, task * I8_QUANT_ROWS, m1);
}

void emb_int8_gemm_quantize_rows(emb_int8_gemm_act *a, const float *A, int lda, int m0, int m1) {
    quantize_rows_path(emb_int8_gemm_path_default(), a, A, lda, m0, m1);
}

int emb_int8_gemm_quantize_path(emb_int8_gemm_path p, const float *A, int lda, int M, int K, emb_int8_gemm_act *a,
                                emb_workers *workers) {
    if (lda < K || emb_int8_gemm_act_reserve(a, M, K)) return -1;
    quant_job j = {p, A, lda, a};
    int tasks = (M + I8_QUANT_ROWS - 1) / I8_QUANT_ROWS;
    emb_workers_run((double)M * K >= 65536.0 ? workers : NULL, tasks, quant_task, &j);
    return 0;
}

int emb_int8_gemm_quantize(const float *A, int lda, int M, int K, emb_int8_gemm_act *a, emb_workers *workers) {
    return emb_int8_gemm_quantize_path(emb_int8_gemm_path_default(), A, lda, M, K, a, workers);
}

int emb_int8_gemm_act_set_codes(emb_int8_gemm_act *a, const uint8_t *u, int ldu, const float *scale,
                                const int32_t *zp, int M, int K) {
    if (ldu < K || emb_int8_gemm_act_reserve(a, M, K)) return -1;
    for (int m = 0; m < M; m++) {
        uint8_t *row = a->u + (size_t)m * (size_t)a->Kp;
        memcpy(row, u + (size_t)m * (size_t)ldu, (size_t)K);
        memset(row + K, 0, (size_t)(a->Kp - K));
        a->scale[m] = scale[m];
        a->zp[m] = zp[m];
    }
    return 0;
}

/* ---------- products ---------- */

static emb_int8_gemm_kernels_args make_args(const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w) {
    emb_int8_gemm_kernels_args g;
    memset(&g, 0, sizeof g);
    g.u = a->u;
    g.sa = a->scale;
    g.zp = a->zp;
    g.wp = w->codes;
    g.sw = w->sw;
    g.colsum = w->colsum;
    g.bs = w->bs;
    g.wcorr = w->wcorr;
    g.nb = w->nb;
    g.Kp = w->Kp;
    g.N = w->N;
    return g;
}

/* The loops of set p over rows m0..m1-1 and panels p0..p1-1: per channel or in blocks. */
static void run(emb_int8_gemm_path p, const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1) {
    if (g->bs) emb_int8_gemm_blocks_run(p, g, m0, m1, p0, p1);
    else emb_int8_gemm_kernels_run(p, g, m0, m1, p0, p1);
}

int emb_int8_gemm_s32(emb_int8_gemm_path p, const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w, int32_t *P,
                      int ldp) {
    if (a->K != w->K || w->nb) return -1;
    emb_int8_gemm_kernels_args g = make_args(a, w);
    g.P = P;
    g.ldp = ldp;
    run(p, &g, 0, a->M, 0, w->Np / 16);
    return 0;
}

/* The kernels' arguments for C = beta C + A W^T + bias. */
static emb_int8_gemm_kernels_args output_args(const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w,
                                              const float *bias, float beta, float *C, int ldc) {
    emb_int8_gemm_kernels_args g = make_args(a, w);
    g.bias = bias;
    g.beta = beta != 0.0f;
    g.C = C;
    g.ldc = ldc;
    return g;
}

int emb_int8_gemm_q_path(emb_int8_gemm_path p, const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w,
                         const float *bias, float beta, float *C, int ldc) {
    if (a->K != w->K) return -1;
    emb_int8_gemm_kernels_args g = output_args(a, w, bias, beta, C, ldc);
    run(p, &g, 0, a->M, 0, w->Np / 16);
    return 0;
}

/* The grid of tasks: row blocks x panel blocks. */
typedef struct {
    const emb_int8_gemm_kernels_args *g;
    emb_int8_gemm_path path;
    int M, panels;
    int row_step, panel_step, panel_tasks;
} gemm_job;

static void gemm_task(void *ctx, int task, int worker) {
    (void)worker;
    const gemm_job *j = ctx;
    int mi = task / j->panel_tasks, pi = task % j->panel_tasks;
    int m0 = mi * j->row_step, m1 = m0 + j->row_step < j->M ? m0 + j->row_step : j->M;
    int p0 = pi * j->panel_step, p1 = p0 + j->panel_step < j->panels ? p0 + j->panel_step : j->panels;
    run(j->path, j->g, m0, m1, p0, p1);
}

/* The units the busiest of `threads` threads runs when `units` are cut into tasks of `step`. */
static int busiest_share(int units, int step, int threads) {
    int tasks = (units + step - 1) / step;
    return (tasks + threads - 1) / threads * step;
}

int emb_int8_gemm_q(const emb_int8_gemm_act *a, const emb_int8_gemm_weights *w, const float *bias, float beta,
                    float *C, int ldc, emb_workers *workers) {
    if (a->K != w->K) return -1;
    emb_int8_gemm_kernels_args g = output_args(a, w, bias, beta, C, ldc);
    gemm_job j = {&g, emb_int8_gemm_path_default(), a->M, w->Np / 16, a->M, w->Np / 16, 1};
    int threads = emb_workers_helpers(workers) + 1;
    if (threads < 2 || (double)a->M * w->N * w->K < EMB_I8_PAR_MIN_MACS) {
        run(j.path, &g, 0, a->M, 0, j.panels);
        return 0;
    }
    /* With at least two 6-row tiles for each of two tasks per thread, by rows alone (each task
     * runs full-width tiles), in one or two tasks per thread, whichever leaves the busiest
     * thread fewer tiles (at 128 rows on two threads, 2 tasks of 11 tiles, not 4 of 6, 6, 6 and
     * 4, which left one thread 12 tiles: bert-base 1 x 128, 9 % faster). Else by panels, in
     * whole blocks of 4 (one AVX-512 tile's width: a split inside a block leaves its tasks on
     * narrower tiles), the block count per task that gives the busiest thread the fewest
     * blocks; rows split too (in multiples of the 6-row tile) when there are fewer panel tasks
     * than threads. */
    int want = 2 * threads;
    /* A weight too large for L2 whose rows all fit one of the kernels' row chunks is split by
     * panels instead: by rows, every thread would stream the whole weight from memory once,
     * where by panels each streams its share (bert-base 1 x 128 on two threads: 4-8 % faster;
     * at 4 x 128, or with MiniLM's weights, which stay in L2, rows were as fast or faster) */
    int by_rows = a->M >= 12 * want;
    if (by_rows && (size_t)w->Np * w->Kp > 2 * EMB_I8K_L2_WEIGHTS &&
        a->M <= emb_int8_gemm_kernels_row_chunk(w->Kp))
        by_rows = 0;
    if (by_rows) {
        int tiles = (a->M + 5) / 6, one = (tiles + threads - 1) / threads, two = (tiles + want - 1) / want;
        /* ties: two, for a thread held up */
        j.row_step = 6 * (busiest_share(tiles, two, threads) <= busiest_share(tiles, one, threads) ? two : one);
    } else {
        int blocks = (j.panels + 3) / 4, step = 1;
        for (int b = 2; b <= blocks; b++) /* ties: the fewer tasks */
            if (busiest_share(blocks, b, threads) <= busiest_share(blocks, step, threads)) step = b;
        j.panel_step = step * 4;
        j.panel_tasks = (j.panels + j.panel_step - 1) / j.panel_step;
        int row_tasks = (threads + j.panel_tasks - 1) / j.panel_tasks;
        j.row_step = ((a->M + row_tasks - 1) / row_tasks + 5) / 6 * 6;
    }
    int row_tasks = (a->M + j.row_step - 1) / j.row_step;
    emb_workers_run(workers, row_tasks * j.panel_tasks, gemm_task, &j);
    return 0;
}

int emb_int8_gemm(const float *A, int lda, int M, const emb_int8_gemm_weights *w, const float *bias, float beta,
                  float *C, int ldc, emb_int8_gemm_act *scratch, emb_workers *workers) {
    if (emb_int8_gemm_quantize(A, lda, M, w->K, scratch, workers)) return -1;
    return emb_int8_gemm_q(scratch, w, bias, beta, C, ldc, workers);
}
