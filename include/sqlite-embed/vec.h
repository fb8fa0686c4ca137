/* Public API of libembedcore (installed as <sqlite-embed/vec.h>).
 * Vector kernels on float32 arrays. Sums are accumulated in double so that results
 * do not depend on the dimension's size or alignment; the loops are written for the
 * compiler to vectorise, with AVX-512 / AVX2 clones chosen at run time. */
#ifndef EMBED_VEC_H
#define EMBED_VEC_H
#include <stddef.h>

double emb_vec_dot(const float *a, const float *b, size_t n);
double emb_vec_norm2(const float *a, size_t n); /* sum of squares */
double emb_vec_l2(const float *a, const float *b, size_t n); /* Euclidean distance */
double emb_vec_l1(const float *a, const float *b, size_t n);
/* Cosine similarity; NaN when either vector has zero norm (there is no direction to compare). */
double emb_vec_cosine(const float *a, const float *b, size_t n);

void emb_vec_add(float *out, const float *a, const float *b, size_t n);
void emb_vec_sub(float *out, const float *a, const float *b, size_t n);
void emb_vec_scale(float *out, const float *a, float k, size_t n);
/* out = a / max(|a|, 1e-12), as torch.nn.functional.normalize; a zero vector stays zero.
 * out may be a. */
void emb_vec_normalize(float *out, const float *a, size_t n);
/* acc[i] += a[i], in double for aggregates over many rows. */
void emb_vec_accumulate(double *acc, const float *a, size_t n);

/* Which SIMD clone the dispatcher picked on this CPU: "avx512f", "avx2" or "default". */
const char *emb_vec_simd_path(void);

typedef enum { EMB_METRIC_COSINE, EMB_METRIC_L2, EMB_METRIC_L1, EMB_METRIC_DOT } emb_metric;
/* Parses "cosine", "l2", "l1", "dot"; returns -1 if unknown. */
int emb_metric_parse(const char *name, emb_metric *out);
const char *emb_metric_name(emb_metric m);
/* Distance under a metric: cosine -> 1 - cos (NaN for a zero vector), l2, l1, dot -> -dot. */
double emb_vec_distance(emb_metric m, const float *a, const float *b, size_t n);

#endif
