/* Encoder benchmark: random-weight checkpoints (bench/random_model.c) at five sizes,
 *   minilm      BERT, all-MiniLM-L6-v2 size (384 hidden, 6 layers, 12 heads, 1536 intermediate)
 *   base        BERT, bert-base size (768, 12, 12, 3072)
 *   nomic       NomicBERT, nomic-embed-text-v1.5 size (768, 12, 12, 3072 SwiGLU, rotary)
 *   modernbert  ModernBERT-base size (768, 22, 12, 1152 GeGLU, rotary, local windows of 128)
 *   mpnet       MPNet, all-mpnet-base-v2 size (768, 12, 12, 3072, relative-position bias)
 * loaded with emb_encoder_load and run on the workloads 1x16, 1x128, 32x128 and N sentences of
 * 8-128 tokens in length-sorted batches of 32 (N = 1,000 for minilm, 128 for the 768-wide models,
 * whose 1,000 would take minutes a pass on one core), on 1 and 2 OpenBLAS threads.
 * The folder is loaded once per weight type (float32, and int8 by emb_encoder_set_weights), and
 * the two encoders run in alternating passes, so that int8 / float32 compares like with like.
 * Each batch runs through emb_encoder_forward_grouped, as emb_model_embed runs its batches: a
 * batch of sentences of unequal lengths in groups of similar lengths, its padding hardly
 * computed (the peers in encoder_peers.sh compute every padded row of the same batches).
 *
 * For each row: tokens/s (real tokens), GFLOP/s of the whole forward pass (the float32 count for
 * int8 too; for the sentences, the count of their padded batches, as the peers run them), the
 * fraction of the rate that cblas_sgemm alone reaches on exactly the same sequence of matrix
 * shapes (projections over B*T rows, per-head attention products in the encoder's row blocks and
 * windows), measured in the same run, and for int8 its tokens/s over float32's. Peak
 * RSS (getrusage) is compared with the weight bytes. Before timing, a check that the model runs as
 * its architecture should (config as written, finite outputs, a padded batch equal to the
 * sequences alone) and, for int8, the cosine of its contextual vectors to float32's on that batch
 * (bench/bench_int8_accuracy.c measures accuracy properly).
 *
 * Usage: bench_encoder [--quick] [--model LIST] [--threads LIST] [--weights LIST] [--dir DIR | --write DIR]
 *                      [--sentences N] [--workload KEY] [--no-sgemm] [--results FILE]
 *   --model    comma-separated keys above, or all (default)
 *   --threads  comma-separated OpenBLAS thread counts (default 1,2)
 *   --weights  comma-separated f32, int8, bf16 (default f32,int8): the weight types measured side
 *              by side, the ratio column dividing by the first (bf16 needs AVX512_BF16)
 *   --write    write the models, their workloads (workloads.txt) and our outputs on two check
 *              batches (check.txt, check.f32) into DIR/<key>/ and exit: the peers of
 *              bench/encoder_peers.sh read them
 *   --dir      run the models already written there by --write (default: write them into a
 *              temporary folder and remove it afterwards)
 *   --sentences  N sentences in the last workload instead of the model's count
 *   --workload KEY  that workload alone: 1x16, 1x128, 32x128 or sentences
 *   --no-sgemm  time the encoder alone (for a profiler; the share columns are then meaningless)
 *   --results  append one line per measurement: ours|ours_int8|ours_bf16|sgemm MODEL THREADS WORKLOAD
 *              TOKENS_PER_S (ours: float32 weights)
 * Each model runs in a child process that has not touched OpenBLAS before, so the peak RSS of
 * one does not include the other or the file writing. Figures of other engines are never
 * constants here: bench/encoder_peers.sh measures them in the same run. */
#include "bench_clock.h"
#include "nn/encoder.h"
#include "math/int8_gemm.h"
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
    int n_sent;
    int ffn_in_split; /* the gated FFN's two halves are separate tensors not laid out as one (NomicBERT) */
} msize;
static const msize MODELS[] = {
    {"minilm", "MiniLM-L6 (384/6/12/1536)", BENCH_ARCH_BERT, 384, 6, 12, 1536, 1000, 0},
    {"base", "bert-base (768/12/12/3072)", BENCH_ARCH_BERT, 768, 12, 12, 3072, 128, 0},
    {"nomic", "NomicBERT (768/12/12/3072 SwiGLU, rotary)", BENCH_ARCH_NOMIC, 768, 12, 12, 3072, 128, 1},
    {"modernbert", "ModernBERT-base (768/22/12/1152 GeGLU, rotary, window 128)", BENCH_ARCH_MODERNBERT, 768, 22,
     12, 1152, 128, 0},
    {"mpnet", "MPNet (768/12/12/3072, relative-position bias)", BENCH_ARCH_MPNET, 768, 12, 12, 3072, 128, 0},
};
#define N_MODELS ((int)(sizeof MODELS / sizeof MODELS[0]))
#define N_WORK 4
static const char *const WORK_KEYS[N_WORK] = {"1x16", "1x128", "32x128", "sentences"};
static int quick = 0, sentences = 0; /* 0: the model's n_sent */
static int no_sgemm = 0; /* --no-sgemm: the encoder alone (for profilers) */
static const char *only_work = NULL; /* --workload KEY: that workload alone */
static int skip_work(int w) { return only_work && strcmp(only_work, WORK_KEYS[w]) != 0; }
static const char *results_path = NULL;
#define MAX_KINDS 3 /* f32, int8, bf16 */
static emb_weights weight_kinds[MAX_KINDS] = {EMB_WEIGHTS_F32, EMB_WEIGHTS_INT8};
static int n_weight_kinds = 2;

static float urand(float a) { return ((float)bench_work_draw() / 4294967296.0f * 2.0f - 1.0f) * a; }

/* ------------------------------------------------------------------ workloads */

typedef bench_workload workload;

/* The same token ids on every run, for every model and for the peers (--write). */
static void make_workloads(const msize *m, workload wl[N_WORK]) {
    bench_work_seed(0x9E3779B97F4A7C15ull);
    wl[0] = bench_work_fixed(1, 16);
    wl[1] = bench_work_fixed(1, 128);
    wl[2] = bench_work_fixed(32, 128);
    wl[3] = bench_work_sentences(sentences ? sentences : quick && m->n_sent > 64 ? 64 : m->n_sent);
}
/* ------------------------------------------------------------------ the model check */

static int expect(int ok, const char *m, const char *what) {
    if (!ok) fprintf(stderr, "check %s: %s\n", m, what);
    return ok ? 0 : 1;
}

static double cosine(const float *u, const float *v, int n) {
    double uv = 0, uu = 0, vv = 0;
    for (int i = 0; i < n; i++) uv += (double)u[i] * v[i], uu += (double)u[i] * u[i], vv += (double)v[i] * v[i];
    return uv / sqrt(uu * vv);
}

/* The config as written, and a padded batch of a 10- and a 16-token sequence equal to each run
 * alone (masking and rotary positions), every value finite, rows not all alike. int8 weights
 * quantize each token's activations by its own range, so a token's codes do not depend on the
 * batch, but the float32 attention differs by rounding between the two runs and an activation
 * on a rounding boundary then takes the next code: with int8 the equality is the issue's
 * contextual bound, every token's cosine >= 0.99. */
static int check_model(const emb_encoder *enc, const msize *m, emb_workspace *ws) {
    const emb_encoder_config *c = emb_encoder_get_config(enc);
    int bad = 0, H = m->H;
    bad += expect(c->dims.hidden == m->H && c->dims.layers == m->L && c->dims.heads == m->NH &&
                      c->dims.intermediate == m->FF,
                  m->key, "sizes differ from those written");
    if (m->arch == BENCH_ARCH_NOMIC)
        bad +=
            expect(c->arch == EMB_ARCH_NOMIC_BERT && c->pos_kind == EMB_POS_ROTARY && c->rope_theta == 1000 &&
                       c->rope_dims == H / m->NH && c->gated && c->act == EMB_ACT_SILU && !c->qkv_bias &&
                       !c->out_bias && !c->ffn_in_bias && !c->ffn_out_bias && !c->pre_norm && c->global_every == 0,
                   m->key, "not read as nomic-embed-text-v1.5's architecture");
    if (m->arch == BENCH_ARCH_MODERNBERT)
        bad += expect(c->arch == EMB_ARCH_MODERNBERT && c->pos_kind == EMB_POS_ROTARY && c->rope_theta == 160000 &&
                          c->rope_theta_local == 10000 && c->half_window == 64 && c->global_every == 3 &&
                          c->gated && c->act == EMB_ACT_GELU && c->pre_norm && !c->qkv_bias && !c->norm_bias,
                      m->key, "not read as ModernBERT-base's architecture");
    if (m->arch == BENCH_ARCH_BERT) bad += expect(c->arch == EMB_ARCH_BERT, m->key, "not read as BERT");
    if (m->arch == BENCH_ARCH_MPNET)
        bad += expect(c->arch == EMB_ARCH_MPNET && c->rel_buckets == 32 && c->pos_offset == 2, m->key,
                      "not read as MPNet");
    char err[EMB_ERR_LEN];
    int32_t ids[32], lens[2] = {10, 16}, one_len;
    bench_work_seed(12345);
    bench_work_fill_sequence(ids + 16, 16);
    bench_work_fill_sequence(ids, 10); /* the padded batch: sequence 0 is 10 real tokens + 6 of padding */
    for (int t = 10; t < 16; t++) ids[t] = 0;
    float *pair = malloc(sizeof(float) * 32 * H), *alone = malloc(sizeof(float) * 16 * H);
    if (emb_encoder_forward(enc, ws, 2, 16, ids, NULL, lens, m->L, pair, err)) {
        fprintf(stderr, "check %s: forward: %s\n", m->key, err);
        bad++;
    }
    double worst = 0, spread = 0, cos_min = 2;
    for (int s = 0; s < 2 && !bad; s++) {
        one_len = lens[s];
        if (emb_encoder_forward(enc, ws, 1, one_len, ids + 16 * s, NULL, &one_len, m->L, alone, err)) {
            fprintf(stderr, "check %s: forward: %s\n", m->key, err);
            bad++;
            break;
        }
        for (int i = 0; i < one_len * H; i++) {
            double d = fabs((double)alone[i] - pair[(size_t)16 * s * H + i]);
            if (!(d <= worst)) worst = d; /* NaN sticks */
        }
        for (int t = 0; t < one_len; t++) {
            double cs = cosine(alone + (size_t)t * H, pair + (size_t)(16 * s + t) * H, H);
            if (!(cs >= cos_min)) cos_min = cs;
        }
        for (int i = 0; i < H; i++) spread += fabs((double)alone[i] - alone[H + i]);
    }
    if (!bad) {
        int f32 = emb_encoder_weights(enc) == EMB_WEIGHTS_F32;
        bad += expect(f32 ? worst < 1e-4 : cos_min >= 0.99, m->key,
                      "a padded batch differs from its sequences run alone");
        bad += expect(spread > 1e-3 * H, m->key, "rows are all alike");
        printf("check %s: %s, %s, padded batch vs alone max |diff| %.2g, smallest token cosine %.6f, %s\n", m->key,
               c->arch_name, emb_weights_name(emb_encoder_weights(enc)), worst, cos_min, bad ? "FAILED" : "ok");
    }
    free(pair);
    free(alone);
    return bad;
}

/* check.txt and check.f32: the check batches above, B T lens and ids, then our outputs (for the
 * peers' equality check). */
static int write_check(const char *dir, const emb_encoder *enc, const msize *m) {
    char path[1024], err[EMB_ERR_LEN];
    workload wl[2] = {bench_work_fixed(1, 16), bench_work_fixed(3, 24)};
    wl[1].lens[0][0] = 24;
    wl[1].lens[0][1] = 9;
    wl[1].lens[0][2] = 17;
    for (int b = 1; b < 3; b++) {
        bench_work_fill_sequence(wl[1].ids[0] + 24 * b, wl[1].lens[0][b]);
        for (int t = wl[1].lens[0][b]; t < 24; t++) wl[1].ids[0][24 * b + t] = 0;
    }
    snprintf(path, sizeof path, "%s/check.txt", dir);
    FILE *f = fopen(path, "w");
    snprintf(path, sizeof path, "%s/check.f32", dir);
    FILE *o = fopen(path, "wb");
    emb_workspace *ws = emb_workspace_new();
    int rc = !f || !o || !ws;
    for (int k = 0; k < 2 && !rc; k++) {
        int B = wl[k].B[0], T = wl[k].T[0];
        float *out = malloc(sizeof(float) * B * T * m->H);
        rc = emb_encoder_forward(enc, ws, B, T, wl[k].ids[0], NULL, wl[k].lens[0], m->L, out, err);
        if (rc) fprintf(stderr, "write_check: %s\n", err);
        fprintf(f, "batch %d %d\nlens", B, T);
        for (int b = 0; b < B; b++) fprintf(f, " %d", wl[k].lens[0][b]);
        fprintf(f, "\nids");
        for (int i = 0; i < B * T; i++) fprintf(f, " %d", wl[k].ids[0][i]);
        fprintf(f, "\n");
        if (!rc && fwrite(out, sizeof(float), (size_t)B * T * m->H, o) != (size_t)B * T * m->H) rc = 1;
        free(out);
    }
    if (f && fclose(f)) rc = 1;
    if (o && fclose(o)) rc = 1;
    emb_workspace_free(ws);
    bench_work_free(&wl[0]);
    bench_work_free(&wl[1]);
    return rc;
}

/* ------------------------------------------------------------------ sgemm alone */

/* The sgemm calls of one forward pass (core/encoder.c), same shapes and order, no other work. */
typedef struct {
    float *X, *W1, *W2, *Q, *S, *out;
} gemm_bufs;
static void gemm_attention(const emb_encoder_config *c, gemm_bufs *g, int l, int B, int T, const int32_t *lens) {
    const int H = c->dims.hidden, dh = H / c->dims.heads, BT = B * T;
    int w = emb_encoder_config_layer_is_local(c, l) ? c->half_window : -1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < c->dims.heads; h++) {
            float *q = g->Q + (size_t)b * T * H + h * dh;
            int len = lens[b], rb = T;
            /* the encoder's row blocks: <= 262144 multiply-adds, at least 8 rows, with several
             * threads; a window's block sees a band of keys */
            if (openblas_get_num_threads() > 1) {
                rb = (int)(262144.0 / ((double)len * dh));
                if (rb < 8) rb = 8;
            }
            if (w >= 0 && rb > (w < 16 ? 16 : w)) rb = w < 16 ? 16 : w;
            for (int r0 = 0; r0 < T; r0 += rb) {
                int mm = T - r0 < rb ? T - r0 : rb, k0 = 0, k1 = len;
                if (w >= 0) {
                    k0 = r0 - w > 0 ? r0 - w : 0;
                    k1 = r0 + mm + w < len ? r0 + mm + w : len;
                }
                int nk = k1 - k0;
                if (nk <= 0) continue;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mm, nk, dh, 0.125f, q + (size_t)r0 * H, H,
                            q + (size_t)BT * H + (size_t)k0 * H, H, 0.0f, g->S, nk);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mm, dh, nk, 1.0f, g->S, nk,
                            q + (size_t)2 * BT * H + (size_t)k0 * H, H, 0.0f, q + (size_t)r0 * H, H);
            }
        }
}
static void gemm_only(const msize *m, const emb_encoder_config *c, gemm_bufs *g, int B, int T,
                      const int32_t *lens) {
    const int H = m->H, FF = m->FF, BT = B * T, FFin = c->gated ? 2 * FF : FF;
    for (int l = 0; l < m->L; l++) {
        for (int k = 0; k < 3; k++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT, H, H, 1.0f, g->X, H, g->W1, H, 1.0f,
                        g->Q + (size_t)k * BT * H, H);
        gemm_attention(c, g, l, B, T, lens);
        /* projections accumulate onto their preloaded bias or the residual (beta = 1), as the encoder does */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT, H, H, 1.0f, g->Q, H, g->W1, H, 1.0f, g->out, H);
        if (m->ffn_in_split) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT, FF, H, 1.0f, g->X, H, g->W2, H, 1.0f, g->Q,
                        FFin);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT, FF, H, 1.0f, g->X, H, g->W2, H, 1.0f,
                        g->Q + FF, FFin);
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT, FFin, H, 1.0f, g->X, H, g->W2, H, 1.0f, g->Q,
                        FFin);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT, H, FF, 1.0f, g->Q, FFin, g->W2, FF, 1.0f, g->out,
                    H);
    }
}

/* ------------------------------------------------------------------ timing */

typedef struct {
    const emb_encoder *enc;
    emb_workspace *ws;
    const msize *m;
    float *out;
    char err[EMB_ERR_LEN];
} enc_ctx;
static int encoder_pass(void *cv, const workload *w, int k) {
    enc_ctx *c = cv;
    if (!emb_encoder_forward_grouped(c->enc, c->ws, w->B[k], w->T[k], w->ids[k], NULL, w->lens[k], c->m->L, c->out,
                                     c->err))
        return 0;
    fprintf(stderr, "forward: %s\n", c->err);
    return 1;
}
typedef struct {
    const msize *m;
    const emb_encoder_config *c;
    gemm_bufs g;
} gemm_ctx;
static int gemm_pass(void *cv, const workload *w, int k) {
    gemm_ctx *c = cv;
    gemm_only(c->m, c->c, &c->g, w->B[k], w->T[k], w->lens[k]);
    return 0;
}
static void gemm_bufs_init(gemm_bufs *g, const msize *m) {
    size_t BTmax = 32 * 128, wide = (size_t)(2 * m->FF > 3 * m->H ? 2 * m->FF : 3 * m->H);
    g->X = malloc(sizeof(float) * BTmax * m->H);
    g->W1 = malloc(sizeof(float) * m->H * m->H);
    g->W2 = malloc(sizeof(float) * m->H * 2 * m->FF);
    g->Q = calloc(BTmax * wide, sizeof(float));
    g->S = malloc(sizeof(float) * 128 * 128);
    g->out = calloc(BTmax * m->H, sizeof(float));
    for (size_t i = 0; i < BTmax * m->H; i++) g->X[i] = urand(1);
    for (size_t i = 0; i < (size_t)m->H * m->H; i++) g->W1[i] = urand(0.05f);
    for (size_t i = 0; i < (size_t)m->H * 2 * m->FF; i++) g->W2[i] = urand(0.05f);
}
static void gemm_bufs_free(gemm_bufs *g) {
    free(g->X);
    free(g->W1);
    free(g->W2);
    free(g->Q);
    free(g->S);
    free(g->out);
}

/* ours (float32), ours_int8, ours_bf16 */
static const char *result_impl(emb_weights wt) {
    static const char *const names[MAX_KINDS] = {"ours", "ours_int8", "ours_bf16"}; /* by emb_weights */
    return names[wt];
}

static void append_result(const char *impl, const msize *m, int th, int w, double tps) {
    if (!results_path) return;
    FILE *f = fopen(results_path, "a");
    if (!f) {
        perror(results_path);
        return;
    }
    fprintf(f, "%s %s %d %s %.1f\n", impl, m->key, th, WORK_KEYS[w], tps);
    fclose(f);
}

/* Cosine of each real token's vector under two encoders on the check's padded batch: the
 * smallest, as a first sign that int8 weights are sane (not the accuracy measurement). */
static double min_token_cosine(const emb_encoder *a, const emb_encoder *b, emb_workspace *ws, const msize *m) {
    char err[EMB_ERR_LEN];
    int32_t ids[32], lens[2] = {16, 12};
    bench_work_seed(777);
    bench_work_fill_sequence(ids, 16);
    bench_work_fill_sequence(ids + 16, 12);
    for (int t = 28; t < 32; t++) ids[t] = 0;
    float *x = malloc(sizeof(float) * 32 * m->H), *y = malloc(sizeof(float) * 32 * m->H);
    double worst = 2;
    if (emb_encoder_forward(a, ws, 2, 16, ids, NULL, lens, m->L, x, err) ||
        emb_encoder_forward(b, ws, 2, 16, ids, NULL, lens, m->L, y, err)) {
        fprintf(stderr, "check %s: forward: %s\n", m->key, err);
        worst = -2;
    }
    for (int s = 0; s < 2 && worst > -2; s++)
        for (int t = 0; t < lens[s]; t++) {
            double c = cosine(x + (size_t)(16 * s + t) * m->H, y + (size_t)(16 * s + t) * m->H, m->H);
            if (!(c >= worst)) worst = c; /* NaN sticks */
        }
    free(x);
    free(y);
    return worst;
}

static int run_model(const char *dir, const msize *m, const int *threads, int nthreads) {
    char err[EMB_ERR_LEN];
    const int nk = n_weight_kinds;
    emb_encoder *enc[MAX_KINDS] = {NULL};
    enc_ctx ec[MAX_KINDS];
    long rss0 = bench_peak_rss_kb();
    size_t packed = 0;
    for (int k = 0; k < nk; k++) {
        double t0 = bench_now();
        if (emb_encoder_load(dir, &enc[k], err)) {
            fprintf(stderr, "load: %s\n", err);
            return 1;
        }
        double t1 = bench_now();
        if (emb_encoder_set_weights(enc[k], weight_kinds[k], err)) {
            fprintf(stderr, "%s weights: %s\n", emb_weights_name(weight_kinds[k]), err);
            return 1;
        }
        const emb_encoder_info *in = emb_encoder_get_info(enc[k]);
        packed += in->packed_bytes;
        if (weight_kinds[k] == EMB_WEIGHTS_F32)
            printf("\n== %s, f32: %.1f MB of F32 weights, loaded (mmap + fingerprint) in %.2f s\n", m->name,
                   in->weight_bytes / 1e6, t1 - t0);
        else
            printf("\n== %s, %s: loaded in %.2f s, linear layers packed (%.1f MB) in %.2f s; the pass reads %.1f "
                   "MB\n",
                   m->name, emb_weights_name(weight_kinds[k]), t1 - t0, in->packed_bytes / 1e6, bench_now() - t1,
                   in->used_bytes / 1e6);
        ec[k] = (enc_ctx){enc[k], emb_workspace_new(), m, malloc(sizeof(float) * 32 * 128 * m->H), {0}};
        if (check_model(enc[k], m, ec[k].ws)) return 1;
    }
    for (int k = 1; k < nk; k++) {
        double c = min_token_cosine(enc[0], enc[k], ec[0].ws, m);
        printf("check %s: %s vs %s, smallest cosine of a token's vector on the check batch %.5f\n", m->key,
               emb_weights_name(weight_kinds[k]), emb_weights_name(weight_kinds[0]), c);
        if (!(c > 0.9)) {
            fprintf(stderr, "check %s: %s weights are far from %s\n", m->key, emb_weights_name(weight_kinds[k]),
                    emb_weights_name(weight_kinds[0]));
            return 1;
        }
    }
    bench_print_load("before");
    workload wl[N_WORK];
    make_workloads(m, wl);
    double enc_time[8][MAX_KINDS][N_WORK], gemm_time[8][N_WORK], flops[N_WORK];
    for (int w = 0; w < N_WORK; w++) {
        flops[w] = 0;
        for (int k = 0; k < wl[w].nbatch; k++)
            flops[w] += emb_encoder_flops(enc[0], wl[w].B[k], wl[w].T[k], wl[w].lens[k], m->L);
    }
    /* peak RSS of the encoders alone: their largest batch on the most threads, before the sgemm
     * buffers exist */
    openblas_set_num_threads(threads[nthreads - 1]);
    for (int k = 0; k < nk; k++)
        if (encoder_pass(&ec[k], &wl[2], 0)) return 1;
    long rss_after = bench_peak_rss_kb();
    gemm_ctx gc = {m, emb_encoder_get_config(enc[0]), {0}};
    gemm_bufs_init(&gc.g, m);
    bench_pass_fn fns[MAX_KINDS + 1];
    void *ctxs[MAX_KINDS + 1];
    for (int k = 0; k < nk; k++) fns[k] = encoder_pass, ctxs[k] = &ec[k];
    fns[nk] = gemm_pass, ctxs[nk] = &gc;
    for (int ti = 0; ti < nthreads; ti++) {
        openblas_set_num_threads(threads[ti]);
        for (int w = 0; w < N_WORK; w++) {
            double best[MAX_KINDS + 1];
            if (skip_work(w)) continue;
            if (bench_time_ways(nk + !no_sgemm, fns, ctxs, &wl[w], quick ? 0.3 : 1.0, best)) return 1;
            for (int k = 0; k < nk; k++) enc_time[ti][k][w] = best[k];
            gemm_time[ti][w] = no_sgemm ? 1e30 : best[nk];
        }
    }
    size_t ws_bytes = emb_workspace_bytes(ec[0].ws);
    gemm_bufs_free(&gc.g);
    printf("%-8s %-22s %-7s %10s %9s %14s %9s %9s\n", "threads", "workload", "weights", "tokens/s", "GFLOP/s",
           "sgemm GFLOP/s", "of sgemm", nk > 1 ? "÷ first" : "");
    for (int ti = 0; ti < nthreads; ti++)
        for (int w = 0; w < N_WORK; w++) {
            if (skip_work(w)) continue;
            double gg = flops[w] / gemm_time[ti][w] / 1e9;
            for (int k = 0; k < nk; k++) {
                double tps = wl[w].tokens / enc_time[ti][k][w], gf = flops[w] / enc_time[ti][k][w] / 1e9;
                printf("%-8d %-22s %-7s %10.0f %9.1f", threads[ti], wl[w].name, emb_weights_name(weight_kinds[k]),
                       tps, gf);
                if (no_sgemm) printf(" %14s %9s", "-", "-"); /* no baseline was timed */
                else printf(" %14.1f %8.0f%%", gg, 100.0 * gf / gg);
                if (k > 0) printf(" %8.2fx", enc_time[ti][0][w] / enc_time[ti][k][w]); /* ÷ the first */
                printf("\n");
                append_result(result_impl(weight_kinds[k]), m, threads[ti], w, tps);
            }
            if (!no_sgemm) append_result("sgemm", m, threads[ti], w, wl[w].tokens / gemm_time[ti][w]);
        }
    const emb_encoder_info *in = emb_encoder_get_info(enc[0]);
    printf("peak RSS %.1f MB (before load %.1f MB) vs weights %.1f MB%s: weights + %.1f MB; workspace %.1f MB at "
           "32 x 128\n",
           rss_after / 1024.0, rss0 / 1024.0, (in->weight_bytes + packed) / 1048576.0,
           packed ? " (float32 + the packed copies, every encoder loaded)" : "",
           (rss_after * 1024.0 - (double)(in->weight_bytes + packed)) / 1048576.0, ws_bytes / 1048576.0);
    bench_print_load("after");
    fflush(stdout);
    for (int w = 0; w < N_WORK; w++) bench_work_free(&wl[w]);
    for (int k = 0; k < nk; k++) {
        free(ec[k].out);
        emb_workspace_free(ec[k].ws);
        emb_encoder_free(enc[k]);
    }
    return 0;
}

/* --write: the model folder gets the peers' inputs (workloads, check batches and our outputs). */
static int write_peer_files(const char *dir, const msize *m) {
    char err[EMB_ERR_LEN];
    emb_encoder *enc;
    if (emb_encoder_load(dir, &enc, err)) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    emb_workspace *ws = emb_workspace_new();
    workload wl[N_WORK];
    int rc = check_model(enc, m, ws);
    emb_workspace_free(ws);
    if (!rc) {
        make_workloads(m, wl);
        rc = bench_work_write(dir, wl, WORK_KEYS, N_WORK) || write_check(dir, enc, m);
        for (int w = 0; w < N_WORK; w++) bench_work_free(&wl[w]);
    }
    emb_encoder_free(enc);
    return rc;
}

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    for (const char *p = s; *p && n < max;) {
        out[n++] = atoi(p);
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    for (int i = 0; i < n; i++)
        if (out[i] < 1 || out[i] > 64) return 0;
    return n;
}

/* A comma-separated list of weight types (emb_weights_name), each once; the ratios divide by the
 * first. Returns how many, 0 if the list is bad. */
static int parse_weights(const char *s) {
    int n = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_KINDS || emb_weights_parse(tok, &weight_kinds[n])) return 0;
        for (int i = 0; i < n; i++)
            if (weight_kinds[i] == weight_kinds[n]) return 0;
        n++;
    }
    return n;
}

int main(int argc, char **argv) {
    bench_openblas_sleeps(argv);
    int want[N_MODELS] = {1, 1, 1, 1, 1}, threads[8] = {1, 2}, nthreads = 2;
    const char *dir_given = NULL, *write_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            const char *list = argv[++i];
            if (strcmp(list, "all") != 0)
                for (int k = 0; k < N_MODELS; k++) {
                    const char *p = strstr(list, MODELS[k].key);
                    size_t n = strlen(MODELS[k].key);
                    want[k] = p && (p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ',');
                }
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            if (!(nthreads = parse_list(argv[++i], threads, 8))) {
                fprintf(stderr, "bad --threads\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir_given = argv[++i];
        else if (strcmp(argv[i], "--write") == 0 && i + 1 < argc) write_dir = argv[++i];
        else if (strcmp(argv[i], "--no-sgemm") == 0) no_sgemm = 1;
        else if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc) {
            if (!(n_weight_kinds = parse_weights(argv[++i]))) {
                fprintf(stderr, "bad --weights (a list of f32, int8, bf16)\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--workload") == 0 && i + 1 < argc) only_work = argv[++i];
        else if (strcmp(argv[i], "--sentences") == 0 && i + 1 < argc) {
            if ((sentences = atoi(argv[++i])) < 1) {
                fprintf(stderr, "bad --sentences\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_encoder [--quick] [--no-sgemm] [--workload KEY] [--model "
                            "minilm,base,nomic,modernbert,mpnet|all] [--threads 1,2] [--weights f32,int8] "
                            "[--sentences N] [--dir DIR | --write DIR] [--results FILE]\n");
            return 2;
        }
    }
    char tmp[] = "/tmp/bench_encoder_XXXXXX";
    const char *dir = write_dir ? write_dir : dir_given;
    if (!dir) {
        if (!mkdtemp(tmp)) {
            perror("mkdtemp");
            return 1;
        }
        dir = tmp;
    } else {
        mkdir(dir, 0755);
    }
    const char *ct = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
    if (!write_dir)
        printf("bench_encoder: OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s\n", ct ? ct : "(unset)",
               l2 ? l2 : "(unset)");
    fflush(stdout);
    int rc = 0;
    for (int mi = 0; mi < N_MODELS && !rc; mi++) {
        if (!want[mi]) continue;
        const msize *m = &MODELS[mi];
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", dir, m->key);
        if (!dir_given) {
            mkdir(sub, 0755);
            pid_t p = fork();
            if (p == 0) _exit(bench_random_model_write_arch(sub, m->arch, m->H, m->L, m->NH, m->FF, 0) ? 1 : 0);
            if (!bench_child_ok(p)) {
                fprintf(stderr, "writing the %s model failed\n", m->name);
                rc = 1;
                break;
            }
        }
        pid_t p = fork();
        if (p == 0) {
            int r;
            if (write_dir) r = write_peer_files(sub, m);
            else {
                printf("OpenBLAS: %s, core %s; int8 kernels: %s\n", openblas_get_config(), openblas_get_corename(),
                       emb_int8_gemm_path_name(emb_int8_gemm_path_default()));
                r = run_model(sub, m, threads, nthreads);
            }
            fflush(stdout);
            _exit(r);
        }
        if (!bench_child_ok(p)) rc = 1;
        if (!dir_given && !write_dir) {
            char cmd[600];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
            if (system(cmd)) rc = 1;
        }
    }
    if (dir == tmp) rmdir(tmp);
    return rc;
}
