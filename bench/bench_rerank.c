/* Cross-encoder benchmark: emb_model_rerank over 50 candidate passages against one query (the
 * reranking of a search's top 50, one call: one length-sorted encoder batch split by 32), against
 * the encoder alone on exactly the same pairs' tokens (tokenized before the clock, the same
 * length-sorted batches through emb_encoder_forward_grouped), alternating passes in the same run.
 * The model: a random-weight MiniLM-L6-sized BERT (bench/random_model.c: 384 hidden, 6 layers,
 * 12 heads, 1536 intermediate, the minilm-tiny-st tokenizer) with a random pooler and a 1-label
 * classifier, as cross-encoder/ms-marco-MiniLM-L-6-v2 is shaped (BertForSequenceClassification).
 * Passages of 20 to 150 words of English text (about 30 to 200 tokens), a query of 8 words.
 *
 * Usage: bench_rerank [--threads LIST] [--rounds N] [--dir DIR] [--write DIR]
 *   --write DIR  writes the model folder (DIR/minilm-ce) and the pairs' batches with our logits
 *                (DIR/minilm-ce/pairs.txt, for bench/peers/ort_rerank.js) and exits
 *   --dir DIR    uses the folder written there (default: a temporary one)
 * Prints, per thread count and round: pairs/s and tokens/s of emb_model_rerank and of the encoder
 * alone, and their ratio (rerank / encoder; the target is >= 0.90). */
#include "random_model.h"
#include "bench_clock.h"
#include "nn/encoder.h"
#include "nn/safetensors.h"
#include "sqlite-embed/model.h"
#include "sqlite-embed/rerank.h"
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_PASSAGES 50
#define BATCH 32
#define H 384

static const char *WORDS[] = {
    "the",      "search",   "engine", "returns", "a",        "list",   "of",      "documents", "that",   "match",
    "query",    "database", "table",  "index",   "vector",   "model",  "text",    "panda",     "bamboo", "china",
    "forest",   "river",    "city",   "history", "science",  "energy", "system",  "network",   "memory", "file",
    "is",       "in",       "and",    "with",    "from",     "for",    "by",      "about",     "many",   "people",
    "write",    "read",     "store",  "found",   "between",  "during", "through", "large",     "small",  "fast",
    "language", "program",  "user",   "data",    "question", "answer", "time",    "year",      "world",  "water"};
#define N_WORDS (sizeof WORDS / sizeof *WORDS)

static uint64_t rng = 0x9E3779B97F4A7C15u;
static unsigned draw(void) {
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    return (unsigned)(rng >> 33);
}
static float urand(float a) { return a * (2.0f * (float)draw() / 2147483648.0f - 1.0f); }

static char *words(int n) {
    char *s = malloc((size_t)n * 12 + 1), *p = s;
    for (int i = 0; i < n; i++) p += sprintf(p, "%s%s", i ? " " : "", WORDS[draw() % N_WORDS]);
    return s;
}

/* The random encoder plus a pooler and classifier in head.safetensors, named in an index. */
static int write_model(const char *dir) { /* dir: at most 1023 bytes */
    char path[1100], to[1100], err[EMB_ERR_LEN];
    if (bench_random_model_write(dir, H, 6, 12, 1536, 1)) return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(to, sizeof to, "%s/encoder.safetensors", dir);
    if (rename(path, to)) return -1;
    static float pw[H * H], pb[H], cw[H], cb[1];
    for (int i = 0; i < H * H; i++) pw[i] = urand(1.7f / 20.0f);
    for (int i = 0; i < H; i++) pb[i] = urand(0.02f), cw[i] = urand(0.1f);
    cb[0] = 0.1f;
    emb_safetensors_write_tensor t[] = {{"classifier.bias", EMB_DT_F32, 1, {1}, cb},
                                        {"classifier.weight", EMB_DT_F32, 2, {1, H}, cw},
                                        {"pooler.dense.bias", EMB_DT_F32, 1, {H}, pb},
                                        {"pooler.dense.weight", EMB_DT_F32, 2, {H, H}, pw}};
    snprintf(path, sizeof path, "%s/head.safetensors", dir);
    if (emb_safetensors_write(path, t, 4, 0, err)) return fprintf(stderr, "%s\n", err), -1;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\"weight_map\": {\"embeddings.word_embeddings.weight\": \"encoder.safetensors\", "
               "\"classifier.weight\": \"head.safetensors\"}}\n");
    fclose(f);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char cfg[4096];
    f = fopen(path, "r");
    size_t n = f ? fread(cfg, 1, sizeof cfg - 1, f) : 0;
    if (f) fclose(f);
    cfg[n] = 0;
    char *a = strstr(cfg, "\"BertModel\"]");
    if (!a) return -1;
    f = fopen(path, "w");
    fprintf(f, "%.*s\"BertForSequenceClassification\"],\"num_labels\":1%s", (int)(a - cfg), cfg,
            a + strlen("\"BertModel\"]"));
    return fclose(f);
}

typedef struct {
    char *query, *texts[N_PASSAGES];
    size_t qlen, lens[N_PASSAGES];
    int32_t *ids[N_PASSAGES], *types[N_PASSAGES], n[N_PASSAGES];
    int order[N_PASSAGES];
    long tokens;
} pairs;

static int cmp_len(const void *a, const void *b, void *p) {
    const pairs *ps = p;
    return ps->n[*(const int *)a] - ps->n[*(const int *)b];
}

static int make_pairs(emb_model *m, pairs *p) { /* the same texts whether the model was just written or not */
    rng = 0x9E3779B97F4A7C15u;
    p->query = words(8);
    p->qlen = strlen(p->query);
    emb_encoding enc;
    emb_model_encoding_init(&enc);
    char err[EMB_ERR_LEN];
    p->tokens = 0;
    for (int i = 0; i < N_PASSAGES; i++) {
        p->texts[i] = words(20 + (int)(draw() % 131));
        p->lens[i] = strlen(p->texts[i]);
        if (emb_model_tokenize(m, p->query, p->qlen, p->texts[i], p->lens[i], &enc, err))
            return fprintf(stderr, "%s\n", err), -1;
        p->n[i] = (int32_t)enc.n;
        p->ids[i] = malloc(enc.n * sizeof(int32_t));
        p->types[i] = malloc(enc.n * sizeof(int32_t));
        for (size_t t = 0; t < enc.n; t++) p->ids[i][t] = enc.tok[t].id, p->types[i][t] = enc.tok[t].type_id;
        p->order[i] = i;
        p->tokens += (long)enc.n;
    }
    emb_model_encoding_free(&enc);
    qsort_r(p->order, N_PASSAGES, sizeof(int), cmp_len, p);
    return 0;
}

/* One pass of the encoder alone over the pairs' sorted batches (padded B x T, as run_batch pads). */
static int encoder_pass(const emb_encoder *e, emb_workspace *ws, const pairs *p, float *out, int32_t *ids,
                        int32_t *types, float *logits_or_null) {
    char err[EMB_ERR_LEN];
    (void)logits_or_null;
    for (int at = 0; at < N_PASSAGES; at += BATCH) {
        int B = N_PASSAGES - at < BATCH ? N_PASSAGES - at : BATCH, T = p->n[p->order[at + B - 1]];
        int32_t lens[BATCH];
        for (int b = 0; b < B; b++) {
            int s = p->order[at + b];
            lens[b] = p->n[s];
            memset(ids + (size_t)b * T, 0, (size_t)T * sizeof(int32_t));
            memset(types + (size_t)b * T, 0, (size_t)T * sizeof(int32_t));
            memcpy(ids + (size_t)b * T, p->ids[s], (size_t)p->n[s] * sizeof(int32_t));
            memcpy(types + (size_t)b * T, p->types[s], (size_t)p->n[s] * sizeof(int32_t));
        }
        if (emb_encoder_forward_grouped(e, ws, B, T, ids, types, lens, 6, out, err))
            return fprintf(stderr, "%s\n", err), -1;
    }
    return 0;
}

/* The pairs' batches in ort_encoder.js's workloads format, types too, and our scores. */
static int write_pairs(const char *dir, const pairs *p, const float *scores) {
    char path[1100];
    snprintf(path, sizeof path, "%s/pairs.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "workload rerank50 tokens %ld\n", p->tokens);
    for (int at = 0; at < N_PASSAGES; at += BATCH) {
        int B = N_PASSAGES - at < BATCH ? N_PASSAGES - at : BATCH, T = p->n[p->order[at + B - 1]];
        fprintf(f, "batch %d %d\nlens", B, T);
        for (int b = 0; b < B; b++) fprintf(f, " %d", p->n[p->order[at + b]]);
        for (int k = 0; k < 2; k++) {
            fprintf(f, k ? "\ntypes" : "\nids");
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++) {
                    const int32_t *v = k ? p->types[p->order[at + b]] : p->ids[p->order[at + b]];
                    fprintf(f, " %d", t < p->n[p->order[at + b]] ? v[t] : 0);
                }
        }
        fprintf(f, "\nscores");
        for (int b = 0; b < B; b++) fprintf(f, " %.9g", scores[p->order[at + b]]);
        fprintf(f, "\n");
    }
    return fclose(f);
}

int main(int argc, char **argv) {
    bench_openblas_sleeps(argv);
    const char *dir = NULL, *write = NULL, *threads = "1,2";
    int rounds = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--write")) write = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = argv[i + 1];
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    }
    char folder[1024], tmp[] = "/tmp/bench_rerank_XXXXXX";
    if (!dir && !write && !(dir = mkdtemp(tmp))) return 1;
    snprintf(folder, sizeof folder, "%s/minilm-ce", write ? write : dir);
    if ((write || dir == tmp) && write_model(folder)) return fprintf(stderr, "cannot write the model\n"), 1;
    char err[EMB_ERR_LEN];
    emb_model *m;
    emb_encoder *e;
    if (emb_model_load("ce", folder, &m, err) || emb_encoder_load(folder, &e, err))
        return fprintf(stderr, "%s\n", err), 1;
    pairs p;
    if (make_pairs(m, &p)) return 1;
    float scores[N_PASSAGES];
    int maxT = p.n[p.order[N_PASSAGES - 1]];
    float *out = malloc((size_t)BATCH * (size_t)maxT * H * sizeof(float));
    int32_t *ids = malloc((size_t)BATCH * (size_t)maxT * sizeof(int32_t)),
            *types = malloc((size_t)BATCH * maxT * 4);
    emb_workspace *ws = emb_workspace_new();
    if (emb_model_rerank(m, p.query, p.qlen, (const char *const *)p.texts, p.lens, N_PASSAGES, scores, err))
        return fprintf(stderr, "%s\n", err), 1;
    if (write) return write_pairs(folder, &p, scores) ? 1 : 0;
    printf("%d pairs, %ld tokens (longest %d), batches of %d\n", N_PASSAGES, p.tokens, maxT, BATCH);
    for (const char *t = threads; *t; t += strcspn(t, ",") + (t[strcspn(t, ",")] == ',')) {
        int th = atoi(t);
        openblas_set_num_threads(th);
        for (int r = 1; r <= rounds; r++) {
            double best[2] = {1e30, 1e30}, start = bench_now();
            for (int rep = 0; rep < 6 || bench_now() - start < 2.0; rep++)
                for (int k = 0; k < 2; k++) { /* alternating: ours, then the encoder alone */
                    int which = (rep + r) % 2 ? k : 1 - k;
                    double s = bench_now();
                    int rc = which == 0 ? emb_model_rerank(m, p.query, p.qlen, (const char *const *)p.texts,
                                                           p.lens, N_PASSAGES, scores, err)
                                        : encoder_pass(e, ws, &p, out, ids, types, NULL);
                    double d = bench_now() - s;
                    if (rc) return fprintf(stderr, "%s\n", err), 1;
                    if (d < best[which]) best[which] = d;
                }
            printf("threads %d round %d: rerank %.1f pairs/s %.0f tokens/s | encoder %.0f tokens/s | ratio %.3f\n",
                   th, r, N_PASSAGES / best[0], p.tokens / best[0], p.tokens / best[1], best[1] / best[0]);
        }
    }
    emb_workspace_free(ws);
    emb_encoder_free(e);
    emb_model_release(m);
    free(out), free(ids), free(types);
    return 0;
}
