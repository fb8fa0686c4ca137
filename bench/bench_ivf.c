/* The IVF coarse quantizer (core/ivf.h) on the issue-11 benchmark data (tests/c/ivf_data.h):
 * build time (train on a sample of up to 256 rows a list, assign every row, group the rows) and
 * recall@10 of an IVF search (exact scoring of the collected rows with emb_knn_search_rows)
 * against the exact search, at three probes settings, with median query latencies; and the same
 * search over a copy of the rows in list order (one sgemv per probed list), the layout a store
 * kept in list order would give.
 *
 *   bench_ivf [KIND N [D [QUERIES]]] ...   KIND clustered | uniform; default: clustered 100000,
 *                                          clustered 1000000, uniform 100000; D 384, QUERIES 100
 *
 * Prints "RESULT key value" lines. */
#include "../tests/c/ivf_data.h"
#include "search/ivf.h"
#include "search/knn.h"
#include "bench_clock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "bench_ivf: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* Up to `want` distinct random rows of x, copied (the training sample). */
static float *sample_rows(const float *x, size_t n, size_t d, size_t want, uint64_t seed) {
    data_rng r = {seed, 0, 0};
    size_t *idx = xmalloc(n * sizeof *idx);
    float *s = xmalloc(want * d * sizeof *s);
    for (size_t i = 0; i < n; i++) idx[i] = i;
    for (size_t i = 0; i < want; i++) {
        size_t j = i + data_u64(&r) % (n - i), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        memcpy(s + i * d, x + idx[i] * d, d * sizeof *s);
    }
    free(idx);
    return s;
}

static int hit_cmp(const void *pa, const void *pb) {
    const emb_knn_hit *a = pa, *b = pb;
    if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* The same search when each list's rows lie together (xs, auxs: the rows in g->pos order), as a
 * store kept in list order would hold them: one emb_knn_search (one sgemv) per probed list and
 * the extra group, then the best k of theirs into out (all has room for (np + 1) * k). */
static size_t search_by_list(const emb_ivf_groups *g, const float *xs, const float *auxs, size_t d, const float *q,
                             const int32_t *pl, size_t np, size_t k, emb_knn_scratch *scratch, emb_knn_hit *all,
                             emb_knn_hit *out) {
    size_t h = 0;
    for (size_t j = 0; j <= np; j++) {
        size_t b = j < np ? (size_t)pl[j] : g->lists, s = g->start[b], e = g->start[b + 1], got;
        if (e == s) continue;
        emb_knn_index part = {xs + s * d, auxs + s, NULL, e - s, d, EMB_METRIC_COSINE};
        if (emb_knn_search(&part, q, k, scratch, all + h, &got)) exit(1);
        for (size_t i = h; i < h + got; i++) all[i].id = (int64_t)(all[i].pos = g->pos[s + all[i].pos]);
        h += got;
    }
    qsort(all, h, sizeof *all, hit_cmp);
    if (h > k) h = k;
    memcpy(out, all, h * sizeof *out);
    return h;
}

static void run(const char *kind, size_t n, size_t d, size_t nq) {
    const size_t k = 10, centres = 1000;
    int clustered = strcmp(kind, "uniform") != 0;
    printf("== %s n %zu d %zu (%s), %zu queries\n", kind, n, d, clustered ? "1000 centres" : "sphere", nq);
    double t0 = bench_now();
    float *x = clustered ? data_clustered(n, d, centres, 1) : data_uniform(n, d, 1);
    float *q = x ? data_queries(x, n, d, nq, 2) : NULL;
    if (!q) {
        fprintf(stderr, "bench_ivf: out of memory\n");
        exit(1);
    }
    printf("data generated in %.1f s\n", bench_now() - t0);

    /* build: sample, train, assign all, group */
    size_t lists = emb_ivf_default_lists(n), train_n = lists * EMB_IVF_SAMPLE_PER_LIST;
    if (train_n > n) train_n = n;
    double tb = bench_now();
    float *sample = sample_rows(x, n, d, train_n, 3);
    double ts = bench_now();
    emb_ivf ivf;
    if (emb_ivf_train(&ivf, sample, train_n, d, EMB_METRIC_COSINE, lists, EMB_IVF_ITERATIONS, 4)) exit(1);
    double tt = bench_now();
    int32_t *as = xmalloc(n * sizeof *as);
    if (emb_ivf_assign(&ivf, x, n, as)) exit(1);
    double ta = bench_now();
    emb_ivf_groups g;
    if (emb_ivf_groups_build(&g, as, n, lists)) exit(1);
    double tg = bench_now();
    free(sample);
    size_t biggest = 0, empty = 0;
    for (size_t l = 0; l < lists; l++) {
        size_t sz = g.start[l + 1] - g.start[l];
        if (sz > biggest) biggest = sz;
        empty += sz == 0;
    }
    printf("build: lists %zu, sample %zu rows: sample %.2f s, train %.2f s, assign %.2f s, group %.3f s, "
           "total %.2f s\n",
           lists, train_n, ts - tb, tt - ts, ta - tt, tg - ta, tg - tb);
    printf("lists: mean %.0f rows, largest %zu, empty %zu\n", (double)n / lists, biggest, empty);
    printf("RESULT %s_%zu_build_s %.2f\nRESULT %s_%zu_train_s %.2f\nRESULT %s_%zu_assign_s %.2f\n", kind, n,
           tg - tb, kind, n, tt - ts, kind, n, ta - tt);

    /* the exact search: the truth, and the latency to beat */
    float *aux = xmalloc(n * sizeof *aux);
    for (size_t i = 0; i < n; i++) aux[i] = emb_knn_aux(EMB_METRIC_COSINE, x + i * d, d);
    emb_knn_index ix = {x, aux, NULL, n, d, EMB_METRIC_COSINE};
    emb_knn_scratch scratch = {0};
    emb_knn_hit *truth = xmalloc(nq * k * sizeof *truth), hits[10];
    double *lat = xmalloc(nq * sizeof *lat), *lat_probe = xmalloc(nq * sizeof *lat);
    double *lat_collect = xmalloc(nq * sizeof *lat);
    size_t got;
    for (size_t j = 0; j < nq; j++) {
        double a = bench_now();
        if (emb_knn_search(&ix, q + j * d, k, &scratch, truth + j * k, &got)) exit(1);
        lat[j] = bench_now() - a;
    }
    double exact_ms = 1e3 * bench_median(lat, nq);
    printf("exact search: %.2f ms median\n", exact_ms);
    printf("RESULT %s_%zu_exact_ms %.2f\n", kind, n, exact_ms);

    /* a copy of the rows in list order, for search_by_list */
    float *xs = xmalloc(n * d * sizeof *xs), *auxs = xmalloc(n * sizeof *auxs);
    for (size_t i = 0; i < n; i++) {
        memcpy(xs + i * d, x + g.pos[i] * d, d * sizeof *xs);
        auxs[i] = aux[g.pos[i]];
    }
    size_t base = emb_ivf_default_probes(lists);
    size_t settings[3] = {base / 2 ? base / 2 : 1, base, 2 * base};
    int32_t *pl = xmalloc(2 * base * sizeof *pl);
    emb_knn_hit *all = xmalloc((2 * base + 1) * k * sizeof *all);
    double *lat_by_list = xmalloc(nq * sizeof *lat);
    for (int s = 0; s < 3; s++) {
        size_t probes = settings[s], found = 0, scanned = 0;
        for (size_t j = 0; j < nq; j++) {
            double a = bench_now();
            size_t *rows = NULL;
            size_t np = emb_ivf_probe(&ivf, q + j * d, probes, pl);
            double b1 = bench_now();
            size_t m = emb_ivf_groups_collect(&g, pl, np, &rows);
            double b2 = bench_now();
            lat_probe[j] = b1 - a;
            lat_collect[j] = b2 - b1;
            if (m == (size_t)-1 || emb_knn_search_rows(&ix, q + j * d, k, rows, m, &scratch, hits, &got)) exit(1);
            lat[j] = bench_now() - a;
            free(rows);
            scanned += m;
            for (size_t a2 = 0; a2 < got; a2++)
                for (size_t b = 0; b < k; b++) found += hits[a2].pos == truth[j * k + b].pos;
            emb_knn_hit same[10];
            a = bench_now();
            np = emb_ivf_probe(&ivf, q + j * d, probes, pl);
            size_t got2 = search_by_list(&g, xs, auxs, d, q + j * d, pl, np, k, &scratch, all, same);
            lat_by_list[j] = bench_now() - a;
            if (got2 != got) exit(1);
            for (size_t a2 = 0; a2 < got; a2++)
                if (same[a2].pos != hits[a2].pos) exit(1); /* the same rows scored, the same answer */
        }
        double ms = 1e3 * bench_median(lat, nq), recall = (double)found / (double)(nq * k);
        printf(
            "ivf probes %3zu%s: recall@10 %.3f, %.3f ms median (%.1fx faster than exact; probe %.3f ms, collect "
            "%.3f ms), rows scored %.2f%%\n",
            probes, probes == base ? " (default)" : "", recall, ms, exact_ms / ms,
            1e3 * bench_median(lat_probe, nq), 1e3 * bench_median(lat_collect, nq),
            100.0 * (double)scanned / (double)(nq * n));
        double ms_by_list = 1e3 * bench_median(lat_by_list, nq);
        printf("    rows stored by list: %.3f ms median (%.1fx faster than exact)\n", ms_by_list,
               exact_ms / ms_by_list);
        printf("RESULT %s_%zu_probes%zu_recall %.3f\nRESULT %s_%zu_probes%zu_ms %.3f\n", kind, n, probes, recall,
               kind, n, probes, ms);
        printf("RESULT %s_%zu_probes%zu_by_list_ms %.3f\n", kind, n, probes, ms_by_list);
    }
    fflush(stdout);
    free(pl);
    free(all);
    free(xs);
    free(auxs);
    free(lat_by_list);
    free(lat);
    free(lat_probe);
    free(lat_collect);
    free(truth);
    emb_knn_scratch_free(&scratch);
    free(aux);
    free(as);
    emb_ivf_groups_free(&g);
    emb_ivf_free(&ivf);
    free(q);
    free(x);
}

int main(int argc, char **argv) {
    if (argc == 1) {
        run("clustered", 100000, 384, 100);
        run("clustered", 1000000, 384, 100);
        run("uniform", 100000, 384, 100);
        return 0;
    }
    for (int i = 1; i < argc;) {
        if (i + 1 >= argc) {
            fprintf(stderr, "usage: bench_ivf [KIND N [D [QUERIES]]] ...\n");
            return 2;
        }
        const char *kind = argv[i];
        size_t n = strtoull(argv[i + 1], NULL, 10), d = 384, nq = 100;
        i += 2;
        if (i < argc && argv[i][0] >= '0' && argv[i][0] <= '9') d = strtoull(argv[i++], NULL, 10);
        if (i < argc && argv[i][0] >= '0' && argv[i][0] <= '9') nq = strtoull(argv[i++], NULL, 10);
        if (n < 1 || d < 1 || nq < 1) {
            fprintf(stderr, "bench_ivf: N, D and QUERIES must be positive\n");
            return 2;
        }
        run(kind, n, d, nq);
    }
    return 0;
}
