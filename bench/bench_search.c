/* k-nearest-neighbour search over 384-dimensional unit vectors: embed_index's storage types and
 * IVF index against sqliteai's sqlite-vector 1.1.2 and sqlite-vec 0.1.9's vec0, same data, same
 * process, same run (issue 11, "Speed"). bench/search.sh builds and runs it.
 *
 * Data (fixed seeds), N vectors of 384 dimensions, float32, unit length:
 *   clustered  1,000 centres with N(0,1) components; each vector a random centre plus N(0, 0.35^2)
 *              per component, normalised; a query is a random data vector plus N(0, QNOISE^2) per
 *              component, normalised again
 *   uniform    N(0,1) components, normalised (uniform on the sphere); queries drawn the same way
 *              (the worst case for quantized and approximate search)
 * Ground truth: exact cosine distances of every query to every vector in double precision, here.
 *
 * Every engine has its own database file in DB_DIR (deleted afterwards), filled in one
 * transaction of bound float32 BLOBs, read through a 2 GB mmap (PRAGMA mmap_size). "Warm" means:
 * one untimed query per engine before timing (it fills embed_index's process-wide cache, maps
 * the scanned pages for vec0 and vector_full_scan), for vector_quantize_scan the quantized codes
 * loaded by vector_quantize_preload, every page of every mmap touched once (as in a process that
 * has served many queries), and before each engine's round its database file read once (in the
 * OS page cache: the float32 rows that a rescoring engine reads come from there). Then
 * ROUNDS rounds, forward and reverse engine order alternately, each running QUERIES queries of
 * its own (new rows to rescore, not ones SQLite's page cache kept from the round before) on
 * every engine; an engine's median and p90 come from its fastest round (the machine is shared:
 * interference only adds time), the recall@10 from all its answers.
 *
 * Usage (from the repository root): bench_search EMBED_SO DB_DIR
 * Environment: BENCH_N (100000), BENCH_QUERIES (50), BENCH_DATA (clustered|uniform|both; both),
 * BENCH_ENGINES (comma list of f32,f16,int8,bit,ivf,ivf-int8,sqlite-vector,vec0; all; f32 is
 * always run: it is the baseline), BENCH_ROUNDS (2), BENCH_QNOISE (0.05), BENCH_PROBES (probes
 * of the three IVF rows; "4,16,64"), BENCH_OVERSAMPLE (extra int8 and bit rows at these
 * oversample settings, up to 4; none), BENCH_SLOW_QUERIES (queries per round for the peers' full
 * scans, vec0 and vector_full_scan: the round's first; default QUERIES, 20 above 300,000 rows),
 * BENCH_MMAP (PRAGMA mmap_size; 2147418112), BENCH_SQLITE_VECTOR and BENCH_VEC0 (the extensions'
 * paths). */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include "bench_clock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define D 384
#define K 10
#define CENTRES 1000
#define SIGMA 0.35

static long env_long(const char *name, long def) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

static const char *env_str(const char *name, const char *def) {
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static void die(const char *what, const char *detail) {
    fprintf(stderr, "bench_search: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory", NULL);
    return p;
}

static void print_load(const char *when) {
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) strcpy(buf, "?");
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("load average %s: %s\n", when, buf);
    fflush(stdout);
}

/* Resident memory in kB from /proc/self/status: anonymous (the heap: caches) and file-backed. */
static void rss_kb(long *anon, long *file) {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    *anon = *file = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "RssAnon: %ld", anon);
        sscanf(line, "RssFile: %ld", file);
    }
    fclose(f);
}

/* ---------- data: xoshiro256+ and Box-Muller ---------- */

static uint64_t rng_s[4];

static void rng_seed(uint64_t seed) {
    for (int i = 0; i < 4; i++) { /* splitmix64 */
        uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        rng_s[i] = z ^ (z >> 31);
    }
}

static uint64_t rng_next(void) {
    uint64_t r = rng_s[0] + rng_s[3], t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0];
    rng_s[3] ^= rng_s[1];
    rng_s[1] ^= rng_s[2];
    rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t;
    rng_s[3] = (rng_s[3] << 45) | (rng_s[3] >> 19);
    return r;
}

static double rng_unit(void) { /* (0, 1) */
    return ((double)(rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* n standard normal values */
static void gaussians(double *out, int n) {
    for (int i = 0; i < n; i += 2) {
        double r = sqrt(-2.0 * log(rng_unit())), a = 6.283185307179586 * rng_unit();
        out[i] = r * cos(a);
        if (i + 1 < n) out[i + 1] = r * sin(a);
    }
}

/* dst = (base + scale * N(0,1)) / |...|, base may be NULL */
static void noisy_unit(float *dst, const double *base, double scale) {
    double g[D], norm = 0;
    gaussians(g, D);
    for (int j = 0; j < D; j++) {
        g[j] = (base ? base[j] : 0) + scale * g[j];
        norm += g[j] * g[j];
    }
    norm = 1.0 / sqrt(norm);
    for (int j = 0; j < D; j++) dst[j] = (float)(g[j] * norm);
}

static void make_data(int clustered, int n, int nq, double qnoise, float *data, float *queries) {
    rng_seed(clustered ? 11 : 12);
    double *centres = NULL;
    if (clustered) {
        centres = xmalloc(sizeof(double) * CENTRES * D);
        gaussians(centres, CENTRES * D);
    }
    for (int i = 0; i < n; i++)
        noisy_unit(data + (size_t)i * D, clustered ? centres + (rng_next() % CENTRES) * D : NULL,
                   clustered ? SIGMA : 1.0);
    for (int q = 0; q < nq; q++) {
        if (clustered) {
            double base[D];
            const float *p = data + (rng_next() % (uint64_t)n) * D;
            for (int j = 0; j < D; j++) base[j] = p[j];
            noisy_unit(queries + (size_t)q * D, base, qnoise);
        } else {
            noisy_unit(queries + (size_t)q * D, NULL, 1.0);
        }
    }
    free(centres);
}

/* ---------- exact ground truth, double precision ---------- */

static double dot_d(const float *a, const float *b) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < D; j++) s += (double)a[j] * (double)b[j];
    return s;
}

static double exact_distance(const float *x, const float *q) {
    return 1.0 - dot_d(x, q) / sqrt(dot_d(x, x) * dot_d(q, q));
}

/* truth[q*K ..]: the K rowids (1-based) nearest each query, nearest first */
static void ground_truth(const float *data, int n, const float *queries, int nq, int64_t *truth) {
    double *best = xmalloc(sizeof(double) * (size_t)nq * K), *qn = xmalloc(sizeof(double) * (size_t)nq);
    for (int q = 0; q < nq; q++) {
        qn[q] = sqrt(dot_d(queries + (size_t)q * D, queries + (size_t)q * D));
        for (int k = 0; k < K; k++) best[q * K + k] = INFINITY, truth[q * K + k] = 0;
    }
    for (int i = 0; i < n; i++) {
        const float *x = data + (size_t)i * D;
        double xn = sqrt(dot_d(x, x));
        for (int q = 0; q < nq; q++) {
            double d = 1.0 - dot_d(x, queries + (size_t)q * D) / (xn * qn[q]);
            double *b = best + q * K;
            int64_t *t = truth + q * K;
            if (d >= b[K - 1]) continue;
            int k = K - 1;
            for (; k > 0 && b[k - 1] > d; k--) b[k] = b[k - 1], t[k] = t[k - 1];
            b[k] = d, t[k] = i + 1;
        }
    }
    free(best);
    free(qn);
}

/* ---------- SQLite helpers ---------- */

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen) {
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return rc;
}

/* the first column of the first row as a number, or -1 */
static double scalar(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    double v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* ---------- stores (one database file each) and engines (one query each) ---------- */

enum ext { EXT_EMBED, EXT_SQLITE_VECTOR, EXT_VEC0 };
enum build { BUILD_NONE, BUILD_IVF, BUILD_SV_QUANTIZE };

typedef struct {
    const char *key; /* BENCH_ENGINES name and file name */
    enum ext ext;
    const char *schema; /* run before the inserts */
    const char *insert; /* ?1 rowid, ?2 float32 BLOB */
    enum build build;
    /* filled in */
    sqlite3 *db;
    char path[1024], err[512];
    double insert_s, build_s, sv_memory_mb, preload_rss_mb;
} store;

typedef struct {
    const char *label;
    int store;
    char sql[256];
    int slow; /* a full scan of a peer: BENCH_SLOW_QUERIES */
    const char *warm;
    /* filled in */
    sqlite3_stmt *st;
    char err[512];
    int nq, rounds;
    double first_ms, cache_mb, rss_mb, *ms, *round_median, max_dist_err;
    long hits, answers;
} engine;

#define EMBED_KNN "SELECT rowid, distance FROM ix WHERE ix MATCH ?1 AND k = 10"
#define EMBED_STORE(KEY, OPTIONS, BUILD_KIND)                                                                     \
    {                                                                                                             \
        .key = KEY, .ext = EXT_EMBED, .build = BUILD_KIND,                                                        \
        .schema = "CREATE VIRTUAL TABLE ix USING embed_index(dims = 384, metric = 'cosine'" OPTIONS ")",          \
        .insert = "INSERT INTO ix(rowid, vector) VALUES (?1, ?2)"                                                 \
    }

static store stores[] = {
    EMBED_STORE("f32", "", BUILD_NONE),
    EMBED_STORE("f16", ", storage = 'f16'", BUILD_NONE),
    EMBED_STORE("int8", ", storage = 'int8'", BUILD_NONE),
    EMBED_STORE("bit", ", storage = 'bit'", BUILD_NONE),
    EMBED_STORE("ivf", ", index = 'ivf'", BUILD_IVF),
    EMBED_STORE("ivf-int8", ", index = 'ivf', storage = 'int8'", BUILD_IVF),
    {.key = "sqlite-vector",
     .ext = EXT_SQLITE_VECTOR,
     .build = BUILD_SV_QUANTIZE,
     .schema = "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)",
     .insert = "INSERT INTO t(id, v) VALUES (?1, ?2)"},
    {.key = "vec0",
     .ext = EXT_VEC0,
     .build = BUILD_NONE,
     .schema = "CREATE VIRTUAL TABLE v USING vec0(embedding float[384] distance_metric=cosine)",
     .insert = "INSERT INTO v(rowid, embedding) VALUES (?1, ?2)"},
};
#define NSTORES ((int)(sizeof stores / sizeof stores[0]))

static int store_index(const char *key) {
    for (int i = 0; i < NSTORES; i++)
        if (!strcmp(stores[i].key, key)) return i;
    return -1;
}

static int wanted(const char *key) {
    const char *list = env_str("BENCH_ENGINES", NULL);
    if (!list || !strcmp(key, "f32")) return 1;
    size_t n = strlen(key);
    for (const char *p = list; (p = strstr(p, key)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

static int add_engine(engine *e, int ne, const char *label, const char *key, const char *sql, int slow,
                      const char *warm) {
    int s = store_index(key);
    if (!wanted(key)) return ne;
    memset(&e[ne], 0, sizeof e[ne]);
    e[ne].label = label, e[ne].store = s, e[ne].slow = slow, e[ne].warm = warm;
    snprintf(e[ne].sql, sizeof e[ne].sql, "%s", sql);
    return ne + 1;
}

static int define_engines(engine *e) {
    static char probe_label[3][32], probe_sql[3][256];
    const char *cache = "first query fills the process-wide cache";
    int ne = 0;
    ne = add_engine(e, ne, "embed f32 exact", "f32", EMBED_KNN, 0, cache);
    ne = add_engine(e, ne, "embed f16", "f16", EMBED_KNN, 0, cache);
    ne = add_engine(e, ne, "embed int8 rescored", "int8", EMBED_KNN, 0, cache);
    ne = add_engine(e, ne, "embed bit rescored", "bit", EMBED_KNN, 0, cache);
    /* optional rows: the compact scans with other oversample settings */
    static char os_label[2][4][40], os_sql[2][4][256];
    const char *o = env_str("BENCH_OVERSAMPLE", "");
    for (int i = 0; i < 4 && *o; i++) {
        long os = strtol(o, (char **)&o, 10);
        if (*o == ',') o++;
        for (int b = 0; b < 2; b++) {
            const char *key = b ? "bit" : "int8";
            snprintf(os_label[b][i], sizeof os_label[b][i], "embed %s oversample=%ld", key, os);
            snprintf(os_sql[b][i], sizeof os_sql[b][i], EMBED_KNN " AND oversample = %ld", os);
            ne = add_engine(e, ne, os_label[b][i], key, os_sql[b][i], 0, cache);
        }
    }
    ne = add_engine(e, ne, "embed ivf (default)", "ivf", EMBED_KNN, 0, cache);
    const char *p = env_str("BENCH_PROBES", "4,16,64");
    for (int i = 0; i < 3 && *p; i++) {
        long probes = strtol(p, (char **)&p, 10);
        if (*p == ',') p++;
        snprintf(probe_label[i], sizeof probe_label[i], "embed ivf probes=%ld", probes);
        snprintf(probe_sql[i], sizeof probe_sql[i], EMBED_KNN " AND probes = %ld", probes);
        ne = add_engine(e, ne, probe_label[i], "ivf", probe_sql[i], 0, cache);
    }
    ne = add_engine(e, ne, "embed ivf+int8 (default)", "ivf-int8", EMBED_KNN, 0, cache);
    ne = add_engine(e, ne, "sqlite-vector full_scan", "sqlite-vector",
                    "SELECT rowid, distance FROM vector_full_scan('t', 'v', ?1, 10)", 1,
                    "first query maps the table's pages");
    ne = add_engine(e, ne, "sqlite-vector quantize_scan", "sqlite-vector",
                    "SELECT rowid, distance FROM vector_quantize_scan('t', 'v', ?1, 10)", 0,
                    "vector_quantize_preload, then one query");
    ne = add_engine(e, ne, "vec0", "vec0", "SELECT rowid, distance FROM v WHERE embedding MATCH ?1 AND k = 10", 1,
                    "first query maps the table's pages");
    return ne;
}

static const char *ext_path(enum ext x, const char *embed_so) {
    if (x == EXT_EMBED) return embed_so;
    if (x == EXT_SQLITE_VECTOR)
        return env_str("BENCH_SQLITE_VECTOR", "bench/node_modules/@sqliteai/sqlite-vector-linux-x86_64/vector.so");
    return env_str("BENCH_VEC0", ".deps/node_modules/sqlite-vec-linux-x64/vec0.so");
}

/* Creates and fills one store; on failure s->err says why and s->db is closed. */
static void store_open(store *s, const char *dir, const char *embed_so, const float *data, int n) {
    snprintf(s->path, sizeof s->path, "%s/%s.db", dir, s->key);
    unlink(s->path);
    char *msg = NULL;
    const char *so = ext_path(s->ext, embed_so);
    if (access(so, R_OK) != 0) {
        snprintf(s->err, sizeof s->err, "%s not found", so);
        return;
    }
    if (sqlite3_open(s->path, &s->db) != SQLITE_OK) die("cannot open", s->path);
    sqlite3_enable_load_extension(s->db, 1);
    /* embed.so's entry point by name: a copy of it may be called anything */
    if (sqlite3_load_extension(s->db, so, s->ext == EXT_EMBED ? "sqlite3_embed_init" : NULL, &msg) != SQLITE_OK) {
        snprintf(s->err, sizeof s->err, "loading %s: %s", so, msg ? msg : "?");
        sqlite3_free(msg);
        goto fail;
    }
    /* no fsync while loading; reads through a 2 GB mmap (SQLite's default ceiling) */
    char pragmas[128];
    snprintf(pragmas, sizeof pragmas, "PRAGMA synchronous = OFF; PRAGMA mmap_size = %ld",
             env_long("BENCH_MMAP", 2147418112));
    if (exec(s->db, pragmas, s->err, sizeof s->err) || exec(s->db, s->schema, s->err, sizeof s->err)) goto fail;
    sqlite3_stmt *ins = NULL;
    double t0 = bench_now();
    if (exec(s->db, "BEGIN", s->err, sizeof s->err)) goto fail;
    if (sqlite3_prepare_v2(s->db, s->insert, -1, &ins, NULL) != SQLITE_OK) {
        snprintf(s->err, sizeof s->err, "%s", sqlite3_errmsg(s->db));
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(ins, 1, i + 1);
        sqlite3_bind_blob(ins, 2, data + (size_t)i * D, D * sizeof(float), SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            snprintf(s->err, sizeof s->err, "insert row %d: %s", i + 1, sqlite3_errmsg(s->db));
            sqlite3_finalize(ins);
            goto fail;
        }
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    if (exec(s->db, "COMMIT", s->err, sizeof s->err)) goto fail;
    s->insert_s = bench_now() - t0;
    t0 = bench_now();
    if (s->build == BUILD_IVF) {
        const char *opt = env_str("BENCH_IVF_OPTIONS", NULL);
        char sql[512];
        if (opt) snprintf(sql, sizeof sql, "INSERT INTO ix(ix, text) VALUES ('build', '%s')", opt);
        else snprintf(sql, sizeof sql, "INSERT INTO ix(ix) VALUES ('build')");
        if (exec(s->db, sql, s->err, sizeof s->err)) goto fail;
    } else if (s->build == BUILD_SV_QUANTIZE) {
        if (exec(s->db, "SELECT vector_init('t', 'v', 'dimension=384,type=FLOAT32,distance=COSINE')", s->err,
                 sizeof s->err) ||
            exec(s->db, "SELECT vector_quantize('t', 'v')", s->err, sizeof s->err))
            goto fail;
        s->sv_memory_mb = scalar(s->db, "SELECT vector_quantize_memory('t', 'v')") / 1e6;
        long a0, f0, a1, f1;
        rss_kb(&a0, &f0);
        if (exec(s->db, "SELECT vector_quantize_preload('t', 'v')", s->err, sizeof s->err)) goto fail;
        rss_kb(&a1, &f1);
        s->preload_rss_mb = (a1 - a0) / 1e3;
    }
    s->build_s = s->build == BUILD_NONE ? -1 : bench_now() - t0;
    printf("  %-14s inserted %d rows in %.1f s", s->key, n, s->insert_s);
    if (s->build != BUILD_NONE)
        printf(", %s %.1f s", s->build == BUILD_IVF ? "IVF build" : "quantize+preload", s->build_s);
    printf("\n");
    fflush(stdout);
    return;
fail:
    sqlite3_close(s->db);
    s->db = NULL;
    unlink(s->path);
}

static void store_close(store *s) {
    if (s->db && s->build == BUILD_SV_QUANTIZE)
        sqlite3_exec(s->db, "SELECT vector_quantize_cleanup('t', 'v')", 0, 0, 0);
    if (s->db) sqlite3_close(s->db);
    s->db = NULL;
    if (s->path[0]) unlink(s->path);
}

/* ---------- queries ---------- */

/* Runs one query; fills ids/dist (up to K); returns the rows seen, or -1 with e->err set. */
static int run_query(engine *e, sqlite3 *db, const float *q, int64_t *ids, double *dist) {
    int n = 0, rc;
    sqlite3_bind_blob(e->st, 1, q, D * sizeof(float), SQLITE_STATIC);
    while ((rc = sqlite3_step(e->st)) == SQLITE_ROW) {
        if (n < K) ids[n] = sqlite3_column_int64(e->st, 0), dist[n] = sqlite3_column_double(e->st, 1);
        n++;
    }
    sqlite3_reset(e->st);
    if (rc != SQLITE_DONE) {
        snprintf(e->err, sizeof e->err, "%s", sqlite3_errmsg(db));
        return -1;
    }
    return n;
}

static double cache_bytes(sqlite3 *db) { return scalar(db, "SELECT embed_index_cache_bytes()"); }

/* Prepares the statement and runs the untimed first query, measuring what it adds to memory. */
static void engine_warm(engine *e, store *s, const float *q0) {
    int64_t ids[K];
    double dist[K];
    if (!s->db) {
        snprintf(e->err, sizeof e->err, "%s", s->err);
        return;
    }
    if (sqlite3_prepare_v2(s->db, e->sql, -1, &e->st, NULL) != SQLITE_OK) {
        snprintf(e->err, sizeof e->err, "%s", sqlite3_errmsg(s->db));
        return;
    }
    long a0, f0, a1, f1;
    rss_kb(&a0, &f0);
    double t0 = bench_now();
    if (run_query(e, s->db, q0, ids, dist) < 0) return;
    e->first_ms = (bench_now() - t0) * 1e3;
    rss_kb(&a1, &f1);
    e->rss_mb = (a1 - a0) / 1e3;
    if (s->build == BUILD_SV_QUANTIZE && !e->slow) { /* its memory is the preload's */
        e->cache_mb = s->sv_memory_mb;
        e->rss_mb = s->preload_rss_mb;
    }
}

static double median_of(const double *v, int n, double frac) {
    double *c = xmalloc(sizeof(double) * (size_t)n);
    memcpy(c, v, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof *c, bench_cmp_double);
    double r;
    if (frac == 0.5) r = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    else r = c[(int)ceil(frac * n) - 1];
    free(c);
    return r;
}

/* Reads a file once so that its pages are in the OS page cache. */
static void preread(const char *path) {
    static char buf[1 << 20];
    FILE *f = fopen(path, "rb");
    if (!f) return;
    while (fread(buf, 1, sizeof buf, f) == sizeof buf) {}
    fclose(f);
}

/* Touches every page of SQLite's mmap of a file (found in /proc/self/maps), as a process that has
 * served many queries has: the first touch of a page is a page fault, dear on this VM, that would
 * otherwise land on the rows a rescoring engine reads in the timed queries. */
static void prefault(const char *path) {
    char real[4096], line[4096 + 128];
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f || !realpath(path, real)) {
        if (f) fclose(f);
        return;
    }
    volatile unsigned char sink = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char *name = strchr(line, '/');
        if (!name || sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
        name[strcspn(name, "\n")] = 0;
        if (strcmp(name, real)) continue;
        for (unsigned long a = lo; a < hi; a += 4096) sink ^= *(volatile const unsigned char *)a;
    }
    (void)sink;
    fclose(f);
}

/* One round of one engine: its queries (from first), timed one by one; recall and distance error
 * counted. */
static void engine_round(engine *e, sqlite3 *db, int round, int first, const float *queries, const float *data,
                         const int64_t *truth, int n) {
    int64_t ids[K];
    double dist[K], *ms = e->ms + (size_t)round * e->nq;
    for (int q = first; q < first + e->nq && !e->err[0]; q++) {
        const float *qv = queries + (size_t)q * D;
        double t0 = bench_now();
        int got = run_query(e, db, qv, ids, dist);
        ms[q - first] = (bench_now() - t0) * 1e3;
        if (got < 0) return;
        e->answers += K;
        for (int i = 0; i < got && i < K; i++) {
            for (int t = 0; t < K; t++) e->hits += ids[i] == truth[q * K + t];
            if (ids[i] >= 1 && ids[i] <= n) {
                double err = fabs(dist[i] - exact_distance(data + (size_t)(ids[i] - 1) * D, qv));
                if (err > e->max_dist_err) e->max_dist_err = err;
            }
        }
    }
    e->round_median[round] = median_of(ms, e->nq, 0.5);
    e->rounds = round + 1;
}

static void print_table(engine *e, int ne, store *st) {
    double base = -1;
    for (int i = 0; i < ne; i++)
        if (!e[i].err[0] && st[e[i].store].ext == EXT_EMBED && !strcmp(st[e[i].store].key, "f32")) {
            int best = 0;
            for (int r = 1; r < e[i].rounds; r++)
                if (e[i].round_median[r] < e[i].round_median[best]) best = r;
            base = e[i].round_median[best];
        }
    printf("\n%-28s %9s %9s %9s %9s %9s %9s %8s %8s %8s %9s  %s\n", "engine", "median ms", "p90 ms", "recall@10",
           "f32/this", "first ms", "insert s", "build s", "cache MB", "RSS+ MB", "dist err", "round medians ms");
    for (int i = 0; i < ne; i++) {
        engine *x = &e[i];
        if (x->err[0] && !x->rounds) {
            printf("%-28s skipped: %s\n", x->label, x->err);
            continue;
        }
        int best = 0;
        for (int r = 1; r < x->rounds; r++)
            if (x->round_median[r] < x->round_median[best]) best = r;
        double med = x->round_median[best], p90 = median_of(x->ms + (size_t)best * x->nq, x->nq, 0.9);
        char build[16] = "-", cache[16] = "-", rounds[64] = "";
        if (st[x->store].build_s >= 0) snprintf(build, sizeof build, "%.1f", st[x->store].build_s);
        if (x->cache_mb >= 0) snprintf(cache, sizeof cache, "%.1f", x->cache_mb);
        for (int r = 0; r < x->rounds; r++)
            snprintf(rounds + strlen(rounds), sizeof rounds - strlen(rounds), "%s%.2f", r ? " / " : "",
                     x->round_median[r]);
        char ratio[16] = "-";
        if (base > 0) snprintf(ratio, sizeof ratio, "%.2f", base / med);
        printf("%-28s %9.2f %9.2f %9.4f %9s %9.1f %9.1f %8s %8s %8.1f %9.2g  %s (%d queries)%s%s\n", x->label, med,
               p90, x->answers ? (double)x->hits / x->answers : 0, ratio, x->first_ms, st[x->store].insert_s,
               build, cache, x->rss_mb, x->max_dist_err, rounds, x->nq, x->err[0] ? "  error: " : "", x->err);
    }
}

static void run_dataset(int clustered, const char *embed_so, const char *dir) {
    int n = (int)env_long("BENCH_N", 100000), nq = (int)env_long("BENCH_QUERIES", 50);
    /* the peers' full scans take about half a second a query at 1M: fewer of them there */
    int rounds = (int)env_long("BENCH_ROUNDS", 2),
        slow_nq = (int)env_long("BENCH_SLOW_QUERIES", n > 300000 ? 20 : nq);
    double qnoise = atof(env_str("BENCH_QNOISE", "0.05"));
    if (n < K || nq < 1 || rounds < 1 || rounds > 16 || slow_nq < 1)
        die("bad BENCH_N, BENCH_QUERIES or BENCH_ROUNDS", NULL);
    if (slow_nq > nq) slow_nq = nq;
    printf("\n=== %s: %d x %d float32, unit length, %d queries, k = %d, cosine\n",
           clustered ? "clustered" : "uniform", n, D, nq, K);
    if (clustered)
        printf("    %d centres N(0,1), sigma %.2f per component; queries = data vectors + N(0, %.3g^2)\n", CENTRES,
               SIGMA, qnoise);
    else printf("    uniform on the sphere; queries drawn independently the same way\n");
    print_load("before");
    /* query 0 warms, round r runs queries 1 + r * nq ..: the rows a rescoring engine reads in one
     * round are not already in SQLite's page cache from the round before */
    int nt = 1 + rounds * nq;
    float *data = xmalloc(sizeof(float) * (size_t)n * D), *queries = xmalloc(sizeof(float) * (size_t)nt * D);
    int64_t *truth = xmalloc(sizeof(int64_t) * (size_t)nt * K);
    double t0 = bench_now();
    make_data(clustered, n, nt, qnoise, data, queries);
    printf("  data generated in %.1f s\n", bench_now() - t0);
    t0 = bench_now();
    ground_truth(data, n, queries, nt, truth);
    printf("  exact ground truth (double precision) in %.1f s\n", bench_now() - t0);
    fflush(stdout);

    engine e[32];
    int ne = define_engines(e);
    /* a connection of its own asks for embed_index_cache_bytes(): each store's share is the growth
     * from before its inserts to after its first query (the IVF build may fill it already) */
    sqlite3 *probe = NULL;
    if (sqlite3_open(":memory:", &probe) == SQLITE_OK) {
        sqlite3_enable_load_extension(probe, 1);
        if (sqlite3_load_extension(probe, embed_so, "sqlite3_embed_init", NULL) != SQLITE_OK) {
            sqlite3_close(probe);
            probe = NULL;
        }
    }
    for (int s = 0; s < NSTORES; s++) {
        int used = 0;
        for (int i = 0; i < ne; i++) used |= e[i].store == s;
        memset(stores[s].path, 0, sizeof stores[s].path);
        stores[s].err[0] = 0, stores[s].db = NULL, stores[s].build_s = -1;
        if (!used) continue;
        double c0 = probe ? cache_bytes(probe) : -1;
        store_open(&stores[s], dir, embed_so, data, n);
        for (int i = 0, first = 1; i < ne; i++) {
            if (e[i].store != s) continue;
            e[i].nq = e[i].slow ? slow_nq : nq;
            e[i].ms = xmalloc(sizeof(double) * (size_t)rounds * e[i].nq);
            e[i].round_median = xmalloc(sizeof(double) * (size_t)rounds);
            e[i].cache_mb = -1;
            engine_warm(&e[i], &stores[s], queries);
            double c1 = probe ? cache_bytes(probe) : -1;
            if (first && stores[s].ext == EXT_EMBED && c0 >= 0 && c1 >= 0) e[i].cache_mb = (c1 - c0) / 1e6;
            first = 0;
        }
    }
    for (int s = 0; s < NSTORES; s++)
        if (stores[s].db) prefault(stores[s].path);
    for (int r = 0; r < rounds; r++) {
        print_load(r ? "between rounds" : "before round 1");
        for (int j = 0, last = -1; j < ne; j++) {
            int i = r % 2 ? ne - 1 - j : j;
            if (e[i].err[0]) continue;
            if (e[i].store != last) preread(stores[e[i].store].path);
            last = e[i].store;
            engine_round(&e[i], stores[e[i].store].db, r, 1 + r * nq, queries, data, truth, n);
        }
    }
    print_load("after");
    double total = probe ? cache_bytes(probe) : -1;
    sqlite3_close(probe);
    print_table(e, ne, stores);
    printf("warm: embed_index = %s; sqlite-vector quantize_scan = vector_quantize_preload, then one query;\n"
           "      vec0 and vector_full_scan = one query through the 2 GB mmap; every engine: every page of its\n"
           "      mmap touched once, its database file read once before its round (OS page cache); each round\n"
           "      has queries of its own\n",
           e[0].warm);
    if (total >= 0) printf("embed_index_cache_bytes() with every embed engine warm: %.1f MB\n", total / 1e6);
    printf("f32/this = our f32 exact median / this median (> 1: faster); medians and p90 from each engine's\n"
           "fastest round; recall@10 against the exact double-precision brute force; dist err = largest\n"
           "|returned distance - exact cosine distance|; RSS+ = anonymous resident memory the first query\n"
           "(sqlite-vector: the preload) added; cache MB = embed_index_cache_bytes() growth from before the\n"
           "table's inserts to after its first query (sqlite-vector: vector_quantize_memory)\n");
    for (int i = 0; i < ne; i++) {
        sqlite3_finalize(e[i].st);
        free(e[i].ms);
        free(e[i].round_median);
    }
    for (int s = 0; s < NSTORES; s++) store_close(&stores[s]);
    free(data);
    free(queries);
    free(truth);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 3) die("usage: bench_search EMBED_SO DB_DIR (run from the repository root)", NULL);
    const char *which = env_str("BENCH_DATA", "both");
    int clustered = !strcmp(which, "clustered") || !strcmp(which, "both");
    int uniform = !strcmp(which, "uniform") || !strcmp(which, "both");
    if (!clustered && !uniform) die("BENCH_DATA must be clustered, uniform or both", which);
    printf("sqlite %s; embed %s; sqlite-vector %s; vec0 %s\n", sqlite3_libversion(), argv[1],
           ext_path(EXT_SQLITE_VECTOR, NULL), ext_path(EXT_VEC0, NULL));
    if (mkdir(argv[2], 0755) != 0 && errno != EEXIST) die("cannot make the folder", argv[2]);
    if (clustered) run_dataset(1, argv[1], argv[2]);
    if (uniform) run_dataset(0, argv[1], argv[2]);
    return 0;
}
