/* How far int8 weights (emb_encoder_set_weights) move the encoder's outputs from float32's: each
 * model folder is loaded twice, as float32 and as int8, and the same token ids go through both.
 * Reported per model and input set, as distributions (smallest, 1st percentile, median) of the
 * cosine between the int8 and the float32 vector:
 *   mean  the sentence vector by mean pooling over the real tokens of the last layer
 *   CLS   the sentence vector of the first token
 *   token the contextual vector of every real token (last layer)
 * against issue 13's bounds: sentence vectors >= 0.995 for every golden case, contextual >= 0.99.
 *
 * Models: random-weight BERTs at MiniLM-L6 size (384/6/12/1536) and bert-base size
 * (768/12/12/3072) from bench/random_model.c, as the speed benchmark's weights and with outliers
 * (BENCH_MODEL_OUTLIERS: large weights and two large hidden dimensions; and at MiniLM size each of
 * the two alone), and any checkpoint
 * folders given (the golden models). Inputs:
 *   cases      a golden folder's reference cases (DIR/../refs/NAME.json: input_ids and
 *              token_type_ids), each run alone
 *   sentences  N random-id sequences of 8-128 tokens (at most the model's positions) in
 *              length-sorted, padded batches of 32, as bench_encoder's sentence workload (N =
 *              1,000 at MiniLM size and for the golden models, 128 at bert-base size)
 *
 * Usage: bench_int8_accuracy [--quick] [--random LIST] [--sentences N] [--threads N] [FOLDER ...]
 *   --random     comma-separated keys of RANDOM below (minilm, base, minilm-outliers, base-outliers,
 *                minilm-bigweights, minilm-bigdims), or none; default all
 *   --sentences  N sentences for every model
 *   --threads    OpenBLAS threads (default 1)
 *   --weights    int8 (default) or bf16 (AVX512_BF16 only): what is compared with float32
 *   --quick      64 sentences (32 at bert-base size)
 * Exits 1 when a golden case (a folder given) is below a bound, 2 on a usage error. */
#include "nn/encoder.h"
#include "math/int8_gemm.h"
#include "base/file.h"
#include "random_model.h"
#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOUND_SENTENCE 0.995
#define BOUND_TOKEN 0.99

static int quick = 0, sentences = 0, threads = 1;
static emb_weights kind = EMB_WEIGHTS_INT8; /* --weights: what is compared with float32 */

static uint64_t rs;
static uint32_t xr(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

/* ------------------------------------------------------------------ inputs */

/* Sequences run together: B sequences padded to T (ids and type ids B*T, 0 past lens[b]). */
typedef struct {
    int B, T;
    int32_t *ids, *types, *lens;
    const char *name;
} batch;
typedef struct {
    batch *b;
    int n, cap;
} batch_list;

static batch *add_batch(batch_list *l, int B, int T) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->b = realloc(l->b, sizeof *l->b * (size_t)l->cap);
    }
    batch *b = &l->b[l->n++];
    *b = (batch){B,
                 T,
                 calloc((size_t)B * T, sizeof(int32_t)),
                 calloc((size_t)B * T, sizeof(int32_t)),
                 calloc((size_t)B, sizeof(int32_t)),
                 NULL};
    return b;
}
static void free_batches(batch_list *l) {
    for (int i = 0; i < l->n; i++) free(l->b[i].ids), free(l->b[i].types), free(l->b[i].lens);
    free(l->b);
    *l = (batch_list){0};
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* n sequences of 8..min(128, max_len) tokens: first, random ids in [lo, hi), last. */
static void make_sentences(batch_list *l, int n, int max_len, int32_t first, int32_t last, int32_t lo,
                           int32_t hi) {
    rs = 0x9E3779B97F4A7C15ull;
    int top = max_len < 128 ? max_len : 128, *len = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) len[i] = 8 + (int)(xr() % (uint32_t)(top - 7));
    qsort(len, (size_t)n, sizeof(int), cmp_int);
    for (int k = 0; k < n; k += 32) {
        int B = n - k < 32 ? n - k : 32;
        batch *b = add_batch(l, B, len[k + B - 1]);
        for (int s = 0; s < B; s++) {
            int L = b->lens[s] = len[k + s];
            for (int t = 0; t < L; t++)
                b->ids[s * b->T + t] = t == 0       ? first
                                       : t == L - 1 ? last
                                                    : lo + (int32_t)(xr() % (uint32_t)(hi - lo));
        }
    }
    free(len);
}

/* The reference cases of a golden folder, one batch each; their names stay in *json. Returns
 * the number of cases (0: no refs file), -1 on a malformed file. */
static int read_cases(const char *dir, batch_list *l, cJSON **json) {
    char path[1200], name[256];
    const char *slash = strrchr(dir, '/');
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : dir);
    snprintf(path, sizeof path, "%s/../refs/%s.json", dir, name);
    char *text, err[EMB_ERR_LEN];
    if (!emb_path_exists(path)) return 0;
    if (emb_read_file(path, (size_t)1 << 30, &text, NULL, err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *json = cJSON_Parse(text);
    free(text);
    if (!*json) {
        fprintf(stderr, "%s: not JSON\n", path);
        return -1;
    }
    cJSON *cases = cJSON_GetObjectItemCaseSensitive(*json, "cases"), *c;
    if (!cJSON_IsObject(cases)) {
        fprintf(stderr, "%s: no \"cases\" object\n", path);
        return -1;
    }
    int n = 0;
    cJSON_ArrayForEach(c, cases) {
        cJSON *ids = cJSON_GetObjectItemCaseSensitive(c, "input_ids"),
              *ty = cJSON_GetObjectItemCaseSensitive(c, "token_type_ids");
        int T = cJSON_GetArraySize(ids);
        if (!cJSON_IsArray(ids) || T < 1 || (ty && cJSON_GetArraySize(ty) != T)) {
            fprintf(stderr, "%s: case %s: bad input_ids / token_type_ids\n", path, c->string);
            return -1;
        }
        batch *b = add_batch(l, 1, T);
        b->lens[0] = T;
        b->name = c->string;
        for (int t = 0; t < T; t++) {
            b->ids[t] = (int32_t)cJSON_GetArrayItem(ids, t)->valuedouble;
            b->types[t] = ty ? (int32_t)cJSON_GetArrayItem(ty, t)->valuedouble : 0;
        }
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------ measuring */

typedef struct {
    double *v;
    size_t n, cap;
} series;
static void push(series *s, double x) {
    if (s->n == s->cap) s->v = realloc(s->v, sizeof(double) * (s->cap = s->cap ? 2 * s->cap : 1024));
    s->v[s->n++] = x;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* the q-quantile of sorted s (NaNs are counted apart: they do not sort) */
static double quantile(const series *s, double q) { return s->v[(size_t)(q * (double)(s->n - 1))]; }

static double cosine(const float *u, const float *v, int n) {
    double uv = 0, uu = 0, vv = 0;
    for (int i = 0; i < n; i++) uv += (double)u[i] * v[i], uu += (double)u[i] * u[i], vv += (double)v[i] * v[i];
    return uu > 0 && vv > 0 ? uv / sqrt(uu * vv) : (uu == vv ? 1.0 : 0.0);
}

typedef struct {
    series mean, cls, token;
    double worst_sentence;
    const char *worst_name;
    int nan;
} stats;

/* Runs every batch through both encoders and adds the cosines. */
static int measure(const emb_encoder *f32, const emb_encoder *i8, const batch_list *l, stats *st) {
    const int H = emb_encoder_get_config(f32)->dims.hidden, L = emb_encoder_get_config(f32)->dims.layers;
    emb_workspace *ws = emb_workspace_new();
    char err[EMB_ERR_LEN];
    int rc = 0;
    st->worst_sentence = 2;
    for (int k = 0; k < l->n && !rc; k++) {
        const batch *b = &l->b[k];
        size_t n = (size_t)b->B * b->T * H;
        float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *mx = malloc(sizeof(float) * H),
              *my = malloc(sizeof(float) * H);
        if (emb_encoder_forward(f32, ws, b->B, b->T, b->ids, b->types, b->lens, L, x, err) ||
            emb_encoder_forward(i8, ws, b->B, b->T, b->ids, b->types, b->lens, L, y, err)) {
            fprintf(stderr, "forward: %s\n", err);
            rc = 1;
        }
        for (int s = 0; s < b->B && !rc; s++) {
            const float *xs = x + (size_t)s * b->T * H, *ys = y + (size_t)s * b->T * H;
            memset(mx, 0, sizeof(float) * H);
            memset(my, 0, sizeof(float) * H);
            for (int t = 0; t < b->lens[s]; t++) {
                double c = cosine(xs + (size_t)t * H, ys + (size_t)t * H, H);
                st->nan += c != c;
                push(&st->token, c);
                for (int i = 0; i < H; i++) mx[i] += xs[(size_t)t * H + i], my[i] += ys[(size_t)t * H + i];
            }
            double cm = cosine(mx, my, H), cc = cosine(xs, ys, H);
            st->nan += (cm != cm) + (cc != cc);
            push(&st->mean, cm);
            push(&st->cls, cc);
            double w = cm < cc ? cm : cc;
            if (w < st->worst_sentence) st->worst_sentence = w, st->worst_name = b->name;
        }
        free(x), free(y), free(mx), free(my);
    }
    emb_workspace_free(ws);
    return rc;
}

static void print_dist(series *s) {
    qsort(s->v, s->n, sizeof(double), cmp_double);
    printf(" | %.5f %.5f %.5f", s->v[0], quantile(s, 0.01), quantile(s, 0.5));
}

/* One row: model, inputs, counts, the three distributions, and the verdict against the bounds.
 * Returns whether the bounds hold. */
static int report(const char *model, const char *inputs, stats *st) {
    if (!st->mean.n) return 1;
    printf("| %s | %s | %zu / %zu", model, inputs, st->mean.n, st->token.n);
    print_dist(&st->mean);
    print_dist(&st->cls);
    print_dist(&st->token);
    int ok = !st->nan && st->mean.v[0] >= BOUND_SENTENCE && st->cls.v[0] >= BOUND_SENTENCE &&
             st->token.v[0] >= BOUND_TOKEN;
    printf(" | %s", ok ? "ok" : "BELOW");
    if (!ok) {
        size_t below_s = 0, below_t = 0;
        for (size_t i = 0; i < st->mean.n; i++)
            below_s += st->mean.v[i] < BOUND_SENTENCE || st->cls.v[i] < BOUND_SENTENCE;
        for (size_t i = 0; i < st->token.n; i++) below_t += st->token.v[i] < BOUND_TOKEN;
        printf(": %zu sentences, %zu tokens", below_s, below_t);
    }
    if (st->nan) printf(", %d NaN", st->nan);
    if (st->worst_name) printf(" (worst case: %s)", st->worst_name);
    printf(" |\n");
    fflush(stdout);
    free(st->mean.v), free(st->cls.v), free(st->token.v);
    return ok;
}

/* Both encoders of a folder, then the cases (golden) and the sentences; returns whether every
 * bound holds on the cases (on the sentences when there are none), -1 on an error. */
static int run_folder(const char *dir, const char *label, int n_sent, int golden) {
    char err[EMB_ERR_LEN];
    emb_encoder *f32 = NULL, *i8 = NULL;
    if (emb_encoder_load(dir, &f32, err) || emb_encoder_load(dir, &i8, err) ||
        emb_encoder_set_weights(i8, kind, err)) {
        fprintf(stderr, "%s: %s\n", dir, err);
        emb_encoder_free(f32);
        emb_encoder_free(i8);
        return -1;
    }
    if (emb_encoder_weights(i8) != kind || emb_encoder_get_info(i8)->packed_bytes == 0) {
        fprintf(stderr, "%s: the %s encoder has no packed weights\n", dir, emb_weights_name(kind));
        emb_encoder_free(f32);
        emb_encoder_free(i8);
        return -1;
    }
    const emb_encoder_config *c = emb_encoder_get_config(f32);
    batch_list cases = {0}, sent = {0};
    cJSON *json = NULL;
    int ok = 1, nc = golden ? read_cases(dir, &cases, &json) : 0;
    if (nc < 0) ok = -1;
    /* the sentences' first and last ids: a reference case's (the model's own [CLS] / <s> and
     * [SEP] / </s>), else BERT's; the others from the upper 15/16 of the vocabulary (no special tokens) */
    int32_t first = nc > 0 ? cases.b[0].ids[0] : 101, last = nc > 0 ? cases.b[0].ids[cases.b[0].T - 1] : 102;
    int max_len = emb_encoder_max_tokens(f32);
    make_sentences(&sent, n_sent, max_len, first, last, c->dims.vocab_size / 16, c->dims.vocab_size);
    stats sc = {0}, ss = {0};
    if (ok > 0 && nc > 0 && measure(f32, i8, &cases, &sc)) ok = -1;
    if (ok > 0 && measure(f32, i8, &sent, &ss)) ok = -1;
    if (ok > 0) {
        char what[64];
        int cases_ok = nc > 0 ? report(label, "cases", &sc) : 1;
        snprintf(what, sizeof what, "sentences (%d batches)", sent.n);
        int sent_ok = report(label, what, &ss);
        ok = nc > 0 ? cases_ok : sent_ok;
    }
    free_batches(&cases);
    free_batches(&sent);
    cJSON_Delete(json);
    emb_encoder_free(f32);
    emb_encoder_free(i8);
    return ok;
}

/* ------------------------------------------------------------------ main */

typedef struct {
    const char *key;
    int H, L, NH, FF, n_sent;
    unsigned flags;
} random_model;
static const random_model RANDOM[] = {
    {"minilm", 384, 6, 12, 1536, 1000, 0},
    {"base", 768, 12, 12, 3072, 128, 0},
    {"minilm-outliers", 384, 6, 12, 1536, 1000, BENCH_MODEL_OUTLIERS},
    {"minilm-bigweights", 384, 6, 12, 1536, 1000, BENCH_MODEL_BIG_WEIGHTS},
    {"minilm-bigdims", 384, 6, 12, 1536, 1000, BENCH_MODEL_BIG_DIMS},
    {"base-outliers", 768, 12, 12, 3072, 128, BENCH_MODEL_OUTLIERS},
};
#define N_RANDOM ((int)(sizeof RANDOM / sizeof RANDOM[0]))

static int in_list(const char *list, const char *key) {
    size_t n = strlen(key);
    for (const char *p = list; (p = strstr(p, key)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

static int sentence_count(int full) {
    if (sentences) return sentences;
    return quick ? (full > 128 ? 64 : 32) : full;
}

int main(int argc, char **argv) {
    const char *random_list = "minilm,base,minilm-outliers,base-outliers,minilm-bigweights,minilm-bigdims";
    int first_dir = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--random") == 0 && i + 1 < argc) random_list = argv[++i];
        else if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc && !emb_weights_parse(argv[i + 1], &kind) &&
                 kind != EMB_WEIGHTS_F32)
            i++;
        else if (strcmp(argv[i], "--sentences") == 0 && i + 1 < argc && (sentences = atoi(argv[i + 1])) > 0) i++;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && (threads = atoi(argv[i + 1])) > 0) i++;
        else if (argv[i][0] != '-') {
            first_dir = i;
            break;
        } else {
            fprintf(stderr,
                    "usage: bench_int8_accuracy [--quick] [--random minilm,base,minilm-outliers,base-outliers,"
                    "minilm-bigweights,minilm-bigdims|none] "
                    "[--sentences N] [--threads N] [--weights int8|bf16] [FOLDER ...]\n");
            return 2;
        }
    }
    openblas_set_num_threads(threads);
    if (kind == EMB_WEIGHTS_INT8)
        printf("int8 kernels: %s\n", emb_int8_gemm_path_name(emb_int8_gemm_path_default()));
    printf(
        "%s vs float32 weights: cosine of the %s vector to the float32 one, smallest / 1st percentile / median;\n"
        "bounds (issue 13): sentence vectors (mean, CLS) >= %.3f for every golden case, contextual (token) >= "
        "%.2f\n\n",
        emb_weights_name(kind), emb_weights_name(kind), BOUND_SENTENCE, BOUND_TOKEN);
    printf("| model | inputs | sentences / tokens | mean: min p1 median | CLS: min p1 median | token: min p1 "
           "median | bounds |\n"
           "|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    int golden_ok = 1, failed = 0;
    char tmp[] = "/tmp/bench_int8_accuracy_XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < N_RANDOM && !failed; i++) {
        const random_model *m = &RANDOM[i];
        if (!in_list(random_list, m->key)) continue;
        char dir[600], label[96];
        snprintf(dir, sizeof dir, "%s/%s", tmp, m->key);
        snprintf(label, sizeof label, "random %s", m->key);
        if (bench_random_model_write_flags(dir, BENCH_ARCH_BERT, m->H, m->L, m->NH, m->FF, 0, m->flags) ||
            run_folder(dir, label, sentence_count(m->n_sent), 0) < 0)
            failed = 1;
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) failed = 1;
    }
    rmdir(tmp);
    for (int i = first_dir; i < argc && !failed; i++) {
        const char *slash = strrchr(argv[i], '/');
        int r = run_folder(argv[i], slash && slash[1] ? slash + 1 : argv[i], sentence_count(1000), 1);
        if (r < 0) failed = 1;
        else golden_ok &= r;
    }
    if (failed) return 1;
    printf("\ngolden models: %s\n", first_dir == argc ? "none given"
                                    : golden_ok       ? "every case within the bounds"
                                                      : "BELOW a bound");
    return golden_ok ? 0 : 1;
}
