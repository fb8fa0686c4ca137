/* What the forward pass's element-wise kernels share (encoder.c, encoder_attention.c): the
 * target clones and the exp and erf they use. GCC builds the kernels for AVX-512, AVX2 and baseline
 * x86-64 and picks one at load time (ifunc); without -ftrapping-math the clamps and selects
 * if-convert, so the loops vectorize on every target. A file brackets its kernels with
 * EMB_KERNELS_BEGIN / EMB_KERNELS_END, and emb_expf is compiled under the same options so
 * that it inlines into them. Internal to the encoder's files. */
#ifndef EMBED_ENCODER_KERNELS_H
#define EMBED_ENCODER_KERNELS_H
#include <stdint.h>

#ifdef __clang__ /* "omp simd" is a hint; clang warns where it cannot follow it (e.g. at -O0/-O1) */
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define EMB_KERNELS_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"no-trapping-math\")")
#define EMB_KERNELS_END _Pragma("GCC pop_options")
#else
#define EMB_KERNELS_BEGIN
#define EMB_KERNELS_END
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && !defined(EMB_NO_CLONES) /* sanitizers: ifunc resolvers run too early */
#define EMB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define EMB_CLONES
#endif

EMB_KERNELS_BEGIN
/* exp for x <= 88 (Cephes polynomial, ~1 ulp; clamped below at -87 where the result is < 2e-38) */
static inline float emb_expf(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    float y = p * (r * r) + r + 1.0f;
    union { int32_t i; float f; } u;
    u.i = ((int32_t)n + 127) << 23;
    return y * u.f;
}

/* erf as a rational function, evaluated in double: |error| < 7e-8 */
static inline double emb_erf(double x) {
    x = x > 4.0 ? 4.0 : x;
    x = x < -4.0 ? -4.0 : x;
    double x2 = x * x;
    double p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
    p = x2 * p + -2.10102402082508e-06;
    p = x2 * p + -5.69250639462346e-05;
    p = x2 * p + -7.34990630326855e-04;
    p = x2 * p + -2.95459980854025e-03;
    p = x2 * p + -1.60960333262415e-02;
    double q = x2 * -1.45660718464996e-05 + -2.13374055278905e-04;
    q = x2 * q + -1.68282697438203e-03;
    q = x2 * q + -7.37332916720468e-03;
    q = x2 * q + -1.42647390514189e-02;
    return x * p / q;
}
EMB_KERNELS_END
#endif
