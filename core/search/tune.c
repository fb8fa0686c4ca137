#include "search/tune.h"
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void emb_truth_free(emb_truth *t) {
    free(t->q);
    free(t->self);
    free(t->score);
    free(t->pos);
    free(t->found);
    free(t->block);
    memset(t, 0, sizeof *t);
}

int emb_truth_init(emb_truth *t, const float *q, const size_t *self, size_t nq, size_t d, emb_metric m, size_t k) {
    memset(t, 0, sizeof *t);
    if (!q || !nq || !k || !d) return -1;
    *t = (emb_truth){nq,
                     k,
                     d,
                     m,
                     malloc(nq * d * sizeof(float)),
                     malloc(nq * sizeof(size_t)),
                     malloc(nq * k * sizeof(float)),
                     malloc(nq * k * sizeof(size_t)),
                     calloc(nq, sizeof(size_t)),
                     NULL};
    if (!t->q || !t->self || !t->score || !t->pos || !t->found) {
        emb_truth_free(t);
        return -1;
    }
    memcpy(t->q, q, nq * d * sizeof(float));
    for (size_t j = 0; j < nq; j++) t->self[j] = self ? self[j] : (size_t)-1;
    return 0;
}

/* Scores lower nearer: -cos, |x|^2 - 2 x.q, -x.q, l1 (the query's own terms left out). */
static void block_scores(emb_truth *t, const float *x, size_t rows) {
    size_t nq = t->nq, d = t->d;
    if (t->metric == EMB_METRIC_L1) {
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < nq; j++) t->block[r * nq + j] = (float)emb_vec_l1(x + r * d, t->q + j * d, d);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)rows, (blasint)nq, (blasint)d, 1.0f, x,
                (blasint)d, t->q, (blasint)d, 0.0f, t->block, (blasint)nq);
    for (size_t r = 0; r < rows; r++) {
        float *s = t->block + r * nq;
        double n2 = t->metric == EMB_METRIC_DOT ? 0 : emb_vec_norm2(x + r * d, d);
        float inv = n2 > 0 ? (float)(1.0 / sqrt(n2)) : 0.0f;
        for (size_t j = 0; j < nq; j++)
            s[j] = t->metric == EMB_METRIC_COSINE ? -s[j] * inv
                   : t->metric == EMB_METRIC_L2   ? (float)n2 - 2.0f * s[j]
                                                  : -s[j];
    }
}

/* Keeps the row among query j's k best (sorted, ties to the lower position). */
static void offer(emb_truth *t, size_t j, float s, size_t pos) {
    size_t k = t->k, n = t->found[j];
    float *sc = t->score + j * k;
    size_t *ps = t->pos + j * k;
    if (s != s) return; /* NaN: no direction */
    if (n == k && !(s < sc[k - 1])) return;
    size_t at = n < k ? n++ : k - 1;
    while (at > 0 && sc[at - 1] > s) {
        sc[at] = sc[at - 1];
        ps[at] = ps[at - 1];
        at--;
    }
    sc[at] = s;
    ps[at] = pos;
    t->found[j] = n;
}

int emb_truth_add(emb_truth *t, const float *x, size_t rows, size_t first) {
    for (size_t at = 0; at < rows; at += 1024) {
        size_t m = rows - at < 1024 ? rows - at : 1024;
        if (!t->block && !(t->block = malloc(1024 * t->nq * sizeof(float)))) return -1;
        block_scores(t, x + at * t->d, m);
        for (size_t r = 0; r < m; r++)
            for (size_t j = 0; j < t->nq; j++)
                if (first + at + r != t->self[j]) offer(t, j, t->block[r * t->nq + j], first + at + r);
    }
    return 0;
}

static int size_cmp(const void *pa, const void *pb) {
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return (a > b) - (a < b);
}

/* The ranks sorted; the smallest rank bound reaching target: ranks[need - 1]. */
static size_t quantile(size_t *ranks, size_t count, double target) {
    qsort(ranks, count, sizeof *ranks, size_cmp);
    size_t need = (size_t)ceil(target * (double)count - 1e-9);
    if (need < 1) need = 1;
    if (need > count) need = count;
    return ranks[need - 1];
}

static double share_below(const size_t *ranks, size_t count, size_t bound) {
    size_t got = 0;
    for (size_t i = 0; i < count; i++) got += ranks[i] < bound;
    return count ? (double)got / (double)count : 1.0;
}

int emb_tune_probes(const emb_ivf *ivf, const emb_truth *t, const int32_t *list_of, const size_t *sizes, size_t n,
                    double target, emb_tuned *out) {
    size_t lists = ivf->lists, nq = t->nq, k = t->k, count = 0, extra = n;
    int32_t *order = malloc(nq * lists * sizeof *order);
    size_t *rank = malloc(lists * sizeof *rank), *ranks = malloc((nq * k + 1) * sizeof *ranks);
    int rc = order && rank && ranks ? 0 : -1;
    for (size_t l = 0; l < lists; l++) extra -= sizes[l] < extra ? sizes[l] : extra;
    for (size_t j = 0; rc == 0 && j < nq; j++) {
        if (emb_ivf_probe(ivf, t->q + j * t->d, lists, order + j * lists) != lists) rc = -1;
        for (size_t i = 0; rc == 0 && i < lists; i++) rank[order[j * lists + i]] = i;
        for (size_t i = 0; rc == 0 && i < t->found[j]; i++) {
            int32_t l = list_of[t->pos[j * k + i]];
            ranks[count++] = l >= 0 && (size_t)l < lists ? rank[l] : 0; /* unassigned: always scanned */
        }
    }
    if (rc == 0) {
        size_t p = count ? quantile(ranks, count, target) + 1 : 1;
        double rows = 0;
        for (size_t j = 0; j < nq; j++)
            for (size_t i = 0; i < p; i++) rows += (double)sizes[order[j * lists + i]];
        *out =
            (emb_tuned){p, share_below(ranks, count, p), n ? (rows / (double)nq + (double)extra) / (double)n : 1};
    }
    free(order);
    free(rank);
    free(ranks);
    return rc;
}

void emb_tune_code_ranks(const emb_truth *t, size_t j, const float *score, size_t m, size_t *ranks) {
    size_t k = t->k, nb = t->found[j], self = t->self[j];
    const size_t *pos = t->pos + j * k;
    float s[256];
    if (nb > 256) nb = 256;
    for (size_t i = 0; i < nb; i++) {
        s[i] = score[pos[i]];
        ranks[i] = 0;
    }
    /* rows ahead of a neighbour: a better score, or an equal one at a lower position (the order
     * the scan keeps its candidates in); a NaN score is last */
    for (size_t r = 0; r < m; r++) {
        if (r == self) continue;
        float x = score[r] == score[r] ? score[r] : INFINITY;
        for (size_t i = 0; i < nb; i++) ranks[i] += x < s[i] || (x == s[i] && r < pos[i]);
    }
}

int emb_tune_oversample(const size_t *ranks, size_t count, size_t k, double target, emb_tuned *out) {
    size_t *r = malloc((count ? count : 1) * sizeof *r);
    if (!r) return -1;
    memcpy(r, ranks, count * sizeof *r);
    size_t o = count ? quantile(r, count, target) / k + 1 : 1;
    *out = (emb_tuned){o, share_below(r, count, k * o), 0};
    free(r);
    return 0;
}
