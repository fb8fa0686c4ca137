/* ThreadSanitizer over embed_index's process-wide copy: one connection per thread to one WAL
 * file, three indexes of 8 dimensions (float32, int8 codes, an IVF built and rebuilt), readers
 * searching while writers insert and delete in transactions. Every search is checked against
 * a brute force over a plain table that the writers keep in the same transactions, read in the
 * same snapshot. Usage: tsan_index [SECONDS]; prints "N passed, N failed". */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int sqlite3_embed_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);

enum {
    DIMS = 8,
    K = 5,
    READERS = 3,
    WRITERS = 2,
    N_TABLES = 3,
    MAX_ROWS = 1 << 14,
    ALL_ROWS = 4 * MAX_ROWS,
    START_ROWS = 150
};

typedef struct {
    const char *name, *create, *search;
} tsan_table;

/* Large oversample and probes make the int8 and IVF searches exact, so the brute force is
 * their answer too. */
static const tsan_table tables[N_TABLES] = {
    {"f", "CREATE VIRTUAL TABLE f USING embed_index(dims = 8, metric = 'l2', chunk_size = 16)",
     "SELECT rowid, distance FROM f WHERE f MATCH ?1 AND k = 5"},
    {"q", "CREATE VIRTUAL TABLE q USING embed_index(dims = 8, metric = 'l2', storage = 'int8', chunk_size = 16)",
     "SELECT rowid, distance FROM q WHERE q MATCH ?1 AND k = 5 AND oversample = 100000"},
    {"v", "CREATE VIRTUAL TABLE v USING embed_index(dims = 8, metric = 'l2', index = 'ivf', chunk_size = 16)",
     "SELECT rowid, distance FROM v WHERE v MATCH ?1 AND k = 5 AND probes = 100000"},
};

static char db_path[256];
static atomic_int stop;
static atomic_long searches, matched, transactions, failures;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...);

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_fetch_add(&failures, 1);
}

static unsigned long long rng(unsigned long long *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void random_vector(unsigned long long *s, float *v) {
    for (int d = 0; d < DIMS; d++) v[d] = (float)((double)(rng(s) >> 11) / 9007199254740992.0 * 2 - 1);
}

static sqlite3 *open_db(void) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        fail("open: %s", db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 20000);
    return db;
}

static int exec(sqlite3 *db, const char *sql) {
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fail("%s: %s", sql, err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    return rc == SQLITE_OK;
}

/* ---- writers ---- */

/* A writer's rows: their ids, so that it deletes only rows it inserted. */
typedef struct {
    int id;
    long long rows[N_TABLES][MAX_ROWS];
    int n_rows[N_TABLES];
    long long next_id;
    unsigned long long seed;
    sqlite3 *db;
} writer;

static int step_done(sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) fail("%s: %s", what, sqlite3_errmsg(sqlite3_db_handle(st)));
    return rc == SQLITE_DONE;
}

/* Inserts row id with a random vector into table t and into truth. */
static int insert_row(writer *w, int t, long long id) {
    char sql[128];
    float v[DIMS];
    random_vector(&w->seed, v);
    snprintf(sql, sizeof sql, "INSERT INTO %s(rowid, vector) VALUES (?1, ?2)", tables[t].name);
    sqlite3_stmt *a = NULL, *b = NULL;
    int ok =
        sqlite3_prepare_v2(w->db, sql, -1, &a, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(w->db, "INSERT INTO truth(t, id, vec) VALUES (?1, ?2, ?3)", -1, &b, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_int64(a, 1, id);
        sqlite3_bind_blob(a, 2, v, sizeof v, SQLITE_TRANSIENT);
        sqlite3_bind_int(b, 1, t);
        sqlite3_bind_int64(b, 2, id);
        sqlite3_bind_blob(b, 3, v, sizeof v, SQLITE_TRANSIENT);
        ok = step_done(a, sql) && step_done(b, "insert into truth");
    } else {
        fail("prepare %s: %s", sql, sqlite3_errmsg(w->db));
    }
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    return ok;
}

static int delete_row(writer *w, int t, long long id) {
    char sql[160];
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE rowid = %lld; DELETE FROM truth WHERE t = %d AND id = %lld",
             tables[t].name, id, t, id);
    return exec(w->db, sql);
}

/* One transaction: three rows into each table, one of the writer's own out; sometimes rolled
 * back (the copies must forget it), sometimes the IVF rebuilt. */
static int write_transaction(writer *w, long round) {
    int rollback = round % 7 == 3;
    if (!exec(w->db, "BEGIN IMMEDIATE")) return 0;
    int ok = 1;
    for (int t = 0; t < N_TABLES && ok; t++) {
        for (int i = 0; i < 3 && ok; i++) {
            long long id = w->next_id++;
            ok = insert_row(w, t, id);
            if (ok && !rollback && w->n_rows[t] < MAX_ROWS) w->rows[t][w->n_rows[t]++] = id;
        }
        if (ok && !rollback && w->n_rows[t] > 1) {
            int at = (int)(rng(&w->seed) % (unsigned)w->n_rows[t]);
            ok = delete_row(w, t, w->rows[t][at]);
            w->rows[t][at] = w->rows[t][--w->n_rows[t]];
        }
    }
    if (ok && !rollback && w->id == 0 && round % 10 == 9)
        ok = exec(w->db, "INSERT INTO v(v, text) VALUES ('build', '{\"lists\": 4, \"iterations\": 2}')");
    ok = exec(w->db, ok && !rollback ? "COMMIT" : "ROLLBACK") && ok;
    if (ok) atomic_fetch_add(&transactions, 1);
    return ok;
}

static void *writer_main(void *arg) {
    writer *w = arg;
    if (!(w->db = open_db())) return NULL;
    for (long round = 0; !atomic_load(&stop); round++)
        if (!write_transaction(w, round)) break;
    sqlite3_close(w->db);
    return NULL;
}

/* ---- readers ---- */

typedef struct {
    long long id;
    double distance;
} neighbour;

static int by_distance(const void *a, const void *b) {
    const neighbour *x = a, *y = b;
    return (x->distance > y->distance) - (x->distance < y->distance);
}

static double l2(const float *a, const float *b) {
    double s = 0;
    for (int d = 0; d < DIMS; d++) s += ((double)a[d] - b[d]) * ((double)a[d] - b[d]);
    return sqrt(s);
}

/* The K nearest rows of table t by brute force over truth; returns how many (<= K). */
static int brute_force(sqlite3 *db, int t, const float *q, neighbour *best, neighbour *all) {
    sqlite3_stmt *st = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(db, "SELECT id, vec FROM truth WHERE t = ?1", -1, &st, NULL) != SQLITE_OK) {
        fail("truth: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int(st, 1, t);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == ALL_ROWS) {
            fail("table %s: more than %d rows", tables[t].name, ALL_ROWS);
            break;
        }
        all[n].id = sqlite3_column_int64(st, 0);
        all[n].distance = l2(q, sqlite3_column_blob(st, 1));
        n++;
    }
    sqlite3_finalize(st);
    qsort(all, (size_t)n, sizeof *all, by_distance);
    if (n > K) n = K;
    memcpy(best, all, (size_t)n * sizeof *best);
    return n;
}

static int knn(sqlite3 *db, int t, const float *q, neighbour *got) {
    sqlite3_stmt *st = NULL;
    int n = 0, rc;
    if (sqlite3_prepare_v2(db, tables[t].search, -1, &st, NULL) != SQLITE_OK) {
        fail("%s: %s", tables[t].search, sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_blob(st, 1, q, DIMS * sizeof *q, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < K) {
        got[n].id = sqlite3_column_int64(st, 0);
        got[n].distance = sqlite3_column_double(st, 1);
        n++;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fail("%s: %s", tables[t].search, sqlite3_errmsg(db));
        n = -1;
    }
    sqlite3_finalize(st);
    return n;
}

/* As many rows, at the brute force's distances in its order (a tie may swap two rowids). */
static void compare(int t, const neighbour *want, int n_want, const neighbour *got, int n_got) {
    int ok = n_want == n_got;
    for (int i = 0; ok && i < n_got; i++)
        ok = fabs(got[i].distance - want[i].distance) <= 1e-4 * (1 + want[i].distance);
    if (ok) {
        atomic_fetch_add(&matched, 1);
        return;
    }
    fail("table %s: %d rows (first %lld at %g), brute force %d (first %lld at %g)", tables[t].name, n_got,
         n_got > 0 ? got[0].id : -1, n_got > 0 ? got[0].distance : 0, n_want, n_want > 0 ? want[0].id : -1,
         n_want > 0 ? want[0].distance : 0);
}

/* One snapshot: the brute force and the search of every table in one read transaction. */
static int read_transaction(sqlite3 *db, unsigned long long *seed, neighbour *all) {
    float q[DIMS];
    random_vector(seed, q);
    if (!exec(db, "BEGIN")) return 0;
    int ok = 1;
    for (int t = 0; t < N_TABLES && ok; t++) {
        neighbour want[K], got[K];
        int n_want = brute_force(db, t, q, want, all);
        int n_got = n_want < 0 ? -1 : knn(db, t, q, got);
        ok = n_want >= 0 && n_got >= 0;
        if (ok) {
            compare(t, want, n_want, got, n_got);
            atomic_fetch_add(&searches, 1);
        }
    }
    return exec(db, "COMMIT") && ok;
}

static void *reader_main(void *arg) {
    unsigned long long seed = 0x9E3779B97F4A7C15ull * (unsigned long long)(uintptr_t)arg + 1;
    neighbour *all = malloc(ALL_ROWS * sizeof *all);
    sqlite3 *db = all ? open_db() : NULL;
    while (db && !atomic_load(&stop))
        if (!read_transaction(db, &seed, all)) break;
    sqlite3_close(db);
    free(all);
    return NULL;
}

/* ---- set-up ---- */

static int setup(writer *first) {
    sqlite3 *db = open_db();
    if (!db) return 0;
    int ok = exec(db, "PRAGMA journal_mode = WAL") &&
             exec(db, "CREATE TABLE truth(t INTEGER, id INTEGER, vec BLOB, PRIMARY KEY (t, id))");
    for (int t = 0; t < N_TABLES && ok; t++) ok = exec(db, tables[t].create);
    first->db = db;
    ok = ok && exec(db, "BEGIN");
    for (int t = 0; t < N_TABLES && ok; t++)
        for (int i = 0; i < START_ROWS && ok; i++) ok = insert_row(first, t, first->next_id++);
    ok = ok && exec(db, "INSERT INTO v(v, text) VALUES ('build', '{\"lists\": 6}')") && exec(db, "COMMIT");
    first->db = NULL;
    sqlite3_close(db);
    return ok;
}

static void remove_files(void) {
    static const char *const suffixes[] = {"", "-journal", "-wal", "-shm"};
    char p[300];
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(p, sizeof p, "%s%s", db_path, suffixes[i]);
        unlink(p);
    }
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3;
    const char *tmp = getenv("TMPDIR");
    snprintf(db_path, sizeof db_path, "%s/embed_tsan_index_%d.db", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    remove_files();
    sqlite3_auto_extension((void (*)(void))sqlite3_embed_init);
    static writer writers[WRITERS];
    for (int i = 0; i < WRITERS; i++)
        writers[i] = (writer){.id = i, .next_id = 1000000LL * (i + 1), .seed = 77 + (unsigned long long)i};
    static writer seeder = {.next_id = 1, .seed = 5};
    if (!setup(&seeder)) {
        remove_files();
        printf("0 passed, 1 failed\n");
        return 1;
    }
    pthread_t threads[READERS + WRITERS];
    for (int i = 0; i < WRITERS; i++) pthread_create(&threads[i], NULL, writer_main, &writers[i]);
    for (int i = 0; i < READERS; i++)
        pthread_create(&threads[WRITERS + i], NULL, reader_main, (void *)(uintptr_t)(i + 1));
    struct timespec pause = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&pause, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < READERS + WRITERS; i++) pthread_join(threads[i], NULL);
    /* a last snapshot, every thread gone */
    sqlite3 *db = open_db();
    unsigned long long seed = 99;
    neighbour *all = malloc(ALL_ROWS * sizeof *all);
    if (db && all) read_transaction(db, &seed, all);
    free(all);
    sqlite3_close(db);
    remove_files();
    long n_tx = atomic_load(&transactions);
    fprintf(stderr, "%ld searches checked, %ld write transactions\n", atomic_load(&searches), n_tx);
    if (n_tx < WRITERS) fail("the writers committed only %ld transactions", n_tx);
    long failed = atomic_load(&failures);
    printf("%ld passed, %ld failed\n", atomic_load(&matched), failed);
    return failed ? 1 : 0;
}
