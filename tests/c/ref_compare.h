/* Comparisons against the golden references' float64 JSON arrays, shared by the suites of
 * hidden states (test_mpnet, test_decoders): the worst of two differences (NaN wins) and the
 * worst |reference - ours| over a [rows][n] array. */
#ifndef EMBED_TEST_REF_COMPARE_H
#define EMBED_TEST_REF_COMPARE_H
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>

static double worse(double m, double d) { return isnan(m) || isnan(d) ? NAN : d > m ? d : m; }

/* max |ref - x| over rows [rows][n] of JSON against x (stride n); INFINITY if the shape differs */
static double diff2(const cJSON *a, const float *x, int rows, int n) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < rows) return INFINITY;
    double m = 0;
    const cJSON *r = a->child;
    for (int i = 0; i < rows; i++, r = r->next) {
        if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != n) return INFINITY;
        int j = 0;
        for (const cJSON *v = r->child; v; v = v->next, j++)
            m = worse(m, fabs(v->valuedouble - x[(size_t)i * n + j]));
    }
    return m;
}
#endif
