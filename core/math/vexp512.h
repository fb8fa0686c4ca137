/* exp of 16 floats on AVX-512F with FMA: the Cephes polynomial of emb_expf (encoder_kernels.h),
 * its power of two applied by scalef, for the kernels written with intrinsics (the softmax of
 * attention, GELU). Arguments are clamped to [-88, 88] (NaN stays NaN); results below 2^-126
 * come out as subnormals. Include only on x86-64 with GCC or clang. Internal to the encoder's files. */
#ifndef EMBED_VEXP512_H
#define EMBED_VEXP512_H
#include "base/simd.h"
#include "math/encoder_kernels.h"
#include <immintrin.h>

#define EMB_T_AVX512_FMA __attribute__((target("avx512f,fma")))

/* exp in place of x[0..U-1], each step over the U vectors before the next (GCC emits intrinsics in
 * the order written, and one vector's chain of dependent steps at a time leaves the pipes idle);
 * the same operations for any U, so the same bits. U <= 8, a constant where this is inlined. */
EMB_T_AVX512_FMA static inline __attribute__((always_inline)) void emb_vexp512_n(__m512 *x, const int U) {
    static const float c[] = {EMB_EXP_POLY};
    __m512 n[8], r[8], p[8];
    /* max and min return their second operand when either is NaN: a NaN stays NaN */
#pragma GCC unroll 8
    for (int u = 0; u < U; u++)
        x[u] = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-88.0f), x[u]));
#pragma GCC unroll 8
    for (int u = 0; u < U; u++)
        n[u] = _mm512_roundscale_ps(_mm512_mul_ps(x[u], _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) r[u] = _mm512_fnmadd_ps(n[u], _mm512_set1_ps(0.693359375f), x[u]);
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) r[u] = _mm512_fnmadd_ps(n[u], _mm512_set1_ps(-2.12194440e-4f), r[u]);
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) p[u] = _mm512_set1_ps(c[0]);
#pragma GCC unroll 6
    for (int i = 1; i < 6; i++)
#pragma GCC unroll 8
        for (int u = 0; u < U; u++) p[u] = _mm512_fmadd_ps(p[u], r[u], _mm512_set1_ps(c[i]));
#pragma GCC unroll 8
    for (int u = 0; u < U; u++)
        x[u] = _mm512_scalef_ps(
            _mm512_add_ps(_mm512_fmadd_ps(p[u], _mm512_mul_ps(r[u], r[u]), r[u]), _mm512_set1_ps(1.0f)), n[u]);
}

EMB_T_AVX512_FMA static inline __m512 emb_vexp512(__m512 x) {
    emb_vexp512_n(&x, 1);
    return x;
}

/* Whether this CPU runs them. */
static inline int emb_vexp512_supported(void) { return emb_simd() >= EMB_SIMD_AVX512; }
#endif
