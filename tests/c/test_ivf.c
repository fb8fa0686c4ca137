/* The IVF coarse quantizer (core/ivf.h) against brute-force computations written here in double:
 * nearest centroids, probe order, grouping of rows; k-means recovering known clusters; recall@10
 * of an IVF search on the clustered data; bad arguments. */
#include "check.h"
#include "search/ivf.h"
#include "ivf_data.h"
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const emb_metric metrics[] = {EMB_METRIC_COSINE, EMB_METRIC_L2, EMB_METRIC_L1, EMB_METRIC_DOT};

/* How far vector v is from centroid c in the quantizer's geometry, in double from the
 * definitions: cosine 1 - cos (a zero v is at 1 from everything), dot -v.c (unit c: same order as
 * cosine), l2 and l1 Euclidean (l1 is partitioned by Euclidean k-means). */
static double geom_dist(emb_metric m, const float *v, const float *c, size_t d) {
    double vc = 0, vv = 0, cc = 0, l2 = 0;
    for (size_t k = 0; k < d; k++) {
        vc += (double)v[k] * c[k];
        vv += (double)v[k] * v[k];
        cc += (double)c[k] * c[k];
        l2 += ((double)v[k] - c[k]) * ((double)v[k] - c[k]);
    }
    if (m == EMB_METRIC_COSINE) return vv > 0 ? 1 - vc / (sqrt(vv) * sqrt(cc)) : 1;
    if (m == EMB_METRIC_DOT) return -vc;
    return sqrt(l2);
}

static void fill_gauss(float *x, size_t count, uint64_t seed) {
    data_rng r = {seed, 0, 0};
    for (size_t i = 0; i < count; i++) x[i] = (float)data_gauss(&r);
}

static int spherical(emb_metric m) { return m == EMB_METRIC_COSINE || m == EMB_METRIC_DOT; }

/* Gaussian centroids, of unit length where the metric's k-means is spherical (as trained ones). */
static void random_centroids(float *c, size_t lists, size_t d, emb_metric m, uint64_t seed) {
    fill_gauss(c, lists * d, seed);
    if (spherical(m))
        for (size_t l = 0; l < lists; l++) data_normalize(c + l * d, d);
}

/* A list or row ranked by distance, ties to the lower id: the reference orders. */
typedef struct {
    double key;
    size_t id;
} ranked;

static int ranked_cmp(const void *pa, const void *pb) {
    const ranked *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* ---------- assign ---------- */

static void test_assign(void) {
    /* 1500 lists: blocks of 2796 rows, so 6000 rows take three sgemm blocks, the last partial */
    const size_t lists = 1500, d = 37, n = 6000;
    float *c = malloc(lists * d * sizeof *c), *x = malloc(n * d * sizeof *x);
    int32_t *got = malloc(n * sizeof *got);
    for (size_t mi = 0; mi < 4; mi++) {
        emb_metric m = metrics[mi];
        random_centroids(c, lists, d, m, 11 + mi);
        fill_gauss(x, n * d, 101 + mi);
        for (size_t i = 0; i < n; i++) /* lengths 0.5 .. 3: a cosine assignment must not depend on them */
            for (size_t k = 0; k < d; k++) x[i * d + k] *= (float)(0.5 + (i % 6) * 0.5);
        memset(x + 17 * d, 0, d * sizeof *x); /* a zero vector */
        emb_ivf ivf;
        CHECK(emb_ivf_init(&ivf, c, lists, d, m) == 0, "init %s", emb_metric_name(m));
        CHECK(emb_ivf_assign(&ivf, x, n, got) == 0, "assign %s", emb_metric_name(m));
        size_t exact = 0, clear = 0, clear_wrong = 0, worse = 0;
        for (size_t i = 0; i < n; i++) {
            double best = INFINITY, second = INFINITY;
            int32_t want = -1;
            for (size_t l = 0; l < lists; l++) {
                double dist = geom_dist(m, x + i * d, c + l * d, d);
                if (dist < best) {
                    second = best;
                    best = dist;
                    want = (int32_t)l;
                } else if (dist < second) second = dist;
            }
            if (m == EMB_METRIC_COSINE && i == 17) want = 0, second = INFINITY; /* no direction: list 0 */
            exact += got[i] == want;
            /* float32 scores may swap near-ties only: a clear winner must be found, and any
             * answer must be as near as the best up to float32 rounding */
            int is_clear = second - best > 1e-4 * (1 + fabs(best));
            clear += is_clear;
            clear_wrong += is_clear && got[i] != want;
            if (got[i] < 0 || (size_t)got[i] >= lists) {
                worse++;
                continue;
            }
            double gd = geom_dist(m, x + i * d, c + (size_t)got[i] * d, d);
            worse += !(gd <= best + 1e-5 * (1 + fabs(best)));
        }
        if (m == EMB_METRIC_COSINE) CHECK(got[17] == 0, "cosine: a zero vector goes to list 0, got %d", got[17]);
        CHECK(clear_wrong == 0, "%s: %zu of %zu clear nearest lists missed", emb_metric_name(m), clear_wrong,
              clear);
        CHECK(worse == 0, "%s: %zu rows assigned to a list farther than the nearest", emb_metric_name(m), worse);
        CHECK(clear > n * 9 / 10, "%s: the test data has clear winners (%zu of %zu)", emb_metric_name(m), clear,
              n);
        printf("assign %-6s: %zu of %zu rows equal the double brute force (%zu clear)\n", emb_metric_name(m),
               exact, n, clear);
        emb_ivf_free(&ivf);
    }
    free(c);
    free(x);
    free(got);
}

/* ---------- probe ---------- */

static void test_probe(void) {
    const size_t lists = 300, d = 24;
    float *c = malloc(lists * d * sizeof *c), q[24];
    int32_t out[310];
    ranked *r = malloc(lists * sizeof *r);
    for (size_t mi = 0; mi < 4; mi++) {
        emb_metric m = metrics[mi];
        random_centroids(c, lists, d, m, 7 + mi);
        emb_ivf ivf;
        CHECK(emb_ivf_init(&ivf, c, lists, d, m) == 0, "init");
        for (int t = 0; t < 5; t++) {
            fill_gauss(q, d, 1000 + t);
            for (size_t l = 0; l < lists; l++) r[l] = (ranked){geom_dist(m, q, c + l * d, d), l};
            qsort(r, lists, sizeof *r, ranked_cmp);
            const size_t probes[] = {1, 7, lists - 1, lists, lists + 9};
            for (size_t p = 0; p < 5; p++) {
                size_t want = probes[p] < lists ? probes[p] : lists, bad = 0;
                memset(out, 0xff, sizeof out);
                size_t got = emb_ivf_probe(&ivf, q, probes[p], out);
                CHECK(got == want, "%s probes %zu: %zu lists, want %zu", emb_metric_name(m), probes[p], got, want);
                for (size_t i = 0; i < want; i++) bad += out[i] != (int32_t)r[i].id;
                CHECK(bad == 0, "%s probes %zu: %zu lists out of the sorted order", emb_metric_name(m), probes[p],
                      bad);
                CHECK(out[want] == -1, "probe writes no more than it returns");
            }
        }
        memset(q, 0, sizeof q); /* cosine: a zero query has no direction, every list ties */
        if (m == EMB_METRIC_COSINE) {
            size_t got = emb_ivf_probe(&ivf, q, 4, out);
            CHECK(got == 4 && out[0] == 0 && out[1] == 1 && out[2] == 2 && out[3] == 3,
                  "cosine zero query: lists in order");
        }
        CHECK(emb_ivf_probe(&ivf, q, 0, out) == 0, "0 probes: none");
        emb_ivf_free(&ivf);
    }
    free(c);
    free(r);
}

/* ---------- groups ---------- */

static void check_groups(const int32_t *lor, size_t n, size_t lists, const char *what) {
    emb_ivf_groups g;
    CHECK(emb_ivf_groups_build(&g, lor, n, lists) == 0, "%s: build", what);
    CHECK(g.n == n && g.lists == lists, "%s: sizes", what);
    /* naively: for each group, the rows in order of position */
    size_t at = 0, bad = 0;
    for (size_t b = 0; b <= lists; b++) {
        if (g.start[b] != at) bad++;
        for (size_t i = 0; i < n; i++) {
            int in = lor[i] >= 0 && (size_t)lor[i] < lists ? (size_t)lor[i] == b : b == lists;
            if (!in) continue;
            if (at >= n || g.pos[at] != i) bad++;
            at++;
        }
    }
    CHECK(at == n && g.start[lists + 1] == n, "%s: every row in one group", what);
    CHECK(bad == 0, "%s: %zu differences from the naive grouping", what, bad);

    /* collect: probed lists (with a repeat and out-of-range values) plus the extra group */
    int32_t probe[5] = {(int32_t)(lists / 2), 0, (int32_t)(lists / 2), -1, (int32_t)lists + 3};
    for (size_t np = 0; np <= 5; np++) {
        size_t *got = NULL, want = 0;
        size_t m = emb_ivf_groups_collect(&g, probe, np, &got);
        CHECK(m != (size_t)-1 && got != NULL, "%s: collect", what);
        if (!got) continue;
        size_t k = 0, wrong = 0;
        for (size_t i = 0; i < n; i++) {
            int in = !(lor[i] >= 0 && (size_t)lor[i] < lists);
            for (size_t j = 0; j < np; j++) in |= lists && probe[j] >= 0 && lor[i] == probe[j];
            if (!in) continue;
            want++;
            if (k >= m || got[k] != i) wrong++;
            k++;
        }
        CHECK(m == want && wrong == 0, "%s: collect %zu lists: %zu positions (want %zu), %zu wrong", what, np, m,
              want, wrong);
        free(got);
    }
    emb_ivf_groups_free(&g);
}

static void test_groups(void) {
    const size_t n = 5000, lists = 37;
    int32_t *lor = malloc(n * sizeof *lor);
    data_rng r = {5, 0, 0};
    for (size_t i = 0; i < n; i++) lor[i] = (int32_t)(data_u64(&r) % (lists + 4)) - 2; /* -2 .. lists+1 */
    lor[0] = -1;
    lor[n - 1] = (int32_t)lists;
    check_groups(lor, n, lists, "random lists");
    for (size_t i = 0; i < n; i++) lor[i] = -1;
    check_groups(lor, n, lists, "nothing assigned");
    for (size_t i = 0; i < n; i++) lor[i] = (int32_t)(i % lists);
    check_groups(lor, n, lists, "all assigned");
    check_groups(lor, 130, 0, "no lists");
    check_groups(lor, 0, lists, "no rows");
    free(lor);
}

/* ---------- training ---------- */

/* 8 far-apart centres, 100 points each: every trained centroid must be near one true centre,
 * and each true centre must have exactly one centroid. */
static void test_train_recovers(void) {
    const size_t centres = 8, per = 100, d = 32, n = centres * per;
    float *ctr = malloc(centres * d * sizeof *ctr), *x = malloc(n * d * sizeof *x);
    for (size_t mi = 0; mi < 4; mi++) {
        emb_metric m = metrics[mi];
        int sph = spherical(m);
        for (uint64_t seed = 1; seed <= 5; seed++) {
            data_rng r = {seed * 977 + mi, 0, 0};
            for (size_t i = 0; i < centres * d; i++) ctr[i] = (float)(10 * data_gauss(&r));
            if (sph)
                for (size_t c = 0; c < centres; c++) data_normalize(ctr + c * d, d);
            double noise = sph ? 0.02 : 0.3; /* cluster radius about 0.11 (unit centres) or 1.7 */
            for (size_t i = 0; i < n; i++) { /* the rows interleaved, so that the order tells nothing */
                const float *ci = ctr + (i % centres) * d;
                for (size_t k = 0; k < d; k++) x[i * d + k] = (float)(ci[k] + noise * data_gauss(&r));
                if (m == EMB_METRIC_COSINE)
                    for (size_t k = 0; k < d; k++) x[i * d + k] *= (float)(1 + i % 3); /* lengths vary */
            }
            emb_ivf ivf;
            CHECK(emb_ivf_train(&ivf, x, n, d, m, centres, 20, seed) == 0, "train");
            int hit[8] = {0};
            size_t far = 0;
            double tol =
                sph ? 0.05 : 0.6; /* the mean of 100 noisy points lies within about a tenth of the radius */
            for (size_t l = 0; l < centres; l++) {
                const float *cl = ivf.centroids + l * d;
                double best = INFINITY;
                size_t bi = 0;
                for (size_t c = 0; c < centres; c++) {
                    double dist = geom_dist(EMB_METRIC_L2, cl, ctr + c * d, d);
                    if (dist < best) best = dist, bi = c;
                }
                far += !(best < tol);
                hit[bi]++;
                if (sph) CHECK_NEAR(sqrt(emb_vec_norm2(cl, d)), 1, 1e-5, "%s: unit centroid", emb_metric_name(m));
                else CHECK_NEAR(ivf.norms2[l], emb_vec_norm2(cl, d), 1e-3, "norms2");
            }
            int once = 1;
            for (size_t c = 0; c < centres; c++) once &= hit[c] == 1;
            CHECK(far == 0 && once, "%s seed %d: %zu centroids off their centre, one per centre %d",
                  emb_metric_name(m), (int)seed, far, once);
            emb_ivf_free(&ivf);
        }
    }
    free(ctr);
    free(x);
}

/* Same seed, same centroids; another seed, other centroids (uniform data has many optima). */
static void test_train_deterministic(void) {
    const size_t n = 3000, d = 16, lists = 30;
    float *x = data_uniform(n, d, 42);
    emb_ivf a, b, c;
    CHECK(emb_ivf_train(&a, x, n, d, EMB_METRIC_COSINE, lists, 10, 7) == 0, "train a");
    CHECK(emb_ivf_train(&b, x, n, d, EMB_METRIC_COSINE, lists, 10, 7) == 0, "train b");
    CHECK(emb_ivf_train(&c, x, n, d, EMB_METRIC_COSINE, lists, 10, 8) == 0, "train c");
    CHECK(memcmp(a.centroids, b.centroids, lists * d * sizeof(float)) == 0, "same seed: same centroids");
    CHECK(memcmp(a.centroids, c.centroids, lists * d * sizeof(float)) != 0, "another seed: other centroids");
    /* and k-means did its job: the rows' mean distance to their centroid fell from the seeding's */
    emb_ivf s0;
    CHECK(emb_ivf_train(&s0, x, n, d, EMB_METRIC_COSINE, lists, 0, 7) == 0, "train, 0 iterations");
    int32_t *as = malloc(n * sizeof *as);
    double cost[2] = {0, 0};
    const emb_ivf *which[2] = {&s0, &a};
    for (int w = 0; w < 2; w++) {
        emb_ivf_assign(which[w], x, n, as);
        for (size_t i = 0; i < n; i++)
            cost[w] += geom_dist(EMB_METRIC_COSINE, x + i * d, which[w]->centroids + (size_t)as[i] * d, d);
    }
    CHECK(cost[1] < cost[0] * 0.97, "Lloyd iterations lower the cost: %g -> %g", cost[0], cost[1]);
    free(as);
    emb_ivf_free(&a);
    emb_ivf_free(&b);
    emb_ivf_free(&c);
    emb_ivf_free(&s0);
    free(x);
}

/* Run to convergence, k-means stops at a fixed point: each centroid is the mean of the rows
 * nearest to it (spherical: their normalised mean of unit rows). */
static void test_train_converges(void) {
    const size_t n = 3000, d = 16, lists = 30;
    float *x = data_clustered(n, d, 12, 21);
    int32_t *as = malloc(n * sizeof *as);
    double *mean = malloc(lists * d * sizeof *mean);
    const emb_metric ms[2] = {EMB_METRIC_COSINE, EMB_METRIC_L2};
    for (int t = 0; t < 2; t++) {
        emb_ivf ivf;
        CHECK(emb_ivf_train(&ivf, x, n, d, ms[t], lists, 300, 5) == 0, "train to convergence");
        emb_ivf_assign(&ivf, x, n, as);
        size_t count[30] = {0}, off = 0;
        memset(mean, 0, lists * d * sizeof *mean);
        for (size_t i = 0; i < n; i++) {
            count[as[i]]++;
            for (size_t k = 0; k < d; k++) mean[(size_t)as[i] * d + k] += x[i * d + k]; /* rows are unit */
        }
        for (size_t l = 0; l < lists; l++) {
            double *ml = mean + l * d, len = 0;
            for (size_t k = 0; k < d; k++) len += ml[k] * ml[k];
            double scale = spherical(ms[t]) ? 1 / sqrt(len) : 1.0 / (double)count[l];
            for (size_t k = 0; k < d; k++) off += !(fabs(ml[k] * scale - ivf.centroids[l * d + k]) < 1e-5);
        }
        CHECK(off == 0, "%s: %zu centroid values differ from the mean of their rows", emb_metric_name(ms[t]), off);
        emb_ivf_free(&ivf);
    }
    free(as);
    free(mean);
    free(x);
}

/* lists == n: every row becomes a centroid of its own. */
static void test_train_lists_equal_n(void) {
    const size_t n = 50, d = 8;
    float *x = malloc(n * d * sizeof *x);
    fill_gauss(x, n * d, 3);
    for (size_t mi = 0; mi < 4; mi++) {
        emb_metric m = metrics[mi];
        emb_ivf ivf;
        CHECK(emb_ivf_train(&ivf, x, n, d, m, n, 10, 1) == 0, "%s: lists == n", emb_metric_name(m));
        int32_t as[50];
        int seen[50] = {0};
        emb_ivf_assign(&ivf, x, n, as);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            seen[as[i]]++;
            /* the row itself (scaled to unit length for cosine/dot) */
            float want[8];
            memcpy(want, x + i * d, sizeof want);
            if (spherical(m)) data_normalize(want, d);
            bad += geom_dist(EMB_METRIC_L2, want, ivf.centroids + (size_t)as[i] * d, d) > 1e-5;
        }
        int distinct = 1;
        for (size_t l = 0; l < n; l++) distinct &= seen[l] == 1;
        CHECK(distinct && bad == 0, "%s: each row its own list (%d), centroid = row (%zu off)", emb_metric_name(m),
              distinct, bad);
        emb_ivf_free(&ivf);
    }
    free(x);
}

/* 4 distinct rows repeated 10 times, 10 lists: lists must stay empty or split, never break. */
static void test_train_duplicates(void) {
    const size_t n = 40, d = 6, lists = 10;
    float *x = malloc(n * d * sizeof *x);
    fill_gauss(x, 4 * d, 9);
    for (size_t i = 4; i < n; i++) memcpy(x + i * d, x + (i % 4) * d, d * sizeof *x);
    for (size_t mi = 0; mi < 4; mi++) {
        emb_metric m = metrics[mi];
        emb_ivf ivf;
        CHECK(emb_ivf_train(&ivf, x, n, d, m, lists, 10, 2) == 0, "%s: duplicates", emb_metric_name(m));
        int32_t as[40];
        emb_ivf_assign(&ivf, x, n, as);
        size_t finite = 1, off = 0;
        for (size_t i = 0; i < lists * d; i++) finite &= isfinite(ivf.centroids[i]) != 0;
        for (size_t i = 0; i < n; i++) {
            float want[6];
            memcpy(want, x + i * d, sizeof want);
            if (spherical(m)) data_normalize(want, d);
            off += geom_dist(EMB_METRIC_L2, want, ivf.centroids + (size_t)as[i] * d, d) > 0.01;
        }
        CHECK(finite && off == 0, "%s: finite centroids (%zu), each row at its centroid (%zu off)",
              emb_metric_name(m), finite, off);
        emb_ivf_free(&ivf);
    }
    free(x);
}

/* Cosine with zero rows among the training rows: still unit centroids, zero rows to list 0. */
static void test_train_zero_rows(void) {
    const size_t n = 600, d = 12, lists = 6;
    float *x = data_clustered(n, d, 6, 77);
    for (size_t i = 0; i < n; i += 5) memset(x + i * d, 0, d * sizeof *x);
    emb_ivf ivf;
    CHECK(emb_ivf_train(&ivf, x, n, d, EMB_METRIC_COSINE, lists, 10, 4) == 0, "cosine with zero rows");
    size_t bad = 0;
    for (size_t l = 0; l < lists; l++) bad += fabs(sqrt(emb_vec_norm2(ivf.centroids + l * d, d)) - 1) > 1e-5;
    CHECK(bad == 0, "cosine: %zu centroids not of unit length", bad);
    int32_t *as = malloc(n * sizeof *as);
    emb_ivf_assign(&ivf, x, n, as);
    CHECK(as[0] == 0 && as[5] == 0, "zero rows: list 0");
    free(as);
    emb_ivf_free(&ivf);
    /* every row zero: nothing has a direction, the centroids must still be usable unit vectors */
    memset(x, 0, n * d * sizeof *x);
    CHECK(emb_ivf_train(&ivf, x, n, d, EMB_METRIC_COSINE, lists, 10, 4) == 0, "cosine, all rows zero");
    bad = 0;
    for (size_t l = 0; l < lists; l++) bad += fabs(sqrt(emb_vec_norm2(ivf.centroids + l * d, d)) - 1) > 1e-5;
    CHECK(bad == 0, "all-zero rows: %zu centroids not of unit length", bad);
    emb_ivf_free(&ivf);
    free(x);
}

/* ---------- recall ---------- */

/* The k nearest of the m rows rows[] (all rows when rows is NULL) by cosine distance, in double. */
static void top_k(const float *x, size_t d, const size_t *rows, size_t m, const float *q, size_t k, ranked *buf,
                  size_t *out) {
    for (size_t j = 0; j < m; j++) {
        size_t p = rows ? rows[j] : j;
        buf[j] = (ranked){geom_dist(EMB_METRIC_COSINE, x + p * d, q, d), p};
    }
    qsort(buf, m, sizeof *buf, ranked_cmp);
    for (size_t j = 0; j < k && j < m; j++) out[j] = buf[j].id;
}

/* Recall@10 of an IVF search with the default lists and probes (trained on up to 256 rows a
 * list), against brute force; *scanned is the mean share of rows scored. */
static double ivf_recall(const float *x, size_t n, size_t d, size_t nq, uint64_t seed, double *scanned) {
    const size_t k = 10;
    size_t lists = emb_ivf_default_lists(n), probes = emb_ivf_default_probes(lists);
    size_t train = lists * 256 < n ? lists * 256 : n;
    emb_ivf ivf;
    if (emb_ivf_train(&ivf, x, train, d, EMB_METRIC_COSINE, lists, 10, seed)) return -1;
    int32_t *as = malloc(n * sizeof *as), *pl = malloc(probes * sizeof *pl);
    float *q = data_queries(x, n, d, nq, seed + 1);
    ranked *buf = malloc(n * sizeof *buf);
    emb_ivf_groups g;
    emb_ivf_assign(&ivf, x, n, as);
    emb_ivf_groups_build(&g, as, n, lists);
    size_t found = 0, rows = 0;
    for (size_t j = 0; j < nq; j++) {
        size_t truth[10], got[10], *cand = NULL;
        top_k(x, d, NULL, n, q + j * d, k, buf, truth);
        size_t np = emb_ivf_probe(&ivf, q + j * d, probes, pl);
        size_t m = emb_ivf_groups_collect(&g, pl, np, &cand);
        rows += m;
        top_k(x, d, cand, m, q + j * d, k, buf, got);
        for (size_t a = 0; a < k && a < m; a++)
            for (size_t b = 0; b < k; b++) found += got[a] == truth[b];
        free(cand);
    }
    *scanned = (double)rows / (double)(nq * n);
    printf("  n %zu d %zu: lists %zu probes %zu, rows scored %.1f%%\n", n, d, lists, probes, 100 * *scanned);
    emb_ivf_groups_free(&g);
    emb_ivf_free(&ivf);
    free(as);
    free(pl);
    free(q);
    free(buf);
    return (double)found / (double)(nq * k);
}

static void test_recall(void) {
    struct {
        size_t n, d, centres;
    } clustered[] = {{20000, 64, 20}, {20000, 384, 200}};
    for (size_t t = 0; t < 2; t++) {
        size_t n = clustered[t].n, d = clustered[t].d;
        float *x = data_clustered(n, d, clustered[t].centres, 2024 + t);
        double scanned, r = ivf_recall(x, n, d, 100, 31 + t, &scanned);
        printf("recall@10 clustered (%zu centres): %.3f\n", clustered[t].centres, r);
        CHECK(r >= 0.97, "clustered recall@10 %.3f, want >= 0.95 with margin", r);
        CHECK(scanned < 0.15, "the search scores a small share of the rows: %.3f", scanned);
        free(x);
    }
    float *x = data_uniform(20000, 64, 99);
    double scanned, r = ivf_recall(x, 20000, 64, 100, 5, &scanned);
    printf("recall@10 uniform: %.3f\n", r);
    CHECK(r >= 0.3, "uniform recall@10 %.3f: the worst case, yet far above the share scanned", r);
    free(x);
}

/* ---------- bad arguments ---------- */

static void test_errors(void) {
    float x[4 * 3] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
    emb_ivf ivf;
    CHECK(emb_ivf_train(&ivf, x, 4, 3, EMB_METRIC_L2, 0, 10, 1) == -1 && !ivf.centroids, "lists 0");
    CHECK(emb_ivf_train(&ivf, x, 4, 3, EMB_METRIC_L2, 5, 10, 1) == -1 && !ivf.centroids, "lists > n");
    CHECK(emb_ivf_train(&ivf, x, 0, 3, EMB_METRIC_L2, 1, 10, 1) == -1 && !ivf.centroids, "n 0");
    CHECK(emb_ivf_train(&ivf, x, 4, 0, EMB_METRIC_L2, 1, 10, 1) == -1 && !ivf.centroids, "d 0");
    CHECK(emb_ivf_train(&ivf, NULL, 4, 3, EMB_METRIC_L2, 1, 10, 1) == -1, "x NULL");
    CHECK(emb_ivf_train(&ivf, x, 4, 3, EMB_METRIC_L2, 2, -1, 1) == -1, "iterations < 0");
    CHECK(emb_ivf_train(&ivf, x, 4, 3, (emb_metric)99, 2, 10, 1) == -1, "unknown metric");
    CHECK(emb_ivf_train(NULL, x, 4, 3, EMB_METRIC_L2, 2, 10, 1) == -1, "ivf NULL");
    CHECK(emb_ivf_init(&ivf, x, 0, 3, EMB_METRIC_L2) == -1 && !ivf.centroids, "init: lists 0");
    CHECK(emb_ivf_init(&ivf, x, 2, 0, EMB_METRIC_L2) == -1, "init: d 0");
    CHECK(emb_ivf_init(&ivf, NULL, 2, 3, EMB_METRIC_L2) == -1, "init: NULL");
    CHECK(emb_ivf_init(&ivf, x, (size_t)1 << 40, (size_t)1 << 40, EMB_METRIC_L2) == -1, "init: size overflows");
    emb_ivf_free(&ivf); /* freeing a zeroed ivf is harmless */
    emb_ivf_free(NULL);
    emb_ivf_groups g;
    CHECK(emb_ivf_groups_build(&g, NULL, 3, 2) == -1, "groups: rows NULL");
    emb_ivf_groups_free(&g);
    emb_ivf_groups_free(NULL);
    /* training that works on the same tiny input: lists == n == 4 */
    CHECK(emb_ivf_train(&ivf, x, 4, 3, EMB_METRIC_L2, 4, 10, 1) == 0 && ivf.lists == 4 && ivf.d == 3,
          "lists == n");
    int32_t as[4];
    CHECK(emb_ivf_assign(&ivf, x, 0, NULL) == 0, "assign 0 rows");
    CHECK(emb_ivf_assign(&ivf, x, 4, as) == 0 && as[0] != as[1] && as[1] != as[2] && as[2] != as[3] &&
              as[0] != as[3],
          "four rows, four lists");
    emb_ivf_free(&ivf);
}

static void test_defaults(void) {
    CHECK(emb_ivf_default_lists(0) == 1 && emb_ivf_default_lists(1) == 1 && emb_ivf_default_lists(3) == 2,
          "lists for tiny n");
    CHECK(emb_ivf_default_lists(1000000) == 1000 && emb_ivf_default_lists(20000) == 141, "lists ~ sqrt(n)");
    for (size_t l = 1; l < 5000; l += 7) {
        size_t p = emb_ivf_default_probes(l);
        if (!(p >= 1 && p <= l)) {
            CHECK(0, "probes %zu for %zu lists", p, l);
            break;
        }
    }
    CHECK(emb_ivf_default_probes(1) == 1, "one list: one probe");
}

int main(void) {
    test_assign();
    test_probe();
    test_groups();
    test_train_recovers();
    test_train_deterministic();
    test_train_converges();
    test_train_lists_equal_n();
    test_train_duplicates();
    test_train_zero_rows();
    test_errors();
    test_defaults();
    test_recall();
    return check_report();
}
