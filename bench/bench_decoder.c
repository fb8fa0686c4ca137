/* Decoder-embedder benchmark: random-weight checkpoints (bench/random_model.c) at the real shapes of
 *   qwen3   Qwen3-Embedding-0.6B (1024 hidden, 28 layers, 16 query heads over 8 key/value heads
 *           of 128, 3072 SwiGLU, causal, vocabulary 151,669)
 *   gemma3  EmbeddingGemma-300m (768 hidden, 24 layers, 3 query heads over 1 key/value head of
 *           256, 1152 tanh-GeGLU, bidirectional, windows of 512 in five layers of six,
 *           vocabulary 262,144)
 * loaded with emb_encoder_load once per weight type (float32 mapped; bf16 and int8 packed by
 * emb_encoder_set_weights) and run on 1 x 16, 1 x 128 and 32 x 128 tokens, each way in
 * alternating passes (workloads.h), on the OpenBLAS thread counts asked. Prints tokens/s, GFLOP/s
 * (the float32 count) and each type's rate over the first's; the peak RSS against the weights.
 * Before timing: the config read as written, finite outputs, a padded batch equal to its
 * sequences run alone.
 * Usage: bench_decoder [--model qwen3,gemma3] [--threads 1,2] [--weights f32,bf16,int8]
 *                      [--workload 1x16|1x128|32x128] [--dir DIR | --write DIR] [--results FILE]
 *   --write  write the models (DIR/<key>/config.json, model.safetensors), the workloads
 *            (workloads.txt) and our pooled float32 vectors of four check sequences, each run
 *            alone (check.txt: "seq N ids...", check.f32: the vectors; Qwen3 the last token,
 *            Gemma the mean, as their GGUF files pool) for bench/peers/llama_decoder.mjs; exit
 *   --dir    run the models already written there (default: write them into a temporary folder)
 *   --results  append "ours|ours_bf16|ours_int8 MODEL THREADS WORKLOAD TOKENS_PER_S" lines
 * Figures of other engines are never constants here: bench/decoder_peers.sh measures them in
 * the same run. */
#include "bench_clock.h"
#include "nn/encoder.h"
#include "random_model.h"
#include "workloads.h"
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    const char *key, *name;
    bench_arch arch;
    int H, L, NH, FF;
    int last_token; /* pooled by the last token (Qwen3), else the mean (Gemma) */
} dsize;
static const dsize MODELS[] = {
    {"qwen3", "Qwen3-Embedding-0.6B shape (1024/28/16, 8 KV heads, 3072)", BENCH_ARCH_QWEN3, 1024, 28, 16, 3072,
     1},
    {"gemma3", "EmbeddingGemma-300m shape (768/24/3, 1 KV head, 1152)", BENCH_ARCH_GEMMA3, 768, 24, 3, 1152, 0},
};
#define N_MODELS ((int)(sizeof MODELS / sizeof MODELS[0]))
#define N_WORK 3
static const char *const WORK_KEYS[N_WORK] = {"1x16", "1x128", "32x128"};
static const char *only_work = NULL, *results_path = NULL;
#define MAX_KINDS 3
static emb_weights kinds[MAX_KINDS] = {EMB_WEIGHTS_F32, EMB_WEIGHTS_BF16, EMB_WEIGHTS_INT8};
static int n_kinds = 3;
static const char *impl_name(emb_weights w) {
    return w == EMB_WEIGHTS_F32 ? "ours" : w == EMB_WEIGHTS_BF16 ? "ours_bf16" : "ours_int8";
}

static void make_workloads(bench_workload wl[N_WORK]) {
    bench_work_seed(0x9E3779B97F4A7C15ull);
    wl[0] = bench_work_fixed(1, 16);
    wl[1] = bench_work_fixed(1, 128);
    wl[2] = bench_work_fixed(32, 128);
}

/* The config as written, and a padded batch (10 and 16 tokens) equal to each sequence alone. */
static int check_model(const emb_encoder *enc, const dsize *m, emb_workspace *ws) {
    const emb_encoder_config *c = emb_encoder_get_config(enc);
    const int H = m->H;
    int gemma = m->arch == BENCH_ARCH_GEMMA3;
    if (c->dims.hidden != H || c->dims.layers != m->L || c->dims.heads != m->NH || c->dims.intermediate != m->FF ||
        c->arch != (gemma ? EMB_ARCH_GEMMA3_TEXT : EMB_ARCH_QWEN3) || c->causal == gemma ||
        c->kv_heads != (gemma ? BENCH_GEMMA3_KV_HEADS : BENCH_QWEN3_KV_HEADS) ||
        c->head_dim != (gemma ? BENCH_GEMMA3_HEAD_DIM : BENCH_QWEN3_HEAD_DIM)) {
        fprintf(stderr, "check %s: not read as written\n", m->key);
        return 1;
    }
    char err[EMB_ERR_LEN];
    int32_t ids[32], lens[2] = {10, 16};
    bench_work_seed(12345);
    bench_work_fill_sequence(ids + 16, 16);
    bench_work_fill_sequence(ids, 10);
    for (int t = 10; t < 16; t++) ids[t] = 0;
    float *pair = malloc(sizeof(float) * 32 * H), *alone = malloc(sizeof(float) * 16 * H);
    double worst = 0;
    int bad = emb_encoder_forward(enc, ws, 2, 16, ids, NULL, lens, m->L, pair, err);
    for (int s = 0; s < 2 && !bad; s++) {
        bad = emb_encoder_forward(enc, ws, 1, lens[s], ids + 16 * s, NULL, &lens[s], m->L, alone, err);
        for (int i = 0; i < lens[s] * H && !bad; i++) {
            double d = fabs((double)alone[i] - pair[(size_t)16 * s * H + i]);
            if (!(d <= worst)) worst = d; /* NaN sticks */
        }
    }
    if (bad) fprintf(stderr, "check %s: forward: %s\n", m->key, err);
    /* bf16 and int8 round each run's activations their own way: a relative bound */
    else if (!(worst < (emb_encoder_weights(enc) == EMB_WEIGHTS_F32 ? 1e-3 : 0.1))) {
        fprintf(stderr, "check %s: a padded batch differs from its sequences alone by %.3g\n", m->key, worst);
        bad = 1;
    } else
        printf("check %s: %s, %s, padded batch vs alone max |diff| %.2g: ok\n", m->key, c->arch_name,
               emb_weights_name(emb_encoder_weights(enc)), worst);
    free(pair);
    free(alone);
    return bad;
}

/* check.txt / check.f32: four sequences (16, 24, 9 and 128 tokens), each pooled alone. */
static int write_check(const char *dir, const emb_encoder *enc, const dsize *m) {
    static const int LENS[4] = {16, 24, 9, 128};
    char path[1024], err[EMB_ERR_LEN];
    snprintf(path, sizeof path, "%s/check.txt", dir);
    FILE *f = fopen(path, "w");
    snprintf(path, sizeof path, "%s/check.f32", dir);
    FILE *o = fopen(path, "wb");
    emb_workspace *ws = emb_workspace_new();
    float *out = malloc(sizeof(float) * 128 * m->H), *v = malloc(sizeof(float) * m->H);
    int rc = !f || !o || !ws || !out || !v;
    bench_work_seed(4242);
    for (int s = 0; s < 4 && !rc; s++) {
        int32_t ids[128], n = LENS[s];
        bench_work_fill_sequence(ids, n);
        if ((rc = emb_encoder_forward(enc, ws, 1, n, ids, NULL, &n, m->L, out, err)) != 0) {
            fprintf(stderr, "write_check: %s\n", err);
            break;
        }
        for (int i = 0; i < m->H; i++) {
            double acc = 0;
            for (int t = m->last_token ? n - 1 : 0; t < n; t++) acc += out[(size_t)t * m->H + i];
            v[i] = (float)(m->last_token ? acc : acc / n);
        }
        fprintf(f, "seq %d", n);
        for (int t = 0; t < n; t++) fprintf(f, " %d", ids[t]);
        fprintf(f, "\n");
        if (fwrite(v, sizeof(float), (size_t)m->H, o) != (size_t)m->H) rc = 1;
    }
    if (f && fclose(f)) rc = 1;
    if (o && fclose(o)) rc = 1;
    emb_workspace_free(ws);
    free(out);
    free(v);
    return rc;
}

/* The pooled vector of a 64-token sequence under encoders a and b: their cosine, as a first sign
 * that bf16 and int8 weights are sane (bench_int8_accuracy.c measures accuracy properly). */
static double pooled_cosine(const emb_encoder *a, const emb_encoder *b, emb_workspace *ws, const dsize *m) {
    char err[EMB_ERR_LEN];
    int32_t ids[64], n = 64;
    bench_work_seed(777);
    bench_work_fill_sequence(ids, n);
    float *x = malloc(sizeof(float) * 64 * m->H), *y = malloc(sizeof(float) * 64 * m->H);
    double uv = 0, uu = 0, vv = 0;
    if (emb_encoder_forward(a, ws, 1, n, ids, NULL, &n, m->L, x, err) ||
        emb_encoder_forward(b, ws, 1, n, ids, NULL, &n, m->L, y, err))
        fprintf(stderr, "check %s: forward: %s\n", m->key, err);
    else
        for (int i = 0; i < m->H; i++) {
            double u = 0, v = 0;
            for (int t = m->last_token ? n - 1 : 0; t < n; t++)
                u += x[(size_t)t * m->H + i], v += y[(size_t)t * m->H + i];
            uv += u * v, uu += u * u, vv += v * v;
        }
    free(x);
    free(y);
    return uv / sqrt(uu * vv);
}

typedef struct {
    const emb_encoder *enc;
    emb_workspace *ws;
    const dsize *m;
    float *out;
    char err[EMB_ERR_LEN];
} run_ctx;
static int forward_pass(void *cv, const bench_workload *w, int k) {
    run_ctx *c = cv;
    if (!emb_encoder_forward_grouped(c->enc, c->ws, w->B[k], w->T[k], w->ids[k], NULL, w->lens[k], c->m->L, c->out,
                                     c->err))
        return 0;
    fprintf(stderr, "forward: %s\n", c->err);
    return 1;
}

static void append_result(const char *impl, const dsize *m, int th, int w, double tps) {
    FILE *f = results_path ? fopen(results_path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s %s %d %s %.1f\n", impl, m->key, th, WORK_KEYS[w], tps);
    fclose(f);
}

/* resident now (MB), from /proc/self/statm */
static double rss_now_mb(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static int load_all(const char *dir, const dsize *m, emb_encoder *enc[], run_ctx rc[]) {
    char err[EMB_ERR_LEN];
    for (int k = 0; k < n_kinds; k++) {
        double t0 = bench_now();
        /* as emb_model_load does: the weight type chosen before float32's packing would be made */
        if (emb_encoder_load_open(dir, 1, &enc[k], err) ||
            (emb_encoder_close_unused(enc[k]), emb_encoder_set_weights(enc[k], kinds[k], err))) {
            fprintf(stderr, "%s (%s): %s\n", m->key, emb_weights_name(kinds[k]), err);
            return 1;
        }
        const emb_encoder_info *in = emb_encoder_get_info(enc[k]);
        printf("== %s, %s: %.1f MB of float32 weights mapped, %.1f MB packed, in %.2f s\n", m->name,
               emb_weights_name(kinds[k]), in->weight_bytes / 1e6, in->packed_bytes / 1e6, bench_now() - t0);
        rc[k] = (run_ctx){enc[k], emb_workspace_new(), m, malloc(sizeof(float) * 32 * 128 * m->H), {0}};
        if (check_model(enc[k], m, rc[k].ws)) return 1;
        if (k)
            printf("check %s: %s vs %s, cosine of the pooled vectors of 64 tokens %.6f\n", m->key,
                   emb_weights_name(kinds[k]), emb_weights_name(kinds[0]),
                   pooled_cosine(enc[0], enc[k], rc[0].ws, m));
    }
    return 0;
}

static int run_model(const char *dir, const dsize *m, const int *threads, int nthreads) {
    emb_encoder *enc[MAX_KINDS] = {NULL};
    run_ctx rc[MAX_KINDS];
    long rss0 = bench_peak_rss_kb();
    if (load_all(dir, m, enc, rc)) return 1;
    bench_print_load("before");
    bench_workload wl[N_WORK];
    make_workloads(wl);
    bench_pass_fn fns[MAX_KINDS];
    void *ctxs[MAX_KINDS];
    for (int k = 0; k < n_kinds; k++) fns[k] = forward_pass, ctxs[k] = &rc[k];
    printf("%-8s %-10s %-7s %10s %9s %9s\n", "threads", "workload", "weights", "tokens/s", "GFLOP/s", "÷ first");
    for (int ti = 0; ti < nthreads; ti++) {
        openblas_set_num_threads(threads[ti]);
        for (int w = 0; w < N_WORK; w++) {
            double best[MAX_KINDS];
            if (only_work && strcmp(only_work, WORK_KEYS[w]) != 0) continue;
            if (bench_time_ways(n_kinds, fns, ctxs, &wl[w], 1.0, best)) return 1;
            double fl = emb_encoder_flops(enc[0], wl[w].B[0], wl[w].T[0], wl[w].lens[0], m->L);
            for (int k = 0; k < n_kinds; k++) {
                printf("%-8d %-10s %-7s %10.0f %9.1f", threads[ti], WORK_KEYS[w], emb_weights_name(kinds[k]),
                       wl[w].tokens / best[k], fl / best[k] / 1e9);
                if (k) printf(" %8.2fx", best[0] / best[k]);
                printf("\n");
                append_result(impl_name(kinds[k]), m, threads[ti], w, wl[w].tokens / best[k]);
            }
        }
    }
    const emb_encoder_info *in = emb_encoder_get_info(enc[0]);
    printf("resident %.1f MB after the runs, peak %.1f MB (before load %.1f MB); float32 weights %.1f MB\n",
           rss_now_mb(), bench_peak_rss_kb() / 1024.0, rss0 / 1024.0, in->weight_bytes / 1048576.0);
    bench_print_load("after");
    for (int w = 0; w < N_WORK; w++) bench_work_free(&wl[w]);
    for (int k = 0; k < n_kinds; k++) {
        free(rc[k].out);
        emb_workspace_free(rc[k].ws);
        emb_encoder_free(enc[k]);
    }
    return 0;
}

static int write_peer_files(const char *dir, const dsize *m) {
    char err[EMB_ERR_LEN];
    emb_encoder *enc;
    if (emb_encoder_load(dir, &enc, err)) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    emb_workspace *ws = emb_workspace_new();
    bench_workload wl[N_WORK];
    int rc = check_model(enc, m, ws);
    emb_workspace_free(ws);
    if (!rc) {
        make_workloads(wl);
        rc = bench_work_write(dir, wl, WORK_KEYS, N_WORK) || write_check(dir, enc, m);
        for (int w = 0; w < N_WORK; w++) bench_work_free(&wl[w]);
    }
    emb_encoder_free(enc);
    return rc;
}

static int parse_args(int argc, char **argv, int want[], int threads[], int *nthreads, const char **dir,
                      int *write) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return -1;
        i++;
        if (strcmp(a, "--model") == 0)
            for (int k = 0; k < N_MODELS; k++) want[k] = strstr(v, MODELS[k].key) != NULL;
        else if (strcmp(a, "--threads") == 0) {
            *nthreads = 0;
            for (const char *p = v; p && *nthreads < 8; p = strchr(p, ','), p = p ? p + 1 : NULL)
                if ((threads[(*nthreads)++] = atoi(p)) < 1) return -1;
        } else if (strcmp(a, "--weights") == 0) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s", v);
            n_kinds = 0;
            for (char *s = NULL, *t = strtok_r(buf, ",", &s); t; t = strtok_r(NULL, ",", &s))
                if (n_kinds == MAX_KINDS || emb_weights_parse(t, &kinds[n_kinds++])) return -1;
            if (!n_kinds) return -1;
        } else if (strcmp(a, "--workload") == 0) only_work = v;
        else if (strcmp(a, "--results") == 0) results_path = v;
        else if (strcmp(a, "--dir") == 0) *dir = v;
        else if (strcmp(a, "--write") == 0) *dir = v, *write = 1;
        else return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    bench_openblas_sleeps(argv);
    int want[N_MODELS] = {1, 1}, threads[8] = {1, 2}, nthreads = 2, write = 0;
    const char *dir = NULL;
    if (parse_args(argc, argv, want, threads, &nthreads, &dir, &write)) {
        fprintf(stderr, "usage: bench_decoder [--model qwen3,gemma3] [--threads 1,2] [--weights f32,bf16,int8] "
                        "[--workload KEY] [--dir DIR | --write DIR] [--results FILE]\n");
        return 2;
    }
    char tmp[] = "/tmp/bench_decoder_XXXXXX";
    int fresh = !dir || write;
    if (!dir && !(dir = mkdtemp(tmp))) return 1;
    mkdir(dir, 0755);
    int rc = 0;
    for (int mi = 0; mi < N_MODELS && !rc; mi++) {
        const dsize *m = &MODELS[mi];
        char sub[512];
        if (!want[mi]) continue;
        snprintf(sub, sizeof sub, "%s/%s", dir, m->key);
        if (fresh && bench_random_model_write_arch(sub, m->arch, m->H, m->L, m->NH, m->FF, 0)) return 1;
        pid_t p = fork(); /* a process per model: its peak RSS its own */
        if (p == 0) {
            int r = write ? write_peer_files(sub, m) : run_model(sub, m, threads, nthreads);
            fflush(stdout);
            _exit(r);
        }
        rc = !bench_child_ok(p);
        if (dir == tmp) {
            char cmd[600];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
            if (system(cmd)) rc = 1;
        }
    }
    if (dir == tmp) rmdir(tmp);
    return rc;
}
