/* A growable in-memory array of float32 vectors with an int64 id and, for the metrics that
 * use one, the per-row value of emb_knn_aux: the rows an emb_knn_index searches. The vectors
 * are 64-byte aligned, and a large array sits on 2 MB-aligned transparent huge pages, so that
 * filling 150 MB takes ~75 page faults, not 37,500, and a scan misses the TLB less. */
#ifndef EMBED_VEC_ARRAY_H
#define EMBED_VEC_ARRAY_H
#include "search/knn.h"
#include <stddef.h>
#include <stdint.h>

typedef struct {
    float *vecs; /* n x d, room for cap rows */
    int64_t *ids; /* n */
    float *aux; /* n values of emb_knn_aux; NULL unless emb_knn_needs_aux(metric) */
    size_t n, d, cap;
    emb_metric metric;
} emb_vec_array;

/* Room for count floats, aligned as above; freed with free(). NULL when out of memory. */
float *emb_vectors_alloc(size_t count);

/* An empty array of d-dimensional vectors with room for cap rows. Returns 0, or -1 (out of
 * memory; nothing to free). */
int emb_vec_array_init(emb_vec_array *a, size_t d, emb_metric metric, size_t cap);
void emb_vec_array_free(emb_vec_array *a);

/* Takes in the `add` rows that the caller wrote directly into vecs and ids after the n
 * present (n + add <= cap): computes their aux values and counts them. */
void emb_vec_array_extend(emb_vec_array *a, size_t add);
/* Appends `add` rows, growing the room by half (or to fit) when needed. Returns 0, or -1 when
 * out of memory, with the rows there before unchanged. */
int emb_vec_array_append(emb_vec_array *a, const int64_t *ids, const float *vecs, size_t add);
/* Removes row pos by moving the last row into its place (pos < n). */
void emb_vec_array_remove(emb_vec_array *a, size_t pos);

/* The array as an index to search (valid until the array changes). */
emb_knn_index emb_vec_array_index(const emb_vec_array *a);

#endif
