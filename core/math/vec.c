#include "sqlite-embed/vec.h"
#include <math.h>
#include <string.h>
#include <strings.h>
#include "base/simd.h"

/* One body per function, compiled per kernel set and chosen by emb_simd() (base/simd.h). */

EMB_SIMD_DEFINE(double, emb_vec_dot, (const float *a, const float *b, size_t n), (a, b, n)) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

EMB_SIMD_DEFINE(double, emb_vec_norm2, (const float *a, size_t n), (a, n)) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += (double)a[i] * a[i];
    return s;
}

EMB_SIMD_DEFINE(double, emb_vec_l2, (const float *a, const float *b, size_t n), (a, b, n)) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        s += d * d;
    }
    return sqrt(s);
}

EMB_SIMD_DEFINE(double, emb_vec_l1, (const float *a, const float *b, size_t n), (a, b, n)) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += fabs((double)a[i] - b[i]);
    return s;
}

EMB_SIMD_DEFINE(double, emb_vec_cosine, (const float *a, const float *b, size_t n), (a, b, n)) {
    double ab = 0, aa = 0, bb = 0;
#pragma omp simd reduction(+ : ab, aa, bb)
    for (size_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    if (aa == 0 || bb == 0) return NAN;
    double c = ab / (sqrt(aa) * sqrt(bb));
    return c > 1 ? 1 : (c < -1 ? -1 : c);
}

EMB_SIMD_DEFINE(void, emb_vec_add, (float *out, const float *a, const float *b, size_t n), (out, a, b, n)) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

EMB_SIMD_DEFINE(void, emb_vec_sub, (float *out, const float *a, const float *b, size_t n), (out, a, b, n)) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] - b[i];
}

EMB_SIMD_DEFINE(void, emb_vec_scale, (float *out, const float *a, float k, size_t n), (out, a, k, n)) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] * k;
}

void emb_vec_normalize(float *out, const float *a, size_t n) {
    double norm = sqrt(emb_vec_norm2(a, n));
    if (norm == 0) {
        if (out != a) memmove(out, a, n * sizeof *a);
        return;
    }
    if (norm < 1e-12) norm = 1e-12; /* torch.nn.functional.normalize's eps, as sentence-transformers uses */
    for (size_t i = 0; i < n; i++) out[i] = (float)(a[i] / norm);
}

EMB_SIMD_DEFINE(void, emb_vec_accumulate, (double *acc, const float *a, size_t n), (acc, a, n)) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) acc[i] += a[i];
}

const char *emb_vec_simd_path(void) { return emb_simd_name(emb_simd()); }

static const char *const metric_names[] = {"cosine", "l2", "l1", "dot"};

int emb_metric_parse(const char *name, emb_metric *out) {
    for (int m = 0; m < 4; m++)
        if (name && strcasecmp(name, metric_names[m]) == 0) { /* "COSINE" as well as "cosine" */
            *out = (emb_metric)m;
            return 0;
        }
    return -1;
}

const char *emb_metric_name(emb_metric m) { return metric_names[m]; }

double emb_vec_distance(emb_metric m, const float *a, const float *b, size_t n) {
    switch (m) {
    case EMB_METRIC_COSINE: return 1.0 - emb_vec_cosine(a, b, n);
    case EMB_METRIC_L2: return emb_vec_l2(a, b, n);
    case EMB_METRIC_L1: return emb_vec_l1(a, b, n);
    case EMB_METRIC_DOT: return -emb_vec_dot(a, b, n);
    }
    return NAN;
}
