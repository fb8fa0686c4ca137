#include "search/knn.h"
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void emb_knn_scratch_free(emb_knn_scratch *s) {
    free(s->score);
    s->score = NULL;
    s->cap = 0;
}

int emb_knn_needs_aux(emb_metric m) { return m == EMB_METRIC_COSINE || m == EMB_METRIC_L2; }

float emb_knn_aux(emb_metric m, const float *v, size_t d) {
    if (!emb_knn_needs_aux(m)) return 0;
    double s2 = emb_vec_norm2(v, d);
    if (m == EMB_METRIC_COSINE) return s2 > 0 ? (float)(1.0 / sqrt(s2)) : 0.0f; /* see emb_knn_search */
    return (float)s2;
}

/* float32 scores, lower is nearer: -cos, |v|^2 - 2 v.q (|q|^2 left out), -dot, l1. */
static void score_rows(const emb_knn_index *ix, const float *q, float *score) {
    size_t n = ix->n, d = ix->d;
    if (ix->metric == EMB_METRIC_L1) {
        for (size_t i = 0; i < n; i++) score[i] = (float)emb_vec_l1(ix->vectors + i * d, q, d);
        return;
    }
    /* one pass over the array, in blocks that OpenBLAS splits over its threads */
    const size_t block = 65536;
    for (size_t at = 0; at < n; at += block) {
        size_t rows = n - at < block ? n - at : block;
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)rows, (blasint)d, 1.0f, ix->vectors + at * d, (blasint)d,
                    q, 1, 0.0f, score + at, 1);
    }
    const float *aux = ix->aux;
    if (ix->metric == EMB_METRIC_COSINE)
        for (size_t i = 0; i < n; i++) score[i] = -score[i] * aux[i];
    else if (ix->metric == EMB_METRIC_L2)
        for (size_t i = 0; i < n; i++) score[i] = aux[i] - 2.0f * score[i];
    else
        for (size_t i = 0; i < n; i++) score[i] = -score[i];
}

typedef struct {
    float key;
    size_t i;
} cand;

/* Max-heap on key (ties: larger position on top), so the top is the worst candidate kept. */
static int cand_worse(const cand *a, const cand *b) {
    return a->key > b->key || (a->key == b->key && a->i > b->i);
}

static void sift_down(cand *h, size_t n, size_t at) {
    for (;;) {
        size_t l = 2 * at + 1, r = l + 1, top = at;
        if (l < n && cand_worse(&h[l], &h[top])) top = l;
        if (r < n && cand_worse(&h[r], &h[top])) top = r;
        if (top == at) return;
        cand t = h[at];
        h[at] = h[top];
        h[top] = t;
        at = top;
    }
}

/* The (at most m) lowest of n scores into heap; returns how many. */
static size_t select_best(const float *score, size_t n, cand *heap, size_t m) {
    size_t h = 0;
    for (size_t i = 0; i < n; i++) {
        if (h == m && score[i] > heap[0].key) continue; /* the common case: not among the best */
        cand x = {score[i], i};
        if (h < m) {
            heap[h++] = x;
            if (h == m)
                for (size_t j = m / 2; j-- > 0;) sift_down(heap, m, j);
        } else if (cand_worse(&heap[0], &x)) {
            heap[0] = x;
            sift_down(heap, m, 0);
        }
    }
    return h;
}

static int hit_cmp(const void *pa, const void *pb) {
    const emb_knn_hit *a = pa, *b = pb;
    if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* The float32 scores of the rows at positions rows[0 .. m-1] (all rows when rows is NULL),
 * lower nearer: as score_rows, over each run of consecutive positions at once (an IVF's rows
 * are stored by list, so its lists are such runs), single rows one by one. */
static void score_some(const emb_knn_index *ix, const float *q, const size_t *rows, size_t m, float *score) {
    size_t d = ix->d;
    for (size_t j = 0; j < m;) {
        size_t run = 1;
        while (j + run < m && rows[j + run] == rows[j] + run) run++;
        if (run >= 4 && ix->metric != EMB_METRIC_L1) {
            emb_knn_index part = *ix;
            part.vectors = ix->vectors + rows[j] * d;
            part.aux = ix->aux ? ix->aux + rows[j] : NULL;
            part.n = run;
            score_rows(&part, q, score + j);
            j += run;
            continue;
        }
        const float *v = ix->vectors + rows[j] * d;
        float dot = ix->metric == EMB_METRIC_L1 ? 0.0f : cblas_sdot((blasint)d, v, 1, q, 1);
        switch (ix->metric) {
        case EMB_METRIC_COSINE: score[j] = -dot * ix->aux[rows[j]]; break;
        case EMB_METRIC_L2: score[j] = ix->aux[rows[j]] - 2.0f * dot; break;
        case EMB_METRIC_DOT: score[j] = -dot; break;
        default: score[j] = (float)emb_vec_l1(v, q, d); break;
        }
        j++;
    }
}

/* Whether fewer than half of the rows lie in runs of 4 or more consecutive positions. */
static int scattered(const size_t *rows, size_t m) {
    size_t in_runs = 0;
    for (size_t j = 0; j < m;) {
        size_t run = 1;
        while (j + run < m && rows[j + run] == rows[j] + run) run++;
        if (run >= 4) in_runs += run;
        j += run;
    }
    return in_runs < m / 2;
}

int emb_knn_search_rows(const emb_knn_index *ix, const float *q, size_t k, const size_t *rows, size_t m,
                        emb_knn_scratch *scratch, emb_knn_hit *out, size_t *n_out) {
    size_t n = ix->n, d = ix->d;
    *n_out = 0;
    if (!rows) m = n;
    if (k > m) k = m;
    if (k == 0) return 0;
    size_t keep = k + k / 4 + 16;
    if (keep > m) keep = m;
    /* many scattered rows: one sgemv over the whole array is faster than a dot product per row;
     * rows in runs (an IVF's lists) are scored run by run, at the cost of those rows only, until
     * they are so many that the whole array's sgemv (split over OpenBLAS's threads, which short
     * runs are not) costs less: about 3/5 of the rows on 2 cores (bench/ann.sh) */
    int whole = !rows || (m > n / 8 && scattered(rows, m)) || m > n / 5 * 3;
    size_t need = whole ? n : m;
    emb_knn_scratch own = {0};
    if (!scratch) scratch = &own;
    if (scratch->cap < need) {
        emb_knn_scratch_free(scratch);
        if (!(scratch->score = malloc(need * sizeof *scratch->score))) return -1;
        scratch->cap = need;
    }
    cand *heap = malloc(keep * sizeof *heap);
    emb_knn_hit *hits = malloc(keep * sizeof *hits);
    float *picked = whole && rows ? malloc(m * sizeof *picked) : NULL;
    if (!heap || !hits || (whole && rows && !picked)) {
        free(heap);
        free(hits);
        free(picked);
        emb_knn_scratch_free(&own);
        return -1;
    }
    const float *score = scratch->score;
    if (whole) {
        score_rows(ix, q, scratch->score);
        if (rows) {
            for (size_t j = 0; j < m; j++) picked[j] = scratch->score[rows[j]];
            score = picked;
        }
    } else {
        score_some(ix, q, rows, m, scratch->score);
    }
    size_t h = select_best(score, m, heap, keep);
    for (size_t j = 0; j < h; j++) {
        size_t i = rows ? rows[heap[j].i] : heap[j].i;
        hits[j].dist = emb_vec_distance(ix->metric, ix->vectors + i * d, q, d);
        if (hits[j].dist != hits[j].dist) hits[j].dist = 1.0; /* a zero row has no direction: cos 0 */
        hits[j].id = ix->ids ? ix->ids[i] : (int64_t)i;
        hits[j].pos = i;
    }
    qsort(hits, h, sizeof *hits, hit_cmp);
    *n_out = h < k ? h : k;
    memcpy(out, hits, *n_out * sizeof *out);
    free(heap);
    free(hits);
    free(picked);
    emb_knn_scratch_free(&own);
    return 0;
}

int emb_knn_search(const emb_knn_index *ix, const float *q, size_t k, emb_knn_scratch *scratch, emb_knn_hit *out,
                   size_t *n_out) {
    return emb_knn_search_rows(ix, q, k, NULL, 0, scratch, out, n_out);
}

size_t emb_knn_rescore(emb_metric m, const float *q, size_t d, const float *vecs, const int64_t *ids, size_t n,
                       size_t k, emb_knn_hit *out) {
    emb_knn_hit *all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return (size_t)-1;
    for (size_t j = 0; j < n; j++) {
        all[j].dist = emb_vec_distance(m, vecs + j * d, q, d);
        if (all[j].dist != all[j].dist) all[j].dist = 1.0; /* as emb_knn_search: a zero row */
        all[j].id = ids[j];
        all[j].pos = j;
    }
    qsort(all, n, sizeof *all, hit_cmp);
    size_t got = n < k ? n : k;
    memcpy(out, all, got * sizeof *out);
    free(all);
    return got;
}
