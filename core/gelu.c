/* See gelu.h. AVX-512 with FMA runs the formula of emb_gelu_of (encoder_kernels.h) with fused
 * multiply-adds (the target clones cannot use them: -std=c11 contracts nothing, and GCC's
 * avx512f target does not imply fma); other CPUs run emb_gelu_of itself. emb_gelu_quick and
 * emb_gelu_quick_of, likewise. */
#include "gelu.h"
#include "encoder_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "vexp512.h"
#define HAVE_GELU512 1

EMB_T_AVX512_FMA static inline __m512 gelu16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    /* erfc(z) is 0 in float from z = 11 (h is set so below: exp's clamp at -88 would leave a
     * subnormal); the bound keeps the reciprocal's Newton step finite */
    __m512 z = _mm512_min_ps(_mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f)),
                             _mm512_set1_ps(16.0f));
    __m512 d = _mm512_fmadd_ps(z, half, one), t = _mm512_rcp14_ps(d); /* 1 / d: one Newton step */
    t = _mm512_fmadd_ps(t, _mm512_fnmadd_ps(d, t, one), t);
    static const float c[] = {EMB_ERFC_POLY};
    __m512 p = _mm512_set1_ps(c[0]);
#pragma GCC unroll 10
    for (int i = 1; i < 10; i++) p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c[i]));
    __m512 h = _mm512_mul_ps(_mm512_mul_ps(half, t), emb_vexp512(_mm512_fnmadd_ps(z, z, p)));
    h = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, _mm512_set1_ps(11.0f), _CMP_LT_OQ), h);
    __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_mul_ps(x, _mm512_mask_sub_ps(h, pos, one, h)); /* x >= 0: 1 - h; else (and NaN) h */
}

/* emb_gelu_quick_of's formula: the same operations, with the reciprocal as rcp14 and one
 * Newton step */
EMB_T_AVX512_FMA static inline __m512 gelu16_quick(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f), ten = _mm512_set1_ps(10.0f);
    __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f)), zc = _mm512_min_ps(z, ten);
    static const float c[] = {EMB_ERF_AS28_POLY};
    __m512 q = _mm512_set1_ps(c[0]);
#pragma GCC unroll 7
    for (int i = 1; i < 7; i++) q = _mm512_fmadd_ps(q, zc, _mm512_set1_ps(c[i]));
    __m512 r = _mm512_rcp14_ps(q);
    r = _mm512_fmadd_ps(r, _mm512_fnmadd_ps(q, r, one), r);
    r = _mm512_mul_ps(r, r);
    r = _mm512_mul_ps(r, r);
    r = _mm512_mul_ps(r, r);
    __m512 h = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(z, ten, _CMP_LT_OQ), _mm512_mul_ps(r, r), _mm512_set1_ps(0.5f));
    __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_mul_ps(x, _mm512_mask_sub_ps(h, pos, one, h));
}

/* four vectors a step: the polynomial is a chain of dependent operations */
#define GELU_LOOP(name, f)                                                                                  \
    EMB_T_AVX512_FMA static void name(float *y, size_t n) {                                                \
        size_t i = 0;                                                                                       \
        for (; i + 64 <= n; i += 64) {                                                                      \
            __m512 a = f(_mm512_loadu_ps(y + i)), b = f(_mm512_loadu_ps(y + i + 16));                       \
            __m512 c = f(_mm512_loadu_ps(y + i + 32)), d = f(_mm512_loadu_ps(y + i + 48));                  \
            _mm512_storeu_ps(y + i, a);                                                                     \
            _mm512_storeu_ps(y + i + 16, b);                                                                \
            _mm512_storeu_ps(y + i + 32, c);                                                                \
            _mm512_storeu_ps(y + i + 48, d);                                                                \
        }                                                                                                   \
        for (; i < n; i += 16) {                                                                            \
            __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);              \
            _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, y + i)));                            \
        }                                                                                                   \
    }
GELU_LOOP(gelu_avx512, gelu16)
GELU_LOOP(gelu_quick_avx512, gelu16_quick)
#endif

EMB_KERNELS_BEGIN
EMB_CLONES
static void gelu_any(float *y, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = emb_gelu_of(y[i]);
}
EMB_CLONES
static void gelu_quick_any(float *y, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = emb_gelu_quick_of(y[i]);
}
EMB_KERNELS_END

void emb_gelu(float *y, size_t n) {
#ifdef HAVE_GELU512
    if (emb_vexp512_supported()) {
        gelu_avx512(y, n);
        return;
    }
#endif
    gelu_any(y, n);
}

void emb_gelu_quick(float *y, size_t n) {
#ifdef HAVE_GELU512
    if (emb_vexp512_supported()) {
        gelu_quick_avx512(y, n);
        return;
    }
#endif
    gelu_quick_any(y, n);
}
