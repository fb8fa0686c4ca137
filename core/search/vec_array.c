#include "search/vec_array.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

float *emb_vectors_alloc(size_t count) {
    size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
    if (bytes < ((size_t)4 << 20)) return aligned_alloc(64, bytes ? bytes : 64);
    const size_t huge = (size_t)2 << 20;
    bytes = (bytes + huge - 1) / huge * huge;
    float *p = aligned_alloc(huge, bytes);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

int emb_vec_array_init(emb_vec_array *a, size_t d, emb_metric metric, size_t cap) {
    memset(a, 0, sizeof *a);
    a->d = d;
    a->cap = cap;
    a->metric = metric;
    a->vecs = emb_vectors_alloc(cap * d);
    a->ids = malloc((cap ? cap : 1) * sizeof *a->ids);
    if (emb_knn_needs_aux(metric)) a->aux = malloc((cap ? cap : 1) * sizeof *a->aux);
    if (!a->vecs || !a->ids || (!a->aux && emb_knn_needs_aux(metric))) {
        emb_vec_array_free(a);
        return -1;
    }
    return 0;
}

void emb_vec_array_free(emb_vec_array *a) {
    free(a->vecs);
    free(a->ids);
    free(a->aux);
    a->vecs = NULL;
    a->ids = NULL;
    a->aux = NULL;
    a->n = a->cap = 0;
}

void emb_vec_array_extend(emb_vec_array *a, size_t add) {
    for (size_t i = a->n; a->aux && i < a->n + add; i++)
        a->aux[i] = emb_knn_aux(a->metric, a->vecs + i * a->d, a->d);
    a->n += add;
}

int emb_vec_array_append(emb_vec_array *a, const int64_t *ids, const float *vecs, size_t add) {
    size_t d = a->d;
    if (a->n + add > a->cap) {
        size_t cap = a->cap + a->cap / 2 > a->n + add ? a->cap + a->cap / 2 : a->n + add + 1024;
        float *nv = emb_vectors_alloc(cap * d);
        int64_t *ni = realloc(a->ids, cap * sizeof *ni);
        if (ni) a->ids = ni;
        float *na = a->aux ? realloc(a->aux, cap * sizeof *na) : NULL;
        if (na) a->aux = na;
        if (!nv || !ni || (a->aux && !na)) {
            free(nv);
            return -1;
        }
        memcpy(nv, a->vecs, a->n * d * sizeof(float));
        free(a->vecs);
        a->vecs = nv;
        a->cap = cap;
    }
    memcpy(a->vecs + a->n * d, vecs, add * d * sizeof(float));
    memcpy(a->ids + a->n, ids, add * sizeof *ids);
    emb_vec_array_extend(a, add);
    return 0;
}

void emb_vec_array_remove(emb_vec_array *a, size_t pos) {
    size_t last = a->n - 1, d = a->d;
    if (pos != last) {
        memcpy(a->vecs + pos * d, a->vecs + last * d, d * sizeof(float));
        a->ids[pos] = a->ids[last];
        if (a->aux) a->aux[pos] = a->aux[last];
    }
    a->n--;
}

emb_knn_index emb_vec_array_index(const emb_vec_array *a) {
    return (emb_knn_index){a->vecs, a->aux, a->ids, a->n, a->d, a->metric};
}
