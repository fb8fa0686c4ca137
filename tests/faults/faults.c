/* Fault injection over a representative script: for each N, a child process runs the script
 * with the N-th allocation failed (SQLite's, the core's, cJSON's: fault_alloc.c), closes
 * everything and runs LeakSanitizer. Every statement must give the reference answer, or, where
 * the failure hit it, an error (SQLITE_NOMEM or another with a message) after which the
 * connection still works and the statement, run again, gives the reference answer.
 * Usage: faults [--jobs J] [--every] [--points P] [--first N] [--last N] [--only N] [--trace]
 * Fails the first and the last allocation of each call stack (--every: each allocation; --points:
 * that many of them, evenly spread). Prints one line per failed point, a table per statement and
 * "N passed, N failed". */
#include "fault_alloc.h"
#include <sanitizer/lsan_interface.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int sqlite3_embed_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);

/* Sanitizer settings of every run of this program (the environment can still override them). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=1:exitcode=70"; }

enum { FAULTS_EXIT_CHECK = 3, FAULTS_EXIT_LEAK = 4 };
enum { CONN_MAIN, CONN_SECOND, N_CONN };

/* One statement of the script, on one of two connections to the same file; "@open" opens the
 * connection. error: the statement fails in the reference run too (an error path). */
typedef struct {
    int conn;
    const char *sql;
    int error;
} faults_step;

static const faults_step script[] = {
    {CONN_MAIN, "@open", 0},
    {CONN_MAIN, "SELECT embed_load('m', 'tests/fixtures/models/minilm-tiny-st')", 0},
    {CONN_MAIN, "SELECT name, architecture, hidden_size, layers, fingerprint, weights FROM embed_models", 0},
    {CONN_MAIN, "SELECT embed('m', 'The bus is late.')", 0},
    {CONN_MAIN, "SELECT embed_token_ids('m', 'I left my phone on the left side of the table.')", 0},
    {CONN_MAIN,
     "SELECT position, token, start, \"end\", contextual_embedding FROM embed_tokens('m', 'Hello, world')", 0},
    {CONN_MAIN, "SELECT contextual_embedding('m', 'left left', 1)", 0},
    {CONN_MAIN, "SELECT layer, head, query_token, key_token, weight FROM embed_attention('m', 'left left', 1, 0)",
     0},
    {CONN_MAIN,
     "SELECT embed_json(embed_add(embed_vector('[1, 2, 3]'), '[4, 5, 6]')), "
     "embed_distance('[1, 0]', '[0, 1]', 'l2'), embed_distance(embed('m', 'a cat'), embed('m', 'dogs'), 'cosine')",
     0},
    {CONN_MAIN, "SELECT embed_vector('[1, 2')", 1},
    /* a Unigram tokenizer: its normalizer and pre-tokenizer are printed into the fingerprint */
    {CONN_MAIN, "SELECT embed_load('u', 'tests/fixtures/models2/bert-unigram-tiny')", 0},
    {CONN_MAIN, "SELECT name, fingerprint FROM embed_models WHERE name = 'u'", 0},
    {CONN_MAIN, "SELECT embed('u', 'The bus is late.'), embed_token_ids('u', 'unigram pieces')", 0},
    {CONN_MAIN, "SELECT embed_unload('u')", 0},
    {CONN_MAIN, "CREATE VIRTUAL TABLE docs USING embed_index(model = 'm', author text)", 0},
    {CONN_MAIN,
     "INSERT INTO docs(rowid, text, author) VALUES (1, 'the bus is late', 'ann'), (2, 'a cat sleeps', 'bob'), "
     "(3, 'trains are late', 'ann'), (4, 'the bus was early', 'ann'), (5, 'dogs bark', 'bob')",
     0},
    {CONN_MAIN, "INSERT INTO docs(rowid, vector, author) VALUES (6, embed('m', 'a late tram'), 'cy')", 0},
    {CONN_MAIN, "INSERT INTO docs(rowid, text) VALUES (1, 'a clash of rowids')", 1},
    {CONN_MAIN, "SELECT rowid, distance FROM docs WHERE docs MATCH 'late bus' AND k = 3 AND author = 'ann'", 0},
    {CONN_SECOND, "@open", 0},
    {CONN_SECOND, "SELECT rowid, distance FROM docs WHERE docs MATCH 'late bus' AND k = 3", 0},
    {CONN_MAIN, "BEGIN", 0},
    {CONN_MAIN, "INSERT INTO docs(rowid, text, author) VALUES (7, 'a pending bus', 'ann')", 0},
    {CONN_MAIN, "DELETE FROM docs WHERE rowid = 2", 0},
    {CONN_MAIN, "SELECT rowid, distance FROM docs WHERE docs MATCH 'bus' AND k = 4 AND author = 'ann'", 0},
    {CONN_MAIN, "COMMIT", 0},
    {CONN_SECOND, "SELECT rowid, distance FROM docs WHERE docs MATCH 'a bus' AND k = 5", 0},
    {CONN_MAIN,
     "CREATE VIRTUAL TABLE qv USING embed_index(dims = 8, storage = 'int8', index = 'ivf', "
     "chunk_size = 16, tag integer)",
     0},
    {CONN_MAIN,
     "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 60) "
     "INSERT INTO qv(rowid, vector, tag) SELECT n, json_array(n % 7, n % 11, n % 13, 1 + n % 5, n % 3, "
     "n % 2, 1, n % 4), n % 3 FROM i",
     0},
    {CONN_MAIN, "INSERT INTO qv(qv, text) VALUES ('build', '{\"lists\": 4, \"iterations\": 3}')", 0},
    {CONN_MAIN,
     "SELECT rowid, distance FROM qv WHERE qv MATCH '[1, 1, 1, 2, 0, 1, 1, 0]' AND k = 5 AND probes = 2 "
     "AND tag = 1",
     0},
    {CONN_SECOND,
     "SELECT rowid, distance FROM qv WHERE qv MATCH '[3, 2, 1, 2, 1, 0, 1, 3]' AND k = 5 AND probes = 4", 0},
    {CONN_MAIN, "DELETE FROM qv WHERE rowid % 5 = 0", 0},
    {CONN_SECOND,
     "SELECT rowid, distance FROM qv WHERE qv MATCH '[3, 2, 1, 2, 1, 0, 1, 3]' AND k = 5 AND probes = 4", 0},
    /* a chunked index: parts cut, embedded and placed; a widened search; metadata kept; parts removed */
    {CONN_MAIN, "CREATE VIRTUAL TABLE cd USING embed_index(model = 'm', chunk_tokens = 4, author text)", 0},
    {CONN_MAIN,
     "INSERT INTO cd(rowid, text, author) VALUES (1, 'the bus is late. the bus is late again today.', 'ann'), "
     "(2, 'a cat sleeps in the sun all day', 'bob'), (3, '  ', 'cy')",
     0},
    {CONN_MAIN,
     "SELECT rowid, distance, chunk, chunk_start, chunk_end FROM cd WHERE cd MATCH 'late bus' AND k = 3", 0},
    {CONN_MAIN, "UPDATE cd SET author = 'dan' WHERE rowid = 1", 0},
    {CONN_MAIN, "DELETE FROM cd WHERE rowid = 2", 0},
    {CONN_SECOND, "SELECT rowid, chunk FROM cd WHERE cd MATCH 'a bus' AND k = 2 AND author = 'dan'", 0},
    {CONN_MAIN, "CREATE VIRTUAL TABLE fts USING fts5(body)", 0},
    {CONN_MAIN, "INSERT INTO fts(rowid, body) SELECT rowid, text FROM docs WHERE text IS NOT NULL", 0},
    {CONN_MAIN,
     "SELECT rowid, score, vector_rank, text_rank FROM embed_hybrid('docs', 'fts', 'is the bus late?', 3)", 0},
    {CONN_MAIN, "SELECT embed_unload('m')", 0},
    {CONN_SECOND, "SELECT rowid FROM docs WHERE docs MATCH 'bus' AND k = 1", 1},
};
#define N_STEPS (sizeof script / sizeof script[0])

/* What a statement gave: its result code and a hash of its rows (or of its error message). */
typedef struct {
    int rc;
    uint64_t hash;
    long allocs; /* counted when it ended (the reference run's) */
} step_result;

enum { OUT_NOT_FIRED, OUT_ABSORBED, OUT_NOMEM, OUT_ERROR, OUT_BAD };

/* A child's account of its run, sent to the parent through a pipe. */
typedef struct {
    int outcome;
    int step; /* the statement the failed allocation fell in, or -1 */
    int rc;
    long total; /* allocations counted */
    long long residual; /* what SQLite's allocator held after the cleanup, more than before */
    unsigned long long site; /* the failed allocation's call stack */
    char msg[240];
} faults_report;

static step_result reference[N_STEPS];
static long long reference_residual;
static sqlite3 *conns[N_CONN];
static char db_path[256];

/* FNV-1a over the bytes of a result. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Hashes one row without allocating (but where SQLite must copy a value to end it with a NUL):
 * floats printed (not their bits, which a different but correct summation order may change in
 * the last place), text and blobs as stored. Returns 0 when a value could not be read. */
static int hash_row(sqlite3_stmt *st, uint64_t *h) {
    for (int c = 0; c < sqlite3_column_count(st); c++) {
        int type = sqlite3_column_type(st, c);
        *h = fnv(*h, &type, sizeof type);
        if (type == SQLITE_INTEGER) {
            sqlite3_int64 v = sqlite3_column_int64(st, c);
            *h = fnv(*h, &v, sizeof v);
        } else if (type == SQLITE_FLOAT) {
            char buf[32];
            int n = snprintf(buf, sizeof buf, "%.9g", sqlite3_column_double(st, c));
            *h = fnv(*h, buf, (size_t)n);
        } else if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
            const void *p =
                type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, c) : sqlite3_column_blob(st, c);
            size_t n = (size_t)sqlite3_column_bytes(st, c);
            if (!p && (type == SQLITE_TEXT || n)) return 0;
            *h = fnv(*h, p, n);
        }
    }
    return 1;
}

static void set_error(step_result *r, int rc, const char *msg, char *err, size_t errlen) {
    r->rc = rc & 0xff;
    r->hash = fnv(14695981039346656037ull, msg, strlen(msg));
    snprintf(err, errlen, "%s", msg);
}

static void open_conn(int c, step_result *r, char *err, size_t errlen) {
    int rc = sqlite3_open_v2(db_path, &conns[c], SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK) return;
    /* a failed open can still return a handle (with its message), which must be closed */
    set_error(r, rc, conns[c] ? sqlite3_errmsg(conns[c]) : "out of memory", err, errlen);
    sqlite3_close(conns[c]);
    conns[c] = NULL;
}

/* Runs one step; its error message (if any) into err. */
static step_result run_step(const faults_step *s, char *err, size_t errlen) {
    step_result r = {SQLITE_OK, 14695981039346656037ull, 0};
    err[0] = 0;
    faults_stack_base();
    if (!strcmp(s->sql, "@open")) {
        open_conn(s->conn, &r, err, errlen);
        return r;
    }
    sqlite3 *db = conns[s->conn];
    if (!db) {
        set_error(&r, SQLITE_MISUSE, "the connection is not open", err, errlen);
        return r;
    }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, s->sql, -1, &st, NULL);
    if (rc == SQLITE_OK && st) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            if (!hash_row(st, &r.hash)) {
                rc = SQLITE_NOMEM; /* sqlite3_column_text's copy */
                break;
            }
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK) set_error(&r, rc, sqlite3_errmsg(db), err, errlen);
    sqlite3_finalize(st);
    return r;
}

static int same(step_result a, step_result b) { return a.rc == b.rc && a.hash == b.hash; }

/* After a failure: does the connection still answer? */
static int probe(sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(db, "SELECT embed_dims('[1, 2]')", -1, &st, NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 2;
    sqlite3_finalize(st);
    return ok;
}

/* Records a failed check; returns 0. */
__attribute__((format(printf, 2, 3))) static int bad(faults_report *rep, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rep->outcome = OUT_BAD;
    vsnprintf(rep->msg, sizeof rep->msg, fmt, ap);
    va_end(ap);
    return 0;
}

/* The statement the fault hit failed: the connection must work, the statement rerun must give
 * the reference answer (unless the failure rolled back the whole transaction, after which the
 * script's state differs from the reference: *diverged). */
static int recover(int i, int in_txn, const char *err, int *diverged, faults_report *rep) {
    const faults_step *s = &script[i];
    sqlite3 *db = conns[s->conn];
    if (!err[0]) return bad(rep, "step %d: failed without a message", i);
    if (db && !probe(db)) return bad(rep, "step %d: the connection does not answer after: %s", i, err);
    if (in_txn && db && sqlite3_get_autocommit(db)) {
        *diverged = 1;
        return 1;
    }
    char again[240];
    step_result r = run_step(s, again, sizeof again);
    if (!same(r, reference[i]))
        return bad(rep, "step %d: run again after the failure, it does not give the reference answer: %s", i,
                   again[0] ? again : "different rows");
    return 1;
}

/* Runs the script: record, the reference run, fills reference; else checks against it. */
static int run_script(int record, faults_report *rep) {
    int diverged = 0;
    for (int i = 0; i < (int)N_STEPS; i++) {
        const faults_step *s = &script[i];
        sqlite3 *db = conns[s->conn];
        int in_txn = db && !sqlite3_get_autocommit(db);
        int before = faults_fired();
        char err[240];
        step_result r = run_step(s, err, sizeof err);
        r.allocs = faults_count();
        if (record) {
            reference[i] = r;
            if ((r.rc != SQLITE_OK) != s->error)
                return bad(rep, "reference run, step %d: %s", i, r.rc ? err : "succeeded where it should fail");
            continue;
        }
        int hit = !before && faults_fired();
        if (hit) {
            rep->step = i;
            rep->rc = r.rc;
            snprintf(rep->msg, sizeof rep->msg, "%s", err);
        }
        if (diverged) continue;
        if (same(r, reference[i])) {
            if (hit) rep->outcome = OUT_ABSORBED;
            continue;
        }
        if (!hit)
            return bad(rep, "step %d: differs from the reference (an earlier failure's effect?): %s", i,
                       err[0] ? err : "different rows");
        if (r.rc == SQLITE_OK) return bad(rep, "step %d: succeeded with a wrong answer", i);
        rep->outcome = r.rc == SQLITE_NOMEM ? OUT_NOMEM : OUT_ERROR;
        if (!recover(i, in_txn, err, &diverged, rep)) return 0;
    }
    return 1;
}

static int scalar(sqlite3 *db, const char *sql, sqlite3_int64 *out) {
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    if (ok) *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return ok;
}

/* Closes every connection and unloads the models; then nothing of ours may stay allocated:
 * no model registered, no index copy cached, SQLite holding what it held after the reference
 * run (which keeps the model registry's array: it is allocated once and never shrunk). */
static int close_all(sqlite3_int64 sqlite_before, int record, faults_report *rep) {
    for (int c = 0; c < N_CONN; c++)
        if (conns[c] && sqlite3_close(conns[c]) != SQLITE_OK)
            return bad(rep, "closing connection %d: %s", c, sqlite3_errmsg(conns[c]));
    sqlite3 *db = NULL;
    sqlite3_int64 models = -1, cached = -1;
    int ok = sqlite3_open(":memory:", &db) == SQLITE_OK &&
             sqlite3_exec(db, "SELECT embed_unload('m'), embed_unload('u')", NULL, NULL, NULL) == SQLITE_OK &&
             scalar(db, "SELECT count(*) FROM embed_models", &models) &&
             scalar(db, "SELECT embed_index_cache_bytes()", &cached);
    sqlite3_close(db);
    if (!ok) return bad(rep, "cleanup: cannot unload the models");
    if (models != 0) return bad(rep, "cleanup: %lld models still registered", (long long)models);
    if (cached != 0)
        return bad(rep,
                   "cleanup: index copies of %lld bytes still cached after every connection "
                   "closed",
                   (long long)cached);
    rep->residual = (long long)(sqlite3_memory_used() - sqlite_before);
    if (!record && rep->residual != reference_residual)
        return bad(rep,
                   "cleanup: SQLite's allocator holds %lld bytes more than before the script, the "
                   "reference run %lld",
                   rep->residual, reference_residual);
    return 1;
}

static void remove_files(void) {
    static const char *const suffixes[] = {"", "-journal", "-wal", "-shm"};
    char p[300];
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(p, sizeof p, "%s%s", db_path, suffixes[i]);
        unlink(p);
    }
}

/* The child: the script with allocation `target` failed (0: none, and the reference recorded). */
static int child(long target, int fd) {
    faults_report rep = {.outcome = OUT_NOT_FIRED, .step = -1};
    const char *tmp = getenv("TMPDIR");
    /* fixed width: the path's length changes how often SQLite grows strings, so pids wrapping
     * from 32767 to 300 would shift every later allocation's number */
    snprintf(db_path, sizeof db_path, "%s/embed_faults_%07d.db", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    remove_files();
    /* the index's random uid is printed into its key: a fixed seed keeps allocation N the same
     * allocation in every run */
    sqlite3_test_control(SQLITE_TESTCTRL_PRNG_SEED, 1, NULL);
    sqlite3_randomness(0, NULL);
    sqlite3_int64 sqlite_before = sqlite3_memory_used();
    faults_arm(target);
    int ok = run_script(target == 0, &rep);
    rep.total = faults_count();
    rep.site = faults_fired_site();
    faults_disarm();
    if (ok && rep.outcome != OUT_BAD) ok = close_all(sqlite_before, target == 0, &rep);
    remove_files();
    int code = ok ? 0 : FAULTS_EXIT_CHECK;
    if (ok && __lsan_do_recoverable_leak_check()) code = FAULTS_EXIT_LEAK;
    if (target == 0 && write(fd, reference, sizeof reference) != (ssize_t)sizeof reference)
        code = FAULTS_EXIT_CHECK;
    if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep) code = FAULTS_EXIT_CHECK;
    return code;
}

/* ---- the parent: one child per allocation point ---- */

typedef struct {
    long checks, absorbed, nomem, error, failed;
} tally;

typedef struct {
    long n;
    pid_t pid;
    int fd;
} running;

/* Distinct messages of the clean errors other than SQLITE_NOMEM, with how often each came. */
typedef struct {
    char *msg;
    long count;
} message_count;

static struct {
    tally steps[N_STEPS], all;
    message_count messages[128];
    int n_messages;
    long not_fired, drifted, crashes, leaks, sanitizer;
    int trace, show_logs; /* --trace; --only: the child's log even when it passed */
    const unsigned long long *sites; /* the reference run's call stacks */
} sweep;

static void log_path(long n, char *out, size_t len) {
    const char *tmp = getenv("TMPDIR");
    snprintf(out, len, "%s/embed_faults_%d_%ld.log", tmp && *tmp ? tmp : "/tmp", (int)getpid(), n);
}

/* Forks the child that fails allocation n; its stderr goes to a log the parent shows on failure. */
static running start(long n) {
    int fds[2];
    running r = {n, -1, -1};
    char log[300];
    log_path(n, log, sizeof log);
    if (pipe(fds)) return r;
    fflush(NULL);
    r.pid = fork();
    if (r.pid == 0) {
        close(fds[0]);
        if (!freopen(log, "w", stderr)) _exit(FAULTS_EXIT_CHECK);
        faults_trace(sweep.trace);
        _exit(child(n, fds[1]));
    }
    close(fds[1]);
    r.fd = fds[0];
    return r;
}

static void count_message(int step, int rc, const char *text) {
    char msg[400];
    snprintf(msg, sizeof msg, "step %2d, %s: %s", step, sqlite3_errstr(rc), text);
    for (int i = 0; i < sweep.n_messages; i++)
        if (!strcmp(sweep.messages[i].msg, msg)) {
            sweep.messages[i].count++;
            return;
        }
    if (sweep.n_messages < (int)(sizeof sweep.messages / sizeof sweep.messages[0]))
        sweep.messages[sweep.n_messages++] = (message_count){strdup(msg), 1};
}

static void show_log(long n) {
    char log[300], line[512];
    log_path(n, log, sizeof log);
    FILE *f = fopen(log, "r");
    for (int i = 0; f && i < 40 && fgets(line, sizeof line, f); i++) printf("    %s", line);
    if (f) fclose(f);
}

/* Step of the report (or of the reference's allocation counts when the child said nothing). */
static int step_of(long n, const faults_report *rep) {
    if (rep->step >= 0) return rep->step;
    for (int i = 0; i < (int)N_STEPS; i++)
        if (n <= reference[i].allocs) return i;
    return (int)N_STEPS - 1;
}

static void fail_line(long n, int step, const char *what) {
    printf("FAIL N=%ld (step %d: %.60s): %s\n", n, step, script[step].sql, what);
    printf("    rerun: build-faults/faults/faults --only %ld --trace\n", n);
    show_log(n);
}

/* Reads a finished child's report and files it under its outcome. */
static void finish(running r, int status) {
    faults_report rep = {.outcome = OUT_BAD, .step = -1, .msg = "no report from the child"};
    ssize_t got = read(r.fd, &rep, sizeof rep);
    close(r.fd);
    if (got != (ssize_t)sizeof rep) rep = (faults_report){.outcome = OUT_BAD, .step = -1, .msg = "no report"};
    int step = step_of(r.n, &rep);
    tally *t = &sweep.steps[step];
    char what[300];
    if (WIFSIGNALED(status)) {
        sweep.crashes++;
        snprintf(what, sizeof what, "crash (signal %d)", WTERMSIG(status));
    } else if (WEXITSTATUS(status) == FAULTS_EXIT_LEAK) {
        sweep.leaks++;
        snprintf(what, sizeof what, "LeakSanitizer found a leak");
    } else if (WEXITSTATUS(status) == FAULTS_EXIT_CHECK) {
        snprintf(what, sizeof what, "%s", rep.msg);
    } else if (WEXITSTATUS(status) != 0) {
        sweep.sanitizer++;
        snprintf(what, sizeof what, "exit %d (a sanitizer's report)", WEXITSTATUS(status));
    } else if (rep.outcome == OUT_NOT_FIRED) {
        sweep.not_fired++;
        what[0] = 0;
    } else {
        what[0] = 0;
    }
    if (rep.outcome == OUT_NOT_FIRED && !what[0]) return;
    if (rep.site && rep.site != sweep.sites[r.n - 1]) sweep.drifted++;
    t->checks++;
    if (what[0]) {
        t->failed++;
        fail_line(r.n, step, what);
    } else if (rep.outcome == OUT_ABSORBED) {
        t->absorbed++;
    } else if (rep.outcome == OUT_NOMEM) {
        t->nomem++;
    } else {
        t->error++;
        count_message(step, rep.rc, rep.msg);
    }
    if (sweep.show_logs && !what[0]) show_log(r.n);
    char log[300];
    log_path(r.n, log, sizeof log);
    unlink(log);
}

/* Runs the children for the allocation points ns[0..count-1], jobs at a time. */
static void run_sweep(const long *ns, long count, int jobs) {
    running slots[16];
    int busy = 0;
    long next = 0;
    while (next < count || busy) {
        while (busy < jobs && next < count) {
            slots[busy] = start(ns[next++]);
            if (slots[busy].pid < 0) {
                perror("fork");
                exit(2);
            }
            busy++;
        }
        int status;
        pid_t pid = wait(&status);
        for (int i = 0; i < busy; i++)
            if (slots[i].pid == pid) {
                finish(slots[i], status);
                slots[i] = slots[--busy];
                break;
            }
        long done = next - busy;
        if (count >= 1000 && done % (count / 10) == 0) fprintf(stderr, "%ld of %ld points\n", done, count);
    }
}

typedef struct {
    unsigned long long site;
    long n;
} site_use;

static int by_site(const void *a, const void *b) {
    const site_use *x = a, *y = b;
    if (x->site != y->site) return x->site < y->site ? -1 : 1;
    return (x->n > y->n) - (x->n < y->n);
}

static int by_n(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The points to fail: of every call stack in first..last, its first and its last allocation
 * (the vocabulary's thousands of entries come from one stack; the first and the last failed
 * leave the least and the most to undo); with every, each allocation. */
static long choose_points(const unsigned long long *sites, long first, long last, int every, long **out) {
    long span = last >= first ? last - first + 1 : 0, count = 0;
    long *ns = malloc(((size_t)span + 1) * sizeof *ns);
    site_use *uses = malloc(((size_t)span + 1) * sizeof *uses);
    if (!ns || !uses) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (long i = 0; i < span; i++) uses[i] = (site_use){sites[first - 1 + i], first + i};
    if (every) {
        for (long i = 0; i < span; i++) ns[count++] = uses[i].n;
    } else {
        qsort(uses, (size_t)span, sizeof *uses, by_site);
        for (long i = 0; i < span; i++) {
            int starts = i == 0 || uses[i].site != uses[i - 1].site;
            int ends = i == span - 1 || uses[i].site != uses[i + 1].site;
            if (starts || ends) ns[count++] = uses[i].n;
        }
        qsort(ns, (size_t)count, sizeof *ns, by_n);
    }
    free(uses);
    *out = ns;
    return count;
}

/* Keeps `points` of the ns, evenly spread (the short form). */
static long thin(long *ns, long count, long points) {
    if (points <= 0 || points >= count) return count;
    for (long i = 0; i < points; i++) ns[i] = ns[(long)((double)i * (double)count / (double)points)];
    return points;
}

/* The reference run: the script with nothing failed, counting allocations and recording
 * their call stacks into sites (shared with the child). */
static int record_reference(unsigned long long *sites, long cap) {
    int fds[2];
    if (pipe(fds)) return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        faults_record_sites(sites, cap);
        _exit(child(0, fds[1]));
    }
    close(fds[1]);
    faults_report rep = {.msg = "no report"};
    int ok = read(fds[0], reference, sizeof reference) == (ssize_t)sizeof reference &&
             read(fds[0], &rep, sizeof rep) == (ssize_t)sizeof rep;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    reference_residual = rep.residual;
    if (ok && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 1;
    printf("FAIL the reference run (nothing failed): %s (status %d)\n", ok ? rep.msg : "no report", status);
    return 0;
}

static void print_table(void) {
    printf("%-4s %-44s %8s %7s %7s %7s %7s %6s\n", "step", "statement", "allocs", "checks", "nomem", "error",
           "absorb", "FAIL");
    long prev = 0;
    for (int i = 0; i < (int)N_STEPS; i++) {
        tally *t = &sweep.steps[i];
        printf("%-4d %-44.44s %8ld %7ld %7ld %7ld %7ld %6ld\n", i, script[i].sql, reference[i].allocs - prev,
               t->checks, t->nomem, t->error, t->absorbed, t->failed);
        prev = reference[i].allocs;
        sweep.all.checks += t->checks;
        sweep.all.nomem += t->nomem;
        sweep.all.error += t->error;
        sweep.all.absorbed += t->absorbed;
        sweep.all.failed += t->failed;
    }
    if (sweep.n_messages) printf("clean errors other than SQLITE_NOMEM:\n");
    for (int i = 0; i < sweep.n_messages; i++)
        printf("  %5ld  %s\n", sweep.messages[i].count, sweep.messages[i].msg);
}

/* Room for the reference run's call stacks: more allocations than that and the script has
 * outgrown this driver. */
#define FAULTS_MAX_ALLOCS (4L << 20)

static void usage(const char *me) {
    fprintf(stderr, "usage: %s [--jobs J] [--every] [--points P] [--first N] [--last N] [--only N] [--trace]\n",
            me);
    exit(2);
}

static long arg_long(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) usage(argv[0]);
    return atol(argv[++*i]);
}

int main(int argc, char **argv) {
    /* one OpenBLAS thread, so no helper threads: the same allocations in the same order on
     * every run (OpenBLAS reads the variable when it loads, hence the exec) */
    const char *blas = getenv("OPENBLAS_NUM_THREADS");
    if (!blas || strcmp(blas, "1")) {
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execv("/proc/self/exe", argv);
        perror("execv");
        return 2;
    }
    long first = 1, last = -1, points = 0;
    int jobs = 1, every = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--jobs")) jobs = (int)arg_long(argc, argv, &i);
        else if (!strcmp(argv[i], "--points")) points = arg_long(argc, argv, &i);
        else if (!strcmp(argv[i], "--first")) first = arg_long(argc, argv, &i);
        else if (!strcmp(argv[i], "--last")) last = arg_long(argc, argv, &i);
        else if (!strcmp(argv[i], "--only")) first = last = arg_long(argc, argv, &i), every = sweep.show_logs = 1;
        else if (!strcmp(argv[i], "--every")) every = 1;
        else if (!strcmp(argv[i], "--trace")) sweep.trace = 1;
        else usage(argv[0]);
    }
    if (jobs < 1 || jobs > 16 || first < 1) usage(argv[0]);
    unsigned long long *sites = mmap(NULL, FAULTS_MAX_ALLOCS * sizeof *sites, PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sites == MAP_FAILED || faults_install() != SQLITE_OK || sqlite3_initialize() != SQLITE_OK ||
        sqlite3_auto_extension((void (*)(void))sqlite3_embed_init) != SQLITE_OK) {
        printf("cannot set up SQLite\n0 passed, 1 failed\n");
        return 1;
    }
    time_t t0 = time(NULL);
    sweep.sites = sites;
    if (!record_reference(sites, FAULTS_MAX_ALLOCS)) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    long total = reference[N_STEPS - 1].allocs;
    if (total > FAULTS_MAX_ALLOCS) {
        printf("the script makes %ld allocations, more than %ld\n0 passed, 1 failed\n", total, FAULTS_MAX_ALLOCS);
        return 1;
    }
    if (last < 0 || last > total) last = total;
    long *ns;
    long count = choose_points(sites, first, last, every, &ns);
    long chosen = count;
    count = thin(ns, count, points);
    printf("the script makes %ld allocations; of N = %ld..%ld, %ld are %s; failing %ld of them\n", total, first,
           last, chosen, every ? "chosen" : "the first or last from their call stack", count);
    run_sweep(ns, count, jobs);
    print_table();
    printf("allocation points failed: %ld (SQLITE_NOMEM %ld, other clean errors %ld, absorbed %ld); "
           "crashes %ld, leaks %ld, sanitizer reports %ld; not reached %ld, not the reference's allocation %ld; "
           "%lds\n",
           sweep.all.checks, sweep.all.nomem, sweep.all.error, sweep.all.absorbed, sweep.crashes, sweep.leaks,
           sweep.sanitizer, sweep.not_fired, sweep.drifted, (long)(time(NULL) - t0));
    printf("%ld passed, %ld failed\n", sweep.all.checks - sweep.all.failed, sweep.all.failed);
    return sweep.all.failed ? 1 : 0;
}
