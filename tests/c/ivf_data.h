/* The IVF benchmark data of issue 11, seeded (used by tests/c/test_ivf.c and bench/bench_ivf.c):
 * (a) clustered: C centres with N(0, 1) per dimension; each point = a random centre +
 *     N(0, 0.35^2) per dimension, then unit-normalised;
 * (b) uniform on the sphere: N(0, 1) per dimension, normalised;
 * queries = data points + N(0, (0.1 / sqrt(d))^2) per dimension (noise of length about 0.1),
 * re-normalised. */
#ifndef EMBED_TEST_IVF_DATA_H
#define EMBED_TEST_IVF_DATA_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint64_t s;
    int has_spare;
    double spare;
} data_rng;

static uint64_t data_u64(data_rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double data_unit(data_rng *r) { return ((double)(data_u64(r) >> 11) + 0.5) * 0x1.0p-53; } /* (0, 1) */

static double data_gauss(data_rng *r) { /* Box-Muller, both values used */
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u = data_unit(r), v = data_unit(r), rad = sqrt(-2 * log(u));
    r->spare = rad * sin(2 * M_PI * v);
    r->has_spare = 1;
    return rad * cos(2 * M_PI * v);
}

static void data_normalize(float *v, size_t d) {
    double s = 0;
    for (size_t k = 0; k < d; k++) s += (double)v[k] * v[k];
    if (s > 0)
        for (size_t k = 0; k < d; k++) v[k] = (float)(v[k] / sqrt(s));
}

/* n x d clustered unit vectors around `centres` Gaussian centres; NULL when out of memory. */
static float *data_clustered(size_t n, size_t d, size_t centres, uint64_t seed) {
    data_rng r = {seed, 0, 0};
    float *c = malloc(centres * d * sizeof *c), *x = malloc(n * d * sizeof *x);
    if (!c || !x) {
        free(c);
        free(x);
        return NULL;
    }
    for (size_t i = 0; i < centres * d; i++) c[i] = (float)data_gauss(&r);
    for (size_t i = 0; i < n; i++) {
        const float *ci = c + (data_u64(&r) % centres) * d;
        for (size_t k = 0; k < d; k++) x[i * d + k] = (float)(ci[k] + 0.35 * data_gauss(&r));
        data_normalize(x + i * d, d);
    }
    free(c);
    return x;
}

/* n x d unit vectors uniform on the sphere. */
static float *data_uniform(size_t n, size_t d, uint64_t seed) {
    data_rng r = {seed, 0, 0};
    float *x = malloc(n * d * sizeof *x);
    if (!x) return NULL;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < d; k++) x[i * d + k] = (float)data_gauss(&r);
        data_normalize(x + i * d, d);
    }
    return x;
}

/* q queries: random rows of x (n x d) plus small noise, re-normalised. */
static float *data_queries(const float *x, size_t n, size_t d, size_t q, uint64_t seed) {
    data_rng r = {seed, 0, 0};
    float *out = malloc(q * d * sizeof *out);
    if (!out) return NULL;
    double sigma = 0.1 / sqrt((double)d);
    for (size_t j = 0; j < q; j++) {
        const float *p = x + (data_u64(&r) % n) * d;
        for (size_t k = 0; k < d; k++) out[j * d + k] = (float)(p[k] + sigma * data_gauss(&r));
        data_normalize(out + j * d, d);
    }
    return out;
}

#endif
