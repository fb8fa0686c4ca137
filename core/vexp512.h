/* exp of 16 floats on AVX-512F with FMA: the Cephes polynomial of emb_expf (encoder_kernels.h),
 * its power of two applied by scalef, for the kernels written with intrinsics (the softmax of
 * attention, GELU). Arguments are clamped to [-88, 88] (NaN stays NaN); results below 2^-126
 * come out as subnormals. Include only on x86-64 with GCC or clang. Internal to the encoder's files. */
#ifndef EMBED_VEXP512_H
#define EMBED_VEXP512_H
#include "encoder_kernels.h"
#include <immintrin.h>

#define EMB_T_AVX512_FMA __attribute__((target("avx512f,fma")))

EMB_T_AVX512_FMA static inline __m512 emb_vexp512(__m512 x) {
    /* max and min return their second operand when either is NaN: a NaN stays NaN */
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-88.0f), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    static const float c[] = {EMB_EXP_POLY};
    __m512 p = _mm512_set1_ps(c[0]);
#pragma GCC unroll 6
    for (int i = 1; i < 6; i++) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[i]));
    __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

/* Whether this CPU runs them. */
static inline int emb_vexp512_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
}
#endif
