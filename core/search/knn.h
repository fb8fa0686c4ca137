/* Exact k-nearest-neighbour search over a contiguous row-major array of float32 vectors.
 *
 * A search scores every row against the query in float32 (one cblas_sgemv for cosine, l2 and
 * dot, using per-row values precomputed with emb_knn_aux; a loop for l1), keeps the best
 * k + k/4 + 16 rows in a heap, rescores those exactly with emb_vec_distance (double
 * precision), and returns the k nearest sorted by distance, then id. The margin keeps
 * near-ties whose order the float32 rounding could flip, so the distances and the order are
 * those of emb_vec_distance. Under cosine a stored zero vector, which has no direction, is at
 * distance 1 (as if orthogonal) from every query. */
#ifndef EMBED_KNN_H
#define EMBED_KNN_H
#include "sqlite-embed/vec.h"
#include <stddef.h>
#include <stdint.h>

/* The rows searched. Nothing is owned. */
typedef struct {
    const float *vectors; /* n x d, row-major */
    const float *aux; /* n values emb_knn_aux(metric, row, d); NULL unless emb_knn_needs_aux */
    const int64_t *ids; /* n ids, reported with the hits and breaking ties of equal distance;
                             NULL: a row's id is its position */
    size_t n, d;
    emb_metric metric;
} emb_knn_index;

typedef struct {
    double dist; /* emb_vec_distance(metric, row, query, d) */
    int64_t id; /* the row's id */
    size_t pos; /* the row's position in the array */
} emb_knn_hit;

/* Room for the n float32 scores of a search, kept between searches of a large array so that
 * each does not allocate (and fault in) it anew. Zero-initialise; free with
 * emb_knn_scratch_free. */
typedef struct {
    float *score;
    size_t cap;
} emb_knn_scratch;
void emb_knn_scratch_free(emb_knn_scratch *s);

/* Whether a metric's search uses per-row values: cosine (1 / |v|) and l2 (|v|^2) do. */
int emb_knn_needs_aux(emb_metric m);
/* The per-row value of vector v (d floats) for metric m; 0 for metrics that use none. */
float emb_knn_aux(emb_metric m, const float *v, size_t d);

/* The min(k, ix->n) rows nearest to q (d floats) into out, which has room for that many,
 * nearest first; *n_out is their number. scratch may be NULL (the scores are then allocated
 * for this search only). Returns 0, or -1 when out of memory. */
int emb_knn_search(const emb_knn_index *ix, const float *q, size_t k, emb_knn_scratch *scratch, emb_knn_hit *out,
                   size_t *n_out);
/* As emb_knn_search, among the m rows at positions rows[0 .. m-1] only (a filtered search):
 * a few rows are scored one by one, so a selective filter makes the search cheaper. rows NULL:
 * every row. */
int emb_knn_search_rows(const emb_knn_index *ix, const float *q, size_t k, const size_t *rows, size_t m,
                        emb_knn_scratch *scratch, emb_knn_hit *out, size_t *n_out);

/* The k nearest of n candidates by exact distance (emb_vec_distance; ties by id), given their
 * float32 vectors (n x d) and ids: the rescoring of a search over compact codes. out has room
 * for min(k, n) hits, whose pos is the candidate's index (0 .. n-1). Returns how many, or
 * (size_t)-1 when out of memory. */
size_t emb_knn_rescore(emb_metric m, const float *q, size_t d, const float *vecs, const int64_t *ids, size_t n,
                       size_t k, emb_knn_hit *out);

#endif
