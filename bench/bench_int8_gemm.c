/* int8 products (core/int8_gemm) against OpenBLAS sgemm on the linear layers' shapes of MiniLM-L6
 * (K, N: 384 x 1152 fused QKV, 384 x 384, 384 x 1536, 1536 x 384) and bert-base (768 x 2304,
 * 768 x 768, 768 x 3072, 3072 x 768), M = 16, 128, 4096 tokens, 1 and 2 threads, measured in
 * the same run: GOPS (2 M N K per second) and int8 / sgemm. "int8" includes quantizing the
 * activations (every call does); "kern" is the product alone. Where the set in use has bf16 kernels (AVX512_BF16, or AVX2),
 * also core/bf16_gemm (weights and activations in bfloat16, rounding included): "bf16", bf / sg. Then the relative error
 * ||C_int8 - C_f32|| / ||C_f32|| on random weights and on the golden model's weights.
 *
 *   bench_int8_gemm [--quick | M]  REPS runs (default 7), median; --quick: M = 16 and 128 only;
 *                                  M: that many rows only
 *   bench_int8_gemm --threshold    one thread against two on small products (the split size)
 *   EMBED_SIMD=avx2 ...            the kernels of a lower set
 *
 * With oneDNN (Debian's libdnnl-dev; not a dependency of the project), its u8 x s8 matmul with
 * a runtime source zero point and per-channel output scales on the same shapes:
 *   cc -O2 -DBENCH_DNNL -Icore -Iinclude/sqlite-embed $(pkg-config --cflags openblas) \
 *      bench/bench_int8_gemm.c bench/random_model.c -o /tmp/bench_int8 BUILD/libembedcore.a \
 *      $(pkg-config --libs openblas) -ldnnl -lgomp -lutf8proc -lcjson -lxxhash -lpthread -lm -lsqlite3
 * Prints a table and "RESULT key value" lines. */
#include "bench_clock.h"
#include "math/bf16_gemm.h"
#include "math/int8_gemm.h"
#include "nn/safetensors.h"
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef BENCH_DNNL
#include <dnnl.h>
void omp_set_num_threads(int n);
#endif

/* libc's 48-bit generator, seeded in main: the same values every run */
static float uniform(void) { return (float)(2.0 * drand48() - 1.0); }
static float gaussian(void) {
    float u = (uniform() + 1) / 2, v = (uniform() + 1) / 2;
    return sqrtf(-2 * logf(u > 1e-30f ? u : 1e-30f)) * cosf(6.2831853f * v);
}

static int reps = 7;

/* Median seconds per call of each fn(ctx), measured in alternation (round r times every fn
 * once, a batch of calls each) so that a busy machine slows all of them alike. */
typedef void (*run_fn)(void *ctx);
static void time_alternating(const run_fn *fn, int nfn, void *ctx, double *out) {
    int inner[8];
    double t[8][64];
    for (int f = 0; f < nfn; f++) {
        fn[f](ctx);
        double t0 = bench_now();
        fn[f](ctx);
        double once = bench_now() - t0;
        inner[f] = once < 2e-3 ? (int)(2e-3 / (once + 1e-7)) + 1 : 1;
    }
    int n = reps < 64 ? reps : 64;
    for (int r = 0; r < n; r++)
        for (int f = 0; f < nfn; f++) {
            double s = bench_now();
            for (int i = 0; i < inner[f]; i++) fn[f](ctx);
            t[f][r] = (bench_now() - s) / inner[f];
        }
    for (int f = 0; f < nfn; f++) out[f] = bench_median(t[f], (size_t)n);
}

typedef struct {
    int M, N, K;
    float *A, *W, *C;
    emb_int8_gemm_weights *w;
    emb_int8_gemm_act act;
    emb_bf16w *wb;
    emb_bf16_act bact;
    emb_workers *workers;
#ifdef BENCH_DNNL
    dnnl_engine_t eng;
    dnnl_stream_t st;
    dnnl_primitive_t mm;
    dnnl_memory_t src, wei, dst, zp;
#endif
} job;

static void run_sgemm(void *p) {
    job *j = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->M, j->N, j->K, 1.0f, j->A, j->K, j->W, j->K, 1.0f,
                j->C, j->N);
}
static void run_int8(void *p) {
    job *j = p;
    if (emb_int8_gemm(j->A, j->K, j->M, j->w, NULL, 1.0f, j->C, j->N, &j->act, j->workers)) abort();
}
static void run_bf16(void *p) {
    job *j = p;
    if (emb_bf16_gemm(j->A, j->K, j->M, j->wb, NULL, 1.0f, j->C, j->N, &j->bact, j->workers)) abort();
}
static void run_kernel(void *p) {
    job *j = p;
    if (emb_int8_gemm_q(&j->act, j->w, NULL, 1.0f, j->C, j->N, j->workers)) abort();
}

#ifdef BENCH_DNNL
#define DN(call)                                                                                                  \
    do {                                                                                                          \
        dnnl_status_t s_ = (call);                                                                                \
        if (s_ != dnnl_success) {                                                                                 \
            fprintf(stderr, "%s: status %d\n", #call, (int)s_);                                                   \
            exit(1);                                                                                              \
        }                                                                                                         \
    } while (0)

/* u8 [M][K] x s8 weights (oneDNN's own layout, reordered once from [N][K]) -> f32 [M][N],
 * per-channel output scales, a runtime source zero point. */
static void dnnl_setup(job *j) {
    DN(dnnl_engine_create(&j->eng, dnnl_cpu, 0));
    DN(dnnl_stream_create(&j->st, j->eng, dnnl_stream_default_flags));
    dnnl_memory_desc_t a_md, b_any, b_user, c_md, zp_md;
    dnnl_dims_t ad = {j->M, j->K}, bd = {j->K, j->N}, cd = {j->M, j->N}, zd = {1};
    DN(dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dnnl_u8, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&b_any, 2, bd, dnnl_s8, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&b_user, 2, bd, dnnl_s8, dnnl_ba)); /* [N][K] */
    DN(dnnl_memory_desc_init_by_tag(&c_md, 2, cd, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&zp_md, 1, zd, dnnl_s32, dnnl_a));
    dnnl_matmul_desc_t md;
    DN(dnnl_matmul_desc_init(&md, &a_md, &b_any, NULL, &c_md));
    dnnl_primitive_attr_t attr;
    DN(dnnl_primitive_attr_create(&attr));
    float *scales = malloc((size_t)j->N * sizeof *scales);
    for (int n = 0; n < j->N; n++) scales[n] = emb_int8_gemm_weights_scale(j->w, n) * 0.01f;
    DN(dnnl_primitive_attr_set_output_scales(attr, j->N, 1 << 1, scales));
    const int32_t rt = DNNL_RUNTIME_S32_VAL;
    DN(dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &rt));
    dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_desc_create(&pd, &md, attr, j->eng, NULL));
    const dnnl_memory_desc_t *b_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    DN(dnnl_primitive_create(&j->mm, pd));
    /* activations: some codes; weights: the packed codes, reordered into oneDNN's layout */
    DN(dnnl_memory_create(&j->src, &a_md, j->eng, DNNL_MEMORY_ALLOCATE));
    DN(dnnl_memory_create(&j->dst, &c_md, j->eng, DNNL_MEMORY_ALLOCATE));
    DN(dnnl_memory_create(&j->zp, &zp_md, j->eng, DNNL_MEMORY_ALLOCATE));
    DN(dnnl_memory_create(&j->wei, b_md, j->eng, DNNL_MEMORY_ALLOCATE));
    void *h;
    DN(dnnl_memory_get_data_handle(j->src, &h));
    for (size_t i = 0; i < (size_t)j->M * j->K; i++) ((uint8_t *)h)[i] = (uint8_t)(i * 7919 % 251);
    DN(dnnl_memory_get_data_handle(j->zp, &h));
    *(int32_t *)h = 117;
    dnnl_memory_t wu;
    DN(dnnl_memory_create(&wu, &b_user, j->eng, DNNL_MEMORY_ALLOCATE));
    DN(dnnl_memory_get_data_handle(wu, &h));
    for (int n = 0; n < j->N; n++)
        for (int k = 0; k < j->K; k++)
            ((int8_t *)h)[(size_t)n * j->K + k] = emb_int8_gemm_weights_code(j->w, n, k);
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    DN(dnnl_reorder_primitive_desc_create(&rpd, &b_user, j->eng, b_md, j->eng, NULL));
    DN(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, wu}, {DNNL_ARG_TO, j->wei}};
    DN(dnnl_primitive_execute(r, j->st, 2, ra));
    DN(dnnl_stream_wait(j->st));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(wu);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    free(scales);
}

static void run_dnnl(void *p) {
    job *j = p;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, j->src},
                               {DNNL_ARG_WEIGHTS, j->wei},
                               {DNNL_ARG_DST, j->dst},
                               {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, j->zp}};
    DN(dnnl_primitive_execute(j->mm, j->st, 4, args));
    DN(dnnl_stream_wait(j->st));
}

static void dnnl_teardown(job *j) {
    dnnl_primitive_destroy(j->mm);
    dnnl_memory_destroy(j->src);
    dnnl_memory_destroy(j->wei);
    dnnl_memory_destroy(j->dst);
    dnnl_memory_destroy(j->zp);
    dnnl_stream_destroy(j->st);
    dnnl_engine_destroy(j->eng);
}
#endif

typedef struct {
    const char *model;
    int K, N;
} layer;
static const layer layers[] = {
    {"minilm", 384, 1152},    {"minilm", 384, 384},    {"minilm", 384, 1536},    {"minilm", 1536, 384},
    {"bert-base", 768, 2304}, {"bert-base", 768, 768}, {"bert-base", 768, 3072}, {"bert-base", 3072, 768},
};

static void speed(int quick, int only_m) {
    static const int Ms[] = {16, 128, 4096};
    emb_workers *helpers = emb_workers_new(1);
    printf("kernel set: %s\n", emb_int8_gemm_path_name(emb_int8_gemm_path_default()));
    printf("%-9s %5s %5s %5s %3s | %8s %8s %8s | %6s %6s | %9s %9s", "model", "M", "K", "N", "thr", "sgemm",
           "int8", "kern", "i8/sg", "kn/sg", "sg us", "i8 us");
    int bf16 = emb_bf16_fast();
    if (bf16) printf(" | %8s %6s", "bf16", "bf/sg");
#ifdef BENCH_DNNL
    printf(" | %8s %6s %9s", "onednn", "dn/sg", "dn us");
#endif
    printf("\n");
    double ratio_sum[2][3] = {{0}}; /* [threads-1][M index] */
    int ratio_n[2][3] = {{0}};
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
        if ((quick && Ms[mi] > 128) || (only_m && Ms[mi] != only_m)) continue;
        for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
            job j;
            memset(&j, 0, sizeof j);
            j.M = Ms[mi];
            j.K = layers[li].K;
            j.N = layers[li].N;
            j.A = malloc((size_t)j.M * j.K * sizeof(float));
            j.W = malloc((size_t)j.N * j.K * sizeof(float));
            j.C = calloc((size_t)j.M * j.N, sizeof(float));
            for (size_t i = 0; i < (size_t)j.M * j.K; i++) j.A[i] = gaussian();
            for (size_t i = 0; i < (size_t)j.N * j.K; i++) j.W[i] = 0.02f * gaussian();
            char err[EMB_ERR_LEN];
            j.w = emb_int8_gemm_weights_pack(j.W, j.N, j.K, j.K, err);
            j.wb = emb_bf16w_pack(j.W, j.N, j.K, j.K, err);
            if (!j.w || !j.wb) {
                fprintf(stderr, "%s\n", err);
                exit(1);
            }
#ifdef BENCH_DNNL
            dnnl_setup(&j);
#endif
            for (int thr = 1; thr <= 2; thr++) {
                openblas_set_num_threads(thr);
                j.workers = thr == 2 ? helpers : NULL;
                double ops = 2.0 * j.M * j.N * j.K;
#ifdef BENCH_DNNL
                omp_set_num_threads(thr);
                const run_fn fns[] = {run_sgemm, run_int8, run_kernel, run_bf16, run_dnnl};
#else
                const run_fn fns[] = {run_sgemm, run_int8, run_kernel, run_bf16};
#endif
                double tm[5];
                int nfn = (int)(sizeof fns / sizeof fns[0]);
                time_alternating(fns, bf16 ? nfn : 3, &j, tm);
                double ts = tm[0], ti = tm[1], tk = tm[2];
                printf("%-9s %5d %5d %5d %3d | %8.1f %8.1f %8.1f | %6.2f %6.2f | %9.1f %9.1f", layers[li].model,
                       j.M, j.K, j.N, thr, ops / ts * 1e-9, ops / ti * 1e-9, ops / tk * 1e-9, ts / ti, ts / tk,
                       ts * 1e6, ti * 1e6);
                if (bf16) printf(" | %8.1f %6.2f", ops / tm[3] * 1e-9, ts / tm[3]);
#ifdef BENCH_DNNL
                double td = tm[4];
                printf(" | %8.1f %6.2f %9.1f", ops / td * 1e-9, ts / td, td * 1e6);
                printf("\nRESULT onednn_vs_sgemm_%s_M%d_K%d_N%d_t%d %.3f", layers[li].model, j.M, j.K, j.N, thr,
                       ts / td);
#endif
                printf("\nRESULT int8_vs_sgemm_%s_M%d_K%d_N%d_t%d %.3f\n", layers[li].model, j.M, j.K, j.N, thr,
                       ts / ti);
                if (bf16)
                    printf("RESULT bf16_vs_sgemm_%s_M%d_K%d_N%d_t%d %.3f\n", layers[li].model, j.M, j.K, j.N, thr,
                           ts / tm[3]);
                ratio_sum[thr - 1][mi] += log(ts / ti);
                ratio_n[thr - 1][mi]++;
            }
#ifdef BENCH_DNNL
            dnnl_teardown(&j);
#endif
            emb_int8_gemm_weights_free(j.w);
            emb_int8_gemm_act_free(&j.act);
            emb_bf16w_free(j.wb);
            emb_bf16_act_free(&j.bact);
            free(j.A), free(j.W), free(j.C);
        }
    }
    for (int t = 0; t < 2; t++)
        for (size_t mi = 0; mi < 3; mi++)
            if (ratio_n[t][mi])
                printf("RESULT int8_vs_sgemm_geomean_M%d_t%d %.3f\n", Ms[mi], t + 1,
                       exp(ratio_sum[t][mi] / ratio_n[t][mi]));
    openblas_set_num_threads(1);
    emb_workers_free(helpers);
}

/* Where a second thread starts to pay: one product on one thread against the same product split
 * in two halves of N on the caller and a helper (emb_workers), small M. */
typedef struct {
    job *j;
    emb_int8_gemm_weights *half[2];
    int n0[2];
    emb_workers *workers;
} split_job;

static void split_task(void *ctx, int t, int worker) {
    (void)worker;
    split_job *s = ctx;
    if (emb_int8_gemm_q_path(emb_int8_gemm_path_default(), &s->j->act, s->half[t], NULL, 1.0f, s->j->C + s->n0[t],
                             s->j->N))
        abort();
}
static void run_split(void *p) {
    split_job *s = p;
    if (emb_int8_gemm_quantize(s->j->A, s->j->K, s->j->M, s->j->K, &s->j->act, NULL)) abort();
    emb_workers_run(s->workers, 2, split_task, s);
}
static void run_one(void *p) {
    split_job *s = p;
    s->j->workers = NULL;
    run_int8(s->j);
}

static void threshold(void) {
    static const int Ms[] = {1, 4, 16, 32, 64, 128};
    emb_workers *helpers = emb_workers_new(1);
    char err[EMB_ERR_LEN];
    printf("\none thread against two (N split in halves), microseconds per product\n");
    printf("%5s %5s %5s %10s | %8s %8s %6s\n", "M", "K", "N", "M*N*K", "1 thr", "2 thr", "1/2");
    for (size_t li = 0; li < 4; li++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
            job j;
            memset(&j, 0, sizeof j);
            j.M = Ms[mi], j.K = layers[li].K, j.N = layers[li].N;
            j.A = malloc((size_t)j.M * j.K * sizeof(float));
            j.W = malloc((size_t)j.N * j.K * sizeof(float));
            j.C = calloc((size_t)j.M * j.N, sizeof(float));
            for (size_t i = 0; i < (size_t)j.M * j.K; i++) j.A[i] = gaussian();
            for (size_t i = 0; i < (size_t)j.N * j.K; i++) j.W[i] = 0.02f * gaussian();
            split_job s = {&j, {NULL, NULL}, {0, j.N / 2}, helpers};
            j.w = emb_int8_gemm_weights_pack(j.W, j.N, j.K, j.K, err);
            s.half[0] = emb_int8_gemm_weights_pack(j.W, j.N / 2, j.K, j.K, err);
            s.half[1] = emb_int8_gemm_weights_pack(j.W + (size_t)(j.N / 2) * j.K, j.N - j.N / 2, j.K, j.K, err);
            if (!j.w || !s.half[0] || !s.half[1]) abort();
            const run_fn fns[] = {run_one, run_split};
            double t[2];
            time_alternating(fns, 2, &s, t);
            printf("%5d %5d %5d %10.0f | %8.1f %8.1f %6.2f\n", j.M, j.K, j.N, (double)j.M * j.N * j.K, t[0] * 1e6,
                   t[1] * 1e6, t[0] / t[1]);
            printf("RESULT split_speedup_M%d_K%d_N%d %.3f\n", j.M, j.K, j.N, t[0] / t[1]);
            emb_int8_gemm_weights_free(j.w), emb_int8_gemm_weights_free(s.half[0]),
                emb_int8_gemm_weights_free(s.half[1]);
            emb_int8_gemm_act_free(&j.act);
            free(j.A), free(j.W), free(j.C);
        }
    emb_workers_free(helpers);
}

/* ||C8 - C32|| / ||C32|| of A (M x K) times W (N x K). */
static double rel_error(const float *A, const float *W, int M, int N, int K) {
    float *c32 = calloc((size_t)M * N, sizeof *c32), *c8 = calloc((size_t)M * N, sizeof *c8);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K, W, K, 0.0f, c32, N);
    char err[EMB_ERR_LEN];
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack(W, N, K, K, err);
    emb_int8_gemm_act act = EMB_I8_ACT_INIT;
    if (!w || emb_int8_gemm(A, K, M, w, NULL, 0.0f, c8, N, &act, NULL)) abort();
    double num = 0, den = 0;
    for (size_t i = 0; i < (size_t)M * N; i++) {
        num += ((double)c8[i] - c32[i]) * ((double)c8[i] - c32[i]);
        den += (double)c32[i] * c32[i];
    }
    emb_int8_gemm_weights_free(w);
    emb_int8_gemm_act_free(&act);
    free(c32), free(c8);
    return sqrt(num / den);
}

static float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }

/* Activations like a layer's inputs: LayerNorm outputs (unit Gaussian) or GELU outputs. */
static float *activations(int M, int K, int after_gelu) {
    float *A = malloc((size_t)M * K * sizeof *A);
    for (size_t i = 0; i < (size_t)M * K; i++) A[i] = after_gelu ? gelu(2 * gaussian()) : gaussian();
    return A;
}

static void accuracy(void) {
    printf("\nrelative error ||C_int8 - C_f32|| / ||C_f32||, M = 128\n");
    for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
        int M = 128, K = layers[li].K, N = layers[li].N, gelu_in = K > N;
        float *W = malloc((size_t)N * K * sizeof *W), *A = activations(M, K, gelu_in);
        for (size_t i = 0; i < (size_t)N * K; i++) W[i] = 0.02f * gaussian();
        double e = rel_error(A, W, M, N, K);
        printf("  random %-9s K %4d N %4d (%s input): %.4f\n", layers[li].model, K, N,
               gelu_in ? "GELU" : "Gaussian", e);
        printf("RESULT rel_error_random_%s_K%d_N%d %.5f\n", layers[li].model, K, N, e);
        free(W), free(A);
    }
    /* the golden MiniLM-style model's linear weights */
    static const char *names[] = {"attention.self.query",   "attention.self.key", "attention.self.value",
                                  "attention.output.dense", "intermediate.dense", "output.dense"};
    emb_safetensors *sf;
    char err[EMB_ERR_LEN];
    if (emb_safetensors_open("tests/fixtures/models/minilm-tiny-st/model.safetensors", 1, &sf, err)) {
        printf("  golden weights: %s (run from the repository root)\n", err);
        return;
    }
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char name[128];
            snprintf(name, sizeof name, "encoder.layer.%d.%s.weight", l, names[i]);
            const emb_safetensors_tensor *t = emb_safetensors_find(sf, name);
            if (!t || t->dtype != EMB_DT_F32 || t->ndim != 2) continue;
            int N = (int)t->shape[0], K = (int)t->shape[1], M = 128;
            float *W = malloc((size_t)N * K * sizeof *W), *A = activations(M, K, i == 5);
            memcpy(W, t->data, (size_t)N * K * sizeof *W);
            double e = rel_error(A, W, M, N, K);
            printf("  golden minilm-tiny-st %s (%d x %d): %.4f\n", name, N, K, e);
            printf("RESULT rel_error_golden_l%d_%s %.5f\n", l, names[i], e);
            free(W), free(A);
        }
    emb_safetensors_close(sf);
}

int main(int argc, char **argv) {
    bench_openblas_sleeps(argv);
    srand48(12345);
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const char *r = getenv("REPS");
    if (r && atoi(r) > 0) reps = atoi(r);
    if (argc > 1 && !strcmp(argv[1], "--threshold")) {
        threshold();
        return 0;
    }
    speed(quick, argc > 1 && !quick ? atoi(argv[1]) : 0);
    accuracy();
    return 0;
}
