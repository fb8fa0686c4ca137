/* k-nearest-neighbour search (core/knn.h) against a brute-force double-precision search
 * written here, and the growable vector array (core/vec_array.h) it searches. */
#include "check.h"
#include "search/knn.h"
#include "search/vec_array.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) { /* xorshift64*, in [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 4503599627370496.0 - 1.0;
}

/* The distance, from the definitions: cosine 1 - a.b / (|a| |b|), l2, l1, dot -a.b. */
static double brute_distance(emb_metric m, const float *a, const float *b, size_t d) {
    double ab = 0, aa = 0, bb = 0, l1 = 0, l2 = 0;
    for (size_t i = 0; i < d; i++) {
        double x = a[i], y = b[i];
        ab += x * y;
        aa += x * x;
        bb += y * y;
        l1 += fabs(x - y);
        l2 += (x - y) * (x - y);
    }
    switch (m) {
    case EMB_METRIC_COSINE: {
        double c = ab / (sqrt(aa) * sqrt(bb));
        return 1.0 - (c > 1 ? 1 : c < -1 ? -1 : c);
    }
    case EMB_METRIC_L2: return sqrt(l2);
    case EMB_METRIC_L1: return l1;
    case EMB_METRIC_DOT: return -ab;
    }
    return NAN;
}

typedef struct {
    double dist;
    int64_t id;
} ref_hit;

static int ref_cmp(const void *pa, const void *pb) {
    const ref_hit *a = pa, *b = pb;
    if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(b)); }

/* Searches ix for q with k and compares with the brute-force answer. */
static void check_search(const emb_knn_index *ix, const float *q, size_t k, emb_knn_scratch *scratch,
                         const char *what) {
    size_t n = ix->n, d = ix->d, want = k < n ? k : n;
    ref_hit *ref = malloc((n ? n : 1) * sizeof *ref);
    for (size_t i = 0; i < n; i++) {
        ref[i].dist = brute_distance(ix->metric, ix->vectors + i * d, q, d);
        ref[i].id = ix->ids ? ix->ids[i] : (int64_t)i;
    }
    qsort(ref, n, sizeof *ref, ref_cmp);
    emb_knn_hit *hits = malloc((want ? want : 1) * sizeof *hits);
    size_t got = 12345;
    int rc = emb_knn_search(ix, q, k, scratch, hits, &got);
    CHECK(rc == 0, "%s: search failed", what);
    CHECK(got == want, "%s: %zu hits, expected %zu", what, got, want);
    int bad_order = 0, bad_dist = 0, bad_exact = 0, bad_pos = 0;
    for (size_t i = 0; i < got && i < want; i++) {
        /* the same row, or one at the same distance up to rounding */
        if (hits[i].id != ref[i].id && !near(hits[i].dist, ref[i].dist)) bad_order++;
        if (!near(hits[i].dist, ref[i].dist)) bad_dist++;
        size_t p = hits[i].pos;
        if (p >= n || (ix->ids ? ix->ids[p] : (int64_t)p) != hits[i].id) bad_pos++;
        else if (hits[i].dist != emb_vec_distance(ix->metric, ix->vectors + p * d, q, d)) bad_exact++;
        if (i &&
            (hits[i].dist < hits[i - 1].dist || (hits[i].dist == hits[i - 1].dist && hits[i].id < hits[i - 1].id)))
            bad_order++;
    }
    CHECK(!bad_order, "%s: %d hits out of order or not the nearest", what, bad_order);
    CHECK(!bad_dist, "%s: %d distances differ from the brute-force ones", what, bad_dist);
    CHECK(!bad_pos, "%s: %d hits whose position does not hold their id", what, bad_pos);
    CHECK(!bad_exact, "%s: %d distances are not emb_vec_distance's", what, bad_exact);
    free(hits);
    free(ref);
}

/* n random rows of d floats with scrambled ids, searched for each metric and several k. */
static void random_case(size_t n, size_t d, emb_knn_scratch *scratch) {
    float *vecs = malloc(n * d * sizeof *vecs), *aux = malloc(n * sizeof *aux);
    int64_t *ids = malloc(n * sizeof *ids);
    float q[512];
    for (size_t i = 0; i < n * d; i++) vecs[i] = (float)uniform();
    for (size_t i = 0; i < n; i++) ids[i] = (int64_t)((i * 7919) % n) - (int64_t)(n / 2);
    for (size_t i = 0; i < d; i++) q[i] = (float)uniform();
    const size_t ks[] = {1, 10, 100, n + 5};
    for (int m = 0; m < 4; m++) {
        emb_metric metric = (emb_metric)m;
        for (size_t i = 0; i < n; i++) aux[i] = emb_knn_aux(metric, vecs + i * d, d);
        emb_knn_index ix = {vecs, emb_knn_needs_aux(metric) ? aux : NULL, ids, n, d, metric};
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
            char what[96];
            snprintf(what, sizeof what, "%s n=%zu d=%zu k=%zu", emb_metric_name(metric), n, d, ks[j]);
            check_search(&ix, q, ks[j], scratch, what);
        }
    }
    free(vecs);
    free(aux);
    free(ids);
}

/* Equal vectors: every distance ties, and the hits come in id order. */
static void tie_case(void) {
    enum { N = 50, D = 5 };
    float vecs[N * D], q[D] = {1, 2, 3, 4, 5};
    for (size_t i = 0; i < N * D; i++) vecs[i] = (float)(i % D) - 1.5f;
    emb_knn_index ix = {vecs, NULL, NULL, N, D, EMB_METRIC_L1};
    emb_knn_hit hits[N];
    size_t got = 0;
    CHECK(emb_knn_search(&ix, q, 7, NULL, hits, &got) == 0 && got == 7, "ties: %zu hits", got);
    for (size_t i = 0; i < got; i++)
        CHECK(hits[i].id == (int64_t)i && hits[i].pos == i, "ties: hit %zu is row %lld", i, (long long)hits[i].id);
    CHECK(emb_knn_search(&ix, q, 0, NULL, hits, &got) == 0 && got == 0, "k = 0: %zu hits", got);
    ix.n = 0;
    CHECK(emb_knn_search(&ix, q, 5, NULL, hits, &got) == 0 && got == 0, "no rows: %zu hits", got);
}

/* The array: appends that grow it, direct fills, removals by swapping in the last row, and a
 * search over what is left. */
static void array_case(void) {
    const size_t d = 9;
    emb_vec_array a;
    CHECK(emb_vec_array_init(&a, d, EMB_METRIC_COSINE, 3) == 0, "init");
    float *src = malloc(3000 * d * sizeof *src);
    int64_t *ids = malloc(3000 * sizeof *ids);
    for (size_t i = 0; i < 3000 * d; i++) src[i] = (float)uniform();
    for (size_t i = 0; i < 3000; i++) ids[i] = 10 * (int64_t)i;
    /* 2 rows written in place, then appends past the room */
    memcpy(a.vecs, src, 2 * d * sizeof *src);
    memcpy(a.ids, ids, 2 * sizeof *ids);
    emb_vec_array_extend(&a, 2);
    CHECK(a.n == 2, "extend: n = %zu", a.n);
    for (size_t at = 2; at < 3000; at += 333) {
        size_t add = 3000 - at < 333 ? 3000 - at : 333;
        CHECK(emb_vec_array_append(&a, ids + at, src + at * d, add) == 0, "append at %zu", at);
    }
    CHECK(a.n == 3000 && a.cap >= 3000, "append: n = %zu, cap = %zu", a.n, a.cap);
    CHECK(((uintptr_t)a.vecs & 63) == 0, "vectors are 64-byte aligned");
    int bad = 0;
    for (size_t i = 0; i < 3000; i++)
        if (a.ids[i] != ids[i] || memcmp(a.vecs + i * d, src + i * d, d * sizeof *src) ||
            a.aux[i] != emb_knn_aux(EMB_METRIC_COSINE, src + i * d, d))
            bad++;
    CHECK(!bad, "%d rows differ from what was appended", bad);
    /* remove the first row (the last moves there), the last row, and one in the middle */
    emb_vec_array_remove(&a, 0);
    CHECK(a.n == 2999 && a.ids[0] == ids[2999] && !memcmp(a.vecs, src + 2999 * d, d * sizeof *src) &&
              a.aux[0] == emb_knn_aux(EMB_METRIC_COSINE, src + 2999 * d, d),
          "remove 0: the last row moves into its place");
    emb_vec_array_remove(&a, a.n - 1);
    emb_vec_array_remove(&a, 1000);
    CHECK(a.n == 2997 && a.ids[1000] == ids[2997], "remove: n = %zu, row 1000 is %lld", a.n,
          (long long)a.ids[1000]);
    emb_knn_index ix = emb_vec_array_index(&a);
    for (size_t k = 1; k <= 100; k *= 10) check_search(&ix, src + 5 * d, k, NULL, "array");
    emb_vec_array_free(&a);
    free(src);
    free(ids);
    /* large arrays go on 2 MB-aligned pages */
    float *big = emb_vectors_alloc((size_t)3 << 20);
    CHECK(big && ((uintptr_t)big & (((size_t)2 << 20) - 1)) == 0, "a 12 MB array is 2 MB aligned");
    free(big);
}

/* A search among some rows only (runs of consecutive positions, as an IVF's lists are stored,
 * and scattered single rows) against the brute force over those rows, for every metric. */
static void subset_case(void) {
    size_t n = 3000, d = 21, k = 12;
    float *vecs = malloc(n * d * sizeof *vecs), q[21], *aux = malloc(n * sizeof *aux);
    int64_t *ids = malloc(n * sizeof *ids);
    size_t *rows = malloc(n * sizeof *rows), m = 0;
    for (size_t i = 0; i < n * d; i++) vecs[i] = (float)uniform();
    for (size_t i = 0; i < n; i++) ids[i] = (int64_t)(n - i);
    /* runs of 20 and of 3, and every 97th row alone: fewer than n / 8 rows, which are scored
     * one by one or run by run rather than by one pass over all */
    for (size_t i = 0; i < n; i++)
        if (i % 200 < 20 || (i % 200 >= 100 && i % 200 < 103) || i % 97 == 0) rows[m++] = i;
    for (int metric = 0; metric < 4; metric++) {
        for (size_t i = 0; i < d; i++) q[i] = (float)uniform();
        for (size_t i = 0; i < n; i++) aux[i] = emb_knn_aux((emb_metric)metric, vecs + i * d, d);
        emb_knn_index ix = {
            vecs, emb_knn_needs_aux((emb_metric)metric) ? aux : NULL, ids, n, d, (emb_metric)metric};
        ref_hit *ref = malloc(m * sizeof *ref);
        for (size_t j = 0; j < m; j++) {
            ref[j].dist = brute_distance(ix.metric, vecs + rows[j] * d, q, d);
            ref[j].id = ids[rows[j]];
        }
        qsort(ref, m, sizeof *ref, ref_cmp);
        emb_knn_hit hits[12];
        size_t got = 0;
        CHECK(m < n / 8, "the subset is small: %zu rows", m);
        CHECK(emb_knn_search_rows(&ix, q, k, rows, m, NULL, hits, &got) == 0 && got == k, "subset: %zu hits", got);
        for (size_t j = 0; j < got; j++)
            CHECK(hits[j].id == ref[j].id && near(hits[j].dist, ref[j].dist),
                  "subset metric %d hit %zu: id %lld "
                  "dist %.12g, want id %lld dist %.12g",
                  metric, j, (long long)hits[j].id, hits[j].dist, (long long)ref[j].id, ref[j].dist);
        /* rescoring candidates given with their vectors: the k nearest by exact distance */
        emb_knn_hit rs[12];
        float *cv = malloc(m * d * sizeof *cv);
        int64_t *cid = malloc(m * sizeof *cid);
        for (size_t j = 0; j < m; j++) {
            memcpy(cv + j * d, vecs + rows[j] * d, d * sizeof *cv);
            cid[j] = ids[rows[j]];
        }
        size_t nr = emb_knn_rescore(ix.metric, q, d, cv, cid, m, k, rs);
        CHECK(nr == k, "rescore: %zu", nr);
        for (size_t j = 0; j < nr && j < k; j++)
            CHECK(rs[j].id == ref[j].id && near(rs[j].dist, ref[j].dist) && cid[rs[j].pos] == rs[j].id,
                  "rescore metric %d hit %zu", metric, j);
        free(cv);
        free(cid);
        free(ref);
    }
    free(vecs);
    free(aux);
    free(ids);
    free(rows);
}

int main(void) {
    emb_knn_scratch scratch = {0};
    /* n not a multiple of the 65536-row sgemv block nor of any SIMD width; d odd */
    random_case(1, 3, &scratch);
    random_case(37, 17, &scratch);
    random_case(1003, 385, NULL);
    random_case(65536 + 77, 7, &scratch); /* two blocks; the scratch grows */
    random_case(500, 33, &scratch); /* and is reused for fewer rows */
    emb_knn_scratch_free(&scratch);
    CHECK(scratch.score == NULL && scratch.cap == 0, "scratch freed");
    tie_case();
    array_case();
    subset_case();
    return check_report();
}
