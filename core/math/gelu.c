/* See gelu.h. AVX-512 and AVX2, each with FMA, run the formula of emb_gelu_of (encoder_kernels.h)
 * with fused multiply-adds (a C body compiled per set cannot use them: -std=c11 contracts
 * nothing); the generic set runs emb_gelu_of itself. emb_gelu_quick and
 * emb_gelu_quick_of, likewise. */
#include "math/gelu.h"
#include "math/encoder_kernels.h"
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include "math/vexp512.h"
#define HAVE_GELU512 1

/* Each function below runs one step over U vectors before the next step: GCC emits intrinsics in
 * the order written, and one vector's chain of some 40 dependent operations at a time left the
 * pipes idle (the exact GELU alone, Zen 5: 9.3 ns a vector; 4 a step 6.9 ns, 8 a step 5.2 ns
 * but bert-base's batches 5 % slower: their spills cost the products whose epilogue it is).
 * The operations are those of emb_gelu_of, so U changes no bit. */
#define EACH(U) _Pragma("GCC unroll 4") for (int u = 0; u < (U); u++)

/* emb_gelu_of's formula on v[0..U-1], U <= 4 */
EMB_T_AVX512_FMA static inline __attribute__((always_inline)) void gelu_vectors(__m512 *v, const int U) {
    const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    static const float c[] = {EMB_ERFC_POLY};
    __m512 z[4], t[4], p[4];
    /* erfc(z) is 0 in float from z = 11 (h is set so below: exp's clamp at -88 would leave a
     * subnormal); the bound keeps the reciprocal's Newton step finite */
    EACH(U)
    z[u] = _mm512_min_ps(_mm512_mul_ps(_mm512_abs_ps(v[u]), _mm512_set1_ps(0.70710678118654752f)),
                         _mm512_set1_ps(16.0f));
    EACH(U) p[u] = _mm512_fmadd_ps(z[u], half, one);
    EACH(U) t[u] = _mm512_rcp14_ps(p[u]); /* 1 / d: one Newton step */
    EACH(U) t[u] = _mm512_fmadd_ps(t[u], _mm512_fnmadd_ps(p[u], t[u], one), t[u]);
    EACH(U) p[u] = _mm512_set1_ps(c[0]);
#pragma GCC unroll 10
    for (int i = 1; i < 10; i++) EACH(U) p[u] = _mm512_fmadd_ps(p[u], t[u], _mm512_set1_ps(c[i]));
    EACH(U) p[u] = _mm512_fnmadd_ps(z[u], z[u], p[u]);
    emb_vexp512_n(p, U);
    EACH(U) {
        __m512 h = _mm512_mul_ps(_mm512_mul_ps(half, t[u]), p[u]);
        h = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z[u], _mm512_set1_ps(11.0f), _CMP_LT_OQ), h);
        __mmask16 pos = _mm512_cmp_ps_mask(v[u], _mm512_setzero_ps(), _CMP_GE_OQ);
        v[u] = _mm512_mul_ps(v[u], _mm512_mask_sub_ps(h, pos, one, h)); /* x >= 0: 1 - h; else (and NaN) h */
    }
}

/* emb_gelu_quick_of's formula on v[0..U-1], U <= 4: the same operations, with the reciprocal as
 * rcp14 and one Newton step */
EMB_T_AVX512_FMA static inline __attribute__((always_inline)) void gelu_quick_vectors(__m512 *v, const int U) {
    const __m512 one = _mm512_set1_ps(1.0f), ten = _mm512_set1_ps(10.0f);
    static const float c[] = {EMB_ERF_AS28_POLY};
    __m512 z[4], q[4], r[4];
    EACH(U) z[u] = _mm512_mul_ps(_mm512_abs_ps(v[u]), _mm512_set1_ps(0.70710678118654752f));
    EACH(U) r[u] = _mm512_min_ps(z[u], ten);
    EACH(U) q[u] = _mm512_set1_ps(c[0]);
#pragma GCC unroll 7
    for (int i = 1; i < 7; i++) EACH(U) q[u] = _mm512_fmadd_ps(q[u], r[u], _mm512_set1_ps(c[i]));
    EACH(U) r[u] = _mm512_rcp14_ps(q[u]);
    EACH(U) r[u] = _mm512_fmadd_ps(r[u], _mm512_fnmadd_ps(q[u], r[u], one), r[u]);
    EACH(U) r[u] = _mm512_mul_ps(r[u], r[u]);
    EACH(U) r[u] = _mm512_mul_ps(r[u], r[u]);
    EACH(U) r[u] = _mm512_mul_ps(r[u], r[u]);
    EACH(U) {
        __m512 h = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(z[u], ten, _CMP_LT_OQ), _mm512_mul_ps(r[u], r[u]),
                                       _mm512_set1_ps(0.5f));
        __mmask16 pos = _mm512_cmp_ps_mask(v[u], _mm512_setzero_ps(), _CMP_GE_OQ);
        v[u] = _mm512_mul_ps(v[u], _mm512_mask_sub_ps(h, pos, one, h));
    }
}

/* 4 vectors a step, then one at a time (the tail masked) */
#define GELU_LOOP(name, f)                                                                                        \
    EMB_T_AVX512_FMA static void name(float *y, size_t n) {                                                       \
        size_t i = 0;                                                                                             \
        __m512 v[4];                                                                                              \
        for (; i + 64 <= n; i += 64) {                                                                            \
            EACH(4) v[u] = _mm512_loadu_ps(y + i + 16 * u);                                                       \
            f(v, 4);                                                                                              \
            EACH(4) _mm512_storeu_ps(y + i + 16 * u, v[u]);                                                       \
        }                                                                                                         \
        for (; i < n; i += 16) {                                                                                  \
            __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);                    \
            v[0] = _mm512_maskz_loadu_ps(m, y + i);                                                               \
            f(v, 1);                                                                                              \
            _mm512_mask_storeu_ps(y + i, m, v[0]);                                                                \
        }                                                                                                         \
    }
GELU_LOOP(gelu_avx512, gelu_vectors)
GELU_LOOP(gelu_quick_avx512, gelu_quick_vectors)

#include "math/vexp256.h"
/* The same formulas on AVX2 with FMA, 8 floats a vector: masks become ands and blends, rcp14 the
 * 12-bit rcp (the Newton step brings either to float precision). */
EMB_T_AVX2_FMA static inline __m256 abs256(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
/* x >= 0: x (1 - h); else (and NaN) x h */
EMB_T_AVX2_FMA static inline __m256 by_phi256(__m256 v, __m256 h) {
    __m256 pos = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
    return _mm256_mul_ps(v, _mm256_blendv_ps(h, _mm256_sub_ps(_mm256_set1_ps(1.0f), h), pos));
}
EMB_T_AVX2_FMA static inline __attribute__((always_inline)) void gelu_vectors256(__m256 *v, const int U) {
    const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
    static const float c[] = {EMB_ERFC_POLY};
    __m256 z[4], t[4], p[4];
    EACH(U)
    z[u] = _mm256_min_ps(_mm256_mul_ps(abs256(v[u]), _mm256_set1_ps(0.70710678118654752f)), _mm256_set1_ps(16.0f));
    EACH(U) p[u] = _mm256_fmadd_ps(z[u], half, one);
    EACH(U) t[u] = _mm256_rcp_ps(p[u]);
    EACH(U) t[u] = _mm256_fmadd_ps(t[u], _mm256_fnmadd_ps(p[u], t[u], one), t[u]);
    EACH(U) p[u] = _mm256_set1_ps(c[0]);
#pragma GCC unroll 10
    for (int i = 1; i < 10; i++) EACH(U) p[u] = _mm256_fmadd_ps(p[u], t[u], _mm256_set1_ps(c[i]));
    EACH(U) p[u] = _mm256_fnmadd_ps(z[u], z[u], p[u]);
    emb_vexp256_n(p, U);
    EACH(U) {
        __m256 h = _mm256_mul_ps(_mm256_mul_ps(half, t[u]), p[u]);
        h = _mm256_and_ps(h, _mm256_cmp_ps(z[u], _mm256_set1_ps(11.0f), _CMP_LT_OQ));
        v[u] = by_phi256(v[u], h);
    }
}
EMB_T_AVX2_FMA static inline __attribute__((always_inline)) void gelu_quick_vectors256(__m256 *v, const int U) {
    const __m256 one = _mm256_set1_ps(1.0f), ten = _mm256_set1_ps(10.0f);
    static const float c[] = {EMB_ERF_AS28_POLY};
    __m256 z[4], q[4], r[4];
    EACH(U) z[u] = _mm256_mul_ps(abs256(v[u]), _mm256_set1_ps(0.70710678118654752f));
    EACH(U) r[u] = _mm256_min_ps(z[u], ten);
    EACH(U) q[u] = _mm256_set1_ps(c[0]);
#pragma GCC unroll 7
    for (int i = 1; i < 7; i++) EACH(U) q[u] = _mm256_fmadd_ps(q[u], r[u], _mm256_set1_ps(c[i]));
    EACH(U) r[u] = _mm256_rcp_ps(q[u]);
    EACH(U) r[u] = _mm256_fmadd_ps(r[u], _mm256_fnmadd_ps(q[u], r[u], one), r[u]);
    EACH(U) r[u] = _mm256_mul_ps(r[u], r[u]);
    EACH(U) r[u] = _mm256_mul_ps(r[u], r[u]);
    EACH(U) r[u] = _mm256_mul_ps(r[u], r[u]);
    EACH(U) {
        __m256 h = _mm256_mul_ps(_mm256_mul_ps(r[u], r[u]), _mm256_set1_ps(0.5f));
        h = _mm256_and_ps(h, _mm256_cmp_ps(z[u], ten, _CMP_LT_OQ));
        v[u] = by_phi256(v[u], h);
    }
}
/* 4 vectors a step, then one at a time; the tail through a zero-padded vector (lanes are
 * independent: each value the same bits wherever it lies) */
#define GELU_LOOP256(name, f)                                                                                     \
    EMB_T_AVX2_FMA static void name(float *y, size_t n) {                                                         \
        size_t i = 0;                                                                                             \
        __m256 v[4];                                                                                              \
        for (; i + 32 <= n; i += 32) {                                                                            \
            EACH(4) v[u] = _mm256_loadu_ps(y + i + 8 * u);                                                        \
            f(v, 4);                                                                                              \
            EACH(4) _mm256_storeu_ps(y + i + 8 * u, v[u]);                                                        \
        }                                                                                                         \
        for (; i + 8 <= n; i += 8) {                                                                              \
            v[0] = _mm256_loadu_ps(y + i);                                                                        \
            f(v, 1);                                                                                              \
            _mm256_storeu_ps(y + i, v[0]);                                                                        \
        }                                                                                                         \
        if (i < n) {                                                                                              \
            float tail[8] = {0};                                                                                  \
            memcpy(tail, y + i, (n - i) * sizeof(float));                                                         \
            v[0] = _mm256_loadu_ps(tail);                                                                         \
            f(v, 1);                                                                                              \
            _mm256_storeu_ps(tail, v[0]);                                                                         \
            memcpy(y + i, tail, (n - i) * sizeof(float));                                                         \
        }                                                                                                         \
    }
GELU_LOOP256(gelu_avx2, gelu_vectors256)
GELU_LOOP256(gelu_quick_avx2, gelu_quick_vectors256)
#endif

EMB_KERNELS_BEGIN
EMB_SIMD_DEFINE_STATIC(void, gelu_any, (float *y, size_t n), (y, n)) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = emb_gelu_of(y[i]);
}
EMB_SIMD_DEFINE_STATIC(void, gelu_quick_any, (float *y, size_t n), (y, n)) {
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
    if (emb_vexp256_supported()) {
        gelu_avx2(y, n);
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
    if (emb_vexp256_supported()) {
        gelu_quick_avx2(y, n);
        return;
    }
#endif
    gelu_quick_any(y, n);
}
