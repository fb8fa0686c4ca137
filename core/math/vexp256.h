/* exp of 8 floats on AVX2 with FMA: vexp512.h's Cephes polynomial and clamps, for the AVX2 forms of
 * the softmax and GELU. AVX2 has no scalef: 2^n (n in [-127, 127] after the clamp) is applied as
 * two exact powers of two, 2^(n/2) and 2^(n - n/2), so that results below 2^-126 come out as
 * subnormals as on AVX-512. Include only on x86-64 with GCC or clang. Internal to the encoder's files. */
#ifndef EMBED_VEXP256_H
#define EMBED_VEXP256_H
#include "base/simd.h"
#include "math/encoder_kernels.h"
#include <immintrin.h>

#define EMB_T_AVX2_FMA __attribute__((target("avx2,fma")))

/* 2^n for integral n in [-126, 127], as a float */
EMB_T_AVX2_FMA static inline __m256 emb_vpow2_256(__m256i n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

/* exp in place of x[0..U-1], each step over the U vectors before the next; the same operations
 * for any U, so the same bits. U <= 8, a constant where this is inlined. */
EMB_T_AVX2_FMA static inline __attribute__((always_inline)) void emb_vexp256_n(__m256 *x, const int U) {
    static const float c[] = {EMB_EXP_POLY};
    __m256 n[8], r[8], p[8];
    /* max and min return their second operand when either is NaN: a NaN stays NaN */
#pragma GCC unroll 8
    for (int u = 0; u < U; u++)
        x[u] = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-88.0f), x[u]));
#pragma GCC unroll 8
    for (int u = 0; u < U; u++)
        n[u] = _mm256_round_ps(_mm256_mul_ps(x[u], _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(0.693359375f), x[u]);
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(-2.12194440e-4f), r[u]);
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) p[u] = _mm256_set1_ps(c[0]);
#pragma GCC unroll 6
    for (int i = 1; i < 6; i++)
#pragma GCC unroll 8
        for (int u = 0; u < U; u++) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(c[i]));
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) {
        __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p[u], _mm256_mul_ps(r[u], r[u]), r[u]), _mm256_set1_ps(1.0f));
        /* NaN converts to INT_MIN: its powers are garbage, but y is NaN already and stays NaN */
        __m256i ni = _mm256_cvtps_epi32(n[u]), half = _mm256_srai_epi32(ni, 1);
        x[u] = _mm256_mul_ps(_mm256_mul_ps(y, emb_vpow2_256(half)), emb_vpow2_256(_mm256_sub_epi32(ni, half)));
    }
}

/* Whether this CPU runs them (and the set in use allows them). */
static inline int emb_vexp256_supported(void) { return emb_simd() == EMB_SIMD_AVX2; }
#endif
