/* embed() from SQL on short single sentences, one call per row as users write it:
 *
 *   SELECT embed('m', text) FROM t
 *
 * over ROWS rows of 16 tokens (14 whole words of the BERT vocabulary, [CLS] and [SEP]), with a
 * random-weight model at the all-MiniLM-L6-v2 size (384 hidden, 6 layers, 12 heads, 1536
 * intermediate; mean pooling, normalised; bench/random_model.c) loaded with embed_load, in an
 * in-memory SQLite database with ./embed.so loaded (sqlite3_load_extension).
 *
 * Compared in the same process, same texts, same token counts, passes interleaved:
 *   encoder alone    emb_encoder_forward (batch 1, the texts' token ids) + mean pooling + L2
 *                    normalisation, one sentence at a time; tokenizing is not timed
 *   C API            emb_model_embed with one text per call (what embed() runs for a row)
 *   SQL              the statement above, stepped to the end, every BLOB read
 * Best of REPS passes each, on 1 and 2 OpenBLAS threads. The SQL vectors are checked against
 * the encoder's.
 *
 * Usage (from the repository root): bench_sql_embed [EXT_SO] [ROWS] [REPS] [WEIGHTS]
 * defaults ./embed.so, 300, 3, f32 (int8, bf16: the model loaded with those weights everywhere,
 * where fixed costs weigh more beside a faster forward pass). */
#include "nn/encoder.h"
#include "sqlite-embed/model.h"
#include "sqlite-embed/pooling.h"
#include "sqlite-embed/vec.h"
#include "random_model.h"
#include <cblas.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORDS 14

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static uint32_t xr(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

/* Whole lowercase words of the vocabulary: each is one token. */
static char **vocab_words(const char *path, int *count) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[256], **w = NULL;
    int n = 0, cap = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n"), i = 0;
        line[len] = 0;
        while (i < len && line[i] >= 'a' && line[i] <= 'z') i++;
        if (len < 3 || i != len) continue;
        if (n == cap) w = realloc(w, (size_t)(cap = cap ? 2 * cap : 4096) * sizeof *w);
        w[n++] = strdup(line);
    }
    fclose(f);
    *count = n;
    return w;
}

typedef struct {
    int n, H, normalize;
    emb_pool_mode pool;
    char **text;
    int32_t **ids, *len;
    long tokens;
    float *ref; /* n x H: the encoder's vectors */
} corpus;

static int encoder_pass(emb_encoder *enc, emb_workspace *ws, corpus *c, float *hidden, int keep) {
    char err[EMB_ERR_LEN];
    float v[4096];
    for (int i = 0; i < c->n; i++) {
        if (emb_encoder_forward(enc, ws, 1, c->len[i], c->ids[i], NULL, &c->len[i],
                                emb_encoder_get_config(enc)->dims.layers, hidden, err)) {
            fprintf(stderr, "forward: %s\n", err);
            return 1;
        }
        emb_pool(hidden, c->len[i], c->H, c->len[i], c->pool, v);
        if (c->normalize) emb_vec_normalize(v, v, (size_t)c->H);
        if (keep) memcpy(c->ref + (size_t)i * c->H, v, (size_t)c->H * sizeof(float));
    }
    return 0;
}

static int api_pass(emb_model *m, corpus *c) {
    char err[EMB_ERR_LEN];
    float v[4096];
    for (int i = 0; i < c->n; i++) {
        const char *t = c->text[i];
        size_t len = strlen(t);
        if (emb_model_embed(m, &t, &len, 1, NULL, v, err)) {
            fprintf(stderr, "emb_model_embed: %s\n", err);
            return 1;
        }
    }
    return 0;
}

/* Steps SELECT embed('m', text) FROM t to the end; max_diff: largest difference from c->ref. */
static int sql_pass(sqlite3_stmt *st, corpus *c, double *max_diff) {
    int i = 0, rc;
    double md = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const float *v = sqlite3_column_blob(st, 0);
        int bytes = sqlite3_column_bytes(st, 0);
        if (!v || bytes != c->H * (int)sizeof(float) || i >= c->n) {
            fprintf(stderr, "sql: row %d: %d bytes\n", i, bytes);
            sqlite3_reset(st);
            return 1;
        }
        if (max_diff)
            for (int h = 0; h < c->H; h++) {
                double d = fabs((double)v[h] - c->ref[(size_t)i * c->H + h]);
                if (d > md) md = d;
            }
        i++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE || i != c->n) {
        fprintf(stderr, "sql: %s after %d rows\n", sqlite3_errmsg(sqlite3_db_handle(st)), i);
        return 1;
    }
    if (max_diff) *max_diff = md;
    return 0;
}

static int run(const char *so, const char *dir, int rows, int reps, emb_weights weights) {
    char err[EMB_ERR_LEN];
    int nw = 0;
    char **words = vocab_words("tests/fixtures/models/minilm-tiny-st/vocab.txt", &nw);
    if (!words || nw < 100) {
        fprintf(stderr, "bench_sql_embed: cannot read the vocabulary (run from the repository root)\n");
        return 1;
    }
    emb_model *m;
    emb_encoder *enc;
    emb_load_options opt = EMB_LOAD_DEFAULTS;
    opt.weights = weights;
    if (emb_model_load_with("bench", dir, &opt, &m, err) || emb_encoder_load(dir, &enc, err) ||
        emb_encoder_set_weights(enc, weights, err)) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    const emb_model_info *mi = emb_model_get_info(m);
    corpus c = {rows, mi->dims->hidden, mi->normalize, EMB_POOL_MEAN, NULL, NULL, NULL, 0, NULL};
    if (emb_pool_mode_parse(mi->pooling, &c.pool)) return 1;
    c.text = malloc(sizeof(char *) * rows);
    c.ids = malloc(sizeof(int32_t *) * rows);
    c.len = malloc(sizeof(int32_t) * rows);
    c.ref = malloc(sizeof(float) * (size_t)rows * c.H);
    emb_encoding e;
    emb_model_encoding_init(&e);
    int maxlen = 0;
    for (int i = 0; i < rows; i++) {
        char buf[1024];
        size_t at = 0;
        for (int k = 0; k < WORDS; k++)
            at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", k ? " " : "", words[xr() % (uint32_t)nw]);
        c.text[i] = strdup(buf);
        if (emb_model_tokenize(m, buf, at, NULL, 0, &e, err)) {
            fprintf(stderr, "tokenize: %s\n", err);
            return 1;
        }
        c.len[i] = (int32_t)e.n;
        c.ids[i] = malloc(sizeof(int32_t) * e.n);
        for (size_t t = 0; t < e.n; t++) c.ids[i][t] = e.tok[t].id;
        c.tokens += (long)e.n;
        if ((int)e.n > maxlen) maxlen = (int)e.n;
    }
    emb_model_encoding_free(&e);
    for (int i = 0; i < nw; i++) free(words[i]);
    free(words);

    sqlite3 *db;
    char *msg = NULL;
    sqlite3_stmt *ins, *sel;
    if (sqlite3_open(":memory:", &db) || sqlite3_enable_load_extension(db, 1) ||
        sqlite3_load_extension(db, so, NULL, &msg) ||
        sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, text TEXT)", NULL, NULL, &msg) ||
        sqlite3_prepare_v2(db, "INSERT INTO t(text) VALUES (?)", -1, &ins, NULL)) {
        fprintf(stderr, "sqlite: %s\n", msg ? msg : sqlite3_errmsg(db));
        return 1;
    }
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < rows; i++) {
        sqlite3_bind_text(ins, 1, c.text[i], -1, SQLITE_STATIC);
        sqlite3_step(ins);
        sqlite3_reset(ins);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    char *load =
        sqlite3_mprintf("SELECT embed_load('m', %Q, '{\"weights\": \"%s\"}')", dir, emb_weights_name(weights));
    int rc = sqlite3_exec(db, load, NULL, NULL, &msg);
    sqlite3_free(load);
    if (rc || sqlite3_prepare_v2(db, "SELECT embed('m', text) FROM t", -1, &sel, NULL)) {
        fprintf(stderr, "sqlite: %s\n", msg ? msg : sqlite3_errmsg(db));
        return 1;
    }

    printf(
        "%d rows, %ld tokens (%.1f a row, [CLS] and [SEP] included); MiniLM-L6 size, %s weights, %s pooling%s\n",
        rows, c.tokens, (double)c.tokens / rows, mi->weights, mi->pooling, c.normalize ? ", normalised" : "");
    emb_workspace *ws = emb_workspace_new();
    float *hidden = malloc(sizeof(float) * (size_t)maxlen * c.H);
    double max_diff = -1;
    static const char *const names[3] = {"encoder alone (forward + pooling, batch 1)",
                                         "C API emb_model_embed, 1 text a call",
                                         "SQL SELECT embed('m', text) FROM t"};
    for (int th = 1; th <= 2; th++) {
        openblas_set_num_threads(th);
        double best[3] = {1e30, 1e30, 1e30};
        /* warm-up, and the reference vectors */
        if (encoder_pass(enc, ws, &c, hidden, 1) || api_pass(m, &c) || sql_pass(sel, &c, &max_diff)) return 1;
        for (int r = 0; r < reps; r++)
            for (int k = 0; k < 3; k++) {
                double t0 = now();
                int bad = k == 0   ? encoder_pass(enc, ws, &c, hidden, 0)
                          : k == 1 ? api_pass(m, &c)
                                   : sql_pass(sel, &c, NULL);
                double dt = now() - t0;
                if (bad) return 1;
                if (dt < best[k]) best[k] = dt;
            }
        printf("\n%d OpenBLAS thread%s, best of %d:\n", th, th > 1 ? "s" : "", reps);
        printf("  %-44s %10s %10s %9s %s\n", "", "tokens/s", "rows/s", "ms/row", "vs encoder alone");
        for (int k = 0; k < 3; k++)
            printf("  %-44s %10.0f %10.0f %9.3f %6.1f%%\n", names[k], c.tokens / best[k], rows / best[k],
                   1e3 * best[k] / rows, 100.0 * best[0] / best[k]);
        printf("RESULT sql_tokens_per_s_%dt %.1f\nRESULT encoder_tokens_per_s_%dt %.1f\nRESULT sql_vs_encoder_%dt "
               "%.4f\n",
               th, c.tokens / best[2], th, c.tokens / best[0], th, best[0] / best[2]);
    }
    printf("\nlargest difference between the SQL vectors and the encoder's: %.3g\n", max_diff);
    if (!(max_diff >= 0 && max_diff < 1e-4)) {
        fprintf(stderr, "bench_sql_embed: the SQL vectors differ from the encoder's\n");
        return 1;
    }
    sqlite3_finalize(sel);
    sqlite3_close(db);
    free(hidden);
    emb_workspace_free(ws);
    emb_encoder_free(enc);
    emb_model_release(m);
    for (int i = 0; i < rows; i++) free(c.text[i]), free(c.ids[i]);
    free(c.text);
    free(c.ids);
    free(c.len);
    free(c.ref);
    return 0;
}

int main(int argc, char **argv) {
    const char *so = argc > 1 ? argv[1] : "./embed.so";
    int rows = argc > 2 ? atoi(argv[2]) : 300, reps = argc > 3 ? atoi(argv[3]) : 3;
    emb_weights weights = EMB_WEIGHTS_F32;
    if (rows < 1 || reps < 1 || (argc > 4 && emb_weights_parse(argv[4], &weights))) {
        fprintf(stderr, "usage: bench_sql_embed [EXT_SO] [ROWS] [REPS] [f32|int8|bf16]\n");
        return 2;
    }
    const char *ct = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
    printf("bench_sql_embed: OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s; OpenBLAS %s, core %s\n",
           ct ? ct : "(unset)", l2 ? l2 : "(unset)", openblas_get_config(), openblas_get_corename());
    char dir[] = "/tmp/bench_sql_embed_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    int rc = bench_random_model_write(dir, 384, 6, 12, 1536, 1) ? 1 : run(so, dir, rows, reps, weights);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) rc = 1;
    return rc;
}
