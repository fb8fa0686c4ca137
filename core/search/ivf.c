#include "search/ivf.h"
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int spherical(emb_metric m) { return m == EMB_METRIC_COSINE || m == EMB_METRIC_DOT; }

static int metric_known(emb_metric m) {
    return m == EMB_METRIC_COSINE || m == EMB_METRIC_L2 || m == EMB_METRIC_L1 || m == EMB_METRIC_DOT;
}

/* splitmix64: small, seedable with any value, good enough for sampling */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; } /* [0, 1) */

static size_t rng_below(uint64_t *s, size_t n) { return (size_t)(rng_unit(s) * (double)n) % n; }

void emb_ivf_free(emb_ivf *ivf) {
    if (!ivf) return;
    free(ivf->centroids);
    free(ivf->norms2);
    memset(ivf, 0, sizeof *ivf);
}

/* Sizes the sgemm and the list ids allow (OpenBLAS takes int dimensions; lists are int32). */
static int shape_ok(size_t lists, size_t d) {
    return lists > 0 && d > 0 && lists <= INT32_MAX && d <= INT_MAX && lists <= SIZE_MAX / sizeof(float) / d;
}

static int ivf_alloc(emb_ivf *ivf, size_t lists, size_t d, emb_metric m) {
    ivf->lists = lists;
    ivf->d = d;
    ivf->metric = m;
    ivf->centroids = malloc(lists * d * sizeof *ivf->centroids);
    ivf->norms2 = malloc(lists * sizeof *ivf->norms2);
    if (ivf->centroids && ivf->norms2) return 0;
    emb_ivf_free(ivf);
    return -1;
}

static void update_norms(emb_ivf *ivf) {
    for (size_t l = 0; l < ivf->lists; l++)
        ivf->norms2[l] = (float)emb_vec_norm2(ivf->centroids + l * ivf->d, ivf->d);
}

int emb_ivf_init(emb_ivf *ivf, const float *centroids, size_t lists, size_t d, emb_metric m) {
    if (!ivf) return -1;
    memset(ivf, 0, sizeof *ivf);
    if (!centroids || !shape_ok(lists, d) || !metric_known(m) || ivf_alloc(ivf, lists, d, m)) return -1;
    memcpy(ivf->centroids, centroids, lists * d * sizeof *centroids);
    update_norms(ivf);
    return 0;
}

/* ---------- assignment ---------- */

/* Rows per sgemm: about 4M float scores (16 MB) at a time, and enough rows for sgemm to pay. */
static size_t block_rows(size_t lists) {
    size_t b = ((size_t)1 << 22) / lists;
    return b < 16 ? 16 : b > 4096 ? 4096 : b;
}

/* The best list of one row of scores s (its dot products with the centroids): the largest dot
 * (spherical) or the smallest |c|^2 - 2 x.c (Euclidean; |x|^2 is the same for every list). The
 * best value comes from a vectorised reduction, then its first index; none (NaN) gives 0. */
static int32_t best_list(float *s, const float *norms2, size_t lists, int sph) {
    float best;
    if (sph) {
        best = -INFINITY;
#pragma omp simd reduction(max : best)
        for (size_t l = 0; l < lists; l++) best = s[l] > best ? s[l] : best;
    } else {
        best = INFINITY;
#pragma omp simd reduction(min : best)
        for (size_t l = 0; l < lists; l++) {
            s[l] = norms2[l] - 2.0f * s[l];
            best = s[l] < best ? s[l] : best;
        }
    }
    for (size_t l = 0; l < lists; l++)
        if (s[l] == best) return (int32_t)l;
    return 0;
}

/* The nearest list of each row into out; *changed (if not NULL) counts the rows whose entry
 * differed from what out held. */
static int assign_rows(const emb_ivf *ivf, const float *x, size_t n, int32_t *out, size_t *changed,
                       const emb_stop *stop) {
    size_t lists = ivf->lists, d = ivf->d, block = block_rows(lists);
    if (block > n) block = n;
    if (changed) *changed = 0;
    if (n == 0) return 0;
    float *s = malloc(block * lists * sizeof *s);
    if (!s) return -1;
    int sph = spherical(ivf->metric);
    for (size_t at = 0; at < n; at += block) {
        size_t rows = n - at < block ? n - at : block;
        if (stop && stop->fn(stop->arg)) {
            free(s);
            return -2;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)rows, (blasint)lists, (blasint)d, 1.0f,
                    x + at * d, (blasint)d, ivf->centroids, (blasint)d, 0.0f, s, (blasint)lists);
        for (size_t r = 0; r < rows; r++) {
            int32_t l = best_list(s + r * lists, ivf->norms2, lists, sph);
            if (changed && out[at + r] != l) (*changed)++;
            out[at + r] = l;
        }
    }
    free(s);
    return 0;
}

int emb_ivf_assign(const emb_ivf *ivf, const float *x, size_t n, int32_t *list_out) {
    if (!ivf || !ivf->centroids || (n && (!x || !list_out))) return -1;
    return assign_rows(ivf, x, n, list_out, NULL, NULL);
}

/* ---------- training ---------- */

/* A deterministic random unit vector, for a spherical centroid that has no direction. */
static void random_unit(float *c, size_t d, uint64_t *rng) {
    for (size_t k = 0; k < d; k++) c[k] = (float)(rng_unit(rng) - 0.5);
    emb_vec_normalize(c, c, d);
    if (emb_vec_norm2(c, d) == 0) c[0] = 1;
}

/* The training rows' scale: 1 / |x| under spherical k-means (0 for a zero row, which then
 * pulls no centroid), 1 otherwise. */
static void row_weights(const float *x, size_t n, size_t d, int sph, float *w) {
    for (size_t i = 0; i < n; i++) {
        double n2 = sph ? emb_vec_norm2(x + i * d, d) : 1;
        w[i] = n2 > 0 ? (float)(1 / sqrt(n2)) : 0.0f;
    }
}

/* Where the D^2 draw r (0 <= r < cum[m - 1]) falls: the first row whose running sum passes r,
 * which has a positive weight; rounding past the end gives the last such row. */
static size_t draw_row(const double *cum, const float *mind, size_t m, double r) {
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > r) hi = mid;
        else lo = mid + 1;
    }
    if (lo == m)
        while (lo > 0 && !(mind[--lo] > 0)) {}
    return lo;
}

/* Greedy k-means++ seeding on a random subsample of about 8 rows per list (scaled by w): each
 * step draws 2 + ln(lists) candidate rows by D^2 sampling and keeps the one that lowers the sum
 * of squared distances most (plain k-means++ puts two centroids in one of 8 well-separated
 * clusters in about one run of five; this makes it rare). Each centroid is a distinct row; rows
 * of weight 0 are never picked. */
static int seed_centroids(emb_ivf *ivf, const float *x, size_t n, const float *w, uint64_t *rng,
                          const emb_stop *stop) {
    size_t lists = ivf->lists, d = ivf->d;
    size_t m = n > 256 && lists < (n - 256) / 8 ? 8 * lists + 256 : n;
    size_t trials = 2 + (size_t)log((double)lists), pick[2 + 64];
    size_t *idx = malloc(n * sizeof *idx);
    float *sub = malloc(m * d * sizeof *sub), *cand = malloc(trials * d * sizeof *cand);
    float *sn2 = malloc(m * sizeof *sn2), *dots = malloc(m * trials * sizeof *dots),
          *mind = malloc(m * sizeof *mind);
    double *cum = malloc(m * sizeof *cum);
    unsigned char *taken = calloc(m, 1);
    int rc = -1;
    if (!idx || !sub || !cand || !sn2 || !dots || !mind || !cum || !taken) goto done;
    /* the subsample: the first m of a partial Fisher-Yates shuffle */
    for (size_t i = 0; i < n; i++) idx[i] = i;
    for (size_t i = 0; i < m; i++) {
        size_t j = i + rng_below(rng, n - i), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        emb_vec_scale(sub + i * d, x + idx[i] * d, w[idx[i]], d);
        sn2[i] = (float)emb_vec_norm2(sub + i * d, d);
        mind[i] = w[idx[i]] > 0 ? INFINITY : 0;
    }
    for (size_t c = 0; c < lists; c++) {
        if (stop && stop->fn(stop->arg)) {
            rc = -2;
            goto done;
        }
        double total = 0;
        for (size_t i = 0; i < m; i++) cum[i] = total += mind[i];
        size_t nt = 0;
        if (c > 0 && total > 0 && isfinite(total)) {
            for (; nt < trials; nt++) pick[nt] = draw_row(cum, mind, m, rng_unit(rng) * total);
        } else { /* the first centroid, or every untaken row sits on one: any untaken usable row */
            size_t start = rng_below(rng, m);
            for (size_t k = 0; k < m && !nt; k++) {
                size_t i = (start + k) % m;
                if (!taken[i] && w[idx[i]] > 0) pick[nt++] = i;
            }
        }
        float *cen = ivf->centroids + c * d;
        if (!nt) { /* only zero rows left (spherical): no direction to take */
            random_unit(cen, d, rng);
            continue;
        }
        for (size_t j = 0; j < nt; j++) memcpy(cand + j * d, sub + pick[j] * d, d * sizeof *cand);
        /* squared distances to each candidate, |x|^2 + |c|^2 - 2 x.c, and the sum each leaves */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)nt, (blasint)d, 1.0f, sub,
                    (blasint)d, cand, (blasint)d, 0.0f, dots, (blasint)nt);
        size_t best = 0;
        double best_sum = INFINITY;
        for (size_t j = 0; j < nt && nt > 1; j++) {
            double sum = 0;
            float c2 = sn2[pick[j]];
            for (size_t i = 0; i < m; i++) {
                float dist = sn2[i] + c2 - 2.0f * dots[i * nt + j];
                sum += dist < mind[i] ? (dist > 0 ? dist : 0) : mind[i];
            }
            if (sum < best_sum) best_sum = sum, best = j;
        }
        size_t p = pick[best];
        taken[p] = 1;
        memcpy(cen, sub + p * d, d * sizeof *cen);
        for (size_t i = 0; i < m; i++) {
            float dist = sn2[i] + sn2[p] - 2.0f * dots[i * nt + best];
            if (dist < 0) dist = 0;
            if (dist < mind[i]) mind[i] = dist;
        }
        mind[p] = 0;
    }
    rc = 0;
done:
    free(idx);
    free(sub);
    free(cand);
    free(sn2);
    free(dots);
    free(mind);
    free(cum);
    free(taken);
    return rc;
}

/* The centroids as the means of their rows (scaled by w); spherical: re-normalised, and a list
 * whose rows sum to zero keeps its centroid. Returns the row counts in count. */
static void update_centroids(emb_ivf *ivf, const float *x, size_t n, const float *w, const int32_t *assign,
                             double *sum, size_t *count) {
    size_t lists = ivf->lists, d = ivf->d;
    memset(sum, 0, lists * d * sizeof *sum);
    memset(count, 0, lists * sizeof *count);
    for (size_t i = 0; i < n; i++) {
        size_t l = (size_t)assign[i];
        count[l]++;
        double *acc = sum + l * d;
        const float *v = x + i * d;
        double wi = w[i];
#pragma omp simd
        for (size_t k = 0; k < d; k++) acc[k] += wi * v[k];
    }
    int sph = spherical(ivf->metric);
    for (size_t l = 0; l < lists; l++) {
        if (!count[l]) continue;
        const double *acc = sum + l * d;
        float *c = ivf->centroids + l * d;
        double scale = 1.0 / (double)count[l];
        if (sph) {
            double n2 = 0;
            for (size_t k = 0; k < d; k++) n2 += acc[k] * acc[k];
            if (!(n2 > 0)) continue;
            scale = 1 / sqrt(n2);
        }
        for (size_t k = 0; k < d; k++) c[k] = (float)(acc[k] * scale);
    }
}

/* Each empty list takes half of the largest: the largest list's centroid is split into two
 * slightly different copies (alternating +-1/1024 per dimension), which the next assignment
 * pulls apart. */
static void reseed_empty(emb_ivf *ivf, size_t *count) {
    const float eps = 1.0f / 1024;
    size_t lists = ivf->lists, d = ivf->d;
    for (size_t e = 0; e < lists; e++) {
        if (count[e]) continue;
        size_t big = 0;
        for (size_t l = 1; l < lists; l++)
            if (count[l] > count[big]) big = l;
        if (count[big] < 2) return; /* nothing to split: no list has two rows */
        float *ce = ivf->centroids + e * d, *cb = ivf->centroids + big * d;
        for (size_t k = 0; k < d; k++) {
            float s = k % 2 ? -eps : eps;
            ce[k] = cb[k] * (1 + s);
            cb[k] = cb[k] * (1 - s);
        }
        if (spherical(ivf->metric)) {
            emb_vec_normalize(ce, ce, d);
            emb_vec_normalize(cb, cb, d);
        }
        count[e] = count[big] / 2;
        count[big] -= count[e];
    }
}

int emb_ivf_train(emb_ivf *ivf, const float *x, size_t n, size_t d, emb_metric m, size_t lists, int iterations,
                  uint64_t seed) {
    return emb_ivf_train_stoppable(ivf, x, n, d, m, lists, iterations, seed, NULL);
}

int emb_ivf_train_stoppable(emb_ivf *ivf, const float *x, size_t n, size_t d, emb_metric m, size_t lists,
                            int iterations, uint64_t seed, const emb_stop *stop) {
    if (!ivf) return -1;
    memset(ivf, 0, sizeof *ivf);
    if (!x || n == 0 || lists > n || iterations < 0 || !metric_known(m) || !shape_ok(lists, d) ||
        n > SIZE_MAX / sizeof(float) / d || ivf_alloc(ivf, lists, d, m))
        return -1;
    uint64_t rng = seed;
    float *w = malloc(n * sizeof *w);
    int32_t *assign = malloc(n * sizeof *assign);
    double *sum = malloc(lists * d * sizeof *sum);
    size_t *count = malloc(lists * sizeof *count);
    int rc = -1;
    if (!w || !assign || !sum || !count) goto done;
    int sph = spherical(m);
    row_weights(x, n, d, sph, w);
    if ((rc = seed_centroids(ivf, x, n, w, &rng, stop)) != 0) goto done;
    rc = -1;
    update_norms(ivf);
    for (size_t i = 0; i < n; i++) assign[i] = -1;
    for (int it = 0; it < iterations; it++) {
        size_t changed;
        if ((rc = assign_rows(ivf, x, n, assign, &changed, stop)) != 0) goto done;
        rc = -1;
        if (changed == 0) break;
        update_centroids(ivf, x, n, w, assign, sum, count);
        reseed_empty(ivf, count);
        update_norms(ivf);
    }
    rc = 0;
done:
    free(w);
    free(assign);
    free(sum);
    free(count);
    if (rc) emb_ivf_free(ivf);
    return rc;
}

/* ---------- probing ---------- */

typedef struct {
    double key;
    int32_t list;
} ranked;

static int ranked_cmp(const void *pa, const void *pb) {
    const ranked *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->list > b->list) - (a->list < b->list);
}

size_t emb_ivf_probe(const emb_ivf *ivf, const float *q, size_t probes, int32_t *out) {
    if (!ivf || !ivf->centroids || !q || !out || probes == 0) return 0;
    size_t lists = ivf->lists, d = ivf->d, want = probes < lists ? probes : lists;
    ranked *r = malloc(lists * sizeof *r);
    if (!r) return 0;
    int sph = spherical(ivf->metric);
    for (size_t l = 0; l < lists; l++) {
        const float *c = ivf->centroids + l * d;
        r[l].key = sph ? -emb_vec_dot(q, c, d) : emb_vec_l2(q, c, d);
        if (isnan(r[l].key)) r[l].key = INFINITY;
        r[l].list = (int32_t)l;
    }
    qsort(r, lists, sizeof *r, ranked_cmp);
    for (size_t i = 0; i < want; i++) out[i] = r[i].list;
    free(r);
    return want;
}

/* ---------- groups ---------- */

void emb_ivf_groups_free(emb_ivf_groups *g) {
    if (!g) return;
    free(g->start);
    free(g->pos);
    memset(g, 0, sizeof *g);
}

int emb_ivf_groups_build(emb_ivf_groups *g, const int32_t *list_of_row, size_t n, size_t lists) {
    if (!g) return -1;
    memset(g, 0, sizeof *g);
    if ((n && !list_of_row) || lists > SIZE_MAX / sizeof(size_t) - 3 || n > SIZE_MAX / sizeof(size_t)) return -1;
    /* lists + 3 counters: group b is counted at b + 2, so that after the prefix sum start[b + 1]
     * is where group b begins, and filling it moves start[b + 1] to where b + 1 begins */
    size_t *start = calloc(lists + 3, sizeof *start);
    size_t *pos = malloc((n ? n : 1) * sizeof *pos);
    if (!start || !pos) {
        free(start);
        free(pos);
        return -1;
    }
#define GROUP_OF(v) ((v) >= 0 && (size_t)(v) < lists ? (size_t)(v) : lists)
    for (size_t i = 0; i < n; i++) start[GROUP_OF(list_of_row[i]) + 2]++;
    for (size_t b = 2; b < lists + 3; b++) start[b] += start[b - 1];
    for (size_t i = 0; i < n; i++) pos[start[GROUP_OF(list_of_row[i]) + 1]++] = i;
#undef GROUP_OF
    g->lists = lists;
    g->n = n;
    g->start = start;
    g->pos = pos;
    return 0;
}

/* Marks the rows of group b in the bitmap; returns how many were not marked before. */
static size_t mark_group(const emb_ivf_groups *g, size_t b, uint64_t *bits) {
    size_t fresh = 0;
    for (size_t j = g->start[b]; j < g->start[b + 1]; j++) {
        size_t p = g->pos[j];
        uint64_t bit = (uint64_t)1 << (p & 63);
        fresh += !(bits[p >> 6] & bit);
        bits[p >> 6] |= bit;
    }
    return fresh;
}

size_t emb_ivf_groups_collect(const emb_ivf_groups *g, const int32_t *lists, size_t nl, size_t **out) {
    *out = NULL;
    /* a bitmap of the rows merges the groups in position order and drops repeats: O(n / 64 + m) */
    size_t words = (g->n + 63) / 64;
    uint64_t *bits = calloc(words ? words : 1, sizeof *bits);
    if (!bits) return (size_t)-1;
    size_t m = mark_group(g, g->lists, bits);
    for (size_t j = 0; lists && j < nl; j++)
        if (lists[j] >= 0 && (size_t)lists[j] < g->lists) m += mark_group(g, (size_t)lists[j], bits);
    size_t *o = malloc((m ? m : 1) * sizeof *o), k = 0;
    if (!o) {
        free(bits);
        return (size_t)-1;
    }
    for (size_t wi = 0; wi < words; wi++)
        for (uint64_t v = bits[wi]; v; v &= v - 1) o[k++] = wi * 64 + (size_t)__builtin_ctzll(v);
    free(bits);
    *out = o;
    return m;
}

/* ---------- defaults ---------- */

size_t emb_ivf_default_lists(size_t n) {
    size_t l = (size_t)llround(sqrt((double)n));
    if (l > n) l = n;
    return l ? l : 1;
}

size_t emb_ivf_default_probes(size_t lists) {
    size_t p = lists / 50 > 8 ? lists / 50 : 8;
    return p < lists ? p : (lists ? lists : 1);
}
