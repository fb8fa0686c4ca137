/* The coarse quantizer of an IVF (inverted file) approximate nearest-neighbour index: k-means
 * centroids, the nearest list of each vector, the lists a query probes, and row positions
 * grouped by list.
 *
 * Geometry: cosine and dot use spherical k-means (unit centroids; a vector belongs to the
 * centroid of largest dot product, which for cosine is the largest cosine whatever the vector's
 * length). l2 and l1 use Euclidean k-means (nearest centroid by Euclidean distance; l1 has no
 * cheap mean, and a Euclidean partition serves its queries well enough for probing). Probing
 * ranks the lists in that same geometry. */
#ifndef EMBED_IVF_H
#define EMBED_IVF_H
#include "sqlite-embed/vec.h" /* emb_metric */
#include <stddef.h>
#include <stdint.h>

/* Suggested training settings: a sample of up to this many rows per list, and Lloyd iterations. */
#define EMB_IVF_SAMPLE_PER_LIST 256
#define EMB_IVF_ITERATIONS 10

typedef struct {
    size_t lists, d;
    emb_metric metric;
    float *centroids; /* lists x d, row-major; cosine/dot: unit length (spherical k-means) */
    float *norms2; /* lists values |c|^2 (for l2 assignment) */
} emb_ivf;

/* Trains `lists` centroids on the n training vectors x (n x d; the caller passes a sample, e.g.
 * up to EMB_IVF_SAMPLE_PER_LIST per list) with k-means: k-means++ seeding on a random subsample
 * of about 8 rows per list, then up to `iterations` Lloyd iterations (fewer when the assignments
 * stop changing); a list left empty takes half of the largest list (its centroid split in two).
 * Deterministic given seed (and OpenBLAS's thread count). lists > n is an error for the caller
 * to report; lists == n works. *ivf is zeroed first. Returns 0, or -1 (out of memory, or bad
 * arguments: NULL, n, d or lists 0, lists > n, iterations < 0, an unknown metric). */
int emb_ivf_train(emb_ivf *ivf, const float *x, size_t n, size_t d, emb_metric m, size_t lists, int iterations,
                  uint64_t seed);
/* Long work asks fn(arg) between blocks of about a few million multiply-adds; nonzero stops it. */
typedef struct {
    int (*fn)(void *arg);
    void *arg;
} emb_stop;
/* emb_ivf_train that asks stop (NULL: never stops) and returns -2, *ivf freed, when it says so. */
int emb_ivf_train_stoppable(emb_ivf *ivf, const float *x, size_t n, size_t d, emb_metric m, size_t lists,
                            int iterations, uint64_t seed, const emb_stop *stop);
/* An ivf from stored centroids (copied as they are). Returns 0 or -1 (out of memory, or bad
 * arguments). */
int emb_ivf_init(emb_ivf *ivf, const float *centroids, size_t lists, size_t d, emb_metric m);
void emb_ivf_free(emb_ivf *ivf);
/* The nearest list of each of the n vectors x into list_out: float32 scores from one sgemm per
 * block of rows (about 16 MB of scores at a time), ties to the lower list. A vector with no
 * direction (cosine, zero) or with NaN goes to list 0. Returns 0 or -1 (out of memory). */
int emb_ivf_assign(const emb_ivf *ivf, const float *x, size_t n, int32_t *list_out);
/* The `probes` lists nearest to query q (scored in double), nearest first, ties to the lower
 * list, into out; returns how many (min(probes, lists)), or 0 when out of memory. */
size_t emb_ivf_probe(const emb_ivf *ivf, const float *q, size_t probes, int32_t *out);

/* Row positions grouped by list: the rows of list l are pos[start[l] .. start[l+1]-1], in
 * increasing position order; rows whose list is -1 (not yet assigned) or out of range are in
 * the extra group `lists` (start[lists] .. start[lists+1]-1), which a search always scans. */
typedef struct {
    size_t lists, n;
    size_t *start; /* lists + 2 offsets */
    size_t *pos; /* n positions */
} emb_ivf_groups;
/* Counting sort, O(n + lists). *g is zeroed first. Returns 0 or -1 (out of memory, bad
 * arguments). */
int emb_ivf_groups_build(emb_ivf_groups *g, const int32_t *list_of_row, size_t n, size_t lists);
void emb_ivf_groups_free(emb_ivf_groups *g);
/* The positions to search for a query probing lists[0..nl-1] (out-of-range entries ignored,
 * repeats counted once): their rows plus the extra group, sorted by position, into *out
 * (malloc'd, never NULL on success, caller frees). Returns the count, or (size_t)-1 when out of
 * memory (*out NULL). */
size_t emb_ivf_groups_collect(const emb_ivf_groups *g, const int32_t *lists, size_t nl, size_t **out);

/* A default number of lists for n rows (about sqrt(n), at least 1, at most n) and a default
 * number of probes for `lists` lists, set so that clustered data reach recall@10 >= 0.95
 * (see tests/c/test_ivf.c and bench/bench_ivf.c). */
size_t emb_ivf_default_lists(size_t n);
size_t emb_ivf_default_probes(size_t lists);

#endif
