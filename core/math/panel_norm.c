/* See panel_norm.h. A panel's column is 32 lanes, one per row: the sums run down the columns in
 * four vectors of 8 doubles, so no lane is ever reduced across. */
#include "math/panel_norm.h"
#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f"))) void emb_panel_layernorm(float *panel, const float *g, const float *b, int H,
                                                            float eps) {
    __m512d sum[4], var[4], mean[4], rstd[4];
    for (int q = 0; q < 4; q++) sum[q] = var[q] = _mm512_setzero_pd();
    for (int n = 0; n < H; n++)
        for (int q = 0; q < 4; q++)
            sum[q] = _mm512_add_pd(sum[q], _mm512_cvtps_pd(_mm256_load_ps(panel + 32 * n + 8 * q)));
    __m512d h = _mm512_set1_pd(H);
    for (int q = 0; q < 4; q++) mean[q] = _mm512_div_pd(sum[q], h);
    for (int n = 0; n < H; n++)
        for (int q = 0; q < 4; q++) {
            __m512d d = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_load_ps(panel + 32 * n + 8 * q)), mean[q]);
            var[q] = _mm512_add_pd(var[q], _mm512_mul_pd(d, d));
        }
    for (int q = 0; q < 4; q++)
        rstd[q] = _mm512_div_pd(_mm512_set1_pd(1.0),
                                _mm512_sqrt_pd(_mm512_add_pd(_mm512_div_pd(var[q], h), _mm512_set1_pd(eps))));
    for (int n = 0; n < H; n++) {
        __m256 gn = _mm256_set1_ps(g[n]), bn = _mm256_set1_ps(b[n]);
        for (int q = 0; q < 4; q++) {
            float *x = panel + 32 * n + 8 * q;
            __m512d c = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_load_ps(x)), mean[q]);
            __m256 y = _mm512_cvtpd_ps(_mm512_mul_pd(c, rstd[q]));
            _mm256_store_ps(x, _mm256_add_ps(_mm256_mul_ps(y, gn), bn));
        }
    }
}
#else
void emb_panel_layernorm(float *panel, const float *g, const float *b, int H, float eps) {
    (void)panel, (void)g, (void)b, (void)H, (void)eps;
}
#endif
